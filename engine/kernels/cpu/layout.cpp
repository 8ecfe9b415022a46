// The shape ops that move elements (family Layout): slice, split, expand and
// tile as one strided copy (contiguous runs by memcpy, repeated blocks by
// memcpy of the block written first), gather (a memcpy per index of the
// rows behind it), pad (a memcpy of each row's interior, the borders and the
// row's source by pad_source). Parallel over the outermost axis or the rows.
#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include "engine/kernels/common/layout_plan.h"
#include "engine/kernels/cpu/kernel_families.h"
#include "engine/kernels/cpu/parallel.h"

namespace graphrun::kernels {

namespace {

// Elements per parallel chunk: below this a copy is not worth a hand-over.
constexpr int64_t kGrainElements = 1 << 15;

template <class F>
std::string by_element_size(DType t, F&& f) {
    switch (dtype_size(t)) {
        case 1: return f(uint8_t{});
        case 2: return f(uint16_t{});
        case 4: return f(uint32_t{});
        case 8: return f(uint64_t{});
        default: return "internal error: an element size the shape ops do not know";
    }
}

// --- slice, split, expand, tile --------------------------------------------------

class StridedCopyKernel final : public KernelBase {
  public:
    StridedCopyKernel(const Graph& g, const Node& n) : KernelBase(g, n) {
        if (in_shapes_.size() > 1) return;  // slice's run-time form: planned in compute
        auto plan = strided_copy_plan(n, in_shapes_.at(0));
        if (plan) set_plan(*plan);
    }

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        if (in_shapes_.size() > 1) {  // slice(x, starts, ends[, axes[, steps]]): the values fed now
            std::vector<std::vector<int64_t>> v;
            for (size_t i = 1; i < in_shapes_.size(); ++i) v.push_back(index_vector(in[i].data, in[i].dtype, in[i].numel));
            StridedCopy plan;
            std::string problem = slice_plan_at_run(in_shapes_[0], out_shape_, v, plan);
            if (!problem.empty()) return problem;
            set_plan(plan);
        }
        if (!ok_) return std::string("internal error: ") + op_name(op_) + "'s attributes do not fit its input";
        if (out.numel == 0) return "";
        return by_element_size(out.dtype, [&](auto tag) -> std::string {
            using E = decltype(tag);
            const E* src = static_cast<const E*>(in[0].data) + base_;
            E* dst = static_cast<E*>(out.data);
            if (rank_ == 0) {
                dst[0] = src[0];
                return "";
            }
            const int64_t grain = std::max<int64_t>(1, kGrainElements / block_[0]);
            parallel_for(ctx, size_[0], grain, [&](int64_t b, int64_t e) {
                if (rank_ == 1) {
                    run_inner(src + b * stride_[0], dst + b, e - b, stride_[0]);
                    return;
                }
                for (int64_t j = b; j < e; ++j) copy(1, src + j * stride_[0], dst + j * block_[0]);
            }, cold_rows(in[0], size_[0]));
            return "";
        });
    }

  private:
    void set_plan(const StridedCopy& plan) {
        ok_ = plan.dims.size() <= static_cast<size_t>(kMaxDims);
        if (!ok_) return;
        base_ = plan.base;
        rank_ = static_cast<int>(plan.dims.size());
        int64_t block = 1;
        for (int k = rank_ - 1; k >= 0; --k) {
            size_[k] = plan.dims[static_cast<size_t>(k)].size;
            stride_[k] = plan.dims[static_cast<size_t>(k)].stride;
            block_[k] = block;
            block *= size_[k];
        }
    }

    template <class E>
    static void run_inner(const E* src, E* dst, int64_t n, int64_t stride) {
        if (stride == 1)
            std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(E));
        else if (stride == 0)
            std::fill(dst, dst + n, *src);
        else
            for (int64_t j = 0; j < n; ++j) dst[j] = src[j * stride];
    }

    template <class E>
    void copy(int level, const E* src, E* dst) const {
        const int64_t n = size_[level], stride = stride_[level];
        if (level == rank_ - 1) return run_inner(src, dst, n, stride);
        const int64_t block = block_[level];
        if (stride == 0) {  // a repeat: write the block once, then copy it
            copy(level + 1, src, dst);
            for (int64_t j = 1; j < n; ++j)
                std::memcpy(dst + j * block, dst, static_cast<size_t>(block) * sizeof(E));
            return;
        }
        for (int64_t j = 0; j < n; ++j) copy(level + 1, src + j * stride, dst + j * block);
    }

    bool ok_ = false;
    int64_t base_ = 0;
    int rank_ = 0;
    std::array<int64_t, kMaxDims> size_{}, stride_{}, block_{};
};

// --- gather ----------------------------------------------------------------------

