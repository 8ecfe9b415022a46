// The pre-pack pass (issue 25 item 1, "a weight is held once"): run after
// fusion and the layout pass, before the plan, it puts each constant weight
// that one CPU kernel reads in a layout of its own (oneDNN's blocked conv
// filters and AVX-512's packed GEMM panels) into that layout once, as the
// graph's (Graph::prepacked), and frees the plain bytes (Node::literal). The
// session then places the packed bytes as the weight (counted in `weights`,
// predicted by check), and the kernel reads them as they are.
//
// Without the pass the kernel packed its own copy at its first run and held it
// as `workspace` for the session's life, beside the plain constant the graph
// kept: every such weight was held twice (MobileNet-v2: 13.3 MiB of weights
// and 13.2 MiB of packed copies; ResNet-18: 47 MB and 47 MB). ONNX Runtime
// does the same at session start (its kernels' PrePack, the initializer freed
// where every reader packed it).
//
// A constant is packed only where nothing else can see its plain bytes: it
// is placed on the CPU and read by exactly one node, as that node's input 1
// (and by no repeat as a carried value), and it is not an output (the
// script's or --fetch's). prepare (engine/api/prepare.cpp) runs it where it
// runs the layout pass: not under --no-fuse (nor in eager mode or the live
// session, where a name may be printed) and not under --memory-limit (where a
// kernel must be able to hand over to ours, which reads the plain layout).
#pragma once
#include <cstddef>
#include <optional>

#include "engine/ir/graph.h"

namespace graphrun {

// Asked of each CPU node that reads a constant as its input 1: that input in
// the layout the node's kernel reads it in with `threads` threads, or nullopt
// (the CPU kernels' answer: kernels::dnnl_pack_weight).
using PackWeight = std::optional<PrepackedWeight> (*)(const Graph& g, const Node& n, int threads);

// Packs what `pack` packs; returns how many constants it packed.
size_t prepack_weights(Graph& g, PackWeight pack, int threads);

}  // namespace graphrun
