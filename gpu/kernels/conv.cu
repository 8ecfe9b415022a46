// conv, conv_transpose and the pools on the GPU (ONNX semantics; the window
// from engine/ir/conv_geometry.h, as on the CPU).
//   conv: per image and group, a tile of output pixels at a time, im2col of
//     the tile's columns into scratch, then one cuBLAS GEMM onto the tile's
//     part of the output, which starts as the bias (beta = 1); a 1x1 stride-1
//     unpadded conv skips im2col (one GEMM on x itself); a depthwise conv (one
//     input channel per group) is a direct kernel, one thread per output element.
//   conv_transpose: per image and group, a tile of output channels at a time,
//     col = W_g^T X_g for those channels (cuBLAS), then a col2im kernel that
//     gathers each of their output elements' contributions (no atomics) and
//     adds them to the bias.
//   pools: one thread per output element; the global pools one block per plane.
// The scratch (counted as workspace under --memory-limit) is bounded as on the
// CPU (engine/kernels/cpu/conv.cpp): tiles of about kConvTileBytes, smaller ones
// when the limit has no room for that, so that a graph the CPU runs under a
// limit runs on the GPU under it too.
// cuBLAS is column-major: a row-major product C[m,n] = A[m,k] B[k,n] is
// computed as C^T = B^T A^T, so the operands swap places and nothing is copied.
#include <algorithm>
#include <cmath>
#include <memory>
#include <new>
#include <string>

#include "engine/ir/conv_geometry.h"
#include "engine/kernels/common/kernel_common.h"
#include "gpu/cublas_api.h"
#include "gpu/kernels/conv.cuh"

namespace graphrun::gpu {

namespace {

// The window as the device sees it (a copy of WindowGeometry's numbers).
struct Win {
    int64_t batch, channels, out_channels, group;
    int64_t ih, iw, kh, kw, oh, ow, sh, sw, dh, dw, ph, pw, pe_h, pe_w;
    bool count_include_pad, global;
};

Win win_of(const WindowGeometry& g) {
    return Win{g.batch,     g.channels,  g.out_channels, g.group,       g.in[0],        g.in[1],
               g.kernel[0], g.kernel[1], g.out[0],       g.out[1],      g.stride[0],    g.stride[1],
               g.dilation[0], g.dilation[1], g.pad_begin[0], g.pad_begin[1], g.pad_end[0], g.pad_end[1],
               g.count_include_pad, g.global};
}

cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k,
                    const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    const float alpha = 1.0f;
    return cublas().sgemm_strided_batched(h, ta, tb, m, n, k, &alpha, a, lda, 0, b, ldb, 0, &beta, c, ldc, 0, 1);
}
cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k,
                    const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
    const double alpha = 1.0;
    return cublas().dgemm_strided_batched(h, ta, tb, m, n, k, &alpha, a, lda, 0, b, ldb, 0, &beta, c, ldc, 0, 1);
}

// y[i] = bias[(i / plane) % channels], or 0 without a bias.
template <class T>
__global__ void fill_bias(T* __restrict__ y, const T* __restrict__ bias, int64_t n, int64_t plane, int64_t channels) {
    for (int64_t i = thread_index(); i < n; i += thread_count()) y[i] = bias ? bias[(i / plane) % channels] : T(0);
}

// Scratch for `tile` units of `unit` elements of T. When the allocator refuses
// it (after the session's second chance inside scratch_alloc: the strategy's
// backlog given back), a quarter of the tile, down to `min_tile`; then an error
// worded as the CPU's. A refused try holds nothing, so nothing leaks. Sets
// `tile` to the tile it got.
template <class T>
std::unique_ptr<Scratch> tile_scratch(GpuContext& ctx, int64_t unit, int64_t& tile,
                                      int64_t min_tile, const char* what) {
    for (;;) {
        const uint64_t bytes = static_cast<uint64_t>(unit * tile) * sizeof(T);
        auto buf = std::make_unique<Scratch>(ctx, bytes, std::nothrow);
        if (buf->get()) return buf;
        if (tile <= min_tile)
            throw std::runtime_error("out of memory: " + std::to_string(bytes) +
                                     " bytes of scratch for " + what +
                                     " (workspace) exceed the memory limit (or the GPU's free "
                                     "memory)");
        tile = std::max(min_tile, tile / 4);
    }
}

