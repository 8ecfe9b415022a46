// vec_f32: a register of floats at a time widened to double, the vector
// function applied, rounded back (vmath.h); a tail of under 8 through a padded copy.
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

constexpr double kSqrt2 = 1.4142135623730951;
constexpr double kGeluC0 = 0.7978845608028654, kGeluC1 = 0.044715;  // sqrt(2/pi), the cubic's

// The tanh form's z = sqrt(2/pi) * (x + 0.044715 * x^3), as GeluOp writes it.
double gelu_tanh_z(double x) { return kGeluC0 * (x + kGeluC1 * (x * x * x)); }

double scalar(VecFn f, double x) {
    switch (f) {
        case VecFn::Exp: return std::exp(x);
        case VecFn::Tanh: return std::tanh(x);
        case VecFn::Erf: return std::erf(x);
        case VecFn::Log: return std::log(x);
        case VecFn::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
        case VecFn::Gelu: return 0.5 * x * std::erfc(-x / kSqrt2);
        case VecFn::GeluTanh: return x / (1.0 + std::exp(-2.0 * gelu_tanh_z(x)));
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
__m128d _ZGVbN2v_erfc(__m128d);
}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
extern "C" {
__m256d _ZGVdN4v_exp(__m256d);
__m256d _ZGVdN4v_tanh(__m256d);
__m256d _ZGVdN4v_erf(__m256d);
__m256d _ZGVdN4v_log(__m256d);
__m256d _ZGVdN4v_erfc(__m256d);
__m512d _ZGVeN8v_exp(__m512d);
__m512d _ZGVeN8v_tanh(__m512d);
__m512d _ZGVeN8v_erf(__m512d);
__m512d _ZGVeN8v_log(__m512d);
__m512d _ZGVeN8v_erfc(__m512d);
}

// y[0, n) = f(x[0, n)), n a multiple of 8: each register of floats widened
// to doubles, the function applied, rounded back (as static_cast does), with
// no pass through memory in between. Around the libm function, the steps of
// vec_f32_reference's formula in the same order (no fma: -ffp-contract=off),
// so every lane has its bits: sigmoid 1 / (1 + exp(-x)), gelu
// 0.5 * x * erfc(-x / sqrt 2) and its tanh form x / (1 + exp(-2z)).
// (The AVX-512 conversions are the masked forms: GCC 12 warns on the others.)
__attribute__((target("sse2"))) void apply_sse(VecFn f, const float* x, float* y, int64_t n) {
    __m128d (*g)(__m128d) = nullptr;
    switch (f) {
        case VecFn::Exp:
        case VecFn::Sigmoid:
        case VecFn::GeluTanh: g = _ZGVbN2v_exp; break;
        case VecFn::Tanh: g = _ZGVbN2v_tanh; break;
        case VecFn::Erf: g = _ZGVbN2v_erf; break;
        case VecFn::Log: g = _ZGVbN2v_log; break;
        case VecFn::Gelu: g = _ZGVbN2v_erfc; break;
    }
    const __m128d one = _mm_set1_pd(1.0), sign = _mm_set1_pd(-0.0), half = _mm_set1_pd(0.5), sqrt2 = _mm_set1_pd(kSqrt2), minus2 = _mm_set1_pd(-2.0),
             c0 = _mm_set1_pd(kGeluC0), c1 = _mm_set1_pd(kGeluC1);
    for (int64_t i = 0; i < n; i += 2) {
        const __m128d v = _mm_cvtps_pd(_mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + i))));
        __m128d d = v;
        switch (f) {  // the argument
            case VecFn::Sigmoid: d = _mm_xor_pd(v, sign); break;
            case VecFn::Gelu: d = _mm_div_pd(_mm_xor_pd(v, sign), sqrt2); break;
            case VecFn::GeluTanh:
                d = _mm_mul_pd(minus2, _mm_mul_pd(c0, _mm_add_pd(v, _mm_mul_pd(c1, _mm_mul_pd(_mm_mul_pd(v, v), v)))));
                break;
            default: break;
        }
        d = g(d);
        switch (f) {  // the result
            case VecFn::Sigmoid: d = _mm_div_pd(one, _mm_add_pd(one, d)); break;
            case VecFn::Gelu: d = _mm_mul_pd(_mm_mul_pd(half, v), d); break;
            case VecFn::GeluTanh: d = _mm_div_pd(v, _mm_add_pd(one, d)); break;
            default: break;
        }
        _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), _mm_castps_si128(_mm_cvtpd_ps(d)));
    }
}

