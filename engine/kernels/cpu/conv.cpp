// conv and conv_transpose on the CPU (ONNX Conv / ConvTranspose over NCW and
// NCHW; a 1-D op runs as 2-D of height 1, engine/ir/conv_geometry.h).
//   conv: per image and group, Y_g[M/g, P] = W_g[M/g, K] x col[K, P] with
//     K = C/g * kh * kw and P the output pixels; col is im2col's scratch,
//     filled a tile of output pixels at a time (bounded scratch), except for
//     a 1x1 stride-1 unpadded conv, whose input is col already (direct GEMM).
//     Depthwise convs (one input channel per group) are a direct loop.
//   conv_transpose: col[M/g * kh * kw, tile] = W_g^T x X_g[:, tile], then
//     col2im scatters col onto the output (each output channel's plane by one
//     worker, so no two write the same element).
// The bias initializes the output, and the GEMM adds onto it (beta = 1).
// A fused node's epilogue (residual add, activation: epilogue.h) is applied
// to each block as soon as it is final: after each GEMM tile, to each
// depthwise output plane, to each image of a direct 1x1 conv.
// Parallel over images x groups (single-threaded GEMMs) when there are enough
// of them; otherwise one image at a time, im2col over the session's workers
// and OpenBLAS's threads in the GEMM. Scratch comes from KernelContext::scratch
// (the device's counting allocator, as workspace) and goes back before run()
// returns.
#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "engine/ir/conv_geometry.h"
#include "engine/kernels/common/kernel_common.h"
#include "engine/kernels/cpu/dnnl_kernels.h"
#include "engine/kernels/cpu/epilogue.h"
#include "engine/kernels/cpu/kernel_families.h"
#include "engine/kernels/cpu/parallel.h"

namespace graphrun::kernels {

std::unique_ptr<Kernel> make_pool_kernel(const Graph& g, const Node& n);  // pool.cpp

namespace {

void gemm(bool ta, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
          float beta, float* c, int ldc) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, lda,
                b, ldb, beta, c, ldc);
}
void gemm(bool ta, int m, int n, int k, const double* a, int lda, const double* b, int ldb,
          double beta, double* c, int ldc) {
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a, lda,
                b, ldb, beta, c, ldc);
}

// Scratch from the context's ScratchMemory, given back when it goes out of scope.
class ScratchBuffer {
  public:
    ScratchBuffer(const KernelContext& ctx, uint64_t bytes) : s_(ctx.scratch), bytes_(bytes) {
        if (s_ && bytes) p_ = s_->allocate(bytes);
    }
    ~ScratchBuffer() {
        if (p_) s_->release(p_, bytes_);
    }
    ScratchBuffer(const ScratchBuffer&) = delete;
    ScratchBuffer& operator=(const ScratchBuffer&) = delete;
    void* get() const { return p_; }

  private:
    ScratchMemory* s_;
    void* p_ = nullptr;
    uint64_t bytes_;
};

// im2col of one group's input planes x[Cg, H, W] for output pixels [p0, p1):
// col[r, p - p0] for r = (c, ki, kj), `ld` columns per row; rows [r0, r1).
template <class T>
void im2col(const WindowGeometry& g, const T* x, int64_t r0, int64_t r1, int64_t p0, int64_t p1,
            T* col, int64_t ld) {
    const int64_t kh = g.kernel[0], kw = g.kernel[1], ih_n = g.in[0], iw_n = g.in[1],
                  ow_n = g.out[1];
    const int64_t sh = g.stride[0], sw = g.stride[1];
    for (int64_t r = r0; r < r1; ++r) {
        const int64_t c = r / (kh * kw), ki = (r / kw) % kh, kj = r % kw;
        const T* plane = x + c * ih_n * iw_n;
        T* dst = col + (r - r0) * ld;
        const int64_t off_w = kj * g.dilation[1] - g.pad_begin[1];
        // ow with 0 <= ow * sw + off_w < iw_n
        const int64_t lo = off_w >= 0 ? 0 : (-off_w + sw - 1) / sw;
        const int64_t hi = iw_n - off_w <= 0 ? 0 : (iw_n - off_w - 1) / sw + 1;
        for (int64_t p = p0; p < p1;) {
            const int64_t oh = p / ow_n, ow_begin = p % ow_n;
            const int64_t ow_end = std::min(ow_n, ow_begin + (p1 - p));
            const int64_t ih = oh * sh + ki * g.dilation[0] - g.pad_begin[0];
            T* d = dst + (p - p0) - ow_begin;  // d[ow]
            if (ih < 0 || ih >= ih_n) {
                std::fill(d + ow_begin, d + ow_end, T(0));
            } else {
                const T* row = plane + ih * iw_n + off_w;  // row[ow * sw]
                const int64_t a = std::clamp(lo, ow_begin, ow_end), b = std::clamp(hi, a, ow_end);
                std::fill(d + ow_begin, d + a, T(0));
                if (sw == 1)
                    std::memcpy(d + a, row + a, static_cast<size_t>(b - a) * sizeof(T));
                else
                    for (int64_t ow = a; ow < b; ++ow) d[ow] = row[ow * sw];
                std::fill(d + b, d + ow_end, T(0));
            }
            p += ow_end - ow_begin;
        }
    }
}

