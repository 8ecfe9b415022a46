// matmul through cuBLAS with numpy.matmul semantics: 1-D operands are
// promoted (a to a row, b to a column; the output has the same bytes without
// the added dimension), batch dimensions broadcast, transpose_a/transpose_b
// are gemm's trans flags. cuBLAS is column-major and our matrices row-major,
// so C^T = op(B)^T op(A)^T is computed: the operands swap places and nothing
// is copied. The batch dims are merged where both operands walk them with one
// stride (stride 0 for a broadcast operand); the innermost merged dim is one
// strided-batched call, the others a loop of such calls. 64-bit cuBLAS API,
// so no dimension has to fit an int.
#include <algorithm>

#include "engine/kernels/common/kernel_common.h"
#include "gpu/cublas_api.h"
#include "gpu/kernels/matmul.cuh"

namespace graphrun::gpu {

namespace {

constexpr int64_t kMaxBatchPerCall = 65535;

cublasStatus_t gemm_batched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                            int64_t n, int64_t k, const float* a, int64_t lda, int64_t stride_a,
                            const float* b, int64_t ldb, int64_t stride_b, float* c, int64_t ldc,
                            int64_t stride_c, int64_t count) {
    const float alpha = 1.0f, beta = 0.0f;
    return cublas().sgemm_strided_batched(h, ta, tb, m, n, k, &alpha, a, lda, stride_a, b, ldb,
                                          stride_b, &beta, c, ldc, stride_c, count);
}

cublasStatus_t gemm_batched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                            int64_t n, int64_t k, const double* a, int64_t lda, int64_t stride_a,
                            const double* b, int64_t ldb, int64_t stride_b, double* c, int64_t ldc,
                            int64_t stride_c, int64_t count) {
    const double alpha = 1.0, beta = 0.0;
    return cublas().dgemm_strided_batched(h, ta, tb, m, n, k, &alpha, a, lda, stride_a, b, ldb,
                                          stride_b, &beta, c, ldc, stride_c, count);
}

struct BatchDim {
    int64_t size, sa, sb;  // strides in matrices; 0 where the operand is broadcast
};

template <class T>
class MatmulKernel final : public GpuKernel {
  public:
    MatmulKernel(const Graph& g, const Node& n, GpuContext& ctx) : GpuKernel(g, n, ctx) {
        ta_ = kernels::bool_attr(n, "transpose_a", false);
        tb_ = kernels::bool_attr(n, "transpose_b", false);
        if (in_shapes_.size() != 2 || in_shapes_[0].empty() || in_shapes_[1].empty()) {
            ok_ = false;
            return;
        }
        Shape sa = in_shapes_[0], sb = in_shapes_[1];
        if (sa.size() == 1) sa.insert(sa.begin(), 1);
        if (sb.size() == 1) sb.push_back(1);
        const int64_t rows_a = sa[sa.size() - 2], cols_a = sa.back();
        const int64_t rows_b = sb[sb.size() - 2], cols_b = sb.back();
        m_ = ta_ ? cols_a : rows_a;
        k_ = ta_ ? rows_a : cols_a;
        n_ = tb_ ? rows_b : cols_b;
        lda_ = cols_a;
        ldb_ = cols_b;
        mat_a_ = rows_a * cols_a;
        mat_b_ = rows_b * cols_b;
        if ((tb_ ? cols_b : rows_b) != k_) ok_ = false;

        // Batch dims, innermost first, broadcast right-aligned; size-1 dims
        // dropped and a dim merged into the previous one when both operands
        // continue their strides across it.
        const size_t ra = sa.size() - 2, rb = sb.size() - 2, r = std::max(ra, rb);
        int64_t stride_a = 1, stride_b = 1, batch = 1;
        for (size_t k = 0; k < r; ++k) {
            const int64_t ad = k < ra ? sa[ra - 1 - k] : 1, bd = k < rb ? sb[rb - 1 - k] : 1;
            const int64_t od = ad == 1 ? bd : ad;
            if ((ad != od && ad != 1) || (bd != od && bd != 1)) ok_ = false;
            const int64_t da = ad == 1 ? 0 : stride_a, db = bd == 1 ? 0 : stride_b;
            stride_a *= ad;
            stride_b *= bd;
            batch *= od;
            if (od == 1) continue;
            if (!batch_.empty()) {
                BatchDim& last = batch_.back();
                if (da == last.sa * last.size && db == last.sb * last.size) {
                    last.size *= od;
                    continue;
                }
            }
            batch_.push_back({od, da, db});
        }
        if (batch * m_ * n_ != out_numel_) ok_ = false;
    }

