// The fused attention (engine/ir/epilogue.h, Attention): for each matrix of
// the batch (each head), in a [Lq, Lk] buffer of scratch (workspace):
//
//     s = q @ k              (CBLAS gemm with the first matmul's flags)
//     s = s * scale | s / scale, then s + mask   (f32, one rounding each)
//     each row of s = softmax_row_f32(row)        (the softmax kernel's row)
//     out = s @ v            (CBLAS gemm with the node's own flags)
//
// The same calls and the same f32 operations as the unfused matmul, mul or
// div, add and softmax kernels, so the values are theirs, bit for bit; what
// changes is that the scores and probabilities ([..., Lq, Lk] each, the
// largest values of a transformer layer) are never whole tensors: each
// worker holds one matrix of them. A batch of at least as many matrices as
// workers (and enough work: matmul.cpp's bound) gives each worker whole
// heads, each gemm on one OpenBLAS thread, as the unfused matmul does.
//
// Where the fusion took in a head split (Attention::heads: q, k or v given
// as [..., L, H, D]) each head's matrix is read in place, its rows H·D apart
// (the gemm's leading dimension), and where it took in the heads' merge
// (heads_out) the output is written as [..., Lq, H, Dv] the same way: the
// transposes' copies (a quarter of the transformer's attention time) go, and
// the gemms, which pack their operands whatever the stride, give the same bits.
#include <cblas.h>

#include <algorithm>
#include <climits>
#include <string>

#include "engine/kernels/common/kernel_common.h"
#include "engine/kernels/cpu/kernel_families.h"
#include "engine/kernels/cpu/parallel.h"
#include "engine/kernels/cpu/simd.h"

namespace graphrun::kernels {

namespace {

class AttentionKernel final : public KernelBase {
  public:
    AttentionKernel(const Graph& g, const Node& n) : KernelBase(g, n), a_(g.epilogue_of(n)->attention) {
        const size_t want = a_.mask >= 0 ? 4 : 3;
        // The output as the matmul makes it: a merged one ([..., Lq, H, Dv],
        // Attention::heads_out) as [..., H, Lq, Dv].
        Shape out = out_shape_;
        const size_t r = out.size();
        if (a_.heads_out) {
            if (r < 3) {
                ok_ = false;
                return;
            }
            std::swap(out[r - 3], out[r - 2]);
        }
        if (n.inputs.size() != want || n.dtype != DType::F32 || r < 2) {
            ok_ = false;
            return;
        }
        // The operands as the matmuls read them: a head split's input
        // ([..., L, H, D], Attention::heads) as [..., H, L, D].
        Shape view[3];
        for (size_t j = 0; j < 3; ++j) {
            view[j] = in_shapes_[j];
            if (view[j].size() != r || (a_.heads[j] && r < 3)) {
                ok_ = false;
                return;
            }
            if (a_.heads[j]) std::swap(view[j][r - 3], view[j][r - 2]);
        }
        const Shape &q = view[0], &k = view[1], &v = view[2];
        pv_tb_ = bool_attr(n, "transpose_b", false);
        lq_ = a_.qk_ta ? q[r - 1] : q[r - 2];
        d_ = a_.qk_ta ? q[r - 2] : q[r - 1];
        lk_ = a_.qk_tb ? k[r - 2] : k[r - 1];
        dv_ = out[r - 1];
        const int64_t kd = a_.qk_tb ? k[r - 1] : k[r - 2];
        const int64_t vk = pv_tb_ ? v[r - 1] : v[r - 2];
        const int64_t vd = pv_tb_ ? v[r - 2] : v[r - 1];
        batch_ = 1;
        for (size_t d = 0; d + 2 < r; ++d) {
            if (q[d] != out[d] || k[d] != out[d] || v[d] != out[d]) ok_ = false;
            batch_ *= out[d];
        }
        for (int64_t x : {lq_, d_, lk_, dv_})
            if (x < 0 || x > INT_MAX) ok_ = false;
        if (kd != d_ || vk != lk_ || vd != dv_ || out[r - 2] != lq_) ok_ = false;
        if (a_.mask >= 0) {
            const int64_t m = in_numel_[static_cast<size_t>(a_.mask)];
            mask_step_ = m == batch_ * lq_ * lk_ && batch_ > 1 ? lq_ * lk_ : 0;
            if (m != lq_ * lk_ && mask_step_ == 0) ok_ = false;
        }
        // Where each head's matrix starts and its row stride: heads t of a
        // split operand lie H·C apart within [L, H, C] blocks.
        for (size_t j = 0; j < 3; ++j) {
            Operand& o = operand_[j];
            o.rows = view[j][r - 2];
            o.cols = view[j][r - 1];
            o.heads = a_.heads[j] ? view[j][r - 3] : 1;
            if (o.heads <= 0 || o.cols > INT_MAX / std::max<int64_t>(o.heads, 1)) ok_ = false;
        }
        output_ = Operand{lq_, dv_, a_.heads_out ? out[r - 3] : 1};
        if (output_.heads <= 0 || dv_ > INT_MAX / std::max<int64_t>(output_.heads, 1)) ok_ = false;
        large_ = static_cast<double>(batch_) * static_cast<double>(lq_) * static_cast<double>(lk_) *
                     static_cast<double>(d_ + dv_) >=
                 static_cast<double>(kPerWorkerMacs);
    }

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        if (!ok_) return "internal error: the fused attention's operand shapes do not match";
        if (out.numel == 0) return "";
        const auto* q = static_cast<const float*>(in[0].data);
        const auto* k = static_cast<const float*>(in[1].data);
        const auto* v = static_cast<const float*>(in[2].data);
        const float* mask = a_.mask >= 0 ? static_cast<const float*>(in[a_.mask].data) : nullptr;
        auto* o = static_cast<float*>(out.data);
        const int threads = std::max(1, ctx.threads);
        const bool per_item = threads > 1 && ctx.pool != nullptr && batch_ >= threads && large_;
        const int64_t slots = per_item ? threads : 1;
        if (lq_ > 0 && lk_ > (int64_t{1} << 56) / lq_)  // the bytes below would overflow (the scores' numel fits int64)
            return "out of memory: the fused attention's scores of " + std::to_string(lq_) + " x " +
                   std::to_string(lk_) + " elements per head";
        const uint64_t matrix = static_cast<uint64_t>(lq_) * static_cast<uint64_t>(lk_) * sizeof(float);
        const uint64_t bytes = matrix * static_cast<uint64_t>(slots);
        if (!ctx.scratch) return "internal error: attention has no scratch memory";
        void* buf = bytes ? ctx.scratch->allocate(bytes) : nullptr;
        if (bytes && !buf)
            return "out of memory: " + std::to_string(bytes) +
                   " bytes of scratch for the fused attention's scores (workspace) exceed the memory limit";
        blas_threads(per_item ? 1 : threads);
        auto heads = [&](int64_t slot, int64_t t0, int64_t t1) {
            float* s = static_cast<float*>(buf) + slot * lq_ * lk_;
            for (int64_t t = t0; t < t1; ++t)
                head(q + operand_[0].offset(t), k + operand_[1].offset(t), v + operand_[2].offset(t),
                     mask ? mask + t * mask_step_ : nullptr, s, o + output_.offset(t));
        };
        if (per_item) {
            // One contiguous share of the heads per slot, each with its own scores.
            parallel_for(ctx, slots, 1, [&](int64_t w0, int64_t w1) {
                for (int64_t w = w0; w < w1; ++w) heads(w, batch_ * w / slots, batch_ * (w + 1) / slots);
            });
        } else {
            heads(0, 0, batch_);
        }
        if (buf) ctx.scratch->release(buf, bytes);
        return "";
    }

