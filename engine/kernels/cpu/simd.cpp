// Instruction-set detection and the f32 row primitives of simd.h: a scalar
// reference, and AVX2 and AVX-512 versions that keep its lanes and its order
// of operations, so that all three give the same bits.
#include "engine/kernels/cpu/simd.h"

#include "engine/ir/half.h"

#include <algorithm>
#include <cmath>
#include <bit>
#include <limits>

#if defined(GRAPHRUN_X86_VARIANTS)
#include <cpuid.h>
#include <immintrin.h>
#if !defined(__clang__)
// GCC 12 warns inside its own AVX-512 headers (their _mm512_undefined_* operands).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#endif

namespace graphrun::kernels {

namespace {

constexpr int kLanes = 32;  // sum lanes: element i goes to lane i % 32
constexpr int kMaxLanes = 16;

// The 32 sum lanes combined in one fixed order.
double combine_lanes(const double* l) {
    double s[8];
    for (int j = 0; j < 8; ++j) s[j] = (l[j] + l[8 + j]) + (l[16 + j] + l[24 + j]);
    return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}

// The 16 max lanes combined, NaN when any element was NaN.
float combine_max(const float* l, bool nan) {
    if (nan) return std::numeric_limits<float>::quiet_NaN();
    float m = l[0];
    for (int j = 1; j < kMaxLanes; ++j) m = l[j] > m ? l[j] : m;
    return m;
}

constexpr double kLog2e = 1.4426950408889634;
constexpr double kShift = 0x1.8p52;  // adding it rounds to an integer kept in the low bits
constexpr double kLn2Hi = 0x1.62e42fee00000p-1;  // k * kLn2Hi is exact for |k| < 2^20
constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;
constexpr double kExpFloor = -150.0;
// 1/k!, k = 8 down to 0 (Horner's order).
constexpr double kInvFact[9] = {1.0 / 40320, 1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24,
                                1.0 / 6,     0.5,        1.0,       1.0};
constexpr uint64_t kExpBias = std::bit_cast<uint64_t>(kShift) - 1023;

// exp_nonpositive, inlined where it is used: the vector paths' steps with
// the same fused multiply-adds (std::fma rounds once, as the instruction
// does, so every path has the same bits). Inside an AVX2 or AVX-512 function
// each std::fma is one instruction; on the baseline path, glibc's fma.
[[gnu::always_inline]] inline double exp_nonpositive_inline(double t) {
    t = t > kExpFloor ? t : kExpFloor;  // as maxpd(t, floor)
    const double kd = std::fma(t, kLog2e, kShift);
    const double k = kd - kShift;
    const double r = std::fma(-k, kLn2Lo, std::fma(-k, kLn2Hi, t));
    double p = kInvFact[0];
    for (int d = 1; d < 9; ++d) p = std::fma(p, r, kInvFact[d]);
    const uint64_t bits = (std::bit_cast<uint64_t>(kd) - kExpBias) << 52;
    return p * std::bit_cast<double>(bits);
}

double sum_f32_scalar(const float* x, int64_t n) {
    double lane[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int j = 0; j < kLanes; ++j) lane[j] += static_cast<double>(x[i + j]);
    for (int j = 0; i + j < n; ++j) lane[j] += static_cast<double>(x[i + j]);
    return combine_lanes(lane);
}

float max_f32_scalar(const float* x, int64_t n) {
    float lane[kMaxLanes];
    for (float& l : lane) l = -std::numeric_limits<float>::infinity();
    bool nan = false;
    int64_t i = 0;
    for (; i + kMaxLanes <= n; i += kMaxLanes)
        for (int j = 0; j < kMaxLanes; ++j) {
            const float v = x[i + j];
            nan |= v != v;
            lane[j] = v > lane[j] ? v : lane[j];
        }
    for (int j = 0; i + j < n; ++j) {
        const float v = x[i + j];
        nan |= v != v;
        lane[j] = v > lane[j] ? v : lane[j];
    }
    return combine_max(lane, nan);
}

double exp_shifted_f32_scalar(const float* x, float* o, int64_t n, float m) {
    double lane[kLanes] = {};
    const double md = m;
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int j = 0; j < kLanes; ++j) {
            const double e = exp_nonpositive(static_cast<double>(x[i + j]) - md);
            o[i + j] = static_cast<float>(e);
            lane[j] += e;
        }
    for (int j = 0; i + j < n; ++j) {
        const double e = exp_nonpositive(static_cast<double>(x[i + j]) - md);
        o[i + j] = static_cast<float>(e);
        lane[j] += e;
    }
    return combine_lanes(lane);
}

void scale_f32_scalar(float* o, int64_t n, double s) {
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<float>(static_cast<double>(o[i]) * s);
}

#if defined(GRAPHRUN_X86_VARIANTS)

// --- AVX-512: 8 doubles or 16 floats a register ----------------------------------

GRAPHRUN_TARGET_AVX512 __mmask8 tail_mask8(int64_t left) {
    return left >= 8 ? __mmask8(0xff) : left <= 0 ? __mmask8(0) : __mmask8((1u << left) - 1);
}

GRAPHRUN_TARGET_AVX512 double sum_f32_avx512(const float* x, int64_t n) {
    __m512d acc[4] = {_mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd(),
                      _mm512_setzero_pd()};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int q = 0; q < 4; ++q)
            acc[q] = _mm512_add_pd(acc[q], _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8 * q)));
    if (i < n)
        for (int q = 0; q < 4; ++q) {
            const __mmask8 k = tail_mask8(n - i - 8 * q);
            acc[q] = _mm512_mask_add_pd(acc[q], k, acc[q],
                                        _mm512_cvtps_pd(_mm256_maskz_loadu_ps(k, x + i + 8 * q)));
        }
    double lane[kLanes];
    for (int q = 0; q < 4; ++q) _mm512_storeu_pd(lane + 8 * q, acc[q]);
    return combine_lanes(lane);
}

