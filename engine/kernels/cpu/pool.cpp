// max_pool, avg_pool, global_avg_pool and global_max_pool on the CPU (ONNX
// MaxPool / AveragePool / GlobalAveragePool / GlobalMaxPool over NCW and NCHW;
// windows from engine/ir/conv_geometry.h). One (image, channel) plane per
// task over the session's workers. Within a plane, each window offset
// (ki, kj) is applied to a whole output row over the range of columns where
// it falls inside the input, so the inner loop is a plain strided one.
// max_pool takes the window's rows first (the max of its input rows, a
// contiguous pass) and then its columns, with a select instead of a branch,
// and AVX2 or AVX-512 vectors for f32 where the CPU has them (Zen 3's AVX2
// took SqueezeNet's 1x64x111x111 pool from 2.6 to 0.5 ms): a data-dependent branch
// costs a misprediction per element (ResNet-18's 1x64x112x112 pool took
// 2.6 ms on its activations, 20 ms on random data). max_pool propagates NaN; a window wholly in the
// padding gives -inf.
// A max_pool the layout pass keeps channels-last (engine/plan/channels_last.h)
// reads and writes NHWC: a row of output pixels per task, each pixel the max
// of its window's pixels with the running max of 16 channels in a register.
// A global pool whose input the layout pass holds channels-last (NHWC,
// nChw8c or nChw16c) sums or maxes a tile of neighbouring channels at a time
// over the pixels; its [N, C, 1, 1] output has the same bytes in every layout.
// avg_pool divides by the window's elements inside the input, or with
// count_include_pad by those inside the padded input (as PyTorch does).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "engine/ir/conv_geometry.h"
#include "engine/kernels/common/kernel_common.h"
#include "engine/kernels/cpu/kernel_families.h"
#include "engine/kernels/cpu/parallel.h"
#include "engine/kernels/cpu/simd.h"

#if defined(GRAPHRUN_X86_VARIANTS)
#include <immintrin.h>
#if !defined(__clang__)
// GCC 12 warns inside its own AVX-512 headers (their _mm512_undefined_* operands).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#endif

namespace graphrun::kernels {

std::unique_ptr<Kernel> make_pool_kernel(const Graph& g, const Node& n);

namespace {

// The columns [lo, hi) of an output row where column ow * s + off lies in [0, n).
inline void valid_range(int64_t off, int64_t s, int64_t n, int64_t out_n, int64_t& lo,
                        int64_t& hi) {
    lo = off >= 0 ? 0 : (-off + s - 1) / s;
    hi = std::min(out_n, n - off <= 0 ? 0 : (n - off - 1) / s + 1);
    if (hi < lo) hi = lo;
}

// The larger of m and v, NaN once either is (numpy.maximum), as two selects
// (a max that keeps v's NaN, then m's NaN kept) that compile to vector max and blend.
template <class T>
inline T nan_max(T m, T v) {
    const T t = m > v ? m : v;
    return m != m ? m : t;
}

// o[i] = nan_max(o[i], r[i * stride]) for i < n, stride 1 or 2.
template <class T>
inline void max_into(T* o, const T* r, int64_t n, int64_t stride) {
    if (stride == 1)
        blocked_loop(n, [=](int64_t i) { o[i] = nan_max(o[i], r[i]); });
    else
        for (int64_t i = 0; i < n; ++i) o[i] = nan_max(o[i], r[i * stride]);
}

#if defined(GRAPHRUN_X86_VARIANTS)
// The f32 case with AVX-512, where GCC at -O2 leaves it scalar: a vector max,
// then the lanes where o was NaN kept; stride 2 takes the even lanes of two loads.
GRAPHRUN_TARGET_AVX512 void max_into_avx512(float* o, const float* r, int64_t n, int64_t stride) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 m = _mm512_loadu_ps(o + i);
        const __m512 v = stride == 1 ? _mm512_loadu_ps(r + i)
                                     : _mm512_permutex2var_ps(_mm512_loadu_ps(r + 2 * i), even,
                                                              _mm512_loadu_ps(r + 2 * i + 16));
        const __m512 t = _mm512_max_ps(m, v);  // m > v ? m : v: v where either is NaN
        _mm512_storeu_ps(o + i, _mm512_mask_mov_ps(t, _mm512_cmp_ps_mask(m, m, _CMP_UNORD_Q), m));
    }
    for (; i < n; ++i) o[i] = nan_max(o[i], r[i * stride]);
}

