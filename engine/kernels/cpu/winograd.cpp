// F(4x4, 3x3) Winograd conv on NHWC, nChw8c and nChw16c (winograd.h).
#include "engine/kernels/cpu/winograd.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <type_traits>
#include <utility>

#include "engine/kernels/cpu/parallel.h"
#include "engine/kernels/cpu/simd.h"

#if defined(GRAPHRUN_X86_VARIANTS)
#include <immintrin.h>
#endif

namespace graphrun::kernels {

namespace {

// The transformed filter is made for at most this many bytes of output
// channels at a time (each part's products then re-read the input's
// transform, about 6/M of their work): ResNet's 512x512 filter in five parts,
// a 64x64 one whole. A conv whose x and output are small takes at most twice
// their bytes, 1 MiB at least, so that its scratch stays within what the run
// holds anyway (ResNet-18 at batch 1: 12.9 -> 8.6 MB reserved).
constexpr uint64_t kFilterPartBytes = uint64_t{6} << 20;
constexpr uint64_t kFilterPartLeast = uint64_t{1} << 20;
// Tiles per block: one worker transforms a block's input, runs its 36
// products and transforms their outputs, all in its own scratch.
constexpr int64_t kTileBlock = 64;
// Fewer tiles than this: the filter's transform on every run and the small
// products cost more than oneDNN's direct conv saves (ResNet-18 at batch 1:
// its 64-channel 56x56 convs have 196 tiles, the 128-channel 28x28 ones 49).
constexpr int64_t kMinTiles = 32;
// Fewer input channels than this: each product sums too few (SqueezeNet's 16
// -> 64 expand convs at 55x55 took 0.39 ms direct and 0.52 ms so at batch 1,
// as fast at batch 16; its 32 -> 128 ones 0.39 -> 0.32 and 5.3 -> 4.0 ms).
constexpr int64_t kMinChannels = 32;
// With AVX-512 in use, oneDNN's direct conv beside it is AVX-512 code too,
// twice the rate of its AVX2 code on an Intel core, and Winograd pays only
// for many tiles that the image fills. ResNet-18 and SqueezeNet 1.1 on the
// 2-core Ice Lake Xeon of session 28 (NHWC, batch 16, each stage's convs
// together, direct -> Winograd): 64 channels at 56x56 (3136 tiles) 76-94 ->
// 49-52 ms, 128 at 28x28 (784) 61-67 -> 34, 256 at 14x14 (256 tiles, the
// image 77% of them) 57-67 -> 43-48, SqueezeNet's 32 -> 128 at 27x27 (784)
// 9.4-10.5 -> 8.1-8.7; no gain at 512 at 7x7 (64 tiles) 66-80 -> 72-73, nor
// at SqueezeNet's 48 and 64 channels at 13x13 (256 tiles, the image 66% of
// them) 13.0-14.8 -> 15.1-16.9; at batch 1, 64 at 56x56 (196 tiles) even,
// 128 at 28x28 (49) 3.3-3.5 -> 3.6-3.9.
constexpr int64_t kMinTilesWide = 256;
// The image's share of its tiles' pixels, at least 3/4 (the rest is padding
// computed for nothing: 13x13 fills 169 of 16x16).
constexpr int64_t kMinFillWide = 3;  // quarters
constexpr int64_t kPositions = 36;
// The transformed filter is held in panels of this many output channels,
// [position][panel][input channel][16], so that the products' inner loop
// reads 16 consecutive floats of it per input channel (one AVX-512 register,
// two AVX2 ones) and broadcasts one of the input's transform.
constexpr int64_t kPanel = 16;

bool disabled_by_env() {
    static const bool off = std::getenv("GRAPHRUN_NO_WINOGRAD") != nullptr;
    return off;
}

uint64_t aligned64(uint64_t bytes) { return (bytes + 63) / 64 * 64; }

// How a run cuts the work (winograd_scratch_bytes and winograd_conv3x3 agree on it).
struct Plan {
    int64_t th = 0, tw = 0, tiles = 0;  // tiles down, across, in all
    int64_t block = 0, blocks = 0;      // tiles per block, blocks
    int64_t slots = 1;                  // workers, each with its own scratch
    int64_t part = 0, parts = 0;        // output channels per filter part (a multiple of 8), parts
    int64_t ldm = 0;                    // part rounded up to the panel width: the products' row length
    int64_t lda = 0;                    // floats from one tile's input transform to the next
    int64_t v_stride = 0, m_stride = 0; // floats per position of a block's input transform, of its products
    uint64_t u_bytes = 0, slot_bytes = 0;
};

Plan plan_of(const WinogradConv& s, int threads) {
    Plan p;
    p.th = (s.height + 3) / 4;
    p.tw = (s.width + 3) / 4;
    p.tiles = s.batch * p.th * p.tw;
    const int64_t workers = std::max(1, threads);
    p.block = std::max<int64_t>(1, std::min(kTileBlock, (p.tiles + workers - 1) / workers));
    p.blocks = (p.tiles + p.block - 1) / p.block;
    p.slots = std::min(workers, p.blocks);
    const uint64_t per_channel = static_cast<uint64_t>(kPositions * s.channels) * sizeof(float);
    const uint64_t io = static_cast<uint64_t>(s.batch * (s.channels + s.out_channels) * s.height * s.width) * sizeof(float);
    const uint64_t budget = std::clamp(2 * io, kFilterPartLeast, kFilterPartBytes);
    const int64_t most = std::max<int64_t>(8, static_cast<int64_t>(budget / per_channel) / 8 * 8);
    p.parts = (s.out_channels + most - 1) / most;
    p.part = ((s.out_channels + p.parts - 1) / p.parts + 7) / 8 * 8;
    p.parts = (s.out_channels + p.part - 1) / p.part;
    p.ldm = (p.part + kPanel - 1) / kPanel * kPanel;
    p.lda = s.channels + 16;  // rows a power of two apart would share cache sets (products_*)
    // 16 floats apart beyond the block: positions a power of two apart would
    // share cache sets (a 64x64 conv's transform ran 1.7x slower so).
    p.v_stride = p.block * p.lda + 16;
    p.m_stride = p.block * p.ldm + 16;
    p.u_bytes = aligned64(static_cast<uint64_t>(kPositions * p.ldm * s.channels) * sizeof(float));
    p.slot_bytes = aligned64(static_cast<uint64_t>(kPositions * (p.v_stride + p.m_stride)) * sizeof(float));
    return p;
}

#if defined(GRAPHRUN_X86_VARIANTS)
using V8 = __m256;

// B^T d for six vectors (rows of the input patch or of its column transform).
GRAPHRUN_TARGET_AVX2 inline void bt6(const V8* d, V8* o) {
    const V8 four = _mm256_set1_ps(4.0f), five = _mm256_set1_ps(5.0f), two = _mm256_set1_ps(2.0f);
    o[0] = _mm256_fnmadd_ps(five, d[2], _mm256_fmadd_ps(four, d[0], d[4]));
    const V8 a = _mm256_fnmadd_ps(four, d[2], d[4]);  // d4 - 4 d2
    const V8 b = _mm256_fnmadd_ps(four, d[1], d[3]);  // d3 - 4 d1
    o[1] = _mm256_add_ps(a, b);
    o[2] = _mm256_sub_ps(a, b);
    const V8 c = _mm256_sub_ps(d[4], d[2]);
    const V8 e = _mm256_mul_ps(two, _mm256_sub_ps(d[3], d[1]));
    o[3] = _mm256_add_ps(c, e);
    o[4] = _mm256_sub_ps(c, e);
    o[5] = _mm256_fnmadd_ps(five, d[3], _mm256_fmadd_ps(four, d[1], d[5]));
}

// A^T q: six values to four.
GRAPHRUN_TARGET_AVX2 inline void at6(const V8* q, V8* o) {
    const V8 two = _mm256_set1_ps(2.0f), four = _mm256_set1_ps(4.0f), eight = _mm256_set1_ps(8.0f);
    const V8 s12 = _mm256_add_ps(q[1], q[2]), d12 = _mm256_sub_ps(q[1], q[2]);
    const V8 s34 = _mm256_add_ps(q[3], q[4]), d34 = _mm256_sub_ps(q[3], q[4]);
    o[0] = _mm256_add_ps(_mm256_add_ps(q[0], s12), s34);
    o[1] = _mm256_fmadd_ps(two, d34, d12);
    o[2] = _mm256_fmadd_ps(four, s34, s12);
    o[3] = _mm256_add_ps(_mm256_fmadd_ps(eight, d34, d12), q[5]);
}

// G g: three values to six.
GRAPHRUN_TARGET_AVX2 inline void g3(const V8* g, V8* o) {
    const V8 quarter = _mm256_set1_ps(0.25f), sixth = _mm256_set1_ps(1.0f / 6.0f);
    const V8 twelfth = _mm256_set1_ps(1.0f / 12.0f), twentyfourth = _mm256_set1_ps(1.0f / 24.0f);
    const V8 s02 = _mm256_add_ps(g[0], g[2]);
    o[0] = _mm256_mul_ps(quarter, g[0]);
    o[1] = _mm256_mul_ps(_mm256_set1_ps(-1.0f / 6.0f), _mm256_add_ps(s02, g[1]));
    o[2] = _mm256_mul_ps(_mm256_set1_ps(-1.0f / 6.0f), _mm256_sub_ps(s02, g[1]));
    const V8 u = _mm256_fmadd_ps(twentyfourth, g[0], _mm256_mul_ps(sixth, g[2]));
    o[3] = _mm256_fmadd_ps(twelfth, g[1], u);
    o[4] = _mm256_fnmadd_ps(twelfth, g[1], u);
    o[5] = g[2];
}

// The filter part from m0 of out_channels transformed, output channels
// [m0 + 8 first, m0 + 8 last) (groups of eight):
// u[p][(m - m0) / 16][c][(m - m0) % 16], ldm output channels a position (a
// multiple of 16; the columns past the part are the caller's to zero). Eight
// output channels of one input channel are one register (gathered 9 C floats
// apart), stored whole into their panel.
GRAPHRUN_TARGET_AVX2 void filter_rows(const WinogradConv& s, const float* w, int64_t m0, int64_t ldm,
                                      int64_t first, int64_t last, float* u) {
    const int64_t c_all = s.channels;
    const int32_t step = static_cast<int32_t>(9 * c_all);  // winograd_fits: 63 C is within int32
    const __m256i rows = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(step));
    for (int64_t group = first; group < last; ++group) {
        const int64_t jm = group * 8, m = m0 + jm;
        float* panel = u + jm / kPanel * kPanel * c_all + jm % kPanel;
        for (int64_t c = 0; c < c_all; ++c) {
            const float* src = w + (m * c_all + c) * 9;
            V8 g[9];
            for (int k = 0; k < 9; ++k) g[k] = _mm256_i32gather_ps(src + k, rows, 4);
            V8 t[18];  // (G g) rows a, columns j: t[a * 3 + j]
            for (int j = 0; j < 3; ++j) {
                const V8 col[3] = {g[j], g[3 + j], g[6 + j]};
                V8 o[6];
                g3(col, o);
                for (int a = 0; a < 6; ++a) t[a * 3 + j] = o[a];
            }
            for (int a = 0; a < 6; ++a) {
                V8 o[6];
                g3(&t[a * 3], o);
                for (int b = 0; b < 6; ++b) _mm256_storeu_ps(panel + (a * 6 + b) * ldm * c_all + c * kPanel, o[b]);
            }
        }
    }
}

// Where channel c's lanes (c a multiple of 8) of image n's first pixel lie in
// nChw{block}c of `channels` channels and `pixels` pixels a plane (NHWC is
// the one block of all the channels): eight lanes of a pixel are together in
// each, the next pixel's `block` floats on.
inline int64_t lanes_at(int64_t channels, int64_t block, int64_t n, int64_t c, int64_t pixels) {
    return ((n * (channels / block) + c / block) * pixels) * block + c % block;
}

// The products of one position: c[i][j] = sum_k a[i][k] b[j][k] for i <
// rows, j < ldm; a row-major with rows lda floats apart (the channels and 16
// more: rows a power of two apart would share cache sets), b in panels
// (filter_rows), c with rows ldm apart. The sum runs over k in chunks of
// kChunk, each chunk's sum added to c: the chunk's a and b stay in the
// cache while its rows and panels are swept, and the error is that of the
// chunked sum (a running sum over 512 channels erred by 1.7e-5 of the
// largest output in the unit test, the transformed values being larger
// than the outputs). One order for every row and column, whatever the
// register blocking, so the bits do not depend on the tiles or the workers.
// One thread, 64 tiles by 64 to 512 channels, on the 2-core Ice Lake Xeon:
// 74-108 GFLOP/s where oneDNN's sgemm called per position made 38-104 (it
// packs both operands on every call; 38-56 at 64 output channels).
constexpr int64_t kChunk = 128;

// R rows by P panels (16 P columns), the sums over [k0, k1): c's, added to
// it unless `first`. The loops over rows and panels are unrolled whole
// (`#pragma GCC unroll`), so that the accumulators stay in registers: GCC -O2
// kept them on the stack otherwise, a load and a store per multiply.
template <int R, int P>
GRAPHRUN_TARGET_AVX512 inline void block_avx512(int64_t k0, int64_t k1, bool first, const float* a, int64_t lda,
                                                const float* b, int64_t k, float* c, int64_t ldc) {
    __m512 acc[R][P];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
        for (int q = 0; q < P; ++q) acc[r][q] = _mm512_setzero_ps();
    }
    for (int64_t kk = k0; kk < k1; ++kk) {
        __m512 bv[P];
#pragma GCC unroll 16
        for (int q = 0; q < P; ++q) bv[q] = _mm512_loadu_ps(b + (q * k + kk) * kPanel);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            const __m512 av = _mm512_set1_ps(a[r * lda + kk]);
#pragma GCC unroll 16
            for (int q = 0; q < P; ++q) acc[r][q] = _mm512_fmadd_ps(av, bv[q], acc[r][q]);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
        for (int q = 0; q < P; ++q) {
            float* out = c + r * ldc + q * kPanel;
            _mm512_storeu_ps(out, first ? acc[r][q] : _mm512_add_ps(_mm512_loadu_ps(out), acc[r][q]));
        }
    }
}

