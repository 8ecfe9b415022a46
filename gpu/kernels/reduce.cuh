// reduce_sum and reduce_max on f32 f64 i32 i64, reduce_mean on f32 f64, over
// any set of axes, with keepdims.
#pragma once
#include "gpu/kernels/common.cuh"

namespace graphrun::gpu {

std::unique_ptr<Kernel> make_reduce_kernel(const Graph& g, const Node& n, GpuContext& ctx);

}  // namespace graphrun::gpu
