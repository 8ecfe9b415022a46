// Binary elementwise ops with NumPy broadcasting: add sub mul div maximum
// minimum pow on f32 f64 i32 i64.
#pragma once
#include "gpu/kernels/common.cuh"

namespace graphrun::gpu {

std::unique_ptr<Kernel> make_binary_kernel(const Graph& g, const Node& n, GpuContext& ctx);

}  // namespace graphrun::gpu
