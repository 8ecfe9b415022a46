// The one switch over OpKind that picks a node's CPU kernel family.
#include "engine/kernels/cpu/cpu_kernel.h"
#include "engine/kernels/common/kernel_common.h"
#include "engine/kernels/cpu/kernel_families.h"
#include "engine/ir/ops.h"

namespace graphrun {

std::unique_ptr<Kernel> make_cpu_kernel(const Graph& g, const Node& n) {
    using namespace kernels;
    switch (n.op) {
        case OpKind::Const:
        case OpKind::Zeros:
        case OpKind::Ones:
        case OpKind::Fill:
        case OpKind::Range:
        case OpKind::RandomUniform:
        case OpKind::RandomNormal:
            return make_creation_kernel(g, n);
        case OpKind::Add:
        case OpKind::Sub:
        case OpKind::Mul:
        case OpKind::Div:
        case OpKind::Maximum:
        case OpKind::Minimum:
        case OpKind::Pow:
            return make_binary_kernel(g, n);
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
            return make_unary_kernel(g, n);
        case OpKind::Matmul:
            return make_matmul_kernel(g, n);
        case OpKind::Transpose:
            return make_transpose_kernel(g, n);
        case OpKind::Reshape:
        case OpKind::Identity:
            return make_copy_kernel(g, n);
        case OpKind::Cast:
            return make_cast_kernel(g, n);
        case OpKind::Concat:
            return make_concat_kernel(g, n);
        case OpKind::ReduceSum:
        case OpKind::ReduceMax:
        case OpKind::ReduceMean:
            return make_reduce_kernel(g, n);
        case OpKind::Softmax:
            return make_softmax_kernel(g, n);
        case OpKind::LoopParam:
        case OpKind::Invalid:
            break;
    }
    return make_error_kernel(std::string("internal error: ") + op_name(n.op) + " has no kernel");
}

}  // namespace graphrun
