// The storage types' pass (issue 27): f16, bf16, i8 and u8 values are held,
// moved, cast, fed and printed in their own type, but arithmetic on them runs
// in their compute type (f32 for the floats, i32 for the integers) and rounds
// back after each op, as NumPy computes float16 in float32 and int8 in wider
// registers (and as ONNX Runtime's CPU casts around ops it has no f16 kernel
// for). Run once a graph is validated and placed, before fusion, it rewrites
//
//   y = op(a, b)            (a, b or y of a storage type)
// into
//   a' = cast(a, f32)  b' = cast(b, f32)  y' = op(a', b') in f32  y = cast(y', f16)
//
// on the node's device. `y` keeps the node's id, name, place in the program
// and location, so outputs, bindings and later readers are unchanged; the
// casts and y' are generated nodes, counted by the plan like any other value
// (the static peak is the rewritten graph's). Ops that only move elements
// (reshape, identity, transpose, concat, the layout family: slice, gather,
// expand, split, pad, tile), const, input and cast run in the storage type
// itself: their kernels move bytes of any size.
#pragma once
#include <cstddef>

#include "engine/ir/graph.h"

namespace graphrun {

// Rewrites `g` in place (node ids change as in fuse_graph). Returns the nodes it
// added (0 for a graph with no storage-typed arithmetic).
size_t widen_storage_types(Graph& g);

}  // namespace graphrun
