// gemm (ONNX Gemm) through cuBLAS: y = alpha · op(a) @ op(b) + beta · c, as
// the CPU computes it (engine/kernels/cpu/gemm.cpp): beta · c broadcast into
// the output first, then one gemm adds alpha · op(a) @ op(b) to it (its beta
// 1; 0 without c). cuBLAS is column-major and the matrices row-major, so
// y^T = op(b)^T op(a)^T is computed, the operands swapping places, nothing
// copied (as matmul.cu). 64-bit cuBLAS API: no dimension has to fit an int.
#include "engine/kernels/common/kernel_common.h"
#include "engine/kernels/common/norm_plan.h"
#include "gpu/cublas_api.h"
#include "gpu/kernels/gemm.cuh"

namespace graphrun::gpu {

namespace {

cublasStatus_t gemm_call(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                         int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                         const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    return cublas().sgemm_strided_batched(h, ta, tb, m, n, k, &alpha, a, lda, 0, b, ldb, 0, &beta,
                                          c, ldc, 0, 1);
}

cublasStatus_t gemm_call(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                         int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
                         const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
    return cublas().dgemm_strided_batched(h, ta, tb, m, n, k, &alpha, a, lda, 0, b, ldb, 0, &beta,
                                          c, ldc, 0, 1);
}

// y[i, j] = beta · c[i · sm + j · sn] over the m x n output.
template <class T>
__global__ void gemm_fill_c(const T* __restrict__ c, T* __restrict__ y, int64_t m, int64_t n,
                            int64_t sm, int64_t sn, T beta) {
    const int64_t total = m * n;
    for (int64_t i = thread_index(); i < total; i += thread_count()) {
        const int64_t r = i / n, col = i - r * n;
        y[i] = beta * c[r * sm + col * sn];
    }
}

template <class T>
class GemmKernel final : public GpuKernel {
  public:
    GemmKernel(const Graph& g, const Node& n, GpuContext& ctx)
        : GpuKernel(g, n, ctx), plan_(kernels::gemm_plan(n, in_shapes_)) {}

  protected:
    void compute(const TensorRef* in, TensorRef& out) override {
        if (!plan_) throw std::runtime_error("internal error: gemm operand shapes do not match");
        if (out.numel == 0) return;
        const kernels::GemmPlan& p = *plan_;
        T* y = static_cast<T*>(out.data);
        if (p.has_c)
            launch<gemm_fill_c<T>>(ctx_, grid_for(out.numel), kBlock,
                                   static_cast<const T*>(in[2].data), y, p.m, p.n, p.c_sm, p.c_sn,
                                   static_cast<T>(p.beta));
        if (p.k == 0) {
            if (!p.has_c)  // an empty sum: all-zero bytes are 0.0
                GR_CUDA_THROW(cudaMemsetAsync(y, 0, static_cast<size_t>(out.numel) * sizeof(T),
                                              ctx_.stream));
            return;
        }
        cublasHandle_t h = ctx_.cublas;
        if (!h) throw std::runtime_error("internal error: the GPU context has no cuBLAS handle");
        const T* a = static_cast<const T*>(in[0].data);
        const T* b = static_cast<const T*>(in[1].data);
        auto call = [&] {
            return gemm_call(h, p.tb ? CUBLAS_OP_T : CUBLAS_OP_N, p.ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                             p.n, p.m, p.k, static_cast<T>(p.alpha), b, p.ldb, a, p.lda,
                             p.has_c ? T(1) : T(0), y, p.n);
        };
        // A cuBLAS call that ran out of device memory of its own is tried once
        // more after the stream is synchronized and the pool trimmed (as matmul.cu).
        cublasStatus_t st = call();
        if (st == CUBLAS_STATUS_ALLOC_FAILED && ctx_.trim_memory) {
            (void)cudaGetLastError();
            ctx_.trim_memory();
            st = call();
        }
        GR_CUBLAS_THROW(st);
    }

  private:
    std::optional<kernels::GemmPlan> plan_;  // nullopt: the shapes do not match
};

}  // namespace

std::unique_ptr<Kernel> make_gemm_kernel(const Graph& g, const Node& n, GpuContext& ctx) {
    if (n.inputs.size() == 2 || n.inputs.size() == 3) {
        if (n.dtype == DType::F32) return std::make_unique<GemmKernel<float>>(g, n, ctx);
        if (n.dtype == DType::F64) return std::make_unique<GemmKernel<double>>(g, n, ctx);
    }
    return kernels::make_error_kernel(std::string("internal error: no GPU kernel for gemm on ") +
                                      dtype_name(n.dtype));
}

}  // namespace graphrun::gpu
