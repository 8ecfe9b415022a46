// transpose with any permutation (default: reversed axes), every dtype.
#pragma once
#include "gpu/kernels/common.cuh"

namespace graphrun::gpu {

std::unique_ptr<Kernel> make_transpose_kernel(const Graph& g, const Node& n, GpuContext& ctx);

}  // namespace graphrun::gpu