  protected:
    void compute(const TensorRef* in, TensorRef& out) override {
        if (!ok_) throw std::runtime_error("internal error: matmul operand shapes do not match");
        if (out.numel == 0) return;
        T* c = static_cast<T*>(out.data);
        if (k_ == 0) {  // an empty sum: all-zero bytes are 0.0
            GR_CUDA_THROW(
                cudaMemsetAsync(c, 0, static_cast<size_t>(out.numel) * sizeof(T), ctx_.stream));
            return;
        }
        const T* a = static_cast<const T*>(in[0].data);
        const T* b = static_cast<const T*>(in[1].data);
        cublasHandle_t h = ctx_.cublas;
        if (!h) throw std::runtime_error("internal error: the GPU context has no cuBLAS handle");
        // The handle is the session's: its stream, math mode and workspace were
        // set when the device opened. Setting the stream again here would reset
        // the workspace to one cuBLAS allocates itself, outside the counting
        // allocator (cublasSetStream's documented behaviour).

        // The innermost merged batch dim goes to cuBLAS; the outer ones are walked here.
        const BatchDim inner = batch_.empty() ? BatchDim{1, 0, 0} : batch_.front();
        const size_t outer_rank = batch_.empty() ? 0 : batch_.size() - 1;
        int64_t outer_count = 1;
        for (size_t d = 1; d < batch_.size(); ++d) outer_count *= batch_[d].size;
        std::vector<int64_t> idx(outer_rank, 0);
        int64_t oa = 0, ob = 0;  // matrix offsets of the current outer index
        const int64_t mat_c = m_ * n_;
        for (int64_t t = 0; t < outer_count; ++t) {
            for (int64_t first = 0; first < inner.size; first += kMaxBatchPerCall) {
                const int64_t count = std::min(kMaxBatchPerCall, inner.size - first);
                const T* pa = a + (oa + first * inner.sa) * mat_a_;
                const T* pb = b + (ob + first * inner.sb) * mat_b_;
                T* pc = c + (t * inner.size + first) * mat_c;
                GR_CUBLAS_THROW(gemm_batched(h, tb_ ? CUBLAS_OP_T : CUBLAS_OP_N,
                                             ta_ ? CUBLAS_OP_T : CUBLAS_OP_N, n_, m_, k_, pb, ldb_,
                                             inner.sb * mat_b_, pa, lda_, inner.sa * mat_a_, pc, n_,
                                             mat_c, count));
            }
            for (size_t d = 0; d < outer_rank; ++d) {  // odometer, innermost outer dim first
                const BatchDim& bd = batch_[d + 1];
                oa += bd.sa;
                ob += bd.sb;
                if (++idx[d] < bd.size) break;
                oa -= bd.size * bd.sa;
                ob -= bd.size * bd.sb;
                idx[d] = 0;
            }
        }
    }

  private:
    bool ta_ = false, tb_ = false, ok_ = true;
    int64_t m_ = 0, n_ = 0, k_ = 0, lda_ = 1, ldb_ = 1, mat_a_ = 0, mat_b_ = 0;
    std::vector<BatchDim> batch_;  // merged batch dims, innermost first
};

}  // namespace

std::unique_ptr<Kernel> make_matmul_kernel(const Graph& g, const Node& n, GpuContext& ctx) {
    if (n.inputs.size() == 2) {
        if (n.dtype == DType::F32) return std::make_unique<MatmulKernel<float>>(g, n, ctx);
        if (n.dtype == DType::F64) return std::make_unique<MatmulKernel<double>>(g, n, ctx);
    }
    return kernels::make_error_kernel(std::string("internal error: no GPU kernel for matmul on ") +
                                      dtype_name(n.dtype));
}

}  // namespace graphrun::gpu
