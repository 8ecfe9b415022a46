// The fusion pass (issue 25 item 2): run once a graph is validated, fetched
// and placed, before its plan is compiled, it rewrites chains of nodes into
// one node whose kernel does their work in one pass over memory:
//
//   conv [+ batch_norm] [+ add residual] [+ relu | clip | gelu | tanh | sigmoid]
//   matmul [+ add bias] [+ add residual] [+ activation]
//   gemm [+ activation]
//   softmax(matmul(q, k) [* or / scalar constant] [+ mask]) @ v: attention,
//     the last matmul with an Attention epilogue (engine/ir/epilogue.h),
//     with the transposes that split q, k and v into heads and merge the
//     product's heads back taken in
//
// and first, wherever it is, the GELU an exporter writes as elementwise ops
// (x/√2 -> erf -> +1 -> ·x·0.5, or the tanh form with 0.044715 and √(2/π))
// becomes one gelu node, which such a chain can then take as its activation.
//
// Before the chains, a concat along the channels (axis 1) that only a pool
// or a conv reads leaves the graph: max_pool/avg_pool(concat(a, b, ...))
// becomes concat(pool(a), pool(b), ...) (a pool works channel by channel), and
// conv(concat(a, b, ...), w, bias) becomes conv(a, w_a) + conv(b, w_b, bias)
// + ..., w_a, w_b the slices of the constant w along its input channels
// (group 1), each sum then the residual of the next conv's chain. Not where
// the conv's output holds more elements than the concat, nor where a
// batch_norm that folds into the whole conv follows it. The conv's values
// differ from the unsplit one's by the order of the sums (within the op's
// tolerance); the pool's are the same.
//
// A batch_norm after a conv is folded into new constant weights and bias
// (w·s and (b − mean)·s + beta, s = scale / sqrt(var + epsilon), computed in
// double); the old constants that nothing else reads leave the graph, so the
// weights shrink. The rest becomes the node's Epilogue (engine/ir/epilogue.h).
//
// The fused node keeps the chain's last node: its id, name, output, place in
// the program and location; the other nodes of the chain leave the graph.
// A chain stops at a value that must exist on its own: an output (the
// script's or --fetch's), a value read twice or by a node in another block,
// a repeat's carried value, or a node on another device than the CPU (the GPU
// kernels take no epilogue), of a dtype other than f32/f64, or whose shape
// differs from the head's. The plan compiled afterwards is the fused graph's,
// so its static peak is what the run allocates.
#pragma once
#include <cstddef>

#include "engine/ir/graph.h"

namespace graphrun {

struct FuseStats {
    size_t fused = 0;    // nodes that now carry an epilogue
    size_t removed = 0;  // nodes that left the graph (the chains' other nodes, unread constants)
};

// Last, an ONNX integer conv or matmul (engine/frontend/onnx_ops_quant.cpp:
// an f32 conv or matmul of cast(x8) - zp by constant integer weights, exact
// in f32) becomes an int8 conv or matmul: it reads x8 itself, its zero point
// the x_zero_point attribute, and an i8 copy of the weights (a quarter of the
// bytes), where every weight fits i8, the sums stay below 2^24 (so f32 holds
// them, as before), the node has no epilogue (a matmul no transpose), and
// `int8_runs` (oneDNN's exact, fast int8 code: kernels::dnnl_int8_runs)
// says it runs. The values are the same; the cast and the subtraction leave
// the graph where nothing else reads them.
using Int8Runs = bool (*)(const Graph& g, const Node& n);

// Rewrites `g` in place (node ids change: inputs, statements, carries,
// bindings and outputs are renumbered; a name bound to a node that left is
// unbound). Only top-level and repeat-body statements are rewritten; nodes
// in no statement list are left alone.
FuseStats fuse_graph(Graph& g, Int8Runs int8_runs = nullptr);

}  // namespace graphrun