// R rows by one panel, as two AVX2 registers a row.
template <int R>
GRAPHRUN_TARGET_AVX2 inline void block_avx2(int64_t k0, int64_t k1, bool first, const float* a, int64_t lda,
                                            const float* b, float* c, int64_t ldc) {
    __m256 lo[R], hi[R];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) lo[r] = hi[r] = _mm256_setzero_ps();
    for (int64_t kk = k0; kk < k1; ++kk) {
        const __m256 b0 = _mm256_loadu_ps(b + kk * kPanel), b1 = _mm256_loadu_ps(b + kk * kPanel + 8);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
            const __m256 av = _mm256_broadcast_ss(a + r * lda + kk);
            lo[r] = _mm256_fmadd_ps(av, b0, lo[r]);
            hi[r] = _mm256_fmadd_ps(av, b1, hi[r]);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
        float* row = c + r * ldc;
        _mm256_storeu_ps(row, first ? lo[r] : _mm256_add_ps(_mm256_loadu_ps(row), lo[r]));
        _mm256_storeu_ps(row + 8, first ? hi[r] : _mm256_add_ps(_mm256_loadu_ps(row + 8), hi[r]));
    }
}

// Rows [0, rows) in blocks of Most, the last block as many as are left:
// block(std::integral_constant<int, R>, first row).
template <int Most, class Block>
inline void in_row_blocks(int64_t rows, Block block) {
    int64_t i = 0;
    for (; i + Most <= rows; i += Most) block(std::integral_constant<int, Most>{}, i);
    const int64_t left = rows - i;
    [&]<int... R>(std::integer_sequence<int, R...>) {
        ((left == R + 1 ? (block(std::integral_constant<int, R + 1>{}, i), 0) : 0), ...);
    }(std::make_integer_sequence<int, Most - 1>{});
}

