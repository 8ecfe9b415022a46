// cuBLAS loaded at run time, through a table of its few entry points (IREE's
// cuda_dynamic_symbols.h). Linking it would map cuBLAS and cuBLASLt (over
// 500 MB of library code) into every graphrun process that loads the plugin,
// GPU or not: 150 MiB of resident memory and 130 ms of start-up on a CPU
// graph. Now they are loaded only when a GPU is found or a device opens.
#pragma once
#include <cublas_v2.h>

#include <string>

namespace graphrun::gpu {

struct CublasApi {
    decltype(&cublasCreate_v2) create;
    decltype(&cublasDestroy_v2) destroy;
    decltype(&cublasSetStream_v2) set_stream;
    decltype(&cublasSetMathMode) set_math_mode;
    decltype(&cublasSetPointerMode_v2) set_pointer_mode;
    decltype(&cublasSetWorkspace_v2) set_workspace;
    decltype(&cublasGetProperty) get_property;
    decltype(&cublasGetStatusName) get_status_name;
    decltype(&cublasSgemmStridedBatched_64) sgemm_strided_batched;
    decltype(&cublasDgemmStridedBatched_64) dgemm_strided_batched;
};

// The table, loading libcublas.so.<major of the build's cuBLAS> on first use
// (by the usual search, then from the toolkit's directory at build time).
// nullptr with `why` ("the CUDA libraries are not installed (...)") when the
// library or one of its symbols is missing. Thread-safe; the library stays
// loaded for the life of the process.
const CublasApi* cublas_api(std::string* why);

// The table for code that runs only on an opened device, where loading has
// succeeded before; throws std::runtime_error otherwise.
const CublasApi& cublas();

}  // namespace graphrun::gpu