// col[r, q] for r = (c, ki, kj) of one group's planes x and q < n, the output
// pixel p0 + q: the columns of a tile of n output pixels.
template <class T>
__global__ void im2col(const T* __restrict__ x, T* __restrict__ col, Win w, int64_t rows,
                       int64_t p0, int64_t n) {
    const int64_t total = rows * n;
    for (int64_t i = thread_index(); i < total; i += thread_count()) {
        const int64_t r = i / n, p = p0 + (i - r * n);
        const int64_t c = r / (w.kh * w.kw), ki = (r / w.kw) % w.kh, kj = r % w.kw;
        const int64_t oh = p / w.ow, ow = p - oh * w.ow;
        const int64_t ih = oh * w.sh + ki * w.dh - w.ph, iw = ow * w.sw + kj * w.dw - w.pw;
        col[i] = ih >= 0 && ih < w.ih && iw >= 0 && iw < w.iw ? x[(c * w.ih + ih) * w.iw + iw] : T(0);
    }
}

// One input channel per group: each output element sums its window.
template <class T>
__global__ void depthwise(const T* __restrict__ x, const T* __restrict__ wt, T* __restrict__ y, Win w) {
    const int64_t plane = w.oh * w.ow, n = w.batch * w.out_channels * plane, mg = w.out_channels / w.group;
    for (int64_t i = thread_index(); i < n; i += thread_count()) {
        const int64_t nm = i / plane, p = i - nm * plane, m = nm % w.out_channels, b = nm / w.out_channels;
        const int64_t oh = p / w.ow, ow = p - oh * w.ow;
        const T* xp = x + (b * w.channels + m / mg) * w.ih * w.iw;
        const T* k = wt + m * w.kh * w.kw;
        T s = y[i];
        for (int64_t ki = 0; ki < w.kh; ++ki) {
            const int64_t ih = oh * w.sh + ki * w.dh - w.ph;
            if (ih < 0 || ih >= w.ih) continue;
            for (int64_t kj = 0; kj < w.kw; ++kj) {
                const int64_t iw = ow * w.sw + kj * w.dw - w.pw;
                if (iw >= 0 && iw < w.iw) s = fma(k[ki * w.kw + kj], xp[ih * w.iw + iw], s);
            }
        }
        y[i] = s;
    }
}

// Output planes y[mg, oh, ow] (one group's, or a tile of its channels) += the
// col entries that land on them (col[(m, ki, kj), input pixel], m < mg).
template <class T>
__global__ void col2im(const T* __restrict__ col, T* __restrict__ y, Win w, int64_t mg) {
    const int64_t plane = w.oh * w.ow, n = mg * plane, hw = w.ih * w.iw;
    for (int64_t i = thread_index(); i < n; i += thread_count()) {
        const int64_t m = i / plane, p = i - m * plane, oh = p / w.ow, ow = p - oh * w.ow;
        T s = y[i];
        for (int64_t ki = 0; ki < w.kh; ++ki) {
            const int64_t th = oh + w.ph - ki * w.dh;
            if (th < 0 || th % w.sh != 0 || th / w.sh >= w.ih) continue;
            for (int64_t kj = 0; kj < w.kw; ++kj) {
                const int64_t tw = ow + w.pw - kj * w.dw;
                if (tw < 0 || tw % w.sw != 0 || tw / w.sw >= w.iw) continue;
                s += col[((m * w.kh + ki) * w.kw + kj) * hw + (th / w.sh) * w.iw + tw / w.sw];
            }
        }
        y[i] = s;
    }
}

// The length of [a, b) within [lo, hi).
__device__ inline int64_t span(int64_t a, int64_t b, int64_t lo, int64_t hi) {
    const int64_t s = a > lo ? a : lo, e = b < hi ? b : hi;
    return e > s ? e - s : 0;
}

template <class T>
__global__ void pool(const T* __restrict__ x, T* __restrict__ y, Win w, bool is_max) {
    const int64_t plane = w.oh * w.ow, n = w.batch * w.channels * plane;
    for (int64_t i = thread_index(); i < n; i += thread_count()) {
        const int64_t c = i / plane, p = i - c * plane, oh = p / w.ow, ow = p - oh * w.ow;
        const T* xp = x + c * w.ih * w.iw;
        T acc = is_max ? -INFINITY : T(0);
        bool nan = false;
        for (int64_t ki = 0; ki < w.kh; ++ki) {
            const int64_t ih = oh * w.sh + ki * w.dh - w.ph;
            if (ih < 0 || ih >= w.ih) continue;
            for (int64_t kj = 0; kj < w.kw; ++kj) {
                const int64_t iw = ow * w.sw + kj * w.dw - w.pw;
                if (iw < 0 || iw >= w.iw) continue;
                const T v = xp[ih * w.iw + iw];
                if (is_max) {
                    nan |= v != v;
                    acc = v > acc ? v : acc;
                } else {
                    acc += v;
                }
            }
        }
        if (!is_max) {
            const int64_t h0 = oh * w.sh - w.ph, w0 = ow * w.sw - w.pw;
            const int64_t lo_h = w.count_include_pad ? -w.ph : 0, hi_h = w.count_include_pad ? w.ih + w.pe_h : w.ih;
            const int64_t lo_w = w.count_include_pad ? -w.pw : 0, hi_w = w.count_include_pad ? w.iw + w.pe_w : w.iw;
            const int64_t ch = span(h0, h0 + w.kh, lo_h, hi_h), cw = span(w0, w0 + w.kw, lo_w, hi_w);
            acc /= static_cast<T>(ch) * static_cast<T>(cw);
        }
        y[i] = nan ? T(NAN) : acc;
    }
}

