// The Logic family on the GPU: comparisons (f32 f64 i32 i64 -> bool) and
// logical_and/or/xor with NumPy broadcasting, logical_not, and where (any
// dtype) with three-way broadcasting.
#pragma once
#include "gpu/kernels/common.cuh"

namespace graphrun::gpu {

std::unique_ptr<Kernel> make_logic_kernel(const Graph& g, const Node& n, GpuContext& ctx);

}  // namespace graphrun::gpu
