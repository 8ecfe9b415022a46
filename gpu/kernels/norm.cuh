// layer_norm and batch_norm (inference), f32 and f64.
#pragma once
#include "gpu/kernels/common.cuh"

namespace graphrun::gpu {

std::unique_ptr<Kernel> make_norm_kernel(const Graph& g, const Node& n, GpuContext& ctx);

}  // namespace graphrun::gpu