GRAPHRUN_TARGET_AVX512 float max_f32_avx512(const float* x, int64_t n) {
    __m512 acc = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    __mmask16 nan = 0;
    int64_t i = 0;
    for (; i + kMaxLanes <= n; i += kMaxLanes) {
        const __m512 v = _mm512_loadu_ps(x + i);
        nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        acc = _mm512_max_ps(v, acc);  // v > acc ? v : acc, as the scalar code
    }
    if (i < n) {
        const __mmask16 k = static_cast<__mmask16>((1u << (n - i)) - 1);
        const __m512 v = _mm512_maskz_loadu_ps(k, x + i);
        nan |= _mm512_mask_cmp_ps_mask(k, v, v, _CMP_UNORD_Q);
        acc = _mm512_mask_max_ps(acc, k, v, acc);
    }
    float lane[kMaxLanes];
    _mm512_storeu_ps(lane, acc);
    return combine_max(lane, nan != 0);
}

// exp_nonpositive on Q registers of 8 doubles, operation for operation, each
// step taken for all Q before the next: one register's Horner chain is eight
// dependent multiply-adds, which alone left the core waiting on latency
// (softmax's exponential ran at 3.8 ns an element; interleaving gives the
// same bits).
template <int Q>
GRAPHRUN_TARGET_AVX512 inline void exp_nonpositive_avx512(__m512d* t) {
    __m512d kd[Q], r[Q], p[Q];
#pragma GCC unroll 4
    for (int q = 0; q < Q; ++q) {
        const __m512d tq = _mm512_max_pd(t[q], _mm512_set1_pd(kExpFloor));
        kd[q] = _mm512_fmadd_pd(tq, _mm512_set1_pd(kLog2e), _mm512_set1_pd(kShift));
        const __m512d k = _mm512_sub_pd(kd[q], _mm512_set1_pd(kShift));
        r[q] = _mm512_fnmadd_pd(k, _mm512_set1_pd(kLn2Lo), _mm512_fnmadd_pd(k, _mm512_set1_pd(kLn2Hi), tq));
        p[q] = _mm512_set1_pd(kInvFact[0]);
    }
#pragma GCC unroll 8
    for (int d = 1; d < 9; ++d) {
        const __m512d c = _mm512_set1_pd(kInvFact[d]);
#pragma GCC unroll 4
        for (int q = 0; q < Q; ++q) p[q] = _mm512_fmadd_pd(p[q], r[q], c);
    }
#pragma GCC unroll 4
    for (int q = 0; q < Q; ++q) {
        const __m512i bits = _mm512_slli_epi64(
            _mm512_sub_epi64(_mm512_castpd_si512(kd[q]), _mm512_set1_epi64(static_cast<int64_t>(kExpBias))), 52);
        t[q] = _mm512_mul_pd(p[q], _mm512_castsi512_pd(bits));
    }
}