// The same with AVX2 (8 lanes); stride 2's even lanes by a shuffle of two
// loads and a cross-lane permute.
GRAPHRUN_TARGET_AVX2 void max_into_avx2(float* o, const float* r, int64_t n, int64_t stride) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 m = _mm256_loadu_ps(o + i);
        __m256 v;
        if (stride == 1) {
            v = _mm256_loadu_ps(r + i);
        } else {
            // [a0 a2 b0 b2 | a4 a6 b4 b6], then its 64-bit halves reordered
            const __m256 ab = _mm256_shuffle_ps(_mm256_loadu_ps(r + 2 * i), _mm256_loadu_ps(r + 2 * i + 8),
                                                _MM_SHUFFLE(2, 0, 2, 0));
            v = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(ab), _MM_SHUFFLE(3, 1, 2, 0)));
        }
        const __m256 t = _mm256_max_ps(m, v);  // m > v ? m : v: v where either is NaN
        _mm256_storeu_ps(o + i, _mm256_blendv_ps(t, m, _mm256_cmp_ps(m, m, _CMP_UNORD_Q)));
    }
    for (; i < n; ++i) o[i] = nan_max(o[i], r[i * stride]);
}
#endif

// max_pool's channels-last pixel: o[c] = the max over the window's pixels
// px[0..count) (each c_n channels) of their channel c, NaN once any is (as
// nan_max), -inf for none; the max is kept in registers across the window.
// Channels from c_first on (the AVX-512 version leaves it the last c_n % 16).
template <class T>
void max_pixels_into(T* o, const T* const* px, int count, int64_t c_n, int64_t c_first = 0) {
    for (int64_t c = c_first; c < c_n; ++c) {
        T m = -std::numeric_limits<T>::infinity();
        for (int k = 0; k < count; ++k) m = nan_max(m, px[k][c]);
        o[c] = m;
    }
}

#if defined(GRAPHRUN_X86_VARIANTS)
// m = nan_max(m, v) on 16 lanes: the vector max, then the lanes where m was NaN kept.
GRAPHRUN_TARGET_AVX512 inline __m512 nan_max16(__m512 m, __m512 v) {
    return _mm512_mask_mov_ps(_mm512_max_ps(m, v), _mm512_cmp_ps_mask(m, m, _CMP_UNORD_Q), m);
}

// Each running max is a chain of dependent steps (about 5 cycles each) over
// the window: four blocks of 16 channels are folded side by side, so that
// four chains overlap (a 3x3 window over 64 channels ran at a third of the
// speed one block at a time).
GRAPHRUN_TARGET_AVX512 void max_pixels_avx512(float* o, const float* const* px, int count, int64_t c_n) {
    const __m512 lowest = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    int64_t c = 0;
    for (; c + 64 <= c_n; c += 64) {
        __m512 m0 = lowest, m1 = lowest, m2 = lowest, m3 = lowest;
        for (int k = 0; k < count; ++k) {
            const float* p = px[k] + c;
            m0 = nan_max16(m0, _mm512_loadu_ps(p));
            m1 = nan_max16(m1, _mm512_loadu_ps(p + 16));
            m2 = nan_max16(m2, _mm512_loadu_ps(p + 32));
            m3 = nan_max16(m3, _mm512_loadu_ps(p + 48));
        }
        _mm512_storeu_ps(o + c, m0);
        _mm512_storeu_ps(o + c + 16, m1);
        _mm512_storeu_ps(o + c + 32, m2);
        _mm512_storeu_ps(o + c + 48, m3);
    }
    for (; c + 16 <= c_n; c += 16) {
        __m512 m = lowest;
        for (int k = 0; k < count; ++k) m = nan_max16(m, _mm512_loadu_ps(px[k] + c));
        _mm512_storeu_ps(o + c, m);
    }
    max_pixels_into(o, px, count, c_n, c);  // the last c_n % 16 channels
}

