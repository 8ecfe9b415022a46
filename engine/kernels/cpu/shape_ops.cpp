// Kernels that move or convert elements without arithmetic: transpose (any
// rank, strided copy with a blocked path when the two innermost output axes
// are swapped), reshape and identity (a byte copy: the executor runs them only
// when they cannot alias), cast (every pair of dtypes) and concat.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "engine/ir/elements.h"
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

namespace {

// --- transpose -------------------------------------------------------------------

constexpr int64_t kTile = 32;

class TransposeKernel final : public KernelBase {
  public:
    TransposeKernel(const Graph& g, const Node& n) : KernelBase(g, n) {
        auto dims = transpose_dims(n, in_shapes_[0]);
        if (!dims || dims->size() > static_cast<size_t>(kMaxDims)) {
            ok_ = false;
            return;
        }
        rank_ = static_cast<int>(dims->size());
        for (int k = 0; k < rank_; ++k) {
            size_[k] = (*dims)[static_cast<size_t>(k)].size;
            stride_[k] = (*dims)[static_cast<size_t>(k)].stride;
        }
    }
    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext&) override {
        if (!ok_) return "internal error: transpose perm does not match the input";
        if (out.numel == 0) return "";
        switch (dtype_size(out.dtype)) {
            case 1:
                run<uint8_t>(in[0].data, out.data);
                break;
            case 2:
                run<uint16_t>(in[0].data, out.data);
                break;
            case 4:
                run<uint32_t>(in[0].data, out.data);
                break;
            case 8:
                run<uint64_t>(in[0].data, out.data);
                break;
            default:
                return "internal error: transpose of an unknown element size";
        }
        return "";
    }

  private:
    template <class E>
    void run(const void* src_v, void* dst_v) const {
        const E* src = static_cast<const E*>(src_v);
        E* dst = static_cast<E*>(dst_v);
        if (rank_ <= 1) {  // the permutation only moved size-1 axes
            std::memcpy(dst, src, static_cast<size_t>(out_numel_) * sizeof(E));
            return;
        }
        const int last = rank_ - 1;
        const int outer = rank_ - 2;  // axes walked by the odometer
        const int64_t rows = size_[rank_ - 2], cols = size_[last];
        const int64_t row_stride = stride_[rank_ - 2], col_stride = stride_[last];
        std::array<int64_t, kMaxDims> idx{};
        int64_t off = 0;
        for (E* o = dst; o < dst + out_numel_; o += rows * cols) {
            const E* base = src + off;
            if (row_stride == 1) {
                // The innermost two output axes are swapped in the input: tiles.
                for (int64_t i0 = 0; i0 < rows; i0 += kTile)
                    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
                        const int64_t i1 = std::min(i0 + kTile, rows),
                                      j1 = std::min(j0 + kTile, cols);
                        for (int64_t i = i0; i < i1; ++i)
                            for (int64_t j = j0; j < j1; ++j)
                                o[i * cols + j] = base[i + j * col_stride];
                    }
            } else {
                for (int64_t i = 0; i < rows; ++i) {
                    const E* row = base + i * row_stride;
                    E* out_row = o + i * cols;
                    if (col_stride == 1)
                        std::memcpy(out_row, row, static_cast<size_t>(cols) * sizeof(E));
                    else
                        for (int64_t j = 0; j < cols; ++j) out_row[j] = row[j * col_stride];
                }
            }
            for (int d = outer - 1; d >= 0; --d) {
                off += stride_[d];
                if (++idx[d] < size_[d]) break;
                off -= size_[d] * stride_[d];
                idx[d] = 0;
            }
        }
    }

    bool ok_ = true;
    int rank_ = 0;
    std::array<int64_t, kMaxDims> size_{}, stride_{};
};

// --- reshape, identity -----------------------------------------------------------

class CopyKernel final : public KernelBase {
  public:
    CopyKernel(const Graph& g, const Node& n) : KernelBase(g, n) {}

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext&) override {
        if (in[0].dtype != out.dtype || in[0].numel != out.numel)
            return "internal error: copy between different tensors";
        if (out.numel > 0 && in[0].data != out.data)
            std::memcpy(out.data, in[0].data,
                        static_cast<size_t>(out.numel) * dtype_size(out.dtype));
        return "";
    }
};

