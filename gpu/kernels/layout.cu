// The shape ops on the GPU, with the CPU's plans (engine/kernels/common/
// layout_plan.h): slice, split, expand and tile read each output element at
// base + the strided offset of its index (stride 0 where an axis repeats);
// gather reads the row its index names, after checking the index (a bad one
// raises the device error flag, reported as a data error with the CPU's
// message); pad maps each output index to its input index per axis (or the
// constant). Grid-stride loops over the output; elements move as 1-, 4- or
// 8-byte words.
#include "engine/kernels/common/layout_plan.h"
#include "gpu/kernels/layout.cuh"

namespace graphrun::gpu {

namespace {

constexpr int kFlagGatherIndex = 3;  // an index out of range

// A strided copy walks common.cuh's WideDims: tile's plan has a repeat and an
// input dim per axis (up to 64 dims when neither merges, as on the CPU, whose
// tables hold kMaxDims = 64).
template <class E>
__global__ void strided_kernel(const E* __restrict__ src, E* __restrict__ dst, int64_t n,
                               const __grid_constant__ WideDims dims) {
    for (int64_t i = thread_index(); i < n; i += thread_count()) dst[i] = src[dims_offset(dims, i)];
}

template <class E, class I>
__global__ void gather_kernel(const E* __restrict__ x, const I* __restrict__ idx, E* __restrict__ dst, int64_t n,
                              int64_t count, int64_t axis_len, int64_t inner, int* flag) {
    for (int64_t i = thread_index(); i < n; i += thread_count()) {
        const int64_t row = i / inner, t = i - row * inner;
        const int64_t o = row / count, j = row - o * count;
        int64_t v = static_cast<int64_t>(idx[j]);
        if (v < -axis_len || v >= axis_len) {
            *flag = kFlagGatherIndex;
            continue;
        }
        if (v < 0) v += axis_len;
        dst[i] = x[(o * axis_len + v) * inner + t];
    }
}

struct PadDims {
    int rank = 0;
    int mode = 0;  // PadMode
    int64_t out[kMaxRank] = {}, in[kMaxRank] = {}, begin[kMaxRank] = {}, in_stride[kMaxRank] = {};
};

// engine/ir/layout.h's pad_source on the device.
__device__ inline int64_t pad_source_dev(int64_t i, int64_t b, int64_t in, int mode) {
    int64_t j = i - b;
    if (j >= 0 && j < in) return j;
    if (mode == static_cast<int>(PadMode::Constant)) return -1;
    if (mode == static_cast<int>(PadMode::Edge) || in == 1) return j < 0 ? 0 : in - 1;
    const int64_t period = 2 * (in - 1);
    j %= period;
    if (j < 0) j += period;
    return j < in ? j : period - j;
}

template <class E>
__global__ void pad_kernel(const E* __restrict__ x, E* __restrict__ dst, int64_t n, E fill,
                           const __grid_constant__ PadDims p) {
    for (int64_t i = thread_index(); i < n; i += thread_count()) {
        int64_t rest = i, off = 0;
        bool constant = false;
        for (int k = p.rank - 1; k >= 0; --k) {
            const int64_t q = rest / p.out[k];
            const int64_t s = pad_source_dev(rest - q * p.out[k], p.begin[k], p.in[k], p.mode);
            rest = q;
            if (s < 0) constant = true;
            off += s * p.in_stride[k];
        }
        dst[i] = constant ? fill : x[off];
    }
}

// An i32/i64 index tensor read to the host as int64 (slice's and pad's
// run-time vectors; gather's indices on its error path): the copy waits for
// the stream, so that the kernels before it have written it.
std::vector<int64_t> host_indices(GpuContext& ctx, const TensorRef& t) {
    std::vector<uint8_t> bytes(static_cast<size_t>(t.numel) * dtype_size(t.dtype));
    if (!bytes.empty()) {
        GR_CUDA_THROW(cudaMemcpyAsync(bytes.data(), t.data, bytes.size(), cudaMemcpyDeviceToHost, ctx.stream));
        GR_CUDA_THROW(cudaStreamSynchronize(ctx.stream));
    }
    return kernels::index_vector(bytes.data(), t.dtype, t.numel);
}

// The message for the first of `idx` out of range for an axis of length
// axis_len, as the CPU gives it (kernels::gather_index_error), or "".
std::string gather_index_problem(const std::vector<int64_t>& idx, int64_t axis_len) {
    for (size_t j = 0; j < idx.size(); ++j) {
        const int64_t v = idx[j];
        if (v < -axis_len || v >= axis_len)
            return kernels::gather_index_error(v, static_cast<int64_t>(j), axis_len);
    }
    return "";
}

template <class F>
void by_element_size(DType t, F&& f) {
    switch (dtype_size(t)) {
        case 1: return f(uint8_t{});
        case 2: return f(uint16_t{});
        case 4: return f(uint32_t{});
        case 8: return f(uint64_t{});
        default: throw std::runtime_error("internal error: an element size the shape ops do not know");
    }
}

class StridedCopyKernel final : public GpuKernel {
  public:
    StridedCopyKernel(const Graph& g, const Node& n, GpuContext& ctx) : GpuKernel(g, n, ctx) {
        if (in_shapes_.size() > 1) return;  // slice's run-time form: planned in compute
        auto plan = kernels::strided_copy_plan(n, in_shapes_.at(0));
        if (plan) set_plan(*plan);
    }