// AVX-512: 12 rows by 2 panels, 24 accumulators of its 32 registers.
GRAPHRUN_TARGET_AVX512 void products_avx512(int64_t rows, int64_t ldm, int64_t k, const float* a, int64_t lda,
                                            const float* b, float* c) {
    for (int64_t k0 = 0; k0 < k; k0 += kChunk) {
        const int64_t k1 = std::min(k, k0 + kChunk);
        for (int64_t j = 0; j < ldm; j += 2 * kPanel) {
            const bool pair = j + 2 * kPanel <= ldm;
            in_row_blocks<12>(rows, [&](auto r, int64_t i) {
                if (pair) block_avx512<decltype(r)::value, 2>(k0, k1, k0 == 0, a + i * lda, lda, b + j * k, k, c + i * ldm + j, ldm);
                else block_avx512<decltype(r)::value, 1>(k0, k1, k0 == 0, a + i * lda, lda, b + j * k, k, c + i * ldm + j, ldm);
            });
        }
    }
}

// AVX2: 6 rows by one panel, 12 accumulators of its 16 registers.
GRAPHRUN_TARGET_AVX2 void products_avx2(int64_t rows, int64_t ldm, int64_t k, const float* a, int64_t lda,
                                        const float* b, float* c) {
    for (int64_t k0 = 0; k0 < k; k0 += kChunk) {
        const int64_t k1 = std::min(k, k0 + kChunk);
        for (int64_t j = 0; j < ldm; j += kPanel)
            in_row_blocks<6>(rows, [&](auto r, int64_t i) {
                block_avx2<decltype(r)::value>(k0, k1, k0 == 0, a + i * lda, lda, b + j * k, c + i * ldm + j, ldm);
            });
    }
}

