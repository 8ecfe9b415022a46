// The conv area on the GPU: conv and conv_transpose (im2col / col2im kernels
// and cuBLAS GEMMs, a direct kernel for depthwise convs), max_pool, avg_pool,
// global_avg_pool and global_max_pool (direct kernels), as on the CPU
// (engine/kernels/cpu/conv.cpp, pool.cpp).
#pragma once
#include "gpu/kernels/common.cuh"

namespace graphrun::gpu {

std::unique_ptr<Kernel> make_conv_kernel(const Graph& g, const Node& n, GpuContext& ctx);

}  // namespace graphrun::gpu