  private:
    // One head: q [Lq, D] (or [D, Lq]), k [D, Lk] (or [Lk, D]), v [Lk, Dv]
    // (or [Dv, Lk]), the mask [Lq, Lk] or none, s the scores' buffer.
    void head(const float* q, const float* k, const float* v, const float* mask, float* s, float* o) const {
        const int lq = static_cast<int>(lq_), lk = static_cast<int>(lk_), d = static_cast<int>(d_),
                  dv = static_cast<int>(dv_);
        if (d == 0) {
            std::fill(s, s + lq_ * lk_, 0.0f);  // the matmul's all-zero product
        } else {
            cblas_sgemm(CblasRowMajor, a_.qk_ta ? CblasTrans : CblasNoTrans, a_.qk_tb ? CblasTrans : CblasNoTrans, lq,
                        lk, d, 1.0f, q, operand_[0].ld(), k, operand_[1].ld(), 0.0f, s, lk);
        }
        const int64_t n = lq_ * lk_;
        const float sc = static_cast<float>(a_.scale);
        const Attention::Scale op = a_.scale_op;
        with_isa([&] {  // vectorized, the same f32 operations
            if (op == Attention::Scale::Multiply) blocked_loop(n, [=](int64_t i) { s[i] = s[i] * sc; });
            else if (op == Attention::Scale::Divide) blocked_loop(n, [=](int64_t i) { s[i] = s[i] / sc; });
            if (mask) blocked_loop(n, [=](int64_t i) { s[i] = s[i] + mask[i]; });
        });
        if (lk_ > 0)
            for (int64_t row = 0; row < lq_; ++row) softmax_row_f32(s + row * lk_, s + row * lk_, lk_);
        if (lk == 0) {
            for (int64_t row = 0; row < lq_; ++row) std::fill_n(o + row * output_.ld(), dv_, 0.0f);
            return;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, pv_tb_ ? CblasTrans : CblasNoTrans, lq, dv, lk, 1.0f, s, lk, v,
                    operand_[2].ld(), 0.0f, o, output_.ld());
    }

    // One operand's heads in memory: matrices of rows x cols, `heads` of them
    // interleaved row by row (a head split's input), else one after another.
    struct Operand {
        int64_t rows = 0, cols = 0, heads = 1;
        int64_t offset(int64_t t) const { return (t / heads) * rows * heads * cols + (t % heads) * cols; }
        int ld() const { return static_cast<int>(heads * cols); }
    };

    Attention a_;
    Operand operand_[3];
    Operand output_;
    bool ok_ = true, pv_tb_ = false, large_ = false;
    int64_t batch_ = 1, lq_ = 0, d_ = 0, lk_ = 0, dv_ = 0;
    int64_t mask_step_ = 0;  // elements between the heads' masks (0: one mask for all)
};

}  // namespace

std::unique_ptr<Kernel> make_attention_kernel(const Graph& g, const Node& n) {
    select_openblas_core();
    return std::make_unique<AttentionKernel>(g, n);
}

}  // namespace graphrun::kernels