struct TilePos {
    int64_t n, y, x;  // image, top-left output pixel
};
inline TilePos tile_at(const Plan& p, int64_t t) {
    const int64_t per_image = p.th * p.tw, r = t % per_image;
    return {t / per_image, r / p.tw * 4, r % p.tw * 4};
}

// The input transform of tiles [t0, t0 + count): v[p * v_stride + i * lda + c].
GRAPHRUN_TARGET_AVX2 void input_tiles(const WinogradConv& s, const Plan& p, const float* x, int64_t t0, int64_t count,
                                      float* v) {
    const int64_t h = s.height, wd = s.width, cb_all = s.channels / 8, B = s.block ? s.block : s.channels;
    for (int64_t i = 0; i < count; ++i) {
        const TilePos at = tile_at(p, t0 + i);
        const bool inside = at.y >= 1 && at.y + 4 < h && at.x >= 1 && at.x + 4 < wd;
        for (int64_t cb = 0; cb < cb_all; ++cb) {
            const float* plane = x + lanes_at(s.channels, B, at.n, cb * 8, h * wd);
            V8 d[36];
            if (inside) {
                const float* q = plane + ((at.y - 1) * wd + (at.x - 1)) * B;
                for (int r = 0; r < 6; ++r)
                    for (int c = 0; c < 6; ++c) d[r * 6 + c] = _mm256_loadu_ps(q + (r * wd + c) * B);
            } else {
                for (int r = 0; r < 6; ++r) {
                    const int64_t yy = at.y - 1 + r;
                    for (int c = 0; c < 6; ++c) {
                        const int64_t xx = at.x - 1 + c;
                        d[r * 6 + c] = (yy >= 0 && yy < h && xx >= 0 && xx < wd)
                                           ? _mm256_loadu_ps(plane + (yy * wd + xx) * B)
                                           : _mm256_setzero_ps();
                    }
                }
            }
            V8 t[36];  // B^T d
            for (int c = 0; c < 6; ++c) {
                const V8 col[6] = {d[c], d[6 + c], d[12 + c], d[18 + c], d[24 + c], d[30 + c]};
                V8 o[6];
                bt6(col, o);
                for (int r = 0; r < 6; ++r) t[r * 6 + c] = o[r];
            }
            float* dst = v + i * p.lda + cb * 8;
            for (int r = 0; r < 6; ++r) {
                V8 o[6];
                bt6(&t[r * 6], o);
                for (int c = 0; c < 6; ++c) _mm256_storeu_ps(dst + (r * 6 + c) * p.v_stride, o[c]);
            }
        }
    }
}