// One block per plane of `len` elements: its mean or max (NaN propagates).
template <class T>
__global__ void global_pool(const T* __restrict__ x, T* __restrict__ y, int64_t planes, int64_t len, bool is_max) {
    __shared__ double part[kBlock];
    __shared__ int nan_seen;
    for (int64_t pl = blockIdx.x; pl < planes; pl += gridDim.x) {
        if (threadIdx.x == 0) nan_seen = 0;
        __syncthreads();
        const T* xp = x + pl * len;
        double acc = is_max ? -INFINITY : 0.0;
        for (int64_t i = threadIdx.x; i < len; i += blockDim.x) {
            const double v = static_cast<double>(xp[i]);
            if (v != v) nan_seen = 1;
            acc = is_max ? (v > acc ? v : acc) : acc + v;
        }
        part[threadIdx.x] = acc;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s /= 2) {
            if (static_cast<int>(threadIdx.x) < s)
                part[threadIdx.x] = is_max ? fmax(part[threadIdx.x], part[threadIdx.x + s])
                                           : part[threadIdx.x] + part[threadIdx.x + s];
            __syncthreads();
        }
        if (threadIdx.x == 0)
            y[pl] = nan_seen ? T(NAN) : static_cast<T>(is_max ? part[0] : part[0] / static_cast<double>(len));
        __syncthreads();
    }
}

template <class T>
class ConvAreaKernel final : public GpuKernel {
  public:
    ConvAreaKernel(const Graph& g, const Node& n, GpuContext& ctx) : GpuKernel(g, n, ctx) {
        const bool weighted = n.op == OpKind::Conv || n.op == OpKind::ConvTranspose;
        auto geo = window_geometry(n, in_shapes_[0], weighted ? &in_shapes_[1] : nullptr, nullptr);
        if (geo) w_ = win_of(*geo);
        ok_ = geo.has_value();
    }