GRAPHRUN_TARGET_AVX512 double exp_shifted_f32_avx512(const float* x, float* o, int64_t n, float m) {
    __m512d acc[4] = {_mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd(),
                      _mm512_setzero_pd()};
    const __m512d md = _mm512_set1_pd(static_cast<double>(m));
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        __m512d e[4];
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q) e[q] = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8 * q)), md);
        exp_nonpositive_avx512<4>(e);
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q) {
            _mm256_storeu_ps(o + i + 8 * q, _mm512_cvtpd_ps(e[q]));
            acc[q] = _mm512_add_pd(acc[q], e[q]);
        }
    }
    if (i < n)
        for (int q = 0; q < 4; ++q) {
            const __mmask8 k = tail_mask8(n - i - 8 * q);
            if (k == 0) break;
            __m512d e = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_maskz_loadu_ps(k, x + i + 8 * q)), md);
            exp_nonpositive_avx512<1>(&e);
            _mm256_mask_storeu_ps(o + i + 8 * q, k, _mm512_cvtpd_ps(e));
            acc[q] = _mm512_mask_add_pd(acc[q], k, acc[q], e);
        }
    double lane[kLanes];
    for (int q = 0; q < 4; ++q) _mm512_storeu_pd(lane + 8 * q, acc[q]);
    return combine_lanes(lane);
}

GRAPHRUN_TARGET_AVX512 void scale_f32_avx512(float* o, int64_t n, double s) {
    const __m512d sv = _mm512_set1_pd(s);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 v = _mm512_loadu_ps(o + i);
        const __m256 lo = _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)), sv));
        const __m256 hi = _mm512_cvtpd_ps(
            _mm512_mul_pd(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))), sv));
        _mm512_storeu_ps(o + i, _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1));
    }
    for (; i < n; i += 8) {
        const __mmask8 k = tail_mask8(n - i);
        const __m256 v = _mm256_maskz_loadu_ps(k, o + i);
        _mm256_mask_storeu_ps(o + i, k, _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_cvtps_pd(v), sv)));
    }
}

// --- AVX2: 4 doubles or 8 floats a register ---------------------------------------

// combine_lanes of the lanes in eight registers (lanes 4q..4q+3 in acc[q]),
// the same additions in the same order, without the trip through memory
// (storing the registers and reading the lanes back one by one was a tenth of
// the fused attention's time, one row of 128 scores at a time).
GRAPHRUN_TARGET_AVX2 inline double combine_lanes_avx2(const __m256d* acc) {
    // s[0..3], s[4..7]: (l[j] + l[8 + j]) + (l[16 + j] + l[24 + j])
    const __m256d s_lo = _mm256_add_pd(_mm256_add_pd(acc[0], acc[2]), _mm256_add_pd(acc[4], acc[6]));
    const __m256d s_hi = _mm256_add_pd(_mm256_add_pd(acc[1], acc[3]), _mm256_add_pd(acc[5], acc[7]));
    const __m256d t = _mm256_add_pd(s_lo, s_hi);  // s[j] + s[j + 4]
    const __m128d u = _mm_add_pd(_mm256_castpd256_pd128(t), _mm256_extractf128_pd(t, 1));  // t0 + t2, t1 + t3
    return _mm_cvtsd_f64(_mm_add_sd(u, _mm_unpackhi_pd(u, u)));
}

GRAPHRUN_TARGET_AVX2 double sum_f32_avx2(const float* x, int64_t n) {
    __m256d acc[8];
    for (__m256d& a : acc) a = _mm256_setzero_pd();
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int q = 0; q < 8; ++q)
            acc[q] = _mm256_add_pd(acc[q], _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4 * q)));
    if (i == n) return combine_lanes_avx2(acc);
    double lane[kLanes];
    for (int q = 0; q < 8; ++q) _mm256_storeu_pd(lane + 4 * q, acc[q]);
    for (int j = 0; i + j < n; ++j) lane[j] += static_cast<double>(x[i + j]);
    return combine_lanes(lane);
}

