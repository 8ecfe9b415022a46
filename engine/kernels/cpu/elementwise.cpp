// Elementwise kernels: the binary ops with NumPy broadcasting (add sub mul div
// maximum minimum pow) and the unary ops (neg abs square relu exp log sqrt
// rsqrt tanh sigmoid sin cos). Integer arithmetic wraps (done in unsigned);
// integer division truncates, INT_MIN / -1 is INT_MIN, and division by zero
// or a negative integer power is an error, never UB.
#include <array>
#include <cmath>
#include <optional>
#include <type_traits>

#include "engine/kernels/common/elementwise_ops.h"
#include "engine/kernels/common/kernel_common.h"
#include "engine/kernels/cpu/broadcast_plan.h"
#include "engine/kernels/cpu/kernel_families.h"
#include "engine/kernels/cpu/parallel.h"
#include "engine/kernels/cpu/simd.h"
#include "engine/kernels/cpu/vmath.h"

namespace graphrun::kernels {

namespace {

// Elements per thread, at least: a cheap op streams memory, so a chunk must
// outweigh the hand-over to a worker (about a microsecond); a libm call per
// element (exp, pow, ...) is worth splitting much sooner.
constexpr int64_t kElementwiseGrain = int64_t{1} << 15;
constexpr int64_t kCostlyGrain = int64_t{1} << 11;
// Below about 0.2 ms of one thread's work, an op does not wake sleeping
// workers (parallel_for's cold_below): in an MLP on 2 cores, an add of
// 256x1024 floats after a gemm took 110 us per call when it woke the worker,
// 25 us on its own.
constexpr int64_t kElementwiseColdBelow = kElementwiseGrain * 16;
constexpr int64_t kCostlyColdBelow = kCostlyGrain * 4;
constexpr int64_t kVecGrain = int64_t{1} << 13;  // vec_f32: about 1.5 ns per element
// Below this a vec_f32 job (under 100 us) does not wake sleeping workers:
// waking one costs more than it saves (GPT-2's tanh over 32K elements took
// 0.14 ms on 2 threads, 0.09 ms on one).
constexpr int64_t kVecColdBelow = int64_t{1} << 16;

// --- binary ops: add sub mul div maximum minimum are elementwise_ops.h's ------

struct PowOp {
    template <class T>
    static T apply(T a, T b) {
        if constexpr (kIsInt<T>)
            return int_pow(a, b);
        else
            return std::pow(a, b);
    }
};

// One run in place: the output is also one operand (first: a, else b), and
// `c` is the other operand, contiguous (vc) or one repeated element. Each
// element is read before it is written, at the same index.
template <class Op, class T>
void binary_run_in_place(T* __restrict o, const T* __restrict c, int64_t n, bool vc, bool first) {
    if (vc && first) {
        blocked_loop(n, [=](int64_t i) { o[i] = Op::apply(o[i], c[i]); });
    } else if (vc) {
        blocked_loop(n, [=](int64_t i) { o[i] = Op::apply(c[i], o[i]); });
    } else {
        const T y = c[0];
        if (first)
            blocked_loop(n, [=](int64_t i) { o[i] = Op::apply(o[i], y); });
        else
            blocked_loop(n, [=](int64_t i) { o[i] = Op::apply(y, o[i]); });
    }
}

template <class T, class Op>
class BinaryKernel final : public KernelBase {
  public:
    BinaryKernel(const Graph& g, const Node& n) : KernelBase(g, n) {
        plan_ = make_plan(in_shapes_[0], in_shapes_[1], out_shape_);
    }

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        if (!plan_.ok) return "internal error: broadcast rank too large";
        if (out.numel == 0) return "";
        const T* a = static_cast<const T*>(in[0].data);
        const T* b = static_cast<const T*>(in[1].data);
        T* o = static_cast<T*>(out.data);
        // With a non-empty output every element of b is used, so scanning b is exact.
        if constexpr (kIsInt<T> && std::is_same_v<Op, DivOp>) {
            for (int64_t i = 0; i < in[1].numel; ++i)
                if (b[i] == 0) return "integer division by zero";
        }
        if constexpr (kIsInt<T> && std::is_same_v<Op, PowOp>) {
            bool any_negative = false;
            for (int64_t i = 0; i < in[1].numel; ++i) any_negative |= b[i] < 0;
            if (any_negative && !negative_powers_ok(a, b, out.numel))
                return "integers to negative integer powers are not allowed";
        }
        const BroadcastPlan& p = plan_;
        const bool va = p.inner_sa != 0, vb = p.inner_sb != 0;
        constexpr bool costly = std::is_same_v<Op, PowOp> || (kIsInt<T> && std::is_same_v<Op, DivOp>);
        // In place (Plan::donor): the output buffer is an operand's, whose
        // shape is the output's, so its offsets are the output's (pa or pb == po).
        const bool over_a = o == a, over_b = o == b;
        parallel_for(ctx, out.numel, costly ? kCostlyGrain : kElementwiseGrain,
                     [&](int64_t lo, int64_t hi) {
                         auto runs = [&] {
                             for_each_run(p, lo, hi,
                                          [&](int64_t po, int64_t pa, int64_t pb, int64_t len) {
                                              if (over_a && over_b) {
                                                  T* __restrict x = o + po;
                                                  blocked_loop(len, [=](int64_t i) { x[i] = Op::apply(x[i], x[i]); });
                                              } else if (over_a) {
                                                  binary_run_in_place<Op>(o + po, b + pb, len, vb, true);
                                              } else if (over_b) {
                                                  binary_run_in_place<Op>(o + po, a + pa, len, va, false);
                                              } else {
                                                  binary_run<Op>(o + po, a + pa, b + pb, len, va, vb);
                                              }
                                          });
                         };
                         if constexpr (costly)  // a call or a division per element: nothing to vectorize
                             runs();
                         else
                             with_isa(runs);
                     },
                     costly ? kCostlyColdBelow : kElementwiseColdBelow);
        return "";
    }

