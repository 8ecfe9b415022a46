// The unary ops beyond SPEC section 3 on the CPU (floor ceil round erf
// reciprocal softplus sign clip leaky_relu elu selu gelu), with
// activation_ops.h's formulas evaluated in double (an f32 result is rounded
// once). The ops that are a few instructions per element are vectorized
// like elementwise.cpp's (with_isa); f32 erf and gelu go through vec_f32
// (vmath.h: the same double formula, several elements per call); the others
// call libm per element.
#include <cmath>
#include <limits>
#include <type_traits>

#include "engine/kernels/common/activation_ops.h"
#include "engine/kernels/common/activation_params.h"
#include "engine/kernels/common/kernel_common.h"
#include "engine/kernels/cpu/cpu_math.h"
#include "engine/kernels/cpu/kernel_families.h"
#include "engine/kernels/cpu/parallel.h"
#include "engine/kernels/cpu/simd.h"
#include "engine/kernels/cpu/vmath.h"

namespace graphrun::kernels {

namespace {

constexpr int64_t kCheapGrain = int64_t{1} << 15;
constexpr int64_t kCostlyGrain = int64_t{1} << 11;
constexpr int64_t kVecGrain = int64_t{1} << 13;  // vec_f32: about 1.5 ns per element
// Below this a vec_f32 job (under 100 us) does not wake sleeping workers:
// waking one costs more than it saves (GPT-2's tanh over 32K elements took
// 0.14 ms on 2 threads, 0.09 ms on one).
constexpr int64_t kVecColdBelow = int64_t{1} << 16;

template <class Op>
constexpr bool kCheap = std::is_same_v<Op, FloorOp> || std::is_same_v<Op, CeilOp> ||
                        std::is_same_v<Op, RoundOp> || std::is_same_v<Op, ReciprocalOp> ||
                        std::is_same_v<Op, SignOp> || std::is_same_v<Op, ClipOp> ||
                        std::is_same_v<Op, LeakyReluOp>;

template <class T, class Op>
class ActivationKernel final : public KernelBase {
  public:
    using W = CpuMath::Wide<T>;

    ActivationKernel(const Graph& g, const Node& n) : KernelBase(g, n), p_(unary_params<T, W>(n)) {}

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        const T* x = static_cast<const T*>(in[0].data);
        T* o = static_cast<T*>(out.data);
        if constexpr (std::is_same_v<T, float> && (std::is_same_v<Op, ErfOp> || std::is_same_v<Op, GeluOp>)) {
            // The same double formula rounded once, 8 elements per call (vmath.h);
            // gelu's scalar erfc per element took 16 ns here, 8 times its ops unfused.
            const VecFn f = std::is_same_v<Op, ErfOp> ? VecFn::Erf : p_.tanh ? VecFn::GeluTanh : VecFn::Gelu;
            parallel_for(
                ctx, out.numel, kVecGrain,
                [fn = f, x, o](int64_t lo, int64_t hi) { vec_f32(fn, x + lo, o + lo, hi - lo); },
                kVecColdBelow);
            return "";
        }
        const UnaryParams<T, W> p = p_;
        constexpr bool cheap = kCheap<Op>;
        parallel_for(
            ctx, out.numel, cheap ? kCheapGrain : kCostlyGrain,
            [x, o, p](int64_t lo, int64_t hi) {
                auto loop = [=] {
                    if (x == o) {  // in place (Plan::donor)
                        T* __restrict d = o + lo;
                        blocked_loop(hi - lo, [=](int64_t i) { d[i] = Op::template apply<CpuMath>(d[i], p); });
                        return;
                    }
                    const T* __restrict src = x + lo;
                    T* __restrict dst = o + lo;
                    blocked_loop(hi - lo, [=](int64_t i) { dst[i] = Op::template apply<CpuMath>(src[i], p); });
                };
                if constexpr (cheap)
                    with_isa(loop);
                else
                    loop();
            },
            cheap ? kCheapGrain * 16 : kCostlyGrain * 4);
        return "";
    }

  private:
    UnaryParams<T, W> p_;
};

template <class Op, bool FloatOnly = true>
std::unique_ptr<Kernel> make_typed(const Graph& g, const Node& n) {
    switch (n.dtype) {
        case DType::F32: return std::make_unique<ActivationKernel<float, Op>>(g, n);
        case DType::F64: return std::make_unique<ActivationKernel<double, Op>>(g, n);
        case DType::I32:
            if constexpr (!FloatOnly) return std::make_unique<ActivationKernel<int32_t, Op>>(g, n);
            break;
        case DType::I64:
            if constexpr (!FloatOnly) return std::make_unique<ActivationKernel<int64_t, Op>>(g, n);
            break;
        case DType::Bool:
        GR_STORAGE_DTYPE_CASES:  // widened before any kernel (engine/plan/storage_types.h)
            break;
    }
    return nullptr;
}

}  // namespace

std::unique_ptr<Kernel> make_activation_kernel(const Graph& g, const Node& n) {
    std::unique_ptr<Kernel> k;
    if (n.inputs.size() == 1) {
        switch (n.op) {
            case OpKind::Floor: k = make_typed<FloorOp>(g, n); break;
            case OpKind::Ceil: k = make_typed<CeilOp>(g, n); break;
            case OpKind::Round: k = make_typed<RoundOp>(g, n); break;
            case OpKind::Erf: k = make_typed<ErfOp>(g, n); break;
            case OpKind::Reciprocal: k = make_typed<ReciprocalOp>(g, n); break;
            case OpKind::Softplus: k = make_typed<SoftplusOp>(g, n); break;
            case OpKind::Sign: k = make_typed<SignOp, false>(g, n); break;
            case OpKind::Clip: k = make_typed<ClipOp, false>(g, n); break;
            case OpKind::LeakyRelu: k = make_typed<LeakyReluOp>(g, n); break;
            case OpKind::Elu: k = make_typed<EluOp>(g, n); break;
            case OpKind::Selu: k = make_typed<SeluOp>(g, n); break;
            case OpKind::Gelu: k = make_typed<GeluOp>(g, n); break;
            default: break;
        }
    }
    if (k) return k;
    return make_error_kernel(std::string("internal error: no CPU kernel for ") + op_name(n.op) +
                             " on " + dtype_name(n.dtype));
}

}  // namespace graphrun::kernels
