// Unary elementwise ops: neg abs square relu on f32 f64 i32 i64; exp log
// sqrt rsqrt tanh sigmoid sin cos on f32 f64.
#pragma once
#include "gpu/kernels/common.cuh"

namespace graphrun::gpu {

std::unique_ptr<Kernel> make_unary_kernel(const Graph& g, const Node& n, GpuContext& ctx);

}  // namespace graphrun::gpu