GRAPHRUN_TARGET_AVX2 inline __m256 nan_max8(__m256 m, __m256 v) {
    return _mm256_blendv_ps(_mm256_max_ps(m, v), m, _mm256_cmp_ps(m, m, _CMP_UNORD_Q));
}

// Four blocks of 8 channels side by side, as the AVX-512 version.
GRAPHRUN_TARGET_AVX2 void max_pixels_avx2(float* o, const float* const* px, int count, int64_t c_n) {
    const __m256 lowest = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    int64_t c = 0;
    for (; c + 32 <= c_n; c += 32) {
        __m256 m0 = lowest, m1 = lowest, m2 = lowest, m3 = lowest;
        for (int k = 0; k < count; ++k) {
            const float* p = px[k] + c;
            m0 = nan_max8(m0, _mm256_loadu_ps(p));
            m1 = nan_max8(m1, _mm256_loadu_ps(p + 8));
            m2 = nan_max8(m2, _mm256_loadu_ps(p + 16));
            m3 = nan_max8(m3, _mm256_loadu_ps(p + 24));
        }
        _mm256_storeu_ps(o + c, m0);
        _mm256_storeu_ps(o + c + 8, m1);
        _mm256_storeu_ps(o + c + 16, m2);
        _mm256_storeu_ps(o + c + 24, m3);
    }
    for (; c + 8 <= c_n; c += 8) {
        __m256 m = lowest;
        for (int k = 0; k < count; ++k) m = nan_max8(m, _mm256_loadu_ps(px[k] + c));
        _mm256_storeu_ps(o + c, m);
    }
    max_pixels_into(o, px, count, c_n, c);  // the last c_n % 8 channels
}
#endif

#if defined(GRAPHRUN_X86_VARIANTS)
// A blocked max_pool's four neighbouring output pixels of one block (8
// channels, one vector each) side by side, their windows wholly inside the
// input: rows[r] is the first window pixel of the first output in the r-th
// valid input row, the window's next pixel kstep floats on, the next output's
// window qstep floats on. The window is folded in the order the one-pixel
// path takes (rows, then columns), so the bits are the same; the four
// running maxima are four chains that overlap (one block per pixel alone is
// a chain of dependent steps: ResNet-18's pool ran at a third of the speed).
GRAPHRUN_TARGET_AVX2 void max_quad8_avx2(float* o, const float* const* rows, int n_rows, int64_t kw, int64_t kstep,
                                         int64_t qstep) {
    const __m256 lowest = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    __m256 m0 = lowest, m1 = lowest, m2 = lowest, m3 = lowest;
    for (int r = 0; r < n_rows; ++r)
        for (int64_t kj = 0; kj < kw; ++kj) {
            const float* p = rows[r] + kj * kstep;
            m0 = nan_max8(m0, _mm256_loadu_ps(p));
            m1 = nan_max8(m1, _mm256_loadu_ps(p + qstep));
            m2 = nan_max8(m2, _mm256_loadu_ps(p + 2 * qstep));
            m3 = nan_max8(m3, _mm256_loadu_ps(p + 3 * qstep));
        }
    _mm256_storeu_ps(o, m0);
    _mm256_storeu_ps(o + 8, m1);
    _mm256_storeu_ps(o + 16, m2);
    _mm256_storeu_ps(o + 24, m3);
}

// The same for blocks of 16 channels.
GRAPHRUN_TARGET_AVX512 void max_quad16_avx512(float* o, const float* const* rows, int n_rows, int64_t kw,
                                              int64_t kstep, int64_t qstep) {
    const __m512 lowest = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
    __m512 m0 = lowest, m1 = lowest, m2 = lowest, m3 = lowest;
    for (int r = 0; r < n_rows; ++r)
        for (int64_t kj = 0; kj < kw; ++kj) {
            const float* p = rows[r] + kj * kstep;
            m0 = nan_max16(m0, _mm512_loadu_ps(p));
            m1 = nan_max16(m1, _mm512_loadu_ps(p + qstep));
            m2 = nan_max16(m2, _mm512_loadu_ps(p + 2 * qstep));
            m3 = nan_max16(m3, _mm512_loadu_ps(p + 3 * qstep));
        }
    _mm512_storeu_ps(o, m0);
    _mm512_storeu_ps(o + 16, m1);
    _mm512_storeu_ps(o + 32, m2);
    _mm512_storeu_ps(o + 48, m3);
}
#endif