  protected:
    void compute(const TensorRef* in, TensorRef& out) override {
        if (in_shapes_.size() > 1) {  // slice(x, starts, ends[, axes[, steps]]): the values, copied to the host
            std::vector<std::vector<int64_t>> v;
            for (size_t i = 1; i < in_shapes_.size(); ++i) v.push_back(host_indices(ctx_, in[i]));
            kernels::StridedCopy plan;
            std::string problem = kernels::slice_plan_at_run(in_shapes_[0], out_shape_, v, plan);
            if (!problem.empty()) throw DataError(problem);
            set_plan(plan);
        }
        if (!ok_) throw std::runtime_error(std::string("internal error: ") + op_name(op_) + " has no GPU plan");
        if (out.numel == 0) return;
        by_element_size(out.dtype, [&](auto tag) {
            using E = decltype(tag);
            const E* src = static_cast<const E*>(in[0].data) + base_;
            E* dst = static_cast<E*>(out.data);
            if (dims_.rank == 1 && dims_.stride[0] == 1) {  // one contiguous run
                GR_CUDA_THROW(cudaMemcpyAsync(dst, src, static_cast<size_t>(out.numel) * sizeof(E),
                                              cudaMemcpyDeviceToDevice, ctx_.stream));
                return;
            }
            launch<strided_kernel<E>>(ctx_, grid_for(out.numel), kBlock, src, dst, out.numel, dims_);
        });
    }

  private:
    void set_plan(const kernels::StridedCopy& plan) {
        ok_ = plan.dims.size() <= static_cast<size_t>(2 * kMaxRank);
        if (!ok_) return;
        base_ = plan.base;
        dims_.rank = static_cast<int>(plan.dims.size());
        for (int k = 0; k < dims_.rank; ++k) {
            dims_.size[k] = plan.dims[static_cast<size_t>(k)].size;
            dims_.stride[k] = plan.dims[static_cast<size_t>(k)].stride;
        }
    }

    bool ok_ = false;
    int64_t base_ = 0;
    WideDims dims_;
};

class GatherKernel final : public GpuKernel {
  public:
    GatherKernel(const Graph& g, const Node& n, GpuContext& ctx) : GpuKernel(g, n, ctx) {
        if (in_shapes_.size() == 2) plan_ = kernels::gather_plan(n, in_shapes_[0], in_shapes_[1]);
    }

  protected:
    void compute(const TensorRef* in, TensorRef& out) override {
        if (!plan_) throw std::runtime_error("internal error: gather's attributes do not fit its inputs");
        const kernels::GatherPlan p = *plan_;
        // An empty output (x's outer or inner part empty) reads no element, but
        // its indices are still checked, as on the CPU: read to the host, as
        // no kernel runs to check them.
        if (out.numel == 0) {
            if (p.count == 0) return;
            std::string problem = gather_index_problem(host_indices(ctx_, in[1]), p.axis_len);
            if (!problem.empty()) throw DataError(problem);
            return;
        }
        int* flag = ctx_.error_flag;
        if (!flag) throw std::runtime_error("internal error: the GPU context has no error flag");
        by_element_size(out.dtype, [&](auto tag) {
            using E = decltype(tag);
            const E* x = static_cast<const E*>(in[0].data);
            E* dst = static_cast<E*>(out.data);
            if (in[1].dtype == DType::I32)
                launch<gather_kernel<E, int32_t>>(ctx_, grid_for(out.numel), kBlock, x,
                                                  static_cast<const int32_t*>(in[1].data), dst, out.numel, p.count,
                                                  p.axis_len, p.inner, flag);
            else
                launch<gather_kernel<E, int64_t>>(ctx_, grid_for(out.numel), kBlock, x,
                                                  static_cast<const int64_t*>(in[1].data), dst, out.numel, p.count,
                                                  p.axis_len, p.inner, flag);
        });
        const int f = take_error_flag(ctx_);
        if (f == kFlagGatherIndex) {
            // The error path only: the indices read back to name the first bad
            // one with the CPU's message.
            std::string problem = gather_index_problem(host_indices(ctx_, in[1]), p.axis_len);
            throw DataError(problem.empty()
                                ? "internal error: gather flagged an index out of range, but "
                                  "none is"
                                : problem);
        }
        if (f != 0) throw DataError("internal error: unknown device error flag " + std::to_string(f));
    }

