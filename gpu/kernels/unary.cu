// Unary elementwise ops, computed as the CPU kernels do: neg, abs, square and
// relu are engine/kernels/common/elementwise_ops.h's (integers wrap, relu
// keeps NaN). f32 transcendentals use CUDA's single-precision functions
// (expf, logf, tanhf, sinf, cosf; not the __expf fast intrinsics): at most
// 2 ulp from the correctly rounded value (CUDA Programming Guide, "Mathematical
// Functions"), within the f32 rtol of 1e-6 (8 ulp) of tests/gpu_ops_test.py,
// and no subnormal flushing (no -ftz), so the atol of 1e-30 covers the tiny
// results. In double they were 30-60x slower on sm_86/89, whose f64 rate is
// 1/64 of f32. sqrt and division are IEEE-exact on both devices, so
// rsqrt = 1/sqrt(x) matches bit for bit.
#include <type_traits>

#include "engine/kernels/common/elementwise_ops.h"
#include "engine/kernels/common/kernel_common.h"
#include "gpu/kernels/activation.cuh"
#include "gpu/kernels/unary.cuh"

namespace graphrun::gpu {

namespace {

using kernels::AbsOp;
using kernels::NegOp;
using kernels::ReluOp;
using kernels::SquareOp;

// f(x) in T's precision: fnf for f32, fn for f64.
#define GR_IN_PRECISION(fn)                   \
    if constexpr (std::is_same_v<T, float>) \
        return fn##f(x);                      \
    else                                      \
        return fn(x)

struct ExpOp {
    template <class T>
    __device__ static T apply(T x) {
        GR_IN_PRECISION(exp);
    }
};
struct LogOp {
    template <class T>
    __device__ static T apply(T x) {
        GR_IN_PRECISION(log);
    }
};
struct SqrtOp {
    template <class T>
    __device__ static T apply(T x) {
        return sqrt(x);  // IEEE: nvcc's default -prec-sqrt=true
    }
};
struct RsqrtOp {
    template <class T>
    __device__ static T apply(T x) {
        return T(1) / sqrt(x);
    }
};
struct TanhOp {
    template <class T>
    __device__ static T apply(T x) {
        GR_IN_PRECISION(tanh);
    }
};
using SigmoidOp = kernels::SigmoidWith<ExpOp>;  // the CPU's formula
struct SinOp {
    template <class T>
    __device__ static T apply(T x) {
        GR_IN_PRECISION(sin);
    }
};
struct CosOp {
    template <class T>
    __device__ static T apply(T x) {
        GR_IN_PRECISION(cos);
    }
};

#undef GR_IN_PRECISION

template <class T, class Op>
__global__ void unary_kernel(const T* __restrict__ x, T* __restrict__ o, int64_t n) {
    for (int64_t i = thread_index(); i < n; i += thread_count()) o[i] = Op::apply(x[i]);
}

template <class T, class Op>
class UnaryKernel final : public GpuKernel {
  public:
    UnaryKernel(const Graph& g, const Node& n, GpuContext& ctx) : GpuKernel(g, n, ctx) {}

  protected:
    void compute(const TensorRef* in, TensorRef& out) override {
        if (out.numel == 0) return;
        launch<unary_kernel<T, Op>>(ctx_, grid_for(out.numel), kBlock,
                                    static_cast<const T*>(in[0].data), static_cast<T*>(out.data),
                                    out.numel);
    }
};

// Float-only ops are not instantiated for the integer types.
template <class Op, bool FloatOnly = false>
std::unique_ptr<Kernel> make_unary_typed(const Graph& g, const Node& n, GpuContext& ctx) {
    switch (n.dtype) {
        case DType::F32:
            return std::make_unique<UnaryKernel<float, Op>>(g, n, ctx);
        case DType::F64:
            return std::make_unique<UnaryKernel<double, Op>>(g, n, ctx);
        case DType::I32:
            if constexpr (!FloatOnly) return std::make_unique<UnaryKernel<int32_t, Op>>(g, n, ctx);
            break;
        case DType::I64:
            if constexpr (!FloatOnly) return std::make_unique<UnaryKernel<int64_t, Op>>(g, n, ctx);
            break;
        case DType::Bool:
        GR_STORAGE_DTYPE_CASES:  // widened before any kernel (engine/plan/storage_types.h)
            break;
    }
    return nullptr;
}

std::unique_ptr<Kernel> make_unary_for_op(const Graph& g, const Node& n, GpuContext& ctx) {
    switch (n.op) {
        case OpKind::Neg:
            return make_unary_typed<NegOp>(g, n, ctx);
        case OpKind::Abs:
            return make_unary_typed<AbsOp>(g, n, ctx);
        case OpKind::Square:
            return make_unary_typed<SquareOp>(g, n, ctx);
        case OpKind::Relu:
            return make_unary_typed<ReluOp>(g, n, ctx);
        case OpKind::Exp:
            return make_unary_typed<ExpOp, true>(g, n, ctx);
        case OpKind::Log:
            return make_unary_typed<LogOp, true>(g, n, ctx);
        case OpKind::Sqrt:
            return make_unary_typed<SqrtOp, true>(g, n, ctx);
        case OpKind::Rsqrt:
            return make_unary_typed<RsqrtOp, true>(g, n, ctx);
        case OpKind::Tanh:
            return make_unary_typed<TanhOp, true>(g, n, ctx);
        case OpKind::Sigmoid:
            return make_unary_typed<SigmoidOp, true>(g, n, ctx);
        case OpKind::Sin:
            return make_unary_typed<SinOp, true>(g, n, ctx);
        case OpKind::Cos:
            return make_unary_typed<CosOp, true>(g, n, ctx);
        default:
            return nullptr;
    }
}

}  // namespace

std::unique_ptr<Kernel> make_unary_kernel(const Graph& g, const Node& n, GpuContext& ctx) {
    std::unique_ptr<Kernel> k;
    if (n.inputs.size() == 1) k = make_unary_for_op(g, n, ctx);
    if (!k) k = make_activation_kernel(g, n, ctx);  // the unary ops beyond SPEC section 3
    if (k) return k;
    return kernels::make_error_kernel(std::string("internal error: no GPU kernel for ") +
                                      op_name(n.op) + " on " + dtype_name(n.dtype));
}

}  // namespace graphrun::gpu