__attribute__((target("avx2,fma"))) void apply_avx2(VecFn f, const float* x, float* y, int64_t n) {
    __m256d (*g)(__m256d) = nullptr;
    switch (f) {
        case VecFn::Exp:
        case VecFn::Sigmoid:
        case VecFn::GeluTanh: g = _ZGVdN4v_exp; break;
        case VecFn::Tanh: g = _ZGVdN4v_tanh; break;
        case VecFn::Erf: g = _ZGVdN4v_erf; break;
        case VecFn::Log: g = _ZGVdN4v_log; break;
        case VecFn::Gelu: g = _ZGVdN4v_erfc; break;
    }
    const __m256d one = _mm256_set1_pd(1.0), sign = _mm256_set1_pd(-0.0), half = _mm256_set1_pd(0.5), sqrt2 = _mm256_set1_pd(kSqrt2), minus2 = _mm256_set1_pd(-2.0),
             c0 = _mm256_set1_pd(kGeluC0), c1 = _mm256_set1_pd(kGeluC1);
    for (int64_t i = 0; i < n; i += 4) {
        const __m256d v = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
        __m256d d = v;
        switch (f) {  // the argument
            case VecFn::Sigmoid: d = _mm256_xor_pd(v, sign); break;
            case VecFn::Gelu: d = _mm256_div_pd(_mm256_xor_pd(v, sign), sqrt2); break;
            case VecFn::GeluTanh:
                d = _mm256_mul_pd(minus2, _mm256_mul_pd(c0, _mm256_add_pd(v, _mm256_mul_pd(c1, _mm256_mul_pd(_mm256_mul_pd(v, v), v)))));
                break;
            default: break;
        }
        d = g(d);
        switch (f) {  // the result
            case VecFn::Sigmoid: d = _mm256_div_pd(one, _mm256_add_pd(one, d)); break;
            case VecFn::Gelu: d = _mm256_mul_pd(_mm256_mul_pd(half, v), d); break;
            case VecFn::GeluTanh: d = _mm256_div_pd(v, _mm256_add_pd(one, d)); break;
            default: break;
        }
        _mm_storeu_ps(y + i, _mm256_cvtpd_ps(d));
    }
}

__attribute__((target("avx512f,avx512dq,avx2,fma"))) void apply_avx512(VecFn f, const float* x, float* y, int64_t n) {
    __m512d (*g)(__m512d) = nullptr;
    switch (f) {
        case VecFn::Exp:
        case VecFn::Sigmoid:
        case VecFn::GeluTanh: g = _ZGVeN8v_exp; break;
        case VecFn::Tanh: g = _ZGVeN8v_tanh; break;
        case VecFn::Erf: g = _ZGVeN8v_erf; break;
        case VecFn::Log: g = _ZGVeN8v_log; break;
        case VecFn::Gelu: g = _ZGVeN8v_erfc; break;
    }
    const __m512d one = _mm512_set1_pd(1.0), sign = _mm512_set1_pd(-0.0), half = _mm512_set1_pd(0.5), sqrt2 = _mm512_set1_pd(kSqrt2), minus2 = _mm512_set1_pd(-2.0),
             c0 = _mm512_set1_pd(kGeluC0), c1 = _mm512_set1_pd(kGeluC1);
    for (int64_t i = 0; i < n; i += 8) {
        const __m512d v = _mm512_maskz_cvtps_pd(0xff, _mm256_loadu_ps(x + i));
        __m512d d = v;
        switch (f) {  // the argument
            case VecFn::Sigmoid: d = _mm512_xor_pd(v, sign); break;
            case VecFn::Gelu: d = _mm512_div_pd(_mm512_xor_pd(v, sign), sqrt2); break;
            case VecFn::GeluTanh:
                d = _mm512_mul_pd(minus2, _mm512_mul_pd(c0, _mm512_add_pd(v, _mm512_mul_pd(c1, _mm512_mul_pd(_mm512_mul_pd(v, v), v)))));
                break;
            default: break;
        }
        d = g(d);
        switch (f) {  // the result
            case VecFn::Sigmoid: d = _mm512_div_pd(one, _mm512_add_pd(one, d)); break;
            case VecFn::Gelu: d = _mm512_mul_pd(_mm512_mul_pd(half, v), d); break;
            case VecFn::GeluTanh: d = _mm512_div_pd(v, _mm512_add_pd(one, d)); break;
            default: break;
        }
        _mm256_storeu_ps(y + i, _mm512_maskz_cvtpd_ps(0xff, d));
    }
}
#pragma GCC diagnostic pop
#endif

}  // namespace

float vec_f32_reference(VecFn f, float x) { return static_cast<float>(scalar(f, static_cast<double>(x))); }

#if defined(GRAPHRUN_VMATH_MVEC)
namespace {

void apply(Isa isa, VecFn f, const float* x, float* y, int64_t n) {
    switch (isa) {
        case Isa::Avx512: apply_avx512(f, x, y, n); return;
        case Isa::Avx2: apply_avx2(f, x, y, n); return;
        case Isa::Baseline: apply_sse(f, x, y, n); return;
    }
}

}  // namespace

void vec_f32(VecFn f, const float* x, float* y, int64_t n) {
    if (n <= 0) return;
    const Isa isa = active_isa();
    const int64_t body = n & ~int64_t{7};
    apply(isa, f, x, y, body);
    if (body == n) return;
    float tail[8];
    for (float& t : tail) t = 1.0f;  // a harmless operand for every function
    std::copy(x + body, x + n, tail);
    apply(isa, f, tail, tail, 8);
    std::copy(tail, tail + (n - body), y + body);
}

const char* vec_math_library() { return "libmvec"; }
#else
void vec_f32(VecFn f, const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = vec_f32_reference(f, x[i]);
}

const char* vec_math_library() { return "scalar libm"; }
#endif

}  // namespace graphrun::kernels