  protected:
    void compute(const TensorRef* in, TensorRef& out) override {
        if (!ok_) throw std::runtime_error(std::string("internal error: ") + op_name(op_) + "'s geometry does not resolve");
        if (out.numel == 0) return;
        const T* x = static_cast<const T*>(in[0].data);
        T* y = static_cast<T*>(out.data);
        if (op_ == OpKind::MaxPool || op_ == OpKind::AvgPool) {
            launch<pool<T>>(ctx_, grid_for(out.numel), kBlock, x, y, w_, op_ == OpKind::MaxPool);
            return;
        }
        if (op_ == OpKind::GlobalAvgPool || op_ == OpKind::GlobalMaxPool) {
            const int64_t planes = w_.batch * w_.channels;
            launch<global_pool<T>>(ctx_, static_cast<unsigned>(std::min<int64_t>(planes, kMaxGrid)), kBlock, x, y,
                                   planes, w_.iw, op_ == OpKind::GlobalMaxPool);
            return;
        }
        const T* wt = static_cast<const T*>(in[1].data);
        const T* bias = in_shapes_.size() > 2 ? static_cast<const T*>(in[2].data) : nullptr;
        const int64_t plane = w_.oh * w_.ow;
        launch<fill_bias<T>>(ctx_, grid_for(out.numel), kBlock, y, bias, out.numel, plane, w_.out_channels);
        const int64_t cg = w_.channels / w_.group, mg = w_.out_channels / w_.group;
        const int64_t hw = w_.ih * w_.iw, kp = w_.kh * w_.kw;
        // No input channels (conv, conv_transpose) or no input pixels (conv_transpose):
        // the output is the bias, as on the CPU. cuBLAS refuses the GEMMs' leading
        // dimensions of 0 (ldb = k, lda = hw) with CUBLAS_STATUS_INVALID_VALUE.
        if (cg == 0 || (op_ == OpKind::ConvTranspose && hw == 0)) return;
        if (op_ == OpKind::Conv && cg == 1) {
            launch<depthwise<T>>(ctx_, grid_for(out.numel), kBlock, x, wt, y, w_);
            return;
        }
        cublasHandle_t h = ctx_.cublas;
        if (!h) throw std::runtime_error("internal error: the GPU context has no cuBLAS handle");
        if (op_ == OpKind::Conv) {
            const int64_t k = cg * kp;
            const bool direct =
                kp == 1 && w_.sh == 1 && w_.sw == 1 && !w_.ph && !w_.pw && !w_.pe_h && !w_.pe_w;
            // The direct GEMM reads x itself: one tile of the whole plane, no scratch.
            int64_t tile = plane;
            std::unique_ptr<Scratch> col;
            if (!direct) {
                tile = kernels::conv_tile_for<T>(k, plane);
                col = tile_scratch<T>(ctx_, k, tile, kernels::kConvMinTile, "conv's im2col columns");
            }
            T* c = col ? static_cast<T*>(col->get()) : nullptr;
            for (int64_t b = 0; b < w_.batch; ++b)
                for (int64_t gi = 0; gi < w_.group; ++gi) {
                    const T* xg = x + (b * w_.channels + gi * cg) * hw;
                    T* yg = y + (b * w_.out_channels + gi * mg) * plane;
                    // The one scratch buffer serves every tile: its launches are in stream order.
                    for (int64_t p0 = 0; p0 < plane; p0 += tile) {
                        const int64_t n = std::min(tile, plane - p0);
                        const T* src = xg;
                        if (!direct) {
                            launch<im2col<T>>(ctx_, grid_for(k * n), kBlock, xg, c, w_, k, p0, n);
                            src = c;
                        }
                        // Y_g[:, p0 : p0 + n] = W_g[mg, k] col[k, n]; column-major:
                        // Y_g^T's rows p0.. (ld plane) = col^T[n, k] (ld n) W_g^T[k, mg] (ld k).
                        GR_CUBLAS_THROW(with_memory_retry([&] {
                            return gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, mg, k, src, n,
                                        wt + gi * mg * k, k, T(1), yg + p0, plane);
                        }));
                    }
                }
            return;
        }
        // conv_transpose: col[mg * kp, hw] = W_g^T[mg * kp, cg] X_g[cg, hw], in tiles of the
        // group's output channels: a tile of tm channels computes only their rows of col (W_g's
        // columns from m0 * kp, ldb still mg * kp), and col2im fills only their planes. Not
        // tiles of input pixels, as on the CPU: col2im gathers each output element's
        // contributions from every input pixel's columns at once (a scatter would need
        // atomics). So the least scratch is one channel's rows, kp * hw elements.
        const int64_t kk = mg * kp;
        int64_t tile = kernels::conv_tile_for<T>(kp * hw, mg, 1);
        std::unique_ptr<Scratch> col =
            tile_scratch<T>(ctx_, kp * hw, tile, 1, "conv_transpose's columns");
        T* c = static_cast<T*>(col->get());
        for (int64_t b = 0; b < w_.batch; ++b)
            for (int64_t gi = 0; gi < w_.group; ++gi) {
                const T* xg = x + (b * w_.channels + gi * cg) * hw;
                T* yg = y + (b * w_.out_channels + gi * mg) * plane;
                for (int64_t m0 = 0; m0 < mg; m0 += tile) {
                    const int64_t tm = std::min(tile, mg - m0);
                    // col^T[hw, tm * kp] = X_g^T[hw, cg] (W_g[cg, m0 * kp :])
                    GR_CUBLAS_THROW(with_memory_retry([&] {
                        return gemm(h, CUBLAS_OP_N, CUBLAS_OP_T, hw, tm * kp, cg, xg, hw,
                                    wt + gi * cg * kk + m0 * kp, kk, T(0), c, hw);
                    }));
                    launch<col2im<T>>(ctx_, grid_for(tm * plane), kBlock, c, yg + m0 * plane, w_,
                                      tm);
                }
            }
    }

  private:
    template <class Call>
    cublasStatus_t with_memory_retry(const Call& call) {
        cublasStatus_t st = call();
        if (st == CUBLAS_STATUS_ALLOC_FAILED && ctx_.trim_memory) {
            (void)cudaGetLastError();
            ctx_.trim_memory();
            st = call();
        }
        return st;
    }

    bool ok_ = false;
    Win w_{};
};

}  // namespace

std::unique_ptr<Kernel> make_conv_kernel(const Graph& g, const Node& n, GpuContext& ctx) {
    if (n.dtype == DType::F32) return std::make_unique<ConvAreaKernel<float>>(g, n, ctx);
    if (n.dtype == DType::F64) return std::make_unique<ConvAreaKernel<double>>(g, n, ctx);
    return kernels::make_error_kernel(std::string("internal error: no GPU kernel for ") + op_name(n.op) + " on " +
                                      dtype_name(n.dtype));
}

}  // namespace graphrun::gpu