// --- cast ------------------------------------------------------------------------

// bool is stored as one byte; any non-zero byte reads as true.
template <class To, class From>
To convert(From x) {
    constexpr bool to_bool = std::is_same_v<To, uint8_t>, from_bool = std::is_same_v<From, uint8_t>;
    if constexpr (to_bool) {
        return x != 0 ? 1 : 0;  // NaN != 0: true, as numpy's astype(bool)
    } else if constexpr (from_bool) {
        return x != 0 ? To(1) : To(0);
    } else if constexpr (std::is_floating_point_v<To>) {
        return static_cast<To>(x);
    } else if constexpr (std::is_floating_point_v<From>) {
        // Truncate toward zero, saturate to the integer range, NaN -> 0.
        constexpr double lo =
            static_cast<double>(std::numeric_limits<To>::min());  // -2^31 or -2^63, exact
        const double t = std::trunc(static_cast<double>(x));
        if (t != t) return 0;
        if (t < lo) return std::numeric_limits<To>::min();
        if (t >= -lo) return std::numeric_limits<To>::max();
        return static_cast<To>(t);
    } else {
        return static_cast<To>(x);  // integer narrowing wraps (C++20 defines it)
    }
}

template <class To, class From>
class CastKernel final : public KernelBase {
  public:
    CastKernel(const Graph& g, const Node& n) : KernelBase(g, n) {}

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext&) override {
        const From* x = static_cast<const From*>(in[0].data);
        To* o = static_cast<To*>(out.data);
        if constexpr (std::is_same_v<To, From> && !std::is_same_v<To, uint8_t>) {
            if (out.numel > 0) std::memcpy(o, x, static_cast<size_t>(out.numel) * sizeof(To));
        } else {
            const From* __restrict src = x;
            To* __restrict dst = o;
            blocked_loop(out.numel, [=](int64_t i) { dst[i] = convert<To>(src[i]); });
        }
        return "";
    }
};

template <class From>
std::unique_ptr<Kernel> make_cast_from(const Graph& g, const Node& n) {
    return dispatch_dtype(n.dtype, [&](auto tag) -> std::unique_ptr<Kernel> {
        return std::make_unique<CastKernel<decltype(tag), From>>(g, n);
    });
}

// An 8-bit integer from a float as elements::saturate makes it (toward zero,
// saturated, NaN -> 0): clamped first, so that the truncating conversion
// stays in range (the same result: a value below the least truncates to it).
template <class I, class F>
inline I saturate_8bit(F x) {
    constexpr F lo = static_cast<F>(std::numeric_limits<I>::min()), hi = static_cast<F>(std::numeric_limits<I>::max());
    const F c = x != x ? F(0) : std::min(std::max(x, lo), hi);
    return static_cast<I>(static_cast<int32_t>(c));
}

#if defined(GRAPHRUN_X86_VARIANTS)
// f32 to i8 or u8 as saturate_8bit, 16 at a time without a branch: NaN lanes
// to 0, the rest clamped, then truncated (the clamped values fit an int32 and
// their low byte is the 8-bit value). The compiler made branches of the scalar
// min, max and NaN test: 5 ns an element where values pass the range.
GRAPHRUN_TARGET_AVX512 void f32_to_8bit_avx512(const float* src, uint8_t* dst, int64_t n, float lo, float hi) {
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 v = _mm512_loadu_ps(src + i);
        const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        const __m512 c = _mm512_maskz_mov_ps(static_cast<__mmask16>(~nan), _mm512_min_ps(_mm512_max_ps(v, vlo), vhi));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(c)));
    }
    for (; i < n; ++i) {
        const float x = src[i];
        dst[i] = static_cast<uint8_t>(static_cast<int32_t>(x != x ? 0.0f : std::min(std::max(x, lo), hi)));
    }
}