template <class T>
class ConvKernel final : public KernelBase {
  public:
    ConvKernel(const Graph& g, const Node& n) : KernelBase(g, n), epilogue_(g, n) {
        const Epilogue* e = g.epilogue_of(n);
        has_bias_ = (e ? e->own_inputs(n.inputs.size()) : n.inputs.size()) > 2;
        auto geo = window_geometry(n, in_shapes_[0], &in_shapes_[1], nullptr);
        ok_ = geo.has_value();
        if (ok_) g_ = *geo;
    }

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        if (!ok_) return "internal error: conv's geometry does not resolve";
        if (out.numel == 0) return "";
        const T* x = static_cast<const T*>(in[0].data);
        const T* w = static_cast<const T*>(in[1].data);
        const T* bias = has_bias_ ? static_cast<const T*>(in[2].data) : nullptr;
        T* y = static_cast<T*>(out.data);
        const int64_t groups = g_.group, cg = g_.channels / groups, mg = g_.out_channels / groups;
        const int64_t k = cg * g_.kernel_plane(), p = g_.out_plane();
        epilogue_.bind(in);
        // The output starts as the bias (or zero); every path adds onto it.
        parallel_for(ctx, g_.batch * g_.out_channels, 64, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i)
                std::fill(y + i * p, y + (i + 1) * p, bias ? bias[i % g_.out_channels] : T(0));
        });
        if (k == 0) {
            finish(y, 0, g_.batch * g_.out_channels, &ctx);
            return "";
        }
        if (cg == 1 && g_.kernel_plane() <= 64) return depthwise(x, w, y, ctx);
        const bool direct =
            g_.kernel_plane() == 1 && g_.stride[0] == 1 && g_.stride[1] == 1 && g_.no_padding();
        if (std::max({k, p, mg}) > INT32_MAX / 2)
            return "conv: a matrix dimension exceeds what the GEMM takes";
        const int64_t items = g_.batch * groups;
        const int64_t in_item = cg * g_.in_plane(), out_item = mg * p;
        auto x_of = [&](int64_t it) {
            return x + (it / groups) * g_.channels * g_.in_plane() + (it % groups) * in_item;
        };
        auto y_of = [&](int64_t it) {
            return y + (it / groups) * g_.out_channels * p + (it % groups) * out_item;
        };
        auto w_of = [&](int64_t it) { return w + (it % groups) * mg * k; };
        const int threads = std::max(1, ctx.threads);
        if (direct) {
            const bool per_item = items >= threads && threads > 1;
            blas_threads(per_item ? 1 : threads);
            auto one = [&](int64_t it) {
                gemm(false, static_cast<int>(mg), static_cast<int>(p), static_cast<int>(k),
                     w_of(it), static_cast<int>(k), x_of(it), static_cast<int>(p), T(1), y_of(it),
                     static_cast<int>(p));
                finish(y, y_of(it) - y, mg, per_item ? nullptr : &ctx);
            };
            if (per_item)
                parallel_for(ctx, items, 1, [&](int64_t b, int64_t e) {
                    for (int64_t it = b; it < e; ++it) one(it);
                });
            else
                for (int64_t it = 0; it < items; ++it) one(it);
            return "";
        }
        int64_t tile = conv_tile_for<T>(k, p);
        if (items >= threads && threads > 1) {
            // Images x groups over the workers, a tile buffer each, single-threaded GEMMs.
            blas_threads(1);
            std::atomic<bool> failed{false};
            parallel_for(ctx, items, 1, [&](int64_t b, int64_t e) {
                ScratchBuffer buf(ctx, static_cast<uint64_t>(k * tile) * sizeof(T));
                T* col = static_cast<T*>(buf.get());
                if (!col) {
                    failed = true;
                    return;
                }
                for (int64_t it = b; it < e; ++it)
                    run_item(x_of(it), w_of(it), y, y_of(it) - y, col, tile, nullptr);
            });
            if (failed) return scratch_error(k * tile, ctx);
            return "";
        }
        blas_threads(threads);
        std::unique_ptr<ScratchBuffer> buf;
        for (;;) {  // a smaller tile when the limit has no room for this one
            buf = std::make_unique<ScratchBuffer>(ctx, static_cast<uint64_t>(k * tile) * sizeof(T));
            if (buf->get() || tile <= kConvMinTile) break;
            tile = std::max(kConvMinTile, tile / 4);
        }
        if (!buf->get()) return scratch_error(k * tile, ctx);
        for (int64_t it = 0; it < items; ++it)
            run_item(x_of(it), w_of(it), y, y_of(it) - y, static_cast<T*>(buf->get()), tile, &ctx);
        return "";
    }

  private:
    std::string scratch_error(int64_t elements, const KernelContext& ctx) const {
        if (!ctx.scratch) return "internal error: conv has no scratch memory";
        return "out of memory: " + std::to_string(static_cast<uint64_t>(elements) * sizeof(T)) +
               " bytes of scratch for conv's im2col columns (workspace) exceed the memory limit";
    }

    // The epilogue on output channels [0, rows) of the planes from element
    // `start` of the output (the columns [p0, p0 + cols) of each), over the
    // workers when pctx is given.
    void finish(T* out, int64_t start, int64_t rows, const KernelContext* pctx, int64_t p0 = 0,
                int64_t cols = -1) const {
        if (epilogue_.empty() || rows == 0) return;
        const int64_t p = g_.out_plane(), n = cols < 0 ? p : cols;
        if (!pctx) {
            epilogue_.apply(out, start + p0, rows, n, p);
            return;
        }
        const int64_t per_row = std::max<int64_t>(n, 1);
        parallel_for(
            *pctx, rows, std::max<int64_t>(1, epilogue_.grain() / per_row),
            [&](int64_t r0, int64_t r1) { epilogue_.apply(out, start + r0 * p + p0, r1 - r0, n, p); },
            epilogue_.cold_below() / per_row);
    }

    // One image and group (its output at element `start` of out): tiles of
    // im2col then GEMM, each tile finished by the epilogue; im2col over the
    // workers when pctx is given.
    void run_item(const T* x, const T* w, T* out, int64_t start, T* col, int64_t tile,
                  const KernelContext* pctx) const {
        T* y = out + start;
        const int64_t cg = g_.channels / g_.group, mg = g_.out_channels / g_.group;
        const int64_t k = cg * g_.kernel_plane(), p = g_.out_plane();
        for (int64_t p0 = 0; p0 < p; p0 += tile) {
            const int64_t p1 = std::min(p, p0 + tile), n = p1 - p0;
            if (pctx)
                parallel_for(*pctx, k, std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)),
                             [&](int64_t r0, int64_t r1) {
                                 im2col(g_, x, r0, r1, p0, p1, col + r0 * n, n);
                             });
            else
                im2col(g_, x, 0, k, p0, p1, col, n);
            gemm(false, static_cast<int>(mg), static_cast<int>(n), static_cast<int>(k), w,
                 static_cast<int>(k), col, static_cast<int>(n), T(1), y + p0, static_cast<int>(p));
            finish(out, start, mg, pctx, p0, n);
        }
    }

    // One input channel per group: each output plane is a direct sum over its window.
    std::string depthwise(const T* x, const T* w, T* y, const KernelContext& ctx) const {
        const int64_t mg = g_.out_channels / g_.group, kh = g_.kernel[0], kw = g_.kernel[1];
        const int64_t ih_n = g_.in[0], iw_n = g_.in[1], oh_n = g_.out[0], ow_n = g_.out[1],
                      sw = g_.stride[1];
        parallel_for(ctx, g_.batch * g_.out_channels, 1, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) {
                const int64_t n = i / g_.out_channels, m = i % g_.out_channels, c = m / mg;
                const T* plane = x + (n * g_.channels + c) * ih_n * iw_n;
                const T* wk = w + m * kh * kw;
                T* out = y + i * oh_n * ow_n;
                for (int64_t oh = 0; oh < oh_n; ++oh) {
                    T* orow = out + oh * ow_n;
                    for (int64_t ki = 0; ki < kh; ++ki) {
                        const int64_t ih =
                            oh * g_.stride[0] + ki * g_.dilation[0] - g_.pad_begin[0];
                        if (ih < 0 || ih >= ih_n) continue;
                        for (int64_t kj = 0; kj < kw; ++kj) {
                            const T wv = wk[ki * kw + kj];
                            const int64_t off = kj * g_.dilation[1] - g_.pad_begin[1];
                            const int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
                            const int64_t hi =
                                std::min(ow_n, iw_n - off <= 0 ? 0 : (iw_n - off - 1) / sw + 1);
                            const T* row = plane + ih * iw_n + off;
                            if (sw == 1)
                                for (int64_t ow = lo; ow < hi; ++ow) orow[ow] += wv * row[ow];
                            else
                                for (int64_t ow = lo; ow < hi; ++ow) orow[ow] += wv * row[ow * sw];
                        }
                    }
                }
                finish(y, i * oh_n * ow_n, 1, nullptr);
            }
        });
        return "";
    }

    bool ok_ = false;
    WindowGeometry g_;
    EpilogueRun<T> epilogue_;  // a fused node's; empty otherwise
    bool has_bias_ = false;    // input 2 is the conv's bias (not an epilogue's input)
};

