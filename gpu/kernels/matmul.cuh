// matmul (numpy.matmul semantics, transpose_a/transpose_b) on f32 and f64
// through cuBLAS.
#pragma once
#include "gpu/kernels/common.cuh"

namespace graphrun::gpu {

std::unique_ptr<Kernel> make_matmul_kernel(const Graph& g, const Node& n, GpuContext& ctx);

}  // namespace graphrun::gpu