// The same 8 at a time with AVX2: int32s packed to 16 and then 8 bits (in range, so no saturation).
GRAPHRUN_TARGET_AVX2 void f32_to_8bit_avx2(const float* src, uint8_t* dst, int64_t n, float lo, float hi) {
    const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(src + i);
        const __m256 ok = _mm256_cmp_ps(v, v, _CMP_ORD_Q);
        const __m256 c = _mm256_and_ps(ok, _mm256_min_ps(_mm256_max_ps(v, vlo), vhi));
        const __m256i q = _mm256_cvttps_epi32(c);
        const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        const __m128i b = lo < 0 ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w);
        _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + i), b);
    }
    for (; i < n; ++i) {
        const float x = src[i];
        dst[i] = static_cast<uint8_t>(static_cast<int32_t>(x != x ? 0.0f : std::min(std::max(x, lo), hi)));
    }
}
#endif

// The casts of quantized models (8-bit integers to and from f32, f64 and i32),
// typed, where the element-by-element dispatch through a double took 6 ns an
// element; the same values as elements::cast_element. False for other pairs.
template <class To, class From>
void cast_8bit(const void* in, void* out, int64_t n) {
    const From* __restrict src = static_cast<const From*>(in);
    To* __restrict dst = static_cast<To*>(out);
#if defined(GRAPHRUN_X86_VARIANTS)
    if constexpr (std::is_same_v<From, float> && sizeof(To) == 1) {
        constexpr float lo = std::numeric_limits<To>::min(), hi = std::numeric_limits<To>::max();
        auto* bytes = reinterpret_cast<uint8_t*>(dst);
        switch (active_isa()) {
            case Isa::Avx512: return f32_to_8bit_avx512(src, bytes, n, lo, hi);
            case Isa::Avx2: return f32_to_8bit_avx2(src, bytes, n, lo, hi);
            case Isa::Baseline: break;
        }
    }
#endif
    // Compiled for the active ISA (simd.h), where the compiler vectorizes it.
    with_isa([=] {
        if constexpr (std::is_floating_point_v<From> && !std::is_floating_point_v<To>)
            blocked_loop(n, [=](int64_t i) { dst[i] = saturate_8bit<To>(src[i]); });
        else  // exact, or an integer wrapping to 8 bits
            blocked_loop(n, [=](int64_t i) { dst[i] = static_cast<To>(src[i]); });
    });
}

bool typed_8bit_cast(DType from, DType to, const void* in, void* out, int64_t n) {
    auto from_8bit = [&](auto tag) {
        using F = decltype(tag);
        switch (to) {
            case DType::F32: cast_8bit<float, F>(in, out, n); return true;
            case DType::F64: cast_8bit<double, F>(in, out, n); return true;
            case DType::I32: cast_8bit<int32_t, F>(in, out, n); return true;
            default: return false;
        }
    };
    auto to_8bit = [&](auto tag) {
        using T = decltype(tag);
        switch (from) {
            case DType::F32: cast_8bit<T, float>(in, out, n); return true;
            case DType::F64: cast_8bit<T, double>(in, out, n); return true;
            case DType::I32: cast_8bit<T, int32_t>(in, out, n); return true;
            default: return false;
        }
    };
    if (from == DType::U8) return from_8bit(uint8_t{});
    if (from == DType::I8) return from_8bit(int8_t{});
    if (to == DType::U8) return to_8bit(uint8_t{});
    if (to == DType::I8) return to_8bit(int8_t{});
    return false;
}

// A cast to or from a storage type (f16, bf16, i8, u8): engine/ir/elements.h's
// conversions, element by element; the same dtype copies the bytes.
class StorageCastKernel final : public KernelBase {
  public:
    StorageCastKernel(const Graph& g, const Node& n) : KernelBase(g, n) {}

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext&) override {
        const DType from = in[0].dtype, to = out.dtype;
        if (from == to) {
            if (out.numel > 0) std::memcpy(out.data, in[0].data, static_cast<size_t>(out.numel) * dtype_size(to));
            return "";
        }
        if (from == DType::F32 && to == DType::F16) {
            f32_to_f16_row(static_cast<const float*>(in[0].data), static_cast<uint16_t*>(out.data), out.numel);
            return "";
        }
        if (from == DType::F16 && to == DType::F32) {
            f16_to_f32_row(static_cast<const uint16_t*>(in[0].data), static_cast<float*>(out.data), out.numel);
            return "";
        }
        if (typed_8bit_cast(from, to, in[0].data, out.data, out.numel)) return "";
        for (int64_t i = 0; i < out.numel; ++i) elements::cast_element(to, out.data, from, in[0].data, i);
        return "";
    }
};