// The four-pixel pass above for c_n channels per pixel on this CPU, or null.
using MaxQuad = void (*)(float*, const float* const*, int, int64_t, int64_t, int64_t);
inline MaxQuad max_quad_for([[maybe_unused]] int64_t c_n) {
#if defined(GRAPHRUN_X86_VARIANTS)
    switch (active_isa()) {
        case Isa::Avx512:
            if (c_n == 16) return max_quad16_avx512;
            return c_n == 8 ? max_quad8_avx2 : nullptr;
        case Isa::Avx2: return c_n == 8 ? max_quad8_avx2 : nullptr;
        case Isa::Baseline: break;
    }
#endif
    return nullptr;
}

template <class T>
void max_pixels(T* o, const T* const* px, int count, int64_t c_n) {
#if defined(GRAPHRUN_X86_VARIANTS)
    if constexpr (std::is_same_v<T, float>)
        switch (active_isa()) {
            case Isa::Avx512: return max_pixels_avx512(o, px, count, c_n);
            case Isa::Avx2: return max_pixels_avx2(o, px, count, c_n);
            case Isa::Baseline: break;
        }
#endif
    max_pixels_into(o, px, count, c_n);
}

template <class T>
void max_row(T* o, const T* r, int64_t n, int64_t stride) {
#if defined(GRAPHRUN_X86_VARIANTS)
    if constexpr (std::is_same_v<T, float>)
        if (stride <= 2) switch (active_isa()) {
                case Isa::Avx512: return max_into_avx512(o, r, n, stride);
                case Isa::Avx2: return max_into_avx2(o, r, n, stride);
                case Isa::Baseline: break;
            }
#endif
    max_into(o, r, n, stride);
}

// The window pixels max_pool's channels-last pass gathers before it folds them.
constexpr int kMaxWindow = 64;

// The widest input row max_pool's row pass keeps on the stack; wider rows go
// window offset by window offset.
constexpr int64_t kMaxRowBuffer = 2048;

