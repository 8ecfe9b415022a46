// The random streams of random_uniform and random_normal: Philox4x32-10
// (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11, the
// Random123 generator) and the exact mapping from (seed, element index) to a
// value. Header-only, no std:: calls, so that a CUDA kernel can include it and
// reproduce the CPU's values: uniform bit-exactly, normal to within the
// last-place differences of the device's log/cos/sqrt.
//
// The stream, normatively:
//
//   key     = { seed & 0xffffffff, seed >> 32 }          (seed: the int64 attr, >= 0)
//   block(c)= philox4x32_10({ lo32(c), hi32(c), 0, 0 }, key)   -> 4 lanes x[0..3]
//
//   random_uniform, f32, element i (row-major):
//     x = block(i / 4)[i % 4]
//     u = float(x >> 8) * 2^-24                           (exact; u in [0, 1))
//     value = lo + d * u  with lo = float(low), d = fl(float(high) - lo),
//             every operation a separately rounded f32 operation
//             (no fused multiply-add): t = fl(d * u); value = fl(lo + t)
//   random_uniform, f64, element i:
//     x = block(i / 2);  a = x[2*(i%2)] >> 5;  b = x[2*(i%2)+1] >> 6
//     u = double(a * 2^26 + b) * 2^-53                    (exact; u in [0, 1))
//     value = lo + d * u  with lo = low, d = high - low, f64 operations, no fma
//   random_normal (f32 and f64), element i:
//     x  = block(i)
//     u1 = (double(x[0]) + 1) * 2^-32                     (in (0, 1])
//     u2 = double(x[1]) * 2^-32                           (in [0, 1))
//     z  = sqrt(-2 * log(u1)) * cos(2*pi * u2)            (Box-Muller, in double;
//                                                          2*pi = 6.283185307179586)
//     value = mean + stddev * z in double, then rounded to the dtype
//     (lanes 2 and 3 are unused, so element i depends on block i alone).
#pragma once
#include <cstdint>

#ifndef GRAPHRUN_HD
#if defined(__CUDACC__)
#define GRAPHRUN_HD __host__ __device__
#else
#define GRAPHRUN_HD
#endif
#endif

namespace graphrun::philox {

struct Counter {
    uint32_t v[4];
};
struct Key {
    uint32_t v[2];
};

constexpr uint32_t kM0 = 0xD2511F53u;  // multipliers
constexpr uint32_t kM1 = 0xCD9E8D57u;
constexpr uint32_t kW0 = 0x9E3779B9u;  // Weyl key increments: golden ratio, sqrt(3) - 1
constexpr uint32_t kW1 = 0xBB67AE85u;

GRAPHRUN_HD inline void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
    const uint64_t p = static_cast<uint64_t>(a) * static_cast<uint64_t>(b);
    hi = static_cast<uint32_t>(p >> 32);
    lo = static_cast<uint32_t>(p);
}

// One Philox4x32 round.
GRAPHRUN_HD inline Counter philox_round(Counter c, Key k) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kM0, c.v[0], hi0, lo0);
    mulhilo(kM1, c.v[2], hi1, lo1);
    Counter r;
    r.v[0] = hi1 ^ c.v[1] ^ k.v[0];
    r.v[1] = lo1;
    r.v[2] = hi0 ^ c.v[3] ^ k.v[1];
    r.v[3] = lo0;
    return r;
}

// Philox4x32-10: ten rounds, the key bumped between rounds.
GRAPHRUN_HD inline Counter philox4x32_10(Counter c, Key k) {
    for (int r = 0; r < 10; ++r) {
        if (r > 0) {
            k.v[0] += kW0;
            k.v[1] += kW1;
        }
        c = philox_round(c, k);
    }
    return c;
}

GRAPHRUN_HD inline Key seed_key(uint64_t seed) {
    Key k;
    k.v[0] = static_cast<uint32_t>(seed & 0xffffffffu);
    k.v[1] = static_cast<uint32_t>(seed >> 32);
    return k;
}

// The four lanes of counter block `index` (see the stream definition above).
GRAPHRUN_HD inline Counter block(uint64_t index, Key k) {
    Counter c;
    c.v[0] = static_cast<uint32_t>(index & 0xffffffffu);
    c.v[1] = static_cast<uint32_t>(index >> 32);
    c.v[2] = 0;
    c.v[3] = 0;
    return philox4x32_10(c, k);
}

// Separately rounded multiply and add: no contraction into an fma, on either
// device (nvcc contracts by default; the x86-64 baseline has no fma).
GRAPHRUN_HD inline float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}
GRAPHRUN_HD inline float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}
GRAPHRUN_HD inline double mul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __dmul_rn(a, b);
#else
    return a * b;
#endif
}
GRAPHRUN_HD inline double add_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __dadd_rn(a, b);
#else
    return a + b;
#endif
}

// u in [0, 1) from the top 24 bits of a lane.
GRAPHRUN_HD inline float unit_f32(uint32_t x) {
    return static_cast<float>(x >> 8) * 5.9604644775390625e-8f;
}

// u in [0, 1) from 53 bits of two lanes.
GRAPHRUN_HD inline double unit_f64(uint32_t a, uint32_t b) {
    const uint64_t bits = (static_cast<uint64_t>(a >> 5) << 26) | static_cast<uint64_t>(b >> 6);
    return static_cast<double>(bits) * 1.1102230246251565404236316680908203125e-16;
}

// Element i of random_uniform(dtype=f32); lo = float(low), d = float(high) - lo.
GRAPHRUN_HD inline float uniform_f32(uint64_t i, Key k, float lo, float d) {
    const Counter x = block(i / 4, k);
    return add_rn(lo, mul_rn(d, unit_f32(x.v[i % 4])));
}

// Element i of random_uniform(dtype=f64); d = high - low.
GRAPHRUN_HD inline double uniform_f64(uint64_t i, Key k, double lo, double d) {
    const Counter x = block(i / 2, k);
    const unsigned lane = static_cast<unsigned>(i % 2) * 2;
    return add_rn(lo, mul_rn(d, unit_f64(x.v[lane], x.v[lane + 1])));
}

// The two uniforms of element i of random_normal: u1 in (0, 1], u2 in [0, 1).
GRAPHRUN_HD inline void normal_uniforms(uint64_t i, Key k, double& u1, double& u2) {
    const Counter x = block(i, k);
    constexpr double kTwoPowMinus32 = 2.3283064365386962890625e-10;
    u1 = (static_cast<double>(x.v[0]) + 1.0) * kTwoPowMinus32;
    u2 = static_cast<double>(x.v[1]) * kTwoPowMinus32;
}

constexpr double kTwoPi = 6.283185307179586;

}  // namespace graphrun::philox
