// Creation ops: const, zeros, ones, fill (every dtype), range (f32 f64 i32
// i64), random_uniform and random_normal (f32 f64), with the CPU's values.
#pragma once
#include "gpu/kernels/common.cuh"

namespace graphrun::gpu {

std::unique_ptr<Kernel> make_creation_kernel(const Graph& g, const Node& n, GpuContext& ctx);

// Sets n elements of elem_size (1, 4 or 8) bytes at dst to the bytes at value.
void launch_fill(void* dst, int64_t n, size_t elem_size, const void* value, GpuContext& ctx);

}  // namespace graphrun::gpu