  private:
    // Whether every pair with a negative exponent has base 1 or -1.
    bool negative_powers_ok(const T* a, const T* b, int64_t numel) const {
        bool ok = true;
        const int64_t sa = plan_.inner_sa, sb = plan_.inner_sb;
        for_each_run(plan_, 0, numel, [&](int64_t, int64_t pa, int64_t pb, int64_t len) {
            for (int64_t i = 0; i < len && ok; ++i) {
                const T x = a[pa + i * sa], e = b[pb + i * sb];
                if (e < 0 && x != 1 && x != -1) ok = false;
            }
        });
        return ok;
    }

    BroadcastPlan plan_;
};

// --- unary ops -------------------------------------------------------------------

// neg abs square relu are elementwise_ops.h's.
struct ExpOp {
    template <class T>
    static T apply(T x) {
        return std::exp(x);
    }
};
struct LogOp {
    template <class T>
    static T apply(T x) {
        return std::log(x);
    }
};
struct SqrtOp {
    template <class T>
    static T apply(T x) {
        return std::sqrt(x);
    }
};
struct RsqrtOp {
    template <class T>
    static T apply(T x) {
        return T(1) / std::sqrt(x);
    }
};
struct TanhOp {
    template <class T>
    static T apply(T x) {
        return std::tanh(x);
    }
};
using SigmoidOp = SigmoidWith<ExpOp>;
struct SinOp {
    template <class T>
    static T apply(T x) {
        return std::sin(x);
    }
};
struct CosOp {
    template <class T>
    static T apply(T x) {
        return std::cos(x);
    }
};

// The f32 ops that vec_f32 evaluates (in double, rounded once, several
// elements per call: vmath.h); nullopt for the others.
template <class T, class Op>
constexpr std::optional<VecFn> kVecFn =
    !std::is_same_v<T, float>           ? std::nullopt
    : std::is_same_v<Op, ExpOp>         ? std::optional<VecFn>(VecFn::Exp)
    : std::is_same_v<Op, TanhOp>        ? std::optional<VecFn>(VecFn::Tanh)
    : std::is_same_v<Op, LogOp>         ? std::optional<VecFn>(VecFn::Log)
    : std::is_same_v<Op, SigmoidOp>     ? std::optional<VecFn>(VecFn::Sigmoid)
                                        : std::nullopt;

// Ops that are a few instructions per element (the others call libm).
template <class Op>
constexpr bool kCheapUnary = std::is_same_v<Op, NegOp> || std::is_same_v<Op, AbsOp> ||
                             std::is_same_v<Op, SquareOp> || std::is_same_v<Op, ReluOp>;

template <class T, class Op>
class UnaryKernel final : public KernelBase {
  public:
    UnaryKernel(const Graph& g, const Node& n) : KernelBase(g, n) {}

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        const T* x = static_cast<const T*>(in[0].data);
        T* o = static_cast<T*>(out.data);
        if constexpr (kVecFn<T, Op>.has_value()) {
            parallel_for(
                ctx, out.numel, kVecGrain,
                [x, o](int64_t lo, int64_t hi) { vec_f32(*kVecFn<T, Op>, x + lo, o + lo, hi - lo); },
                kVecColdBelow);
            return "";
        }
        constexpr bool cheap = kCheapUnary<Op>;
        parallel_for(ctx, out.numel, cheap ? kElementwiseGrain : kCostlyGrain,
                     [x, o](int64_t lo, int64_t hi) {
                         auto loop = [=] {
                             if (x == o) {  // in place (Plan::donor)
                                 T* __restrict d = o + lo;
                                 blocked_loop(hi - lo, [=](int64_t i) { d[i] = Op::apply(d[i]); });
                                 return;
                             }
                             const T* __restrict src = x + lo;
                             T* __restrict dst = o + lo;
                             blocked_loop(hi - lo, [=](int64_t i) { dst[i] = Op::apply(src[i]); });
                         };
                         if constexpr (cheap)
                             with_isa(loop);
                         else
                             loop();
                     },
                     cheap ? kElementwiseColdBelow : kCostlyColdBelow);
        return "";
    }
};