// --- concat ----------------------------------------------------------------------

class ConcatKernel final : public KernelBase {
  public:
    ConcatKernel(const Graph& g, const Node& n) : KernelBase(g, n) {
        const std::optional<ConcatSplit> split = concat_split(n, out_shape_, in_shapes_);
        if (!split) {
            ok_ = false;
            return;
        }
        outer_ = split->outer;
        for (int64_t width : split->widths)
            chunk_bytes_.push_back(static_cast<size_t>(width) * dtype_size(n.dtype));
        if (n.channels_last && n.channel_block > 0) {
            // oneDNN's blocked layout ([N][C / block][H][W][block], every
            // input's channels a multiple of the block): each image's blocks of
            // each input in turn, the same copies as NCHW's.
            for (const Shape& s : in_shapes_)
                if (s.size() != 4 || s[1] % n.channel_block != 0) ok_ = false;
        } else if (n.channels_last) {
            // Channels-last (engine/plan/channels_last.h: a 4-D concat along
            // axis 1 whose inputs are NHWC too): each pixel's channels of each
            // input in turn, the concat of the [N, H, W, C] arrays along C.
            outer_ = out_shape_[0] * out_shape_[2] * out_shape_[3];
            for (size_t i = 0; i < chunk_bytes_.size(); ++i)
                chunk_bytes_[i] = static_cast<size_t>(in_shapes_[i][1]) * dtype_size(n.dtype);
        }
        for (size_t bytes : chunk_bytes_) pitch_ += bytes;
    }

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        if (!ok_) return "internal error: concat inputs do not match the output";
        if (out.numel == 0) return "";
        // Rows over the workers, 256 KiB a task (a channels-last concat copies
        // each pixel's channels: 3025 rows of 512 bytes in SqueezeNet); a copy
        // under 2 MiB wakes no sleeping worker, as a cheap elementwise op.
        const size_t row = std::max<size_t>(pitch_, 1);
        const auto grain = static_cast<int64_t>(std::max<size_t>(1, (size_t{256} << 10) / row));
        const auto cold_below = static_cast<int64_t>((size_t{2} << 20) / row);
        parallel_for(ctx, outer_, grain, [&](int64_t b, int64_t e) {
            auto* dst = static_cast<unsigned char*>(out.data) + static_cast<size_t>(b) * pitch_;
            for (int64_t o = b; o < e; ++o)
                for (size_t i = 0; i < chunk_bytes_.size(); ++i) {
                    const size_t bytes = chunk_bytes_[i];
                    if (bytes == 0) continue;
                    std::memcpy(dst,
                                static_cast<const unsigned char*>(in[i].data) + static_cast<size_t>(o) * bytes,
                                bytes);
                    dst += bytes;
                }
        }, cold_below);
        return "";
    }

  private:
    bool ok_ = true;
    int64_t outer_ = 1;
    std::vector<size_t> chunk_bytes_;  // each input's bytes in one output row
    size_t pitch_ = 0;                 // an output row's bytes: their sum
};

}  // namespace

std::unique_ptr<Kernel> make_transpose_kernel(const Graph& g, const Node& n) {
    return std::make_unique<TransposeKernel>(g, n);
}

std::unique_ptr<Kernel> make_copy_kernel(const Graph& g, const Node& n) {
    return std::make_unique<CopyKernel>(g, n);
}

std::unique_ptr<Kernel> make_cast_kernel(const Graph& g, const Node& n) {
    if (n.inputs.size() != 1) return make_error_kernel("internal error: cast needs one input");
    if (is_storage(n.dtype) || is_storage(g.node(n.inputs[0].id).dtype)) return std::make_unique<StorageCastKernel>(g, n);
    return dispatch_dtype(g.node(n.inputs[0].id).dtype,
                          [&](auto tag) -> std::unique_ptr<Kernel> {
                              return make_cast_from<decltype(tag)>(g, n);
                          });
}

std::unique_ptr<Kernel> make_concat_kernel(const Graph& g, const Node& n) {
    return std::make_unique<ConcatKernel>(g, n);
}

}  // namespace graphrun::kernels
