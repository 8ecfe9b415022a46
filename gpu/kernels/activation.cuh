// The unary ops beyond SPEC section 3 on the GPU (floor ceil round erf
// reciprocal softplus sign clip leaky_relu elu selu gelu); make_unary_kernel
// hands them on.
#pragma once
#include "gpu/kernels/common.cuh"

namespace graphrun::gpu {

std::unique_ptr<Kernel> make_activation_kernel(const Graph& g, const Node& n, GpuContext& ctx);

}  // namespace graphrun::gpu
