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
#include "gpu/kernels/gemm.cuh"
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

using BatchDim = kernels::BroadcastDim;  // strides in matrices; 0 where the operand is broadcast

template <class T>
class MatmulKernel final : public GpuKernel {
  public:
    MatmulKernel(const Graph& g, const Node& n, GpuContext& ctx)
        : GpuKernel(g, n, ctx),
          plan_(kernels::matmul_plan(n, in_shapes_[0], in_shapes_[1], out_numel_)) {}

  protected:
    void compute(const TensorRef* in, TensorRef& out) override {
        if (!plan_) throw std::runtime_error("internal error: matmul operand shapes do not match");
        if (out.numel == 0) return;
        const kernels::MatmulPlan& p = *plan_;
        T* c = static_cast<T*>(out.data);
        if (p.k == 0) {  // an empty sum: all-zero bytes are 0.0
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
        const BatchDim inner = p.batch_dims.empty() ? BatchDim{1, 0, 0} : p.batch_dims.front();
        const size_t outer_rank = p.batch_dims.empty() ? 0 : p.batch_dims.size() - 1;
        int64_t outer_count = 1;
        for (size_t d = 1; d < p.batch_dims.size(); ++d) outer_count *= p.batch_dims[d].size;
        std::vector<int64_t> idx(outer_rank, 0);
        int64_t oa = 0, ob = 0;  // matrix offsets of the current outer index
        const int64_t mat_c = p.m * p.n;
        for (int64_t t = 0; t < outer_count; ++t) {
            for (int64_t first = 0; first < inner.size; first += kMaxBatchPerCall) {
                const int64_t count = std::min(kMaxBatchPerCall, inner.size - first);
                const T* pa = a + (oa + first * inner.sa) * p.mat_a;
                const T* pb = b + (ob + first * inner.sb) * p.mat_b;
                T* pc = c + (t * inner.size + first) * mat_c;
                auto gemm = [&] {
                    return gemm_batched(h, p.tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                        p.ta ? CUBLAS_OP_T : CUBLAS_OP_N, p.n, p.m, p.k, pb, p.ldb,
                                        inner.sb * p.mat_b, pa, p.lda, inner.sa * p.mat_a, pc, p.n,
                                        mat_c, count);
                };
                GR_CUBLAS_THROW(with_memory_retry(gemm));
            }
            for (size_t d = 0; d < outer_rank; ++d) {  // odometer, innermost outer dim first
                const BatchDim& bd = p.batch_dims[d + 1];
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
    // A cuBLAS call that ran out of device memory of its own (the kernel
    // modules it loads lazily, the pool's cache holding what the driver has)
    // is tried once more after the stream is synchronized and the pool trimmed.
    template <class Call>
    cublasStatus_t with_memory_retry(const Call& call) {
        cublasStatus_t st = call();
        if (st == CUBLAS_STATUS_ALLOC_FAILED && ctx_.trim_memory) {
            (void)cudaGetLastError();  // a failed cudaMalloc inside cuBLAS may leave it set
            ctx_.trim_memory();
            st = call();
        }
        return st;
    }

    std::optional<kernels::MatmulPlan> plan_;  // nullopt: the shapes do not match
};

}  // namespace

std::unique_ptr<Kernel> make_matmul_kernel(const Graph& g, const Node& n, GpuContext& ctx) {
    if (n.op == OpKind::Gemm) return make_gemm_kernel(g, n, ctx);
    if (n.inputs.size() == 2) {
        if (n.dtype == DType::F32) return std::make_unique<MatmulKernel<float>>(g, n, ctx);
        if (n.dtype == DType::F64) return std::make_unique<MatmulKernel<double>>(g, n, ctx);
    }
    return kernels::make_error_kernel(std::string("internal error: no GPU kernel for matmul on ") +
                                      dtype_name(n.dtype));
}

}  // namespace graphrun::gpu
