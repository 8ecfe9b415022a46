// The elementwise ops beyond SPEC section 3 (README "Ops beyond SPEC section
// 3"), written once for the CPU's loops and the GPU's kernels like
// elementwise_ops.h: comparisons and logical ops (bool results as uint8_t
// 0/1), and the unary ops floor ... gelu with ONNX's semantics.
//
// The unary ops take their attributes as UnaryParams and a math policy M,
// each device's: M::Wide<T> is the type the formula is evaluated in (the
// CPU: double, so an f32 result is rounded once; the GPU: T, whose f32
// functions are within a few ulp) and M supplies floor ceil rint exp expm1
// log1p erf erfc tanh for it. The formulas are the cancellation-free forms
// (softplus with log1p, elu and selu with expm1, exact gelu with erfc, tanh
// gelu as x * sigmoid(2z)), equal to ONNX's definitions in exact arithmetic.
#pragma once
#include <cstdint>

#include "engine/kernels/common/elementwise_ops.h"

namespace graphrun::kernels {

// --- comparisons and logic: (T, T) -> bool ---------------------------------------
// NaN compares unequal to everything, itself included (IEEE, numpy).
struct EqualOp {
    template <class T>
    GR_HOST_DEVICE static uint8_t apply(T a, T b) { return a == b; }
};
struct NotEqualOp {
    template <class T>
    GR_HOST_DEVICE static uint8_t apply(T a, T b) { return a != b; }
};
struct LessOp {
    template <class T>
    GR_HOST_DEVICE static uint8_t apply(T a, T b) { return a < b; }
};
struct LessEqualOp {
    template <class T>
    GR_HOST_DEVICE static uint8_t apply(T a, T b) { return a <= b; }
};
struct GreaterOp {
    template <class T>
    GR_HOST_DEVICE static uint8_t apply(T a, T b) { return a > b; }
};
struct GreaterEqualOp {
    template <class T>
    GR_HOST_DEVICE static uint8_t apply(T a, T b) { return a >= b; }
};
// Bools are 0 or 1 bytes; any nonzero byte counts as true.
struct LogicalAndOp {
    template <class T>
    GR_HOST_DEVICE static uint8_t apply(T a, T b) { return (a != 0) & (b != 0); }
};
struct LogicalOrOp {
    template <class T>
    GR_HOST_DEVICE static uint8_t apply(T a, T b) { return (a != 0) | (b != 0); }
};
struct LogicalXorOp {
    template <class T>
    GR_HOST_DEVICE static uint8_t apply(T a, T b) { return (a != 0) ^ (b != 0); }
};

// --- unary ops with attributes -------------------------------------------------------

// The attributes of one node, in the evaluation type W (clip's bounds in T).
template <class T, class W>
struct UnaryParams {
    T lo{}, hi{};        // clip: bounds (lowest/highest of T when not given)
    W alpha{}, gamma{};  // leaky_relu, elu, selu
    bool tanh = false;   // gelu approximate="tanh"
};

struct FloorOp {
    template <class M, class T, class P>
    GR_HOST_DEVICE static T apply(T x, const P&) { return M::floor(x); }
};
struct CeilOp {
    template <class M, class T, class P>
    GR_HOST_DEVICE static T apply(T x, const P&) { return M::ceil(x); }
};
// Half to even (numpy.round, ONNX Round): rint in the default rounding mode.
struct RoundOp {
    template <class M, class T, class P>
    GR_HOST_DEVICE static T apply(T x, const P&) { return M::rint(x); }
};
struct ReciprocalOp {
    template <class M, class T, class P>
    GR_HOST_DEVICE static T apply(T x, const P&) { return T(1) / x; }
};
// 1, -1, or x itself for zeros (as +0, numpy) and NaN; integers too.
struct SignOp {
    template <class M, class T, class P>
    GR_HOST_DEVICE static T apply(T x, const P&) {
        if (x > 0) return T(1);
        if (x < 0) return T(-1);
        return x == 0 ? T(0) : x;
    }
};
// min(max(x, lo), hi) as ONNX Clip: lo > hi gives hi; NaN stays NaN.
struct ClipOp {
    template <class M, class T, class P>
    GR_HOST_DEVICE static T apply(T x, const P& p) {
        const T v = x < p.lo ? p.lo : x;
        return v > p.hi ? p.hi : v;
    }
};
struct ErfOp {
    template <class M, class T, class P>
    GR_HOST_DEVICE static T apply(T x, const P&) {
        using W = typename M::template Wide<T>;
        return static_cast<T>(M::erf(static_cast<W>(x)));
    }
};
// log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)).
struct SoftplusOp {
    template <class M, class T, class P>
    GR_HOST_DEVICE static T apply(T x, const P&) {
        using W = typename M::template Wide<T>;
        const W w = x;
        if (w > 0) return static_cast<T>(w + M::log1p(M::exp(-w)));
        return static_cast<T>(M::log1p(M::exp(w)));
    }
};
struct LeakyReluOp {
    template <class M, class T, class P>
    GR_HOST_DEVICE static T apply(T x, const P& p) {
        using W = typename M::template Wide<T>;
        return x < 0 ? static_cast<T>(p.alpha * static_cast<W>(x)) : x;
    }
};
// alpha * (exp(x) - 1) for x < 0, else x.
struct EluOp {
    template <class M, class T, class P>
    GR_HOST_DEVICE static T apply(T x, const P& p) {
        using W = typename M::template Wide<T>;
        return x < 0 ? static_cast<T>(p.alpha * M::expm1(static_cast<W>(x))) : x;
    }
};
// gamma * (alpha * (exp(x) - 1)) for x <= 0, else gamma * x.
struct SeluOp {
    template <class M, class T, class P>
    GR_HOST_DEVICE static T apply(T x, const P& p) {
        using W = typename M::template Wide<T>;
        const W w = x;
        if (w > 0) return static_cast<T>(p.gamma * w);
        return static_cast<T>(p.gamma * (p.alpha * M::expm1(w)));
    }
};
// Exact: x/2 * (1 + erf(x/sqrt 2)) = x/2 * erfc(-x/sqrt 2). Tanh: x/2 * (1 +
// tanh(z)) = x / (1 + exp(-2z)), z = sqrt(2/pi) * (x + 0.044715 x^3).
struct GeluOp {
    template <class M, class T, class P>
    GR_HOST_DEVICE static T apply(T x, const P& p) {
        using W = typename M::template Wide<T>;
        const W w = x;
        if (p.tanh) {
            const W z = W(0.7978845608028654) * (w + W(0.044715) * (w * w * w));
            return static_cast<T>(w / (W(1) + M::exp(W(-2) * z)));
        }
        return static_cast<T>(W(0.5) * w * M::erfc(-w / W(1.4142135623730951)));
    }
};

}  // namespace graphrun::kernels
