// The GPU's kernel factory per op family (gpu/kernels/<family>.cu), dispatched
// by engine/kernels/common/families.h; which ops and dtypes the GPU runs is the
// op table's (gpu_runs in engine/ir/ops.h).
#include "engine/kernels/common/families.h"
#include "engine/kernels/common/kernel_common.h"
#include "gpu/gpu_context.h"
#include "gpu/kernels/arg_reduce.cuh"
#include "gpu/kernels/binary.cuh"
#include "gpu/kernels/cast.cuh"
#include "gpu/kernels/concat.cuh"
#include "gpu/kernels/conv.cuh"
#include "gpu/kernels/copy.cuh"
#include "gpu/kernels/create.cuh"
#include "gpu/kernels/layout.cuh"
#include "gpu/kernels/logic.cuh"
#include "gpu/kernels/matmul.cuh"
#include "gpu/kernels/norm.cuh"
#include "gpu/kernels/reduce.cuh"
#include "gpu/kernels/softmax.cuh"
#include "gpu/kernels/transpose.cuh"
#include "gpu/kernels/unary.cuh"

namespace graphrun::gpu {

std::unique_ptr<Kernel> make_gpu_kernel(const Graph& g, const Node& n, GpuContext& ctx) {
    if (!gpu_runs(n.op, n.dtype))
        return kernels::make_error_kernel(std::string("no GPU kernel for ") + op_name(n.op) +
                                          " on " + dtype_name(n.dtype));
    static constexpr kernels::FamilyFactories<GpuContext> kGpu GR_FAMILY_FACTORIES;
    if (std::unique_ptr<Kernel> k = kernels::make_family_kernel(kGpu, g, n, ctx)) return k;
    return kernels::make_error_kernel(std::string("internal error: ") + op_name(n.op) +
                                      " has no GPU kernel");
}

}  // namespace graphrun::gpu