std::unique_ptr<Kernel> no_kernel(const Node& n) {
    return make_error_kernel(std::string("internal error: no CPU kernel for ") + op_name(n.op) +
                             " on " + dtype_name(n.dtype));
}

// Float-only ops are not instantiated for the integer types.
template <template <class, class> class K, class Op, bool FloatOnly = false>
std::unique_ptr<Kernel> make_typed(const Graph& g, const Node& n) {
    switch (n.dtype) {
        case DType::F32:
            return std::make_unique<K<float, Op>>(g, n);
        case DType::F64:
            return std::make_unique<K<double, Op>>(g, n);
        case DType::I32:
            if constexpr (!FloatOnly) return std::make_unique<K<int32_t, Op>>(g, n);
            break;
        case DType::I64:
            if constexpr (!FloatOnly) return std::make_unique<K<int64_t, Op>>(g, n);
            break;
        case DType::Bool:
        GR_STORAGE_DTYPE_CASES:  // widened before any kernel (engine/plan/storage_types.h)
            break;
    }
    return no_kernel(n);
}

}  // namespace

std::unique_ptr<Kernel> make_binary_kernel(const Graph& g, const Node& n) {
    if (n.inputs.size() != 2) return no_kernel(n);
    switch (n.op) {
        case OpKind::Add:
            return make_typed<BinaryKernel, AddOp>(g, n);
        case OpKind::Sub:
            return make_typed<BinaryKernel, SubOp>(g, n);
        case OpKind::Mul:
            return make_typed<BinaryKernel, MulOp>(g, n);
        case OpKind::Div:
            return make_typed<BinaryKernel, DivOp>(g, n);
        case OpKind::Maximum:
            return make_typed<BinaryKernel, MaxOp>(g, n);
        case OpKind::Minimum:
            return make_typed<BinaryKernel, MinOp>(g, n);
        case OpKind::Pow:
            return make_typed<BinaryKernel, PowOp>(g, n);
        default:
            return no_kernel(n);
    }
}

std::unique_ptr<Kernel> make_unary_kernel(const Graph& g, const Node& n) {
    if (n.inputs.size() != 1) return no_kernel(n);
    switch (n.op) {
        case OpKind::Neg:
            return make_typed<UnaryKernel, NegOp>(g, n);
        case OpKind::Abs:
            return make_typed<UnaryKernel, AbsOp>(g, n);
        case OpKind::Square:
            return make_typed<UnaryKernel, SquareOp>(g, n);
        case OpKind::Relu:
            return make_typed<UnaryKernel, ReluOp>(g, n);
        case OpKind::Exp:
            return make_typed<UnaryKernel, ExpOp, true>(g, n);
        case OpKind::Log:
            return make_typed<UnaryKernel, LogOp, true>(g, n);
        case OpKind::Sqrt:
            return make_typed<UnaryKernel, SqrtOp, true>(g, n);
        case OpKind::Rsqrt:
            return make_typed<UnaryKernel, RsqrtOp, true>(g, n);
        case OpKind::Tanh:
            return make_typed<UnaryKernel, TanhOp, true>(g, n);
        case OpKind::Sigmoid:
            return make_typed<UnaryKernel, SigmoidOp, true>(g, n);
        case OpKind::Sin:
            return make_typed<UnaryKernel, SinOp, true>(g, n);
        case OpKind::Cos:
            return make_typed<UnaryKernel, CosOp, true>(g, n);
        default:
            return make_activation_kernel(g, n);  // the unary ops beyond SPEC section 3
    }
}

}  // namespace graphrun::kernels
