// The Logic family on the CPU: comparisons (numbers in, bool out) and
// logical_and/or/xor with NumPy broadcasting, logical_not, and where with
// three-way broadcasting. Bools are bytes 0/1 (activation_ops.h's ops).
#include <array>
#include <cstdint>

#include "engine/kernels/common/activation_ops.h"
#include "engine/kernels/common/kernel_common.h"
#include "engine/kernels/cpu/broadcast_plan.h"
#include "engine/kernels/cpu/kernel_families.h"
#include "engine/kernels/cpu/parallel.h"
#include "engine/kernels/cpu/simd.h"

namespace graphrun::kernels {

namespace {

constexpr int64_t kLogicGrain = int64_t{1} << 15;
constexpr int64_t kLogicColdBelow = kLogicGrain * 16;

template <class T, class Op>
class CompareKernel final : public KernelBase {
  public:
    CompareKernel(const Graph& g, const Node& n) : KernelBase(g, n) {
        plan_ = make_plan(in_shapes_[0], in_shapes_[1], out_shape_);
    }

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        if (!plan_.ok) return "internal error: broadcast rank too large";
        if (out.numel == 0) return "";
        const T* a = static_cast<const T*>(in[0].data);
        const T* b = static_cast<const T*>(in[1].data);
        auto* o = static_cast<uint8_t*>(out.data);
        const BroadcastPlan& p = plan_;
        const bool va = p.inner_sa != 0, vb = p.inner_sb != 0;
        parallel_for(
            ctx, out.numel, kLogicGrain,
            [&](int64_t lo, int64_t hi) {
                with_isa([&] {
                    for_each_run(p, lo, hi, [&](int64_t po, int64_t pa, int64_t pb, int64_t len) {
                        binary_run<Op, T, uint8_t>(o + po, a + pa, b + pb, len, va, vb);
                    });
                });
            },
            kLogicColdBelow);
        return "";
    }

  private:
    BroadcastPlan plan_;
};

class LogicalNotKernel final : public KernelBase {
  public:
    LogicalNotKernel(const Graph& g, const Node& n) : KernelBase(g, n) {}

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        const auto* x = static_cast<const uint8_t*>(in[0].data);
        auto* o = static_cast<uint8_t*>(out.data);
        parallel_for(
            ctx, out.numel, kLogicGrain,
            [=](int64_t lo, int64_t hi) {
                with_isa([=] {
                    const uint8_t* __restrict s = x + lo;
                    uint8_t* __restrict d = o + lo;
                    blocked_loop(hi - lo, [=](int64_t i) { d[i] = s[i] == 0; });
                });
            },
            kLogicColdBelow);
        return "";
    }
};

// where(cond, x, y): the output's dimensions with each operand's stride in
// it (0 where the operand broadcasts), walked row by row of the innermost one.
template <class T>
class WhereKernel final : public KernelBase {
  public:
    WhereKernel(const Graph& g, const Node& n) : KernelBase(g, n) {
        rank_ = static_cast<int>(out_shape_.size());
        if (rank_ > kMaxDims || in_shapes_.size() != 3) {
            ok_ = false;
            return;
        }
        for (int k = 0; k < 3; ++k) {
            const Shape& s = in_shapes_[static_cast<size_t>(k)];
            const int shift = rank_ - static_cast<int>(s.size());
            if (shift < 0) {
                ok_ = false;
                return;
            }
            int64_t stride = 1;
            for (int d = rank_ - 1; d >= 0; --d) {
                const int64_t size = d >= shift ? s[static_cast<size_t>(d - shift)] : 1;
                stride_[k][static_cast<size_t>(d)] = size == 1 ? 0 : stride;
                stride *= size;
            }
        }
        same_ = in_shapes_[0] == out_shape_ && in_shapes_[1] == out_shape_ && in_shapes_[2] == out_shape_;
    }

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        if (!ok_) return "internal error: where's operands do not broadcast to its output";
        if (out.numel == 0) return "";
        const auto* c = static_cast<const uint8_t*>(in[0].data);
        const T* x = static_cast<const T*>(in[1].data);
        const T* y = static_cast<const T*>(in[2].data);
        T* o = static_cast<T*>(out.data);
        if (same_) {
            parallel_for(
                ctx, out.numel, kLogicGrain,
                [=](int64_t lo, int64_t hi) {
                    with_isa([=] {
                        blocked_loop(hi - lo, [=](int64_t i) {
                            o[lo + i] = c[lo + i] ? x[lo + i] : y[lo + i];
                        });
                    });
                },
                kLogicColdBelow);
            return "";
        }
        const int64_t inner = rank_ == 0 ? 1 : out_shape_.back();
        const int64_t rows = out.numel / inner;
        const size_t last = rank_ == 0 ? 0 : static_cast<size_t>(rank_ - 1);
        const int64_t ic = rank_ ? stride_[0][last] : 0, ix = rank_ ? stride_[1][last] : 0,
                      iy = rank_ ? stride_[2][last] : 0;
        parallel_for(ctx, rows, std::max<int64_t>(1, kLogicGrain / inner), [&](int64_t lo, int64_t hi) {
            for (int64_t row = lo; row < hi; ++row) {
                int64_t rest = row, oc = 0, ox = 0, oy = 0;
                for (int d = rank_ - 2; d >= 0; --d) {
                    const auto k = static_cast<size_t>(d);
                    const int64_t size = out_shape_[k], idx = rest % size;
                    rest /= size;
                    oc += idx * stride_[0][k];
                    ox += idx * stride_[1][k];
                    oy += idx * stride_[2][k];
                }
                T* dst = o + row * inner;
                for (int64_t j = 0; j < inner; ++j)
                    dst[j] = c[oc + j * ic] ? x[ox + j * ix] : y[oy + j * iy];
            }
        });
        return "";
    }

  private:
    bool ok_ = true, same_ = false;
    int rank_ = 0;
    std::array<std::array<int64_t, kMaxDims>, 3> stride_{};
};

