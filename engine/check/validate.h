// Validation and shape/dtype inference for every op of SPEC section 3.
#pragma once
#include "engine/base/diagnostics.h"
#include "engine/base/limits.h"
#include "engine/ir/graph.h"

namespace graphrun {

// Checks every node in program order (arity, attribute names and types, dtypes,
// shapes, devices as written, loop-carried values keeping their type), filling
// Node::valid, dtype, shape and (for const) literal. A node whose input is
// invalid is skipped silently, so one mistake gives one error.
// Returns !diag.has_errors(). A stop request (interrupted(), engine/base/
// interrupt.h) ends it early with false, adding no error: the caller says why.
bool validate(Graph& g, Diagnostics& diag);

// The same for the nodes from `first` on, those before already checked: the
// ONNX importer asks it for the shapes of what it has built so far, where
// ONNX's own shape inference had none (its diagnostics are the importer's to
// keep or drop; validate() checks the whole graph again once it is built).
bool validate_from(Graph& g, Diagnostics& diag, NodeId first);

}  // namespace graphrun
