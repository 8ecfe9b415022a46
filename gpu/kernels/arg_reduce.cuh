// argmax and argmin along one axis (-> i64), as on the CPU.
#pragma once
#include "gpu/kernels/common.cuh"

namespace graphrun::gpu {

std::unique_ptr<Kernel> make_arg_reduce_kernel(const Graph& g, const Node& n, GpuContext& ctx);

}  // namespace graphrun::gpu
