// The elementwise ops whose arithmetic is the same on both devices, written
// once for the CPU's loops and the GPU's kernels (host and device functions
// under nvcc): integer arithmetic wraps (done in unsigned), integer division
// truncates with INT_MIN / -1 = INT_MIN, maximum/minimum propagate NaN like
// NumPy, relu keeps NaN. What differs stays with each device: the checks for
// integer division by zero and negative powers (the CPU scans before its
// loop, the GPU sets an error flag) and the libm calls (exp, pow, ...).
#pragma once
#include <cmath>
#include <type_traits>

#if defined(__CUDACC__)
#define GR_HOST_DEVICE __host__ __device__
#else
#define GR_HOST_DEVICE
#endif

namespace graphrun::kernels {

template <class T>
using Unsigned = std::make_unsigned_t<T>;
template <class T>
constexpr bool kIsInt = std::is_integral_v<T>;

struct AddOp {
    template <class T>
    GR_HOST_DEVICE static T apply(T a, T b) {
        if constexpr (kIsInt<T>)
            return static_cast<T>(static_cast<Unsigned<T>>(a) + static_cast<Unsigned<T>>(b));
        else
            return a + b;
    }
};
struct SubOp {
    template <class T>
    GR_HOST_DEVICE static T apply(T a, T b) {
        if constexpr (kIsInt<T>)
            return static_cast<T>(static_cast<Unsigned<T>>(a) - static_cast<Unsigned<T>>(b));
        else
            return a - b;
    }
};
struct MulOp {
    template <class T>
    GR_HOST_DEVICE static T apply(T a, T b) {
        if constexpr (kIsInt<T>)
            return static_cast<T>(static_cast<Unsigned<T>>(a) * static_cast<Unsigned<T>>(b));
        else
            return a * b;
    }
};
// Integer division by zero gives 0 here; each device reports it its own way.
struct DivOp {
    template <class T>
    GR_HOST_DEVICE static T apply(T a, T b) {
        if constexpr (kIsInt<T>) {
            if (b == 0) return 0;
            if (b == -1) return static_cast<T>(Unsigned<T>{0} - static_cast<Unsigned<T>>(a));
            return static_cast<T>(a / b);
        } else {
            return a / b;  // IEEE on both devices (nvcc's default -prec-div=true)
        }
    }
};
// NaN in either operand gives NaN (numpy.maximum/minimum).
struct MaxOp {
    template <class T>
    GR_HOST_DEVICE static T apply(T a, T b) {
        if constexpr (kIsInt<T>)
            return a > b ? a : b;
        else
            return (a > b || a != a) ? a : b;
    }
};
struct MinOp {
    template <class T>
    GR_HOST_DEVICE static T apply(T a, T b) {
        if constexpr (kIsInt<T>)
            return a < b ? a : b;
        else
            return (a < b || a != a) ? a : b;
    }
};

// Integer power by squaring, wrapping. A negative exponent gives 0 unless the
// base is 1 or -1, whose powers are exact; each device reports the others.
template <class T>
GR_HOST_DEVICE T int_pow(T base, T exp) {
    using U = Unsigned<T>;
    if (exp < 0) {
        if (base == 1) return 1;
        if (base == -1) return (exp & 1) ? T(-1) : T(1);
        return 0;
    }
    U result = 1, b = static_cast<U>(base);
    for (auto e = static_cast<U>(exp); e != 0; e >>= 1) {
        if (e & 1) result *= b;
        b *= b;
    }
    return static_cast<T>(result);
}

struct NegOp {
    template <class T>
    GR_HOST_DEVICE static T apply(T x) {
        if constexpr (kIsInt<T>)
            return static_cast<T>(Unsigned<T>{0} - static_cast<Unsigned<T>>(x));
        else
            return -x;
    }
};
struct AbsOp {
    template <class T>
    GR_HOST_DEVICE static T apply(T x) {
        if constexpr (kIsInt<T>) {
            return x < 0 ? NegOp::apply(x) : x;  // abs(INT_MIN) wraps to INT_MIN
        } else {
#if defined(__CUDA_ARCH__)
            return fabs(x);
#else
            return std::fabs(x);
#endif
        }
    }
};
struct SquareOp {
    template <class T>
    GR_HOST_DEVICE static T apply(T x) {
        return MulOp::apply(x, x);
    }
};
struct ReluOp {
    template <class T>
    GR_HOST_DEVICE static T apply(T x) {
        return x < 0 ? T(0) : x;  // NaN stays NaN
    }
};
// 1 / (1 + exp(-x)) with exp of a non-positive argument only, so neither
// branch overflows; Exp is the device's exp.
template <class Exp>
struct SigmoidWith {
    template <class T>
    GR_HOST_DEVICE static T apply(T x) {
        if (x >= 0) return T(1) / (T(1) + Exp::apply(-x));
        const T e = Exp::apply(x);
        return e / (T(1) + e);
    }
};

}  // namespace graphrun::kernels