// The output transform of tiles [t0, t0 + count) for output channels [m0, m0
// + mp), from mo[p * m_stride + i * ldm + m - m0], with the bias, the
// residual and the activation, into y.
GRAPHRUN_TARGET_AVX2 void output_tiles(const WinogradConv& s, const Plan& p, const float* mo, int64_t t0,
                                       int64_t count, int64_t m0, int64_t mp, int64_t ldm, const float* bias,
                                       const float* residual, float* y) {
    const int64_t h = s.height, wd = s.width, B = s.block ? s.block : s.out_channels;
    const bool relu = s.act == Activation::Relu, clip = s.act == Activation::Clip;
    const V8 zero = _mm256_setzero_ps(), lo = _mm256_set1_ps(s.lo), hi = _mm256_set1_ps(s.hi);
    for (int64_t i = 0; i < count; ++i) {
        const TilePos at = tile_at(p, t0 + i);
        const int rows = static_cast<int>(std::min<int64_t>(4, h - at.y));
        const int cols = static_cast<int>(std::min<int64_t>(4, wd - at.x));
        for (int64_t mb = 0; mb < mp / 8; ++mb) {
            const int64_t m = m0 + mb * 8;
            const float* src = mo + i * ldm + mb * 8;
            V8 t[24];  // A^T q: rows r of 4, columns c of 6
            for (int c = 0; c < 6; ++c) {
                V8 col[6];
                for (int r = 0; r < 6; ++r) col[r] = _mm256_loadu_ps(src + (r * 6 + c) * p.m_stride);
                V8 o[4];
                at6(col, o);
                for (int r = 0; r < 4; ++r) t[r * 6 + c] = o[r];
            }
            const V8 b = bias ? _mm256_loadu_ps(bias + m) : zero;
            const int64_t plane = lanes_at(s.out_channels, B, at.n, m, h * wd);
            for (int r = 0; r < rows; ++r) {
                V8 o[4];
                at6(&t[r * 6], o);
                for (int c = 0; c < cols; ++c) {
                    const int64_t off = plane + ((at.y + r) * wd + at.x + c) * B;
                    V8 val = _mm256_add_ps(o[c], b);
                    if (residual) val = _mm256_add_ps(val, _mm256_loadu_ps(residual + off));
                    if (relu) val = _mm256_max_ps(val, zero);
                    if (clip) val = _mm256_min_ps(_mm256_max_ps(val, lo), hi);
                    _mm256_storeu_ps(y + off, val);
                }
            }
        }
    }
}
#endif

}  // namespace