template <class T>
class ConvTransposeKernel final : public KernelBase {
  public:
    ConvTransposeKernel(const Graph& g, const Node& n) : KernelBase(g, n) {
        auto geo = window_geometry(n, in_shapes_[0], &in_shapes_[1], nullptr);
        ok_ = geo.has_value();
        if (ok_) g_ = *geo;
    }

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        if (!ok_) return "internal error: conv_transpose's geometry does not resolve";
        if (out.numel == 0) return "";
        const T* x = static_cast<const T*>(in[0].data);
        const T* w = static_cast<const T*>(in[1].data);
        const T* bias = in_shapes_.size() > 2 ? static_cast<const T*>(in[2].data) : nullptr;
        T* y = static_cast<T*>(out.data);
        const int64_t groups = g_.group, cg = g_.channels / groups, mg = g_.out_channels / groups;
        const int64_t kk = mg * g_.kernel_plane(), hw = g_.in_plane(), p = g_.out_plane();
        parallel_for(ctx, g_.batch * g_.out_channels, 64, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i)
                std::fill(y + i * p, y + (i + 1) * p, bias ? bias[i % g_.out_channels] : T(0));
        });
        if (cg == 0 || hw == 0) return "";
        if (std::max({kk, hw, cg}) > INT32_MAX / 2)
            return "conv_transpose: a matrix dimension exceeds what the GEMM takes";
        blas_threads(std::max(1, ctx.threads));
        int64_t tile = conv_tile_for<T>(kk, hw);
        std::unique_ptr<ScratchBuffer> buf;
        for (;;) {
            buf =
                std::make_unique<ScratchBuffer>(ctx, static_cast<uint64_t>(kk * tile) * sizeof(T));
            if (buf->get() || tile <= kConvMinTile) break;
            tile = std::max(kConvMinTile, tile / 4);
        }
        if (!buf->get())
            return ctx.scratch ? "out of memory: " +
                                     std::to_string(static_cast<uint64_t>(kk * tile) * sizeof(T)) +
                                     " bytes of scratch for conv_transpose's columns (workspace) "
                                     "exceed the memory limit"
                               : "internal error: conv_transpose has no scratch memory";
        T* col = static_cast<T*>(buf->get());
        for (int64_t n = 0; n < g_.batch; ++n)
            for (int64_t gi = 0; gi < groups; ++gi) {
                const T* xg = x + (n * g_.channels + gi * cg) * hw;
                const T* wg = w + gi * cg * kk;
                T* yg = y + (n * g_.out_channels + gi * mg) * p;
                for (int64_t p0 = 0; p0 < hw; p0 += tile) {
                    const int64_t p1 = std::min(hw, p0 + tile), cols = p1 - p0;
                    gemm(true, static_cast<int>(kk), static_cast<int>(cols), static_cast<int>(cg),
                         wg, static_cast<int>(kk), xg + p0, static_cast<int>(hw), T(0), col,
                         static_cast<int>(cols));
                    parallel_for(ctx, mg, 1, [&](int64_t m0, int64_t m1) {
                        col2im(col, cols, p0, m0, m1, yg);
                    });
                }
            }
        return "";
    }

  private:
    // Adds col's rows of output channels [m0, m1) (for input pixels from p0) onto their planes.
    void col2im(const T* col, int64_t cols, int64_t p0, int64_t m0, int64_t m1, T* yg) const {
        const int64_t kh = g_.kernel[0], kw = g_.kernel[1], iw_n = g_.in[1], oh_n = g_.out[0],
                      ow_n = g_.out[1];
        for (int64_t m = m0; m < m1; ++m) {
            T* plane = yg + m * oh_n * ow_n;
            for (int64_t ki = 0; ki < kh; ++ki)
                for (int64_t kj = 0; kj < kw; ++kj) {
                    const T* src = col + ((m * kh + ki) * kw + kj) * cols;
                    for (int64_t q = 0; q < cols; ++q) {
                        const int64_t ih = (p0 + q) / iw_n, iw = (p0 + q) % iw_n;
                        const int64_t oh =
                            ih * g_.stride[0] + ki * g_.dilation[0] - g_.pad_begin[0];
                        const int64_t ow =
                            iw * g_.stride[1] + kj * g_.dilation[1] - g_.pad_begin[1];
                        if (oh >= 0 && oh < oh_n && ow >= 0 && ow < ow_n)
                            plane[oh * ow_n + ow] += src[q];
                    }
                }
        }
    }

    bool ok_ = false;
    WindowGeometry g_;
};

}  // namespace

