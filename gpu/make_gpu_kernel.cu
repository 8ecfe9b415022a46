// The one switch over OpKind that sends each op placed on the GPU to its
// kernel family (gpu/kernels/<family>.cu), and the table of what the GPU runs.
#include "engine/kernels/common/kernel_common.h"
#include "gpu/gpu_context.h"
#include "gpu/kernels/binary.cuh"
#include "gpu/kernels/cast.cuh"
#include "gpu/kernels/concat.cuh"
#include "gpu/kernels/copy.cuh"
#include "gpu/kernels/create.cuh"
#include "gpu/kernels/matmul.cuh"
#include "gpu/kernels/reduce.cuh"
#include "gpu/kernels/softmax.cuh"
#include "gpu/kernels/transpose.cuh"
#include "gpu/kernels/unary.cuh"

namespace graphrun::gpu {

bool gpu_supports(OpKind op, DType dtype) {
    const bool num = dtype != DType::Bool;
    const bool flt = is_float(dtype);
    switch (op) {
        case OpKind::Const:
        case OpKind::Zeros:
        case OpKind::Ones:
        case OpKind::Fill:
        case OpKind::Transpose:
        case OpKind::Reshape:
        case OpKind::Cast:
        case OpKind::Identity:
        case OpKind::Concat:
            return true;
        case OpKind::Range:
        case OpKind::Add:
        case OpKind::Sub:
        case OpKind::Mul:
        case OpKind::Div:
        case OpKind::Maximum:
        case OpKind::Minimum:
        case OpKind::Pow:
        case OpKind::Neg:
        case OpKind::Abs:
        case OpKind::Square:
        case OpKind::Relu:
        case OpKind::ReduceSum:
        case OpKind::ReduceMax:
            return num;
        case OpKind::RandomUniform:
        case OpKind::RandomNormal:
        case OpKind::Exp:
        case OpKind::Log:
        case OpKind::Sqrt:
        case OpKind::Rsqrt:
        case OpKind::Tanh:
        case OpKind::Sigmoid:
        case OpKind::Sin:
        case OpKind::Cos:
        case OpKind::Matmul:
        case OpKind::ReduceMean:
        case OpKind::Softmax:
            return flt;
        case OpKind::LoopParam:  // a value the executor moves, never a kernel
        case OpKind::Invalid:
            return false;
    }
    return false;
}

std::unique_ptr<Kernel> make_gpu_kernel(const Graph& g, const Node& n, GpuContext& ctx) {
    if (!gpu_supports(n.op, n.dtype))
        return kernels::make_error_kernel(std::string("no GPU kernel for ") + op_name(n.op) +
                                          " on " + dtype_name(n.dtype));
    switch (n.op) {
        case OpKind::Const:
        case OpKind::Zeros:
        case OpKind::Ones:
        case OpKind::Fill:
        case OpKind::Range:
        case OpKind::RandomUniform:
        case OpKind::RandomNormal:
            return make_creation_kernel(g, n, ctx);
        case OpKind::Add:
        case OpKind::Sub:
        case OpKind::Mul:
        case OpKind::Div:
        case OpKind::Maximum:
        case OpKind::Minimum:
        case OpKind::Pow:
            return make_binary_kernel(g, n, ctx);
        case OpKind::Neg:
        case OpKind::Abs:
        case OpKind::Square:
        case OpKind::Relu:
        case OpKind::Exp:
        case OpKind::Log:
        case OpKind::Sqrt:
        case OpKind::Rsqrt:
        case OpKind::Tanh:
        case OpKind::Sigmoid:
        case OpKind::Sin:
        case OpKind::Cos:
            return make_unary_kernel(g, n, ctx);
        case OpKind::Matmul:
            return make_matmul_kernel(g, n, ctx);
        case OpKind::Transpose:
            return make_transpose_kernel(g, n, ctx);
        case OpKind::Reshape:
        case OpKind::Identity:
            return make_copy_kernel(g, n, ctx);
        case OpKind::Cast:
            return make_cast_kernel(g, n, ctx);
        case OpKind::Concat:
            return make_concat_kernel(g, n, ctx);
        case OpKind::ReduceSum:
        case OpKind::ReduceMax:
        case OpKind::ReduceMean:
            return make_reduce_kernel(g, n, ctx);
        case OpKind::Softmax:
            return make_softmax_kernel(g, n, ctx);
        case OpKind::LoopParam:
        case OpKind::Invalid:
            break;
    }
    return kernels::make_error_kernel(std::string("internal error: ") + op_name(n.op) +
                                      " has no GPU kernel");
}

}  // namespace graphrun::gpu
