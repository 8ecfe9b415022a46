// reshape and identity: a device-to-device copy (the executor usually aliases
// them instead), every dtype.
#pragma once
#include "gpu/kernels/common.cuh"

namespace graphrun::gpu {

std::unique_ptr<Kernel> make_copy_kernel(const Graph& g, const Node& n, GpuContext& ctx);

}  // namespace graphrun::gpu