namespace {
std::unique_ptr<Kernel> make_own_conv_kernel(const Graph& g, const Node& n);
}  // namespace

std::unique_ptr<Kernel> make_conv_kernel(const Graph& g, const Node& n) {
    if (n.op != OpKind::Conv && n.op != OpKind::ConvTranspose) return make_pool_kernel(g, n);
    // The fusion pass's int8 conv (8-bit x): oneDNN's, which the pass asked
    // for; no kernel of ours reads 8-bit x.
    if (n.inputs.size() >= 2 && n.inputs[0].id >= 0 && g.node(n.inputs[0].id).dtype != n.dtype)
        return make_dnnl_int8_kernel(g, n);
    // oneDNN where it is faster (dnnl_kernels.h), ours where it declines.
    if (auto k = make_dnnl_conv_kernel(g, n, make_own_conv_kernel)) return k;
    if (auto k = refuse_prepacked_weight(g, n)) return k;
    return make_own_conv_kernel(g, n);
}

namespace {
std::unique_ptr<Kernel> make_own_conv_kernel(const Graph& g, const Node& n) {
    select_openblas_core();
    if (n.inputs.size() >= 2) {
        const bool t = n.op == OpKind::ConvTranspose;
        if (n.dtype == DType::F32)
            return t ? std::unique_ptr<Kernel>(std::make_unique<ConvTransposeKernel<float>>(g, n))
                     : std::make_unique<ConvKernel<float>>(g, n);
        if (n.dtype == DType::F64)
            return t ? std::unique_ptr<Kernel>(std::make_unique<ConvTransposeKernel<double>>(g, n))
                     : std::make_unique<ConvKernel<double>>(g, n);
    }
    return make_error_kernel(std::string("internal error: no CPU kernel for ") + op_name(n.op) +
                             " on " + dtype_name(n.dtype));
}
}  // namespace

}  // namespace graphrun::kernels