GRAPHRUN_TARGET_AVX2 float max_f32_avx2(const float* x, int64_t n) {
    __m256 acc[2] = {_mm256_set1_ps(-std::numeric_limits<float>::infinity()),
                     _mm256_set1_ps(-std::numeric_limits<float>::infinity())};
    __m256 nan = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + kMaxLanes <= n; i += kMaxLanes)
        for (int q = 0; q < 2; ++q) {
            const __m256 v = _mm256_loadu_ps(x + i + 8 * q);
            nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
            acc[q] = _mm256_max_ps(v, acc[q]);
        }
    float lane[kMaxLanes];
    _mm256_storeu_ps(lane, acc[0]);
    _mm256_storeu_ps(lane + 8, acc[1]);
    bool any_nan = _mm256_movemask_ps(nan) != 0;
    for (int j = 0; i + j < n; ++j) {
        const float v = x[i + j];
        any_nan |= v != v;
        lane[j] = v > lane[j] ? v : lane[j];
    }
    return combine_max(lane, any_nan);
}

// exp_nonpositive on Q registers of 4 doubles, as exp_nonpositive_avx512.
template <int Q>
GRAPHRUN_TARGET_AVX2 inline void exp_nonpositive_avx2(__m256d* t) {
    __m256d kd[Q], r[Q], p[Q];
#pragma GCC unroll 4
    for (int q = 0; q < Q; ++q) {
        const __m256d tq = _mm256_max_pd(t[q], _mm256_set1_pd(kExpFloor));
        kd[q] = _mm256_fmadd_pd(tq, _mm256_set1_pd(kLog2e), _mm256_set1_pd(kShift));
        const __m256d k = _mm256_sub_pd(kd[q], _mm256_set1_pd(kShift));
        r[q] = _mm256_fnmadd_pd(k, _mm256_set1_pd(kLn2Lo), _mm256_fnmadd_pd(k, _mm256_set1_pd(kLn2Hi), tq));
        p[q] = _mm256_set1_pd(kInvFact[0]);
    }
#pragma GCC unroll 8
    for (int d = 1; d < 9; ++d) {
        const __m256d c = _mm256_set1_pd(kInvFact[d]);
#pragma GCC unroll 4
        for (int q = 0; q < Q; ++q) p[q] = _mm256_fmadd_pd(p[q], r[q], c);
    }
#pragma GCC unroll 4
    for (int q = 0; q < Q; ++q) {
        const __m256i bits = _mm256_slli_epi64(
            _mm256_sub_epi64(_mm256_castpd_si256(kd[q]), _mm256_set1_epi64x(static_cast<int64_t>(kExpBias))), 52);
        t[q] = _mm256_mul_pd(p[q], _mm256_castsi256_pd(bits));
    }
}

GRAPHRUN_TARGET_AVX2 double exp_shifted_f32_avx2(const float* x, float* o, int64_t n, float m) {
    __m256d acc[8];
    for (__m256d& a : acc) a = _mm256_setzero_pd();
    const __m256d md = _mm256_set1_pd(static_cast<double>(m));
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
#pragma GCC unroll 2
        for (int h = 0; h < 8; h += 4) {  // two groups of four registers: 16 ymm hold one group's state
            __m256d e[4];
#pragma GCC unroll 4
            for (int q = 0; q < 4; ++q)
                e[q] = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i + 4 * (h + q))), md);
            exp_nonpositive_avx2<4>(e);
#pragma GCC unroll 4
            for (int q = 0; q < 4; ++q) {
                _mm_storeu_ps(o + i + 4 * (h + q), _mm256_cvtpd_ps(e[q]));
                acc[h + q] = _mm256_add_pd(acc[h + q], e[q]);
            }
        }
    if (i == n) return combine_lanes_avx2(acc);
    double lane[kLanes];
    for (int q = 0; q < 8; ++q) _mm256_storeu_pd(lane + 4 * q, acc[q]);
    for (int j = 0; i + j < n; ++j) {
        const double e = exp_nonpositive_inline(static_cast<double>(x[i + j]) - static_cast<double>(m));
        o[i + j] = static_cast<float>(e);
        lane[j] += e;
    }
    return combine_lanes(lane);
}

GRAPHRUN_TARGET_AVX2 void scale_f32_avx2(float* o, int64_t n, double s) {
    const __m256d sv = _mm256_set1_pd(s);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        _mm_storeu_ps(o + i, _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(o + i)), sv)));
    for (; i < n; ++i) o[i] = static_cast<float>(static_cast<double>(o[i]) * s);
}

__attribute__((target("avx2,f16c"))) void f32_to_f16_f16c(const float* x, uint16_t* o, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(o + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; i < n; ++i) o[i] = half_from_double(x[i]).bits;
}

