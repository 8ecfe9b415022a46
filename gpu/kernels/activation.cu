// The unary ops beyond SPEC section 3 with the CPU's formulas
// (engine/kernels/common/activation_ops.h) and attributes
// (activation_params.h), evaluated in double like the CPU's (CUDA's double
// functions are within 2 ulp of double): slower than f32 math on cards with
// a low f64 rate, but it keeps the GPU within an ulp of the CPU.
#include <type_traits>

#include "engine/kernels/common/activation_ops.h"
#include "engine/kernels/common/activation_params.h"
#include "gpu/kernels/activation.cuh"

namespace graphrun::gpu {

namespace {

// As the CPU's policy: floats widened to double, so an f32 result is
// rounded once and matches the CPU's within an ulp (f32 evaluation lost up
// to ~20 ulp in tanh gelu, where exp(-2z) magnifies z's rounding).
struct GpuMath {
    template <class T>
    using Wide = std::conditional_t<std::is_floating_point_v<T>, double, T>;
    template <class T>
    __device__ static T floor(T x) { return ::floor(x); }
    template <class T>
    __device__ static T ceil(T x) { return ::ceil(x); }
    template <class T>
    __device__ static T rint(T x) { return ::rint(x); }
    __device__ static double exp(double x) { return ::exp(x); }
    __device__ static double expm1(double x) { return ::expm1(x); }
    __device__ static double log1p(double x) { return ::log1p(x); }
    __device__ static double erf(double x) { return ::erf(x); }
    __device__ static double erfc(double x) { return ::erfc(x); }
};

template <class T, class Op>
__global__ void activation_kernel(const T* __restrict__ x, T* __restrict__ o, int64_t n,
                                  const kernels::UnaryParams<T, GpuMath::Wide<T>> p) {
    for (int64_t i = thread_index(); i < n; i += thread_count())
        o[i] = Op::template apply<GpuMath>(x[i], p);
}

template <class T, class Op>
class ActivationKernel final : public GpuKernel {
  public:
    ActivationKernel(const Graph& g, const Node& n, GpuContext& ctx)
        : GpuKernel(g, n, ctx), p_(kernels::unary_params<T, GpuMath::Wide<T>>(n)) {}

  protected:
    void compute(const TensorRef* in, TensorRef& out) override {
        if (out.numel == 0) return;
        launch<activation_kernel<T, Op>>(ctx_, grid_for(out.numel), kBlock,
            static_cast<const T*>(in[0].data), static_cast<T*>(out.data), out.numel, p_);
    }

  private:
    kernels::UnaryParams<T, GpuMath::Wide<T>> p_;
};

template <class Op, bool FloatOnly = true>
std::unique_ptr<Kernel> make_activation_typed(const Graph& g, const Node& n, GpuContext& ctx) {
    switch (n.dtype) {
        case DType::F32: return std::make_unique<ActivationKernel<float, Op>>(g, n, ctx);
        case DType::F64: return std::make_unique<ActivationKernel<double, Op>>(g, n, ctx);
        case DType::I32:
            if constexpr (!FloatOnly) return std::make_unique<ActivationKernel<int32_t, Op>>(g, n, ctx);
            break;
        case DType::I64:
            if constexpr (!FloatOnly) return std::make_unique<ActivationKernel<int64_t, Op>>(g, n, ctx);
            break;
        case DType::Bool:
        GR_STORAGE_DTYPE_CASES:  // widened before any kernel (engine/plan/storage_types.h)
            break;
    }
    return nullptr;
}

}  // namespace

std::unique_ptr<Kernel> make_activation_kernel(const Graph& g, const Node& n, GpuContext& ctx) {
    using namespace kernels;
    if (n.inputs.size() != 1) return nullptr;
    switch (n.op) {
        case OpKind::Floor: return make_activation_typed<FloorOp>(g, n, ctx);
        case OpKind::Ceil: return make_activation_typed<CeilOp>(g, n, ctx);
        case OpKind::Round: return make_activation_typed<RoundOp>(g, n, ctx);
        case OpKind::Erf: return make_activation_typed<ErfOp>(g, n, ctx);
        case OpKind::Reciprocal: return make_activation_typed<ReciprocalOp>(g, n, ctx);
        case OpKind::Softplus: return make_activation_typed<SoftplusOp>(g, n, ctx);
        case OpKind::Sign: return make_activation_typed<SignOp, false>(g, n, ctx);
        case OpKind::Clip: return make_activation_typed<ClipOp, false>(g, n, ctx);
        case OpKind::LeakyRelu: return make_activation_typed<LeakyReluOp>(g, n, ctx);
        case OpKind::Elu: return make_activation_typed<EluOp>(g, n, ctx);
        case OpKind::Selu: return make_activation_typed<SeluOp>(g, n, ctx);
        case OpKind::Gelu: return make_activation_typed<GeluOp>(g, n, ctx);
        default: return nullptr;
    }
}

}  // namespace graphrun::gpu