std::unique_ptr<Kernel> no_logic_kernel(const Node& n, DType t) {
    return make_error_kernel(std::string("internal error: no CPU kernel for ") + op_name(n.op) +
                             " on " + dtype_name(t));
}

template <class Op>
std::unique_ptr<Kernel> make_compare(const Graph& g, const Node& n) {
    const DType t = g.node(n.inputs[0].id).dtype;
    switch (t) {
        case DType::F32: return std::make_unique<CompareKernel<float, Op>>(g, n);
        case DType::F64: return std::make_unique<CompareKernel<double, Op>>(g, n);
        case DType::I32: return std::make_unique<CompareKernel<int32_t, Op>>(g, n);
        case DType::I64: return std::make_unique<CompareKernel<int64_t, Op>>(g, n);
        case DType::Bool: return std::make_unique<CompareKernel<uint8_t, Op>>(g, n);
        GR_STORAGE_DTYPE_CASES:  // widened before any kernel (engine/plan/storage_types.h)
            break;
    }
    return no_logic_kernel(n, t);
}

}  // namespace

std::unique_ptr<Kernel> make_logic_kernel(const Graph& g, const Node& n) {
    const size_t arity = n.op == OpKind::LogicalNot ? 1 : n.op == OpKind::Where ? 3 : 2;
    if (n.inputs.size() != arity) return no_logic_kernel(n, n.dtype);
    switch (n.op) {
        case OpKind::Equal: return make_compare<EqualOp>(g, n);
        case OpKind::NotEqual: return make_compare<NotEqualOp>(g, n);
        case OpKind::Less: return make_compare<LessOp>(g, n);
        case OpKind::LessEqual: return make_compare<LessEqualOp>(g, n);
        case OpKind::Greater: return make_compare<GreaterOp>(g, n);
        case OpKind::GreaterEqual: return make_compare<GreaterEqualOp>(g, n);
        case OpKind::LogicalAnd: return std::make_unique<CompareKernel<uint8_t, LogicalAndOp>>(g, n);
        case OpKind::LogicalOr: return std::make_unique<CompareKernel<uint8_t, LogicalOrOp>>(g, n);
        case OpKind::LogicalXor: return std::make_unique<CompareKernel<uint8_t, LogicalXorOp>>(g, n);
        case OpKind::LogicalNot: return std::make_unique<LogicalNotKernel>(g, n);
        case OpKind::Where:
            return dispatch_dtype(n.dtype, [&](auto tag) -> std::unique_ptr<Kernel> {
                return std::make_unique<WhereKernel<decltype(tag)>>(g, n);
            });
        default: return no_logic_kernel(n, n.dtype);
    }
}

}  // namespace graphrun::kernels