bool winograd_fits(const WinogradConv& s) {
#if defined(GRAPHRUN_X86_VARIANTS)
    if (disabled_by_env() || active_isa() < Isa::Avx2) return false;  // graphrun's AVX2 includes FMA (simd.h)
    if (s.act != Activation::None && s.act != Activation::Relu && s.act != Activation::Clip) return false;
    const int64_t big = std::numeric_limits<int32_t>::max() / 64;
    const bool wide = active_isa() >= Isa::Avx512;
    const int64_t min_tiles = wide ? kMinTilesWide : kMinTiles;
    if (s.batch < 1 || s.height < 1 || s.width < 1 || s.channels < kMinChannels || s.out_channels < 8) return false;
    if (s.block != 0 && s.block != 8 && s.block != 16) return false;
    if (s.channels % 8 != 0 || s.out_channels % 8 != 0) return false;
    if (s.block && (s.channels % s.block != 0 || s.out_channels % s.block != 0)) return false;
    if (s.channels > big || s.out_channels > big || s.height > big || s.width > big) return false;
    const int64_t tiles = (s.height + 3) / 4 * ((s.width + 3) / 4);
    if (wide && 4 * s.height * s.width < kMinFillWide * 16 * tiles) return false;
    return tiles <= big / s.batch && tiles * s.batch >= min_tiles;
#else
    (void)s;
    return false;
#endif
}

