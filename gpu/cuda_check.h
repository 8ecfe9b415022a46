// CUDA and cuBLAS error checks that keep the expression and the place
// (ggml's CUDA_CHECK_GEN, tiny-cuda-nn's CUDA_CHECK_THROW). Normal code throws
// a typed CudaError; destructors and teardown log instead (a destructor never
// throws).
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace graphrun::gpu {

class CudaError : public std::runtime_error {
public:
    CudaError(const std::string& what, const char* expr, const char* file, int line)
        : std::runtime_error(what + " (in " + expr + " at " + file + ":" + std::to_string(line) + ")") {}
};

const char* cublas_status_name(cublasStatus_t s);
// "CUDA error NAME: description". A sticky fault (an illegal address, a kernel
// that trapped: every later call of the context returns it) surfaces at
// whatever call comes next, usually not the operation that caused it: it is
// worded as "an earlier GPU operation failed: CUDA error ...", so that the
// node being run when it surfaced is not blamed for it.
std::string cuda_error_text(cudaError_t err);
// Logs a failed call to stderr once per call site would be noise; it logs every time.
void log_cuda_failure(const std::string& what, const char* expr, const char* file, int line);

}  // namespace graphrun::gpu

#define GR_CUDA_THROW(expr)                                                                                  \
    do {                                                                                                     \
        cudaError_t gr_err_ = (expr);                                                                        \
        if (gr_err_ != cudaSuccess)                                                                          \
            throw ::graphrun::gpu::CudaError(::graphrun::gpu::cuda_error_text(gr_err_), #expr, __FILE__,       \
                                             __LINE__);                                                      \
    } while (0)

#define GR_CUBLAS_THROW(expr)                                                                                   \
    do {                                                                                                        \
        cublasStatus_t gr_st_ = (expr);                                                                         \
        if (gr_st_ != CUBLAS_STATUS_SUCCESS)                                                                    \
            throw ::graphrun::gpu::CudaError(std::string("cuBLAS error ") +                                     \
                                                 ::graphrun::gpu::cublas_status_name(gr_st_),                   \
                                             #expr, __FILE__, __LINE__);                                        \
    } while (0)

// For destructors and teardown: logs, never throws.
#define GR_CUDA_LOG(expr)                                                                                   \
    do {                                                                                                    \
        cudaError_t gr_err_ = (expr);                                                                       \
        if (gr_err_ != cudaSuccess)                                                                         \
            ::graphrun::gpu::log_cuda_failure(::graphrun::gpu::cuda_error_text(gr_err_), #expr, __FILE__,     \
                                              __LINE__);                                                    \
    } while (0)