class GatherKernel final : public KernelBase {
  public:
    GatherKernel(const Graph& g, const Node& n) : KernelBase(g, n) {
        if (in_shapes_.size() == 2) plan_ = gather_plan(n, in_shapes_[0], in_shapes_[1]);
    }

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        if (!plan_) return "internal error: gather's attributes do not fit its inputs";
        const GatherPlan p = *plan_;
        // Every index checked (and made non-negative) before anything is copied.
        rows_.resize(static_cast<size_t>(p.count));
        std::string problem = in[1].dtype == DType::I32 ? normalize(static_cast<const int32_t*>(in[1].data), p)
                                                        : normalize(static_cast<const int64_t*>(in[1].data), p);
        if (!problem.empty() || out.numel == 0) return problem;
        return by_element_size(out.dtype, [&](auto tag) -> std::string {
            using E = decltype(tag);
            const E* x = static_cast<const E*>(in[0].data);
            E* dst = static_cast<E*>(out.data);
            const int64_t inner = p.inner, count = p.count;
            const int64_t* rows = rows_.data();
            const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(inner, 1));
            parallel_for(ctx, p.outer * count, grain, [&](int64_t b, int64_t e) {
                for (int64_t r = b; r < e; ++r) {
                    const int64_t o = r / count, j = r - o * count;
                    const E* from = x + (o * p.axis_len + rows[j]) * inner;
                    if (inner == 1)
                        dst[r] = *from;
                    else
                        std::memcpy(dst + r * inner, from, static_cast<size_t>(inner) * sizeof(E));
                }
            });
            return "";
        });
    }

  private:
    template <class I>
    std::string normalize(const I* idx, const GatherPlan& p) {
        for (int64_t j = 0; j < p.count; ++j) {
            int64_t v = idx[j];
            if (v < -p.axis_len || v >= p.axis_len) return gather_index_error(v, j, p.axis_len);
            rows_[static_cast<size_t>(j)] = v < 0 ? v + p.axis_len : v;
        }
        return "";
    }

    std::optional<GatherPlan> plan_;
    std::vector<int64_t> rows_;
};

// --- pad -------------------------------------------------------------------------

class PadKernel final : public KernelBase {
  public:
    PadKernel(const Graph& g, const Node& n) : KernelBase(g, n) {
        if (const NamedAttr* a = n.find_attr("mode")) mode_ = pad_mode(a->value.s).value_or(PadMode::Constant);
        if (in_shapes_.size() > 1) return;  // pad's run-time form: planned in compute
        set_plan(pad_plan(n, in_shapes_.at(0)));
    }

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        if (in_shapes_.size() > 1) {  // pad(x, pads[, constant[, axes]]): the values fed now
            std::optional<std::vector<int64_t>> axes;
            if (in_shapes_.size() > 3) axes = index_vector(in[3].data, in[3].dtype, in[3].numel);
            uint64_t bits = 0;
            if (in_shapes_.size() > 2 && in[2].numel == 1) std::memcpy(&bits, in[2].data, dtype_size(in[2].dtype));
            PadPlan plan;
            std::string problem =
                pad_plan_at_run(mode_, in_shapes_[0], out_shape_, index_vector(in[1].data, in[1].dtype, in[1].numel), axes, bits, plan);
            if (!problem.empty()) return problem;
            set_plan(std::move(plan));
        }
        if (!plan_) return "internal error: pad's attributes do not fit its input";
        if (out.numel == 0) return "";
        return by_element_size(out.dtype, [&](auto tag) -> std::string {
            using E = decltype(tag);
            run(static_cast<const E*>(in[0].data), static_cast<E*>(out.data), ctx);
            return "";
        });
    }

  private:
    template <class E>
    void run(const E* x, E* dst, const KernelContext& ctx) const {
        const PadPlan& p = *plan_;
        E fill{};
        std::memcpy(&fill, &p.constant_bits, sizeof(E));
        const size_t r = p.in.size();
        if (r == 0) {
            dst[0] = x[0];
            return;
        }
        const int64_t width = p.out[r - 1], rows = out_numel_ / width;
        const int64_t b_last = p.begin[r - 1], in_last = p.in[r - 1];
        // The run of the last axis that reads the input in order: one memcpy.
        const int64_t lo = std::clamp<int64_t>(p.begin[r - 1], 0, width);
        const int64_t hi = std::clamp<int64_t>(p.begin[r - 1] + p.in[r - 1], lo, width);
        const int64_t grain = std::max<int64_t>(1, kGrainElements / width);
        parallel_for(ctx, rows, grain, [&](int64_t b, int64_t e) {
            for (int64_t row = b; row < e; ++row) {
                E* o = dst + row * width;
                int64_t off = 0, rest = row;
                bool constant = false;
                for (size_t k = r - 1; k-- > 0;) {
                    const int64_t i = rest % p.out[k];
                    rest /= p.out[k];
                    const int64_t s = pad_source(i, p.begin[k], p.in[k], p.mode);
                    if (s < 0) constant = true;
                    off += s * in_stride_[k];
                }
                if (constant) {
                    std::fill(o, o + width, fill);
                    continue;
                }
                const E* src = x + off;
                auto border = [&](int64_t j) {
                    const int64_t s = pad_source(j, b_last, in_last, p.mode);
                    o[j] = s < 0 ? fill : src[s];
                };
                for (int64_t j = 0; j < lo; ++j) border(j);
                if (hi > lo) std::memcpy(o + lo, src + (lo - b_last), static_cast<size_t>(hi - lo) * sizeof(E));
                for (int64_t j = hi; j < width; ++j) border(j);
            }
        });
    }

    void set_plan(std::optional<PadPlan> plan) {
        plan_ = std::move(plan);
        if (!plan_) return;
        const PadPlan& p = *plan_;
        const size_t r = p.in.size();
        in_stride_.assign(r, 1);
        for (size_t k = r; k > 1; --k) in_stride_[k - 2] = in_stride_[k - 1] * p.in[k - 1];
    }

    PadMode mode_ = PadMode::Constant;
    std::optional<PadPlan> plan_;
    std::vector<int64_t> in_stride_;
};

}  // namespace

std::unique_ptr<Kernel> make_layout_kernel(const Graph& g, const Node& n) {
    switch (n.op) {
        case OpKind::Gather: return std::make_unique<GatherKernel>(g, n);
        case OpKind::Pad: return std::make_unique<PadKernel>(g, n);
        default: return std::make_unique<StridedCopyKernel>(g, n);
    }
}

}  // namespace graphrun::kernels
