// Folding at load with the engine's own kernels (issue 27, item 5): the ONNX
// importer builds the graphrun nodes of an op whose inputs are all constants
// into a small scratch graph, and this runs them on the CPU, so that a value
// computed from constants and static shapes is the value a run would compute,
// by the same kernel, with no second evaluator in the front end.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/graph.h"

namespace graphrun {

// Validates `g` (const nodes and the ops over them, top level only) and runs
// each node in program order on the CPU. On success returns "" and sets
// `values[i]` to the bytes of node wanted[i] (its dtype and shape are the
// validated node's). Refuses, with why, a graph that is not valid, has a
// repeat, draws random numbers, computes on a storage type (f16, bf16, i8,
// u8: the storage-types pass widens those at plan time), has a value of
// more than `max_elements` elements, or values of more than `max_bytes` in
// all (what the memory limit leaves): the caller then builds the nodes. A
// kernel's error on these constants (an integer division by zero, an index
// out of range) is returned with `kernel_error` set: the run would stop there
// on every pass, so the caller reports it when the model is read.
std::string evaluate_constant_graph(Graph& g, const std::vector<NodeId>& wanted, int64_t max_elements,
                                    uint64_t max_bytes, std::vector<std::vector<uint8_t>>& values,
                                    bool& kernel_error);

// The same folding inside a validated graph (an ONNX model's, once built):
// each node whose inputs are all constants (validated: their values held), computing on no
// storage type (f16, bf16, i8, u8: their weights stay in their own type; an
// 8-bit zero point's cast of at most 1024 elements excepted) and
// making at most `max_bytes`, runs once on its CPU kernel and becomes a
// constant of its value (its id, name and place kept); the constants only
// folded nodes read then leave the graph. What an ONNX node's mapping
// computes from constants alone (QLinearConv's requantization scale, a bias
// cast and reshaped) is then a weight placed once, not a kernel per pass. A
// kernel's error leaves the node to the run, which reports it. Returns how
// many nodes were folded.
size_t fold_constant_nodes(Graph& g, uint64_t max_bytes);

}  // namespace graphrun