__attribute__((target("avx2,f16c"))) void f16_to_f32_f16c(const uint16_t* x, float* o, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(o + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
    for (; i < n; ++i) o[i] = half_to_float(Half{x[i]});
}

// F16C: CPUID leaf 1, ECX bit 29 (clang 14's __builtin_cpu_supports does not know "f16c").
bool has_f16c() {
    static const bool yes = [] {
        unsigned a = 0, b = 0, c = 0, d = 0;
        if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && ((c >> 29) & 1u) != 0;
    }();
    return yes;
}

#endif  // GRAPHRUN_X86_VARIANTS

}  // namespace

void f32_to_f16_row(const float* x, uint16_t* o, int64_t n) {
#if defined(GRAPHRUN_X86_VARIANTS)
    if (active_isa() != Isa::Baseline && has_f16c()) return f32_to_f16_f16c(x, o, n);
#endif
    for (int64_t i = 0; i < n; ++i) o[i] = half_from_double(x[i]).bits;
}

void f16_to_f32_row(const uint16_t* x, float* o, int64_t n) {
#if defined(GRAPHRUN_X86_VARIANTS)
    if (active_isa() != Isa::Baseline && has_f16c()) return f16_to_f32_f16c(x, o, n);
#endif
    for (int64_t i = 0; i < n; ++i) o[i] = half_to_float(Half{x[i]});
}

Isa detected_isa() {
#if defined(GRAPHRUN_X86_VARIANTS)
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                      __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") &&
                      __builtin_cpu_supports("popcnt");
    if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return Isa::Avx512;
    if (avx2) return Isa::Avx2;
#endif
    return Isa::Baseline;
}

Isa init_active_isa() {
    const Isa isa = detected_isa();
    int expected = -1;
    g_active_isa.compare_exchange_strong(expected, static_cast<int>(isa), std::memory_order_relaxed);
    return static_cast<Isa>(g_active_isa.load(std::memory_order_relaxed));
}

Isa limit_isa(Isa cap) {
    const Isa prev = active_isa();
    const Isa isa = std::min(cap, detected_isa());
    g_active_isa.store(static_cast<int>(isa), std::memory_order_relaxed);
    return prev;
}

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::Avx512:
            return "avx512";
        case Isa::Avx2:
            return "avx2";
        case Isa::Baseline:
            break;
    }
    return "baseline";
}

double exp_nonpositive(double t) { return exp_nonpositive_inline(t); }

void softmax_row_f32(const float* x, float* o, int64_t n) {
    const float m = max_f32(x, n);
    if (!std::isfinite(m)) {  // NaN inside, or an infinite max: NaN, as exp(x - m) / sum gives
        std::fill(o, o + n, std::numeric_limits<float>::quiet_NaN());
        return;
    }
    const double sum = exp_shifted_f32(x, o, n, m);  // >= 1: the max contributes exp(0)
    scale_f32(o, n, 1.0 / sum);
}

double sum_f32(const float* x, int64_t n) {
#if defined(GRAPHRUN_X86_VARIANTS)
    switch (active_isa()) {
        case Isa::Avx512:
            return sum_f32_avx512(x, n);
        case Isa::Avx2:
            return sum_f32_avx2(x, n);
        case Isa::Baseline:
            break;
    }
#endif
    return sum_f32_scalar(x, n);
}

float max_f32(const float* x, int64_t n) {
#if defined(GRAPHRUN_X86_VARIANTS)
    switch (active_isa()) {
        case Isa::Avx512:
            return max_f32_avx512(x, n);
        case Isa::Avx2:
            return max_f32_avx2(x, n);
        case Isa::Baseline:
            break;
    }
#endif
    return max_f32_scalar(x, n);
}

double exp_shifted_f32(const float* x, float* o, int64_t n, float m) {
#if defined(GRAPHRUN_X86_VARIANTS)
    switch (active_isa()) {
        case Isa::Avx512:
            return exp_shifted_f32_avx512(x, o, n, m);
        case Isa::Avx2:
            return exp_shifted_f32_avx2(x, o, n, m);
        case Isa::Baseline:
            break;
    }
#endif
    return exp_shifted_f32_scalar(x, o, n, m);
}

void scale_f32(float* o, int64_t n, double s) {
#if defined(GRAPHRUN_X86_VARIANTS)
    switch (active_isa()) {
        case Isa::Avx512:
            scale_f32_avx512(o, n, s);
            return;
        case Isa::Avx2:
            scale_f32_avx2(o, n, s);
            return;
        case Isa::Baseline:
            break;
    }
#endif
    scale_f32_scalar(o, n, s);
}

}  // namespace graphrun::kernels
