// Run-time choice of the instruction set for the CPU kernels' hot loops. The
// build targets the x86-64 baseline; with_isa() compiles a loop three times
// (baseline, AVX2, AVX-512) and runs the best the CPU supports, and the f32
// row primitives below have hand-written AVX2/AVX-512 versions (simd.cpp).
//
// Numerics do not depend on the path: the variants never contract a * b + c
// into a fused multiply-add (GCC would once FMA is enabled; where one is
// wanted, as in the exponential below, every path writes it, the scalar one
// as std::fma), and the row
// primitives accumulate in the same lanes and combine them in the same order
// on every path, so every path gives the same bits.
#pragma once
#include <atomic>
#include <cstdint>

namespace graphrun::kernels {

enum class Isa : int { Baseline = 0, Avx2 = 1, Avx512 = 2 };

// What this CPU and OS support (AVX-512 means F, BW, DQ and VL).
Isa detected_isa();
// What the kernels use now: detected_isa(), or less after limit_isa().
inline std::atomic<int> g_active_isa{-1};
Isa init_active_isa();
inline Isa active_isa() {
    const int v = g_active_isa.load(std::memory_order_relaxed);
    return v >= 0 ? static_cast<Isa>(v) : init_active_isa();
}
// Caps the instruction set at `cap` (at most what the CPU has) and returns
// the previous setting; for tests that compare the paths on the same data.
Isa limit_isa(Isa cap);
const char* isa_name(Isa isa);

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define GRAPHRUN_X86_VARIANTS 1
#if defined(__clang__)
#define GRAPHRUN_NO_CONTRACT  // clang contracts only within one expression
#else
#define GRAPHRUN_NO_CONTRACT , optimize("fp-contract=off")
#endif
#define GRAPHRUN_TARGET_AVX2 __attribute__((target("avx2,fma,bmi,bmi2,popcnt") GRAPHRUN_NO_CONTRACT))
#define GRAPHRUN_TARGET_AVX512 \
    __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,bmi,bmi2,popcnt") GRAPHRUN_NO_CONTRACT))

// f() with everything it calls inlined into a function compiled for the ISA
// (flatten), so that its loops vectorize for it.
template <class F>
[[gnu::flatten]] GRAPHRUN_TARGET_AVX2 void run_avx2(const F& f) {
    f();
}
template <class F>
[[gnu::flatten]] GRAPHRUN_TARGET_AVX512 void run_avx512(const F& f) {
    f();
}
#endif

// Runs f() compiled for the active instruction set. Keep loops inside simple
// (blocked_loop, independent lanes): they are vectorized, not rewritten, so
// the results are those of the scalar code.
template <class F>
inline void with_isa(const F& f) {
#if defined(GRAPHRUN_X86_VARIANTS)
    switch (active_isa()) {
        case Isa::Avx512:
            run_avx512(f);
            return;
        case Isa::Avx2:
            run_avx2(f);
            return;
        case Isa::Baseline:
            break;
    }
#endif
    f();
}

// --- f32 row primitives ----------------------------------------------------------
// The same result on every path (see above).

// The sum of x[0, n) in double: 32 lanes, element i in lane i % 32, then the
// lanes combined in a fixed order. Within 1e-15 relative of the exact sum for
// any n this engine can hold, far inside f32 rounding.
double sum_f32(const float* x, int64_t n);
// The max of x[0, n), n >= 1; NaN when any element is NaN (numpy.max).
float max_f32(const float* x, int64_t n);
// o[i] = float(exp(x[i] - m)) for a finite m >= every x[i], computed in double
// (x - m is exact there); returns the sum of the unrounded exponentials, in
// double, laned like sum_f32. The exponential is within 3e-10 relative of
// exp, so each o[i] is the correctly rounded value or its neighbour.
double exp_shifted_f32(const float* x, float* o, int64_t n, float m);
// o[i] = float(double(o[i]) * s).
void scale_f32(float* o, int64_t n, double s);
// One softmax row of n >= 1 (o may be x): exp(x - max) / sum, the exponential
// and the sum as exp_shifted_f32's, scaled by 1 / sum in double; all NaN
// where the row holds a NaN or an infinite max. The softmax kernel's rows and
// the fused attention's (so both give the same bits).
void softmax_row_f32(const float* x, float* o, int64_t n);

// f32 <-> f16 rows (the storage type's casts): F16C's vcvtps2ph / vcvtph2ps
// where the CPU has them (every AVX2 CPU graphrun has met), the scalar
// conversions of engine/ir/half.h otherwise; the same bits either way (round
// to nearest even, subnormals, ±inf and NaN kept).
void f32_to_f16_row(const float* x, uint16_t* o, int64_t n);
void f16_to_f32_row(const uint16_t* x, float* o, int64_t n);

// The scalar exponential behind exp_shifted_f32, for t <= 0 (t < -150 gives
// exp(-150), which every f32 rounds to 0): Cody-Waite reduction by ln 2 and
// a degree-8 Taylor polynomial, in fused multiply-adds (std::fma here, the
// instruction in the vector paths: the same bits). Exposed for the tests.
double exp_nonpositive(double t);

}  // namespace graphrun::kernels
