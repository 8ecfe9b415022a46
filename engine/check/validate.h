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

}  // namespace graphrun
