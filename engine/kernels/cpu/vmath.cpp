// vec_f32: blocks of up to kBlock elements widened to double, the vector
// function applied a register at a time, rounded back (vmath.h).
#include "engine/kernels/cpu/vmath.h"

#include <algorithm>
#include <cmath>

#include "engine/kernels/cpu/simd.h"

#if defined(GRAPHRUN_HAVE_LIBMVEC) && defined(GRAPHRUN_X86_VARIANTS)
#include <immintrin.h>
#define GRAPHRUN_VMATH_MVEC 1
#endif

namespace graphrun::kernels {

namespace {

constexpr int64_t kBlock = 256;  // doubles per block: 2 KiB on the stack

double scalar(VecFn f, double x) {
    switch (f) {
        case VecFn::Exp: return std::exp(x);
        case VecFn::Tanh: return std::tanh(x);
        case VecFn::Erf: return std::erf(x);
        case VecFn::Log: return std::log(x);
        case VecFn::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
    }
    return x;
}

#if defined(GRAPHRUN_VMATH_MVEC)
// The x86-64 vector function ABI's names: b = SSE (2 lanes), d = AVX2 (4),
// e = AVX-512 (8).
extern "C" {
__m128d _ZGVbN2v_exp(__m128d);
__m128d _ZGVbN2v_tanh(__m128d);
__m128d _ZGVbN2v_erf(__m128d);
__m128d _ZGVbN2v_log(__m128d);
}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
extern "C" {
__m256d _ZGVdN4v_exp(__m256d);
__m256d _ZGVdN4v_tanh(__m256d);
__m256d _ZGVdN4v_erf(__m256d);
__m256d _ZGVdN4v_log(__m256d);
__m512d _ZGVeN8v_exp(__m512d);
__m512d _ZGVeN8v_tanh(__m512d);
__m512d _ZGVeN8v_erf(__m512d);
__m512d _ZGVeN8v_log(__m512d);
}

// The libm function behind f (sigmoid's is exp, applied to -x).
VecFn base_of(VecFn f) { return f == VecFn::Sigmoid ? VecFn::Exp : f; }

// d[0, n) = g(d[0, n)) in place, n a multiple of 8.
void apply_sse(VecFn f, double* d, int64_t n) {
    __m128d (*g)(__m128d) = nullptr;
    switch (base_of(f)) {
        case VecFn::Exp: g = _ZGVbN2v_exp; break;
        case VecFn::Tanh: g = _ZGVbN2v_tanh; break;
        case VecFn::Erf: g = _ZGVbN2v_erf; break;
        case VecFn::Log: g = _ZGVbN2v_log; break;
        case VecFn::Sigmoid: break;
    }
    for (int64_t i = 0; i < n; i += 2) _mm_storeu_pd(d + i, g(_mm_loadu_pd(d + i)));
}

__attribute__((target("avx2,fma"))) void apply_avx2(VecFn f, double* d, int64_t n) {
    __m256d (*g)(__m256d) = nullptr;
    switch (base_of(f)) {
        case VecFn::Exp: g = _ZGVdN4v_exp; break;
        case VecFn::Tanh: g = _ZGVdN4v_tanh; break;
        case VecFn::Erf: g = _ZGVdN4v_erf; break;
        case VecFn::Log: g = _ZGVdN4v_log; break;
        case VecFn::Sigmoid: break;
    }
    for (int64_t i = 0; i < n; i += 4) _mm256_storeu_pd(d + i, g(_mm256_loadu_pd(d + i)));
}

__attribute__((target("avx512f,avx512dq,avx2,fma"))) void apply_avx512(VecFn f, double* d, int64_t n) {
    __m512d (*g)(__m512d) = nullptr;
    switch (base_of(f)) {
        case VecFn::Exp: g = _ZGVeN8v_exp; break;
        case VecFn::Tanh: g = _ZGVeN8v_tanh; break;
        case VecFn::Erf: g = _ZGVeN8v_erf; break;
        case VecFn::Log: g = _ZGVeN8v_log; break;
        case VecFn::Sigmoid: break;
    }
    for (int64_t i = 0; i < n; i += 8) _mm512_storeu_pd(d + i, g(_mm512_loadu_pd(d + i)));
}
#pragma GCC diagnostic pop
#endif

}  // namespace

float vec_f32_reference(VecFn f, float x) { return static_cast<float>(scalar(f, static_cast<double>(x))); }

#if defined(GRAPHRUN_VMATH_MVEC)
void vec_f32(VecFn f, const float* x, float* y, int64_t n) {
    const Isa isa = active_isa();
    alignas(64) double d[kBlock];
    const bool sigmoid = f == VecFn::Sigmoid;
    for (int64_t b = 0; b < n; b += kBlock) {
        const int64_t m = std::min(kBlock, n - b);
        const int64_t padded = (m + 7) & ~int64_t{7};
        for (int64_t i = 0; i < m; ++i) d[i] = sigmoid ? -static_cast<double>(x[b + i]) : static_cast<double>(x[b + i]);
        for (int64_t i = m; i < padded; ++i) d[i] = 1.0;  // a harmless operand for every function
        switch (isa) {
            case Isa::Avx512: apply_avx512(f, d, padded); break;
            case Isa::Avx2: apply_avx2(f, d, padded); break;
            case Isa::Baseline: apply_sse(f, d, padded); break;
        }
        if (sigmoid)
            for (int64_t i = 0; i < m; ++i) y[b + i] = static_cast<float>(1.0 / (1.0 + d[i]));
        else
            for (int64_t i = 0; i < m; ++i) y[b + i] = static_cast<float>(d[i]);
    }
}

const char* vec_math_library() { return "libmvec"; }
#else
void vec_f32(VecFn f, const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = vec_f32_reference(f, x[i]);
}

const char* vec_math_library() { return "scalar libm"; }
#endif

}  // namespace graphrun::kernels