template <class T>
class PoolKernel final : public KernelBase {
  public:
    PoolKernel(const Graph& g, const Node& n)
        : KernelBase(g, n), op_kind_(n.op), nhwc_(n.channels_last && n.op == OpKind::MaxPool) {
        auto geo = window_geometry(n, in_shapes_[0], nullptr, nullptr);
        ok_ = geo.has_value() && (!nhwc_ || in_shapes_[0].size() == 4);
        if (!ok_) return;
        g_ = *geo;
        if (nhwc_) {
            // [N][C / block][H][W][block] is NHWC over N * C / block images of
            // `block` channels; NHWC itself is one block of C.
            pixel_c_ = n.channel_block ? n.channel_block : g_.channels;
            ok_ = pixel_c_ > 0 && g_.channels % pixel_c_ == 0;
            if (!ok_) return;
            images_ = g_.batch * (g_.channels / pixel_c_);
        }
        if (g_.global && !n.inputs.empty() && n.inputs[0].id >= 0) {
            const Node& x = g.node(n.inputs[0].id);
            if (x.channels_last && in_shapes_[0].size() == 4) {
                // Layout [N][C / block][H * W][block]; NHWC is one block of C.
                cl_block_ = x.channel_block ? x.channel_block : g_.channels;
                ok_ = cl_block_ > 0 && g_.channels % cl_block_ == 0;
                if (!ok_) return;
            }
        }
        if (op_kind_ != OpKind::AvgPool) return;
        // The divisor of each output element is count_h[oh] * count_w[ow].
        for (int a = 0; a < 2; ++a) {
            std::vector<int64_t>& cnt = count_[a];
            cnt.resize(static_cast<size_t>(g_.out[a]));
            for (int64_t o = 0; o < g_.out[a]; ++o) {
                const int64_t start = o * g_.stride[a] - g_.pad_begin[a];
                const int64_t end = start + g_.kernel[a];
                const int64_t lo = g_.count_include_pad ? -g_.pad_begin[a] : 0;
                const int64_t hi = g_.count_include_pad ? g_.in[a] + g_.pad_end[a] : g_.in[a];
                cnt[static_cast<size_t>(o)] =
                    std::max<int64_t>(0, std::min(end, hi) - std::max(start, lo));
            }
        }
    }

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        if (!ok_)
            return std::string("internal error: ") + op_name(op_kind_) +
                   "'s geometry does not resolve";
        if (out.numel == 0) return "";
        const T* x = static_cast<const T*>(in[0].data);
        T* y = static_cast<T*>(out.data);
        const int64_t planes = g_.batch * g_.channels, ip = g_.in_plane(), op = g_.out_plane();
        const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(ip, 1));
        // An input under kColdBytes wakes no sleeping worker (parallel.h), as a
        // concat or a cheap elementwise op: a pool between two oneDNN convs
        // found the workers asleep and oneDNN's OpenMP thread still spinning,
        // and the woken worker shared a core with it.
        if (cl_block_ > 0) {
            // A global pool of a channels-last input: one tile of up to
            // kLaneTile channels of one image's block per task.
            // Tiles as wide as the block (NHWC: a whole pixel, so the pixels are
            // read in order), narrower only to give every worker some.
            const int64_t rows = g_.batch * (g_.channels / cl_block_);
            const int64_t threads = ctx.pool ? ctx.pool->size() : 1;
            int64_t width = std::min(cl_block_, kLaneTile);
            if (rows < 2 * threads)
                width = std::min(width, std::max<int64_t>(64, (cl_block_ + 2 * threads - 1) / (2 * threads)));
            const int64_t tiles = (cl_block_ + width - 1) / width;
            const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(ip * std::min(cl_block_, width), 1));
            parallel_for(ctx, rows * tiles, grain, [&](int64_t b, int64_t e) {
                with_isa([&] {
                    for (int64_t t = b; t < e; ++t) global_lanes(x, y, t / tiles, t % tiles * width, width);
                });
            }, cold_rows(in[0], rows * tiles));
            return "";
        }
        if (nhwc_) {
            // Channels-last (the layout pass): one output row of pixels per task.
            const int64_t rows = images_ * g_.out[0];
            const int64_t row_elems = std::max<int64_t>(1, g_.out[1] * pixel_c_);
            parallel_for(ctx, rows, std::max<int64_t>(1, 16384 / row_elems), [&](int64_t b, int64_t e) {
                for (int64_t r = b; r < e; ++r) max_row_nhwc(x, y, r);
            }, cold_rows(in[0], rows));
            return "";
        }
        parallel_for(ctx, planes, grain, [&](int64_t b, int64_t e) {
            if (g_.global) {
                for (int64_t i = b; i < e; ++i) global(x + i * ip, y + i);
            } else if (op_kind_ == OpKind::MaxPool && g_.in[1] <= kMaxRowBuffer) {
                T rows[kMaxRowBuffer + 16];  // stride 2's last vector reads one past the row
                for (int64_t i = b; i < e; ++i) max_plane(x + i * ip, y + i * op, rows);
            } else {
                with_isa([&] {
                    for (int64_t i = b; i < e; ++i) plane(x + i * ip, y + i * op);
                });
            }
        }, cold_rows(in[0], planes));
        return "";
    }

  private:
    void global(const T* x, T* y) const {
        const int64_t n = g_.in[1];
        if (op_kind_ == OpKind::GlobalMaxPool) {
            T m = -std::numeric_limits<T>::infinity();
            for (int64_t i = 0; i < n; ++i)
                if (x[i] > m || std::isnan(x[i])) {
                    m = x[i];
                    if (std::isnan(m)) break;
                }
            *y = m;
            return;
        }
        double s = 0;
        if constexpr (std::is_same_v<T, float>)
            s = sum_f32(x, n);  // in double, 32 lanes (AVX2/AVX-512 where the CPU has them)
        else
            for (int64_t i = 0; i < n; ++i) s += x[i];
        *y = n ? static_cast<T>(s / static_cast<double>(n)) : std::numeric_limits<T>::quiet_NaN();
    }

    // The global pool of lanes [j0, j0 + width) of channels-last row
    // `row` (image row / blocks, block row % blocks): each lane's pixels in
    // turn, summed in double as the NCHW path sums them (or maxed, NaN once
    // any is), into the output's channels (block * cl_block_ + lane).
    void global_lanes(const T* x, T* y, int64_t row, int64_t j0, int64_t width) const {
        // oneDNN's blocks with their width known, so that their lanes vectorize.
        if (cl_block_ == 16) return global_lanes_w<16>(x, y, row, j0, 16);
        if (cl_block_ == 8) return global_lanes_w<8>(x, y, row, j0, 8);
        global_lanes_w<0>(x, y, row, j0, std::min(width, cl_block_ - j0));
    }

    // global_lanes over w lanes (W of them where W > 0).
    template <int64_t W>
    void global_lanes_w(const T* x, T* y, int64_t row, int64_t j0, int64_t w) const {
        if constexpr (W > 0) w = W;
        auto lanes = [=](auto f) {
            if constexpr (W > 0) {
                for (int64_t j = 0; j < W; ++j) f(j);
            } else {
                blocked_loop(w, f);
            }
        };
        const int64_t pixels = g_.in[1], stride = cl_block_;
        const T* base = x + row * pixels * stride + j0;
        T* o = y + row * cl_block_ + j0;  // [N, C] in order: image-major, then block, then lane
        if (op_kind_ == OpKind::GlobalMaxPool) {
            T m[kLaneTile];
            T* __restrict mp = m;
            lanes([=](int64_t j) { mp[j] = -std::numeric_limits<T>::infinity(); });
            for (int64_t p = 0; p < pixels; ++p) {
                const T* __restrict v = base + p * stride;
                lanes([=](int64_t j) { mp[j] = nan_max(mp[j], v[j]); });
            }
            std::copy(m, m + w, o);
            return;
        }
        double acc[kLaneTile];
        double* __restrict a = acc;
        lanes([=](int64_t j) { a[j] = 0; });
        for (int64_t p = 0; p < pixels; ++p) {
            const T* __restrict v = base + p * stride;
            lanes([=](int64_t j) { a[j] += static_cast<double>(v[j]); });
        }
        const double count = static_cast<double>(pixels);
        for (int64_t j = 0; j < w; ++j)
            o[j] = pixels ? static_cast<T>(acc[j] / count) : std::numeric_limits<T>::quiet_NaN();
    }

    // max_pool of one plane: per output row, rows[iw] = the max of the
    // window's input rows, then each output column the max of its columns of rows.
    void max_plane(const T* x, T* y, T* rows) const {
        const int64_t ih_n = g_.in[0], iw_n = g_.in[1], oh_n = g_.out[0], ow_n = g_.out[1],
                      sw = g_.stride[1];
        const T lowest = -std::numeric_limits<T>::infinity();
        for (int64_t oh = 0; oh < oh_n; ++oh) {
            T* orow = y + oh * ow_n;
            bool any = false;
            for (int64_t ki = 0; ki < g_.kernel[0]; ++ki) {
                const int64_t ih = oh * g_.stride[0] + ki * g_.dilation[0] - g_.pad_begin[0];
                if (ih < 0 || ih >= ih_n) continue;
                const T* row = x + ih * iw_n;
                if (!any)
                    std::copy(row, row + iw_n, rows);
                else
                    max_row(rows, row, iw_n, 1);
                any = true;
            }
            std::fill(orow, orow + ow_n, lowest);
            if (!any) continue;
            for (int64_t kj = 0; kj < g_.kernel[1]; ++kj) {
                const int64_t off = kj * g_.dilation[1] - g_.pad_begin[1];
                int64_t lo, hi;
                valid_range(off, sw, iw_n, ow_n, lo, hi);
                max_row(orow + lo, rows + off + lo * sw, hi - lo, sw);
            }
        }
    }

    // max_pool on NHWC: output row r (image r / oh_n, row r % oh_n), each
    // pixel the max of its window's pixels, all channels at a time. A
    // blocked layout's image is one block of one image's channels.
    void max_row_nhwc(const T* x, T* y, int64_t r) const {
        const int64_t c_n = pixel_c_, ih_n = g_.in[0], iw_n = g_.in[1], oh_n = g_.out[0],
                      ow_n = g_.out[1];
        const int64_t image = r / oh_n, oh = r % oh_n;
        const T* xi = x + image * ih_n * iw_n * c_n;
        T* orow = y + r * ow_n * c_n;
        const T* px[kMaxWindow];
        // The last input row of the next output row's window (one this row
        // does not read), prefetched a slice per output pixel as this row
        // goes: at batch 16 a pool's input is in memory, not in a cache, and
        // the hardware prefetcher alone left SqueezeNet's pools reading it at
        // 14-16 GB/s (pool 1: 3.0 -> 2.7 ms, pool 2: 1.70 -> 1.30-1.45 ms;
        // ONNX Runtime 2.72 and 1.19). At batch 1, in cache, no change.
        const int64_t ahead_ih = (oh + 1) * g_.stride[0] + (g_.kernel[0] - 1) * g_.dilation[0] - g_.pad_begin[0];
        const bool prefetch = oh + 1 < oh_n && ahead_ih >= 0 && ahead_ih < ih_n;
        const char* ahead = reinterpret_cast<const char*>(xi + ahead_ih * iw_n * c_n);
        const int64_t ahead_bytes = iw_n * c_n * static_cast<int64_t>(sizeof(T));
        const int64_t ahead_step = (ahead_bytes + ow_n - 1) / ow_n;
        // A block of 8 or 16 channels per pixel: four pixels at a time where
        // their windows lie wholly inside the input ([in_lo, in_hi)).
        MaxQuad quad = nullptr;
        if constexpr (std::is_same_v<T, float>) quad = max_quad_for(c_n);
        const int64_t sw = g_.stride[1], dw = g_.dilation[1], pw = g_.pad_begin[1], kw = g_.kernel[1];
        int64_t in_lo = 0, in_hi = 0;
        constexpr int kQuadRows = 16;
        int64_t quad_rows[kQuadRows];  // each valid input row's first pixel
        int n_rows = 0;
        if (quad) {
            int64_t lo, hi;
            valid_range(-pw, sw, iw_n, ow_n, in_lo, in_hi);
            valid_range((kw - 1) * dw - pw, sw, iw_n, ow_n, lo, hi);
            in_lo = std::max(in_lo, lo);
            in_hi = std::min(in_hi, hi);
            for (int64_t ki = 0; ki < g_.kernel[0] && quad; ++ki) {
                const int64_t ih = oh * g_.stride[0] + ki * g_.dilation[0] - g_.pad_begin[0];
                if (ih < 0 || ih >= ih_n) continue;
                if (n_rows == kQuadRows) quad = nullptr;  // a window this tall goes pixel by pixel
                else quad_rows[n_rows++] = ih * iw_n;
            }
        }
        for (int64_t ow = 0; ow < ow_n; ++ow) {
            if (prefetch)
                for (int64_t b = ow * ahead_step; b < std::min(ahead_bytes, (ow + 1) * ahead_step); b += 64)
                    __builtin_prefetch(ahead + b);
            if constexpr (std::is_same_v<T, float>)
                if (quad && ow >= in_lo && ow + 4 <= in_hi) {
                    const float* at[kQuadRows];
                    for (int k = 0; k < n_rows; ++k) at[k] = xi + (quad_rows[k] + ow * sw - pw) * c_n;
                    if (prefetch)
                        for (int64_t b = (ow + 1) * ahead_step; b < std::min(ahead_bytes, (ow + 4) * ahead_step);
                             b += 64)
                            __builtin_prefetch(ahead + b);
                    quad(orow + ow * c_n, at, n_rows, kw, dw * c_n, sw * c_n);
                    ow += 3;
                    continue;
                }
            int count = 0;
            for (int64_t ki = 0; ki < g_.kernel[0]; ++ki) {
                const int64_t ih = oh * g_.stride[0] + ki * g_.dilation[0] - g_.pad_begin[0];
                if (ih < 0 || ih >= ih_n) continue;
                for (int64_t kj = 0; kj < g_.kernel[1]; ++kj) {
                    const int64_t iw = ow * g_.stride[1] + kj * g_.dilation[1] - g_.pad_begin[1];
                    if (iw < 0 || iw >= iw_n) continue;
                    if (count == kMaxWindow) {  // a window this large: fold what is gathered
                        max_pixels(orow + ow * c_n, px, count, c_n);
                        px[0] = orow + ow * c_n;
                        count = 1;
                    }
                    px[count++] = xi + (ih * iw_n + iw) * c_n;
                }
            }
            max_pixels(orow + ow * c_n, px, count, c_n);
        }
    }

    void plane(const T* x, T* y) const {
        const bool is_max = op_kind_ == OpKind::MaxPool;
        const int64_t ih_n = g_.in[0], iw_n = g_.in[1], oh_n = g_.out[0], ow_n = g_.out[1],
                      sw = g_.stride[1];
        const T init = is_max ? -std::numeric_limits<T>::infinity() : T(0);
        for (int64_t oh = 0; oh < oh_n; ++oh) {
            T* orow = y + oh * ow_n;
            std::fill(orow, orow + ow_n, init);
            for (int64_t ki = 0; ki < g_.kernel[0]; ++ki) {
                const int64_t ih = oh * g_.stride[0] + ki * g_.dilation[0] - g_.pad_begin[0];
                if (ih < 0 || ih >= ih_n) continue;
                for (int64_t kj = 0; kj < g_.kernel[1]; ++kj) {
                    const int64_t off = kj * g_.dilation[1] - g_.pad_begin[1];
                    int64_t lo, hi;
                    valid_range(off, sw, iw_n, ow_n, lo, hi);
                    const T* row = x + ih * iw_n + off;
                    if (is_max) {
                        for (int64_t ow = lo; ow < hi; ++ow)
                            orow[ow] = nan_max(orow[ow], row[ow * sw]);
                    } else {
                        for (int64_t ow = lo; ow < hi; ++ow) orow[ow] += row[ow * sw];
                    }
                }
            }
            if (!is_max) {
                const auto ch = static_cast<T>(count_[0][static_cast<size_t>(oh)]);
                for (int64_t ow = 0; ow < ow_n; ++ow)
                    orow[ow] /= ch * static_cast<T>(count_[1][static_cast<size_t>(ow)]);
            }
        }
    }

    OpKind op_kind_;
    bool nhwc_;  // a channels-last max_pool (engine/plan/channels_last.h): NHWC in and out
    // Its channels per pixel (C for NHWC, 8 or 16 for nChw8c / nChw16c) and
    // the images of that many channels (N, or N * C / block).
    int64_t pixel_c_ = 0, images_ = 0;
    // A global pool's channels-last input (engine/plan/channels_last.h): its
    // channel block (C for NHWC, 8 or 16 for oneDNN's blocked layouts); 0: NCHW.
    int64_t cl_block_ = 0;
    static constexpr int64_t kLaneTile = 1024;
    bool ok_ = false;
    WindowGeometry g_;
    std::vector<int64_t> count_[2];
};

}  // namespace

std::unique_ptr<Kernel> make_pool_kernel(const Graph& g, const Node& n) {
    if (n.inputs.size() == 1) {
        if (n.dtype == DType::F32) return std::make_unique<PoolKernel<float>>(g, n);
        if (n.dtype == DType::F64) return std::make_unique<PoolKernel<double>>(g, n);
    }
    return make_error_kernel(std::string("internal error: no CPU kernel for ") + op_name(n.op) +
                             " on " + dtype_name(n.dtype));
}

}  // namespace graphrun::kernels
