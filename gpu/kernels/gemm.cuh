// gemm (ONNX Gemm: alpha, beta, transposes, c broadcast), f32 and f64, through
// cuBLAS; make_matmul_kernel hands it on.
#pragma once
#include "gpu/kernels/common.cuh"

namespace graphrun::gpu {

std::unique_ptr<Kernel> make_gemm_kernel(const Graph& g, const Node& n, GpuContext& ctx);

}  // namespace graphrun::gpu
