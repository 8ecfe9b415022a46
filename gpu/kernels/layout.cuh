// The shape ops that move elements (family Layout): slice, split, expand,
// tile, gather and pad, every dtype. squeeze, unsqueeze and flatten are
// copies (copy.cu).
#pragma once
#include "gpu/kernels/common.cuh"

namespace graphrun::gpu {

std::unique_ptr<Kernel> make_layout_kernel(const Graph& g, const Node& n, GpuContext& ctx);

}  // namespace graphrun::gpu