  private:
    std::optional<kernels::GatherPlan> plan_;
};

class PadKernel final : public GpuKernel {
  public:
    PadKernel(const Graph& g, const Node& n, GpuContext& ctx) : GpuKernel(g, n, ctx) {
        if (const NamedAttr* a = n.find_attr("mode")) mode_ = pad_mode(a->value.s).value_or(PadMode::Constant);
        if (in_shapes_.size() > 1) return;  // pad's run-time form: planned in compute
        auto plan = kernels::pad_plan(n, in_shapes_.at(0));
        if (plan) set_plan(*plan);
    }

  protected:
    void compute(const TensorRef* in, TensorRef& out) override {
        if (in_shapes_.size() > 1) {  // pad(x, pads[, constant[, axes]]): the values, copied to the host
            std::optional<std::vector<int64_t>> axes;
            if (in_shapes_.size() > 3) axes = host_indices(ctx_, in[3]);
            uint64_t bits = 0;
            if (in_shapes_.size() > 2 && in[2].numel == 1) {
                GR_CUDA_THROW(cudaMemcpyAsync(&bits, in[2].data, dtype_size(in[2].dtype), cudaMemcpyDeviceToHost,
                                              ctx_.stream));
                GR_CUDA_THROW(cudaStreamSynchronize(ctx_.stream));
            }
            kernels::PadPlan plan;
            std::string problem =
                kernels::pad_plan_at_run(mode_, in_shapes_[0], out_shape_, host_indices(ctx_, in[1]), axes, bits, plan);
            if (!problem.empty()) throw DataError(problem);
            set_plan(plan);
        }
        if (!ok_) throw std::runtime_error("internal error: pad has no GPU plan");
        if (out.numel == 0) return;
        by_element_size(out.dtype, [&](auto tag) {
            using E = decltype(tag);
            E fill{};
            std::memcpy(&fill, &bits_, sizeof(E));
            launch<pad_kernel<E>>(ctx_, grid_for(out.numel), kBlock, static_cast<const E*>(in[0].data),
                                  static_cast<E*>(out.data), out.numel, fill, dims_);
        });
    }

  private:
    void set_plan(const kernels::PadPlan& plan) {
        ok_ = plan.in.size() <= static_cast<size_t>(kMaxRank);
        if (!ok_) return;
        bits_ = plan.constant_bits;
        dims_.rank = static_cast<int>(plan.in.size());
        dims_.mode = static_cast<int>(plan.mode);
        int64_t stride = 1;
        for (int k = dims_.rank - 1; k >= 0; --k) {
            const auto uk = static_cast<size_t>(k);
            dims_.out[k] = plan.out[uk];
            dims_.in[k] = plan.in[uk];
            dims_.begin[k] = plan.begin[uk];
            dims_.in_stride[k] = stride;
            stride *= plan.in[uk];
        }
    }

    PadMode mode_ = PadMode::Constant;
    bool ok_ = false;
    uint64_t bits_ = 0;
    PadDims dims_;
};

}  // namespace

std::unique_ptr<Kernel> make_layout_kernel(const Graph& g, const Node& n, GpuContext& ctx) {
    switch (n.op) {
        case OpKind::Gather: return std::make_unique<GatherKernel>(g, n, ctx);
        case OpKind::Pad: return std::make_unique<PadKernel>(g, n, ctx);
        default: return std::make_unique<StridedCopyKernel>(g, n, ctx);
    }
}

}  // namespace graphrun::gpu
