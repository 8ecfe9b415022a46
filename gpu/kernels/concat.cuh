// concat along any axis, every dtype.
#pragma once
#include "gpu/kernels/common.cuh"

namespace graphrun::gpu {

std::unique_ptr<Kernel> make_concat_kernel(const Graph& g, const Node& n, GpuContext& ctx);

}  // namespace graphrun::gpu
