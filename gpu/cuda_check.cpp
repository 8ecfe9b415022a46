// The error texts behind gpu/cuda_check.h's macros: cuBLAS status names and
// the warning line that teardown code logs instead of throwing.
#include "gpu/cuda_check.h"

#include "gpu/cublas_api.h"

#include <cstdio>

namespace graphrun::gpu {

const char* cublas_status_name(cublasStatus_t s) {
    switch (s) {
        case CUBLAS_STATUS_SUCCESS:
            return "CUBLAS_STATUS_SUCCESS";
        case CUBLAS_STATUS_NOT_INITIALIZED:
            return "CUBLAS_STATUS_NOT_INITIALIZED";
        case CUBLAS_STATUS_ALLOC_FAILED:
            return "CUBLAS_STATUS_ALLOC_FAILED";
        case CUBLAS_STATUS_INVALID_VALUE:
            return "CUBLAS_STATUS_INVALID_VALUE";
        case CUBLAS_STATUS_ARCH_MISMATCH:
            return "CUBLAS_STATUS_ARCH_MISMATCH";
        case CUBLAS_STATUS_MAPPING_ERROR:
            return "CUBLAS_STATUS_MAPPING_ERROR";
        case CUBLAS_STATUS_EXECUTION_FAILED:
            return "CUBLAS_STATUS_EXECUTION_FAILED";
        case CUBLAS_STATUS_INTERNAL_ERROR:
            return "CUBLAS_STATUS_INTERNAL_ERROR";
        case CUBLAS_STATUS_NOT_SUPPORTED:
            return "CUBLAS_STATUS_NOT_SUPPORTED";
        case CUBLAS_STATUS_LICENSE_ERROR:
            return "CUBLAS_STATUS_LICENSE_ERROR";
    }
    // A status added by a later cuBLAS: the library knows its own name.
    if (const CublasApi* api = cublas_api(nullptr)) return api->get_status_name(s);
    return "an unknown cuBLAS status";
}

std::string cuda_error_text(cudaError_t err) {
    std::string text = std::string("CUDA error ") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err);
    switch (err) {
        case cudaErrorIllegalAddress:
        case cudaErrorLaunchFailure:
        case cudaErrorLaunchTimeout:
        case cudaErrorAssert:
        case cudaErrorHardwareStackError:
        case cudaErrorIllegalInstruction:
        case cudaErrorMisalignedAddress:
        case cudaErrorInvalidAddressSpace:
        case cudaErrorInvalidPc:
        case cudaErrorECCUncorrectable:
            return "an earlier GPU operation failed: " + text +
                   " (a fault of work queued before this point; the GPU context is unusable from here on)";
        default:
            return text;
    }
}

void log_cuda_failure(const std::string& what, const char* expr, const char* file, int line) {
    // One fprintf call, so that lines from the executor and the reclaimer
    // thread never interleave within a line.
    std::fprintf(stderr, "graphrun: warning: %s (in %s at %s:%d)\n", what.c_str(), expr, file,
                 line);
}

}  // namespace graphrun::gpu
