// The 16-bit float storage types (issue 27): IEEE binary16 (f16, NumPy's
// float16) and bfloat16 (bf16: float32's top half), as their bits, with
// conversions the CPU kernels, the GPU kernels (the same functions, compiled
// by nvcc for the device), the literal parser, .npy and the printer share.
//
// To 16 bits: round to nearest, ties to even, straight from the double (no
// double rounding through float, as NumPy's double -> float16); overflow gives
// ±inf, NaN stays NaN (quiet, sign kept). From 16 bits: exact.
#pragma once
#include <math.h>

#include <cstdint>

#if defined(__CUDACC__)
#define GR_HD __host__ __device__
#else
#define GR_HD
#endif

namespace graphrun {

struct Half {
    uint16_t bits = 0;
};
struct BFloat16 {
    uint16_t bits = 0;
};

namespace half_detail {

// A binary float with `ebits` exponent bits and `mbits` stored mantissa bits.
template <int ebits, int mbits>
GR_HD inline uint16_t from_double(double x) {
    constexpr int bias = (1 << (ebits - 1)) - 1;
    constexpr int emax = bias;         // largest normal exponent
    constexpr int emin = 1 - bias;     // smallest normal exponent
    constexpr uint16_t inf = static_cast<uint16_t>(((1u << ebits) - 1u) << mbits);
    const uint16_t sign = ::copysign(1.0, x) < 0 ? static_cast<uint16_t>(1u << (ebits + mbits)) : 0;
    if (x != x) return static_cast<uint16_t>(sign | inf | (1u << (mbits - 1)));
    const double a = ::fabs(x);
    if (a == 0) return sign;
    if (a > 1e300) return static_cast<uint16_t>(sign | inf);  // inf, and no overflow in ldexp below
    int e2 = 0;
    (void)::frexp(a, &e2);  // a = m * 2^e2, m in [0.5, 1)
    int e = e2 - 1;            // a in [2^e, 2^(e+1))
    if (e < emin) {
        // Subnormal: multiples of 2^(emin - mbits); a quotient of 2^mbits is the least normal.
        const double q = ::rint(::ldexp(a, mbits - emin));
        return static_cast<uint16_t>(sign | static_cast<uint16_t>(q));
    }
    double q = ::rint(::ldexp(a, mbits - e));  // in [2^mbits, 2^(mbits+1)]
    if (q >= static_cast<double>(2u << mbits)) {
        q /= 2;
        ++e;
    }
    if (e > emax) return static_cast<uint16_t>(sign | inf);
    const unsigned m = static_cast<unsigned>(q) - (1u << mbits);
    return static_cast<uint16_t>(sign | (static_cast<unsigned>(e + bias) << mbits) | m);
}

template <int ebits, int mbits>
GR_HD inline double to_double(uint16_t h) {
    constexpr int bias = (1 << (ebits - 1)) - 1;
    const bool neg = (h >> (ebits + mbits)) & 1u;
    const unsigned e = (h >> mbits) & ((1u << ebits) - 1u);
    const unsigned m = h & ((1u << mbits) - 1u);
    double v;
    if (e == (1u << ebits) - 1u) v = m ? NAN : INFINITY;
    else if (e == 0) v = ::ldexp(static_cast<double>(m), 1 - bias - mbits);
    else v = ::ldexp(static_cast<double>(m | (1u << mbits)), static_cast<int>(e) - bias - mbits);
    return neg ? -v : v;
}

}  // namespace half_detail

GR_HD inline Half half_from_double(double x) { return Half{half_detail::from_double<5, 10>(x)}; }
GR_HD inline double half_to_double(Half h) { return half_detail::to_double<5, 10>(h.bits); }
GR_HD inline float half_to_float(Half h) { return static_cast<float>(half_to_double(h)); }
GR_HD inline BFloat16 bf16_from_double(double x) { return BFloat16{half_detail::from_double<8, 7>(x)}; }
GR_HD inline double bf16_to_double(BFloat16 h) { return half_detail::to_double<8, 7>(h.bits); }
GR_HD inline float bf16_to_float(BFloat16 h) {
    return static_cast<float>(bf16_to_double(h));
}

}  // namespace graphrun