uint64_t winograd_scratch_bytes(const WinogradConv& s, int threads) {
    const Plan p = plan_of(s, threads);
    return p.u_bytes + static_cast<uint64_t>(p.slots) * p.slot_bytes;
}

void winograd_conv3x3(const WinogradConv& s, const float* x, const float* w, const float* bias, const float* residual,
                      float* y, void* scratch, const KernelContext& ctx) {
#if defined(GRAPHRUN_X86_VARIANTS)
    const Plan p = plan_of(s, ctx.threads);
    float* u = static_cast<float*>(scratch);
    char* slots = static_cast<char*>(scratch) + p.u_bytes;
    const bool wide = active_isa() >= Isa::Avx512;
    for (int64_t part = 0; part < p.parts; ++part) {
        const int64_t m0 = part * p.part, mp = std::min(p.part, s.out_channels - m0);
        const int64_t ldm = (mp + kPanel - 1) / kPanel * kPanel;
        if (ldm > mp)  // the last panel's columns past the part: zeros, their products never read
            for (int64_t q = 0; q < kPositions; ++q)
                for (int64_t c = 0; c < s.channels; ++c)
                    std::fill_n(u + (q * ldm + ldm - kPanel) * s.channels + c * kPanel + mp % kPanel, ldm - mp, 0.0f);
        parallel_for(ctx, mp / 8, 1, [&](int64_t first, int64_t last) { filter_rows(s, w, m0, ldm, first, last, u); });
        parallel_for(ctx, p.slots, 1, [&](int64_t first, int64_t last) {
            for (int64_t slot = first; slot < last; ++slot) {
                float* v = reinterpret_cast<float*>(slots + static_cast<uint64_t>(slot) * p.slot_bytes);
                float* mo = v + kPositions * p.v_stride;
                for (int64_t b = slot; b < p.blocks; b += p.slots) {
                    const int64_t t0 = b * p.block, count = std::min(p.block, p.tiles - t0);
                    input_tiles(s, p, x, t0, count, v);
                    for (int64_t q = 0; q < kPositions; ++q) {
                        const float* a = v + q * p.v_stride;
                        const float* b = u + q * ldm * s.channels;
                        float* c = mo + q * p.m_stride;
                        if (wide) products_avx512(count, ldm, s.channels, a, p.lda, b, c);
                        else products_avx2(count, ldm, s.channels, a, p.lda, b, c);
                    }
                    output_tiles(s, p, mo, t0, count, m0, mp, ldm, bias, residual, y);
                }
            }
        });
    }
#else
    (void)s, (void)x, (void)w, (void)bias, (void)residual, (void)y, (void)scratch, (void)ctx;
#endif
}

}  // namespace graphrun::kernels
