// cast between every pair of f32 f64 i32 i64 bool.
#pragma once
#include "gpu/kernels/common.cuh"

namespace graphrun::gpu {

std::unique_ptr<Kernel> make_cast_kernel(const Graph& g, const Node& n, GpuContext& ctx);

}  // namespace graphrun::gpu
