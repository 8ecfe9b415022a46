// The one dispatch from an op to its kernel: each device lists one factory
// per op family (OpInfo::family), and make_family_kernel picks by the family.
// The CPU (engine/kernels/cpu/make_kernel.cpp) and the GPU
// (gpu/make_gpu_kernel.cu) share it, so an op added to a family needs no
// change to either device's dispatch.
#pragma once
#include <memory>

#include "engine/ir/graph.h"
#include "engine/ir/ops.h"
#include "engine/kernels/common/kernel.h"
#include "engine/kernels/common/kernel_common.h"

namespace graphrun::kernels {

// A device's kernel factories, one per family; `Ctx...` is what its factories
// take besides the graph and the node (the GPU's context; nothing on the CPU).
template <class... Ctx>
struct FamilyFactories {
    using Make = std::unique_ptr<Kernel> (*)(const Graph&, const Node&, Ctx&...);
    Make creation, binary, unary, matmul, transpose, copy, cast, concat, reduce, softmax, logic, arg_reduce;
    Make layout;  // the shape ops' family (issue 18)
    Make norm;    // layer_norm batch_norm (issue 18)
    Make conv;    // conv conv_transpose and the pools (issue 18)
    // top_k and the scatters: CPU kernels only (not in GR_FAMILY_FACTORIES;
    // the CPU sets it, and the GPU, which none of them is placed on, has none)
    Make index = nullptr;
};

// The FamilyFactories of the functions make_<family>_kernel in scope where it
// is used: both devices name their factories so.
#define GR_FAMILY_FACTORIES                                                                    \
    {                                                                                          \
        .creation = make_creation_kernel, .binary = make_binary_kernel,                        \
        .unary = make_unary_kernel, .matmul = make_matmul_kernel,                              \
        .transpose = make_transpose_kernel, .copy = make_copy_kernel, .cast = make_cast_kernel, \
        .concat = make_concat_kernel, .reduce = make_reduce_kernel,                            \
        .softmax = make_softmax_kernel, .logic = make_logic_kernel,                            \
        .arg_reduce = make_arg_reduce_kernel,                                                  \
        .layout = make_layout_kernel,                                                          \
        .norm = make_norm_kernel,                                                              \
        .conv = make_conv_kernel,                                                              \
    }

// The kernel of n's family, or nullptr for an op of no family (loop_param,
// invalid) or a family the device lists no factory for.
template <class... Ctx>
std::unique_ptr<Kernel> make_family_kernel(const FamilyFactories<Ctx...>& f, const Graph& g, const Node& n,
                                           Ctx&... ctx) {
    // Storage types reach only the kernels that move bytes, and the fusion
    // pass's int8 conv (engine/plan/fuse.h), which reads 8-bit x.
    if (!runs_in_storage_type(n.op) &&
        !((n.op == OpKind::Conv || n.op == OpKind::Matmul) && n.find_attr("x_zero_point"))) {
        bool storage = is_storage(n.dtype);
        for (const Input& in : n.inputs) storage = storage || is_storage(g.node(in.id).dtype);
        if (storage)
            return make_error_kernel(std::string("internal error: ") + op_name(n.op) +
                                     " on a storage type was not widened to its compute type");
    }
    typename FamilyFactories<Ctx...>::Make make = nullptr;
    switch (op_info(n.op).family) {
        case OpFamily::Creation: make = f.creation; break;
        case OpFamily::Binary: make = f.binary; break;
        case OpFamily::Unary: make = f.unary; break;
        case OpFamily::Matmul: make = f.matmul; break;
        case OpFamily::Transpose: make = f.transpose; break;
        case OpFamily::Copy: make = f.copy; break;
        case OpFamily::Cast: make = f.cast; break;
        case OpFamily::Concat: make = f.concat; break;
        case OpFamily::Reduce: make = f.reduce; break;
        case OpFamily::Softmax: make = f.softmax; break;
        case OpFamily::Logic: make = f.logic; break;
        case OpFamily::ArgReduce: make = f.arg_reduce; break;
        case OpFamily::Layout: make = f.layout; break;
        case OpFamily::Norm: make = f.norm; break;
        case OpFamily::Conv: make = f.conv; break;
        case OpFamily::Index: make = f.index; break;
        case OpFamily::None: break;
    }
    return make ? make(g, n, ctx...) : nullptr;
}

}  // namespace graphrun::kernels
