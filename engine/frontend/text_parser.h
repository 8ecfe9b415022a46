// The text front end (SPEC section 1): a `.graph` script into the graph IR.
#pragma once
#include <string_view>

#include "engine/base/diagnostics.h"
#include "engine/base/limits.h"
#include "engine/ir/graph.h"

namespace graphrun {

// Parses `source` into `g` (which must be empty) through a GraphBuilder,
// reporting every independent error into `diag`, reading under `limits`.
// Returns !diag.has_errors().
bool parse_text(std::string_view source, Graph& g, Diagnostics& diag, const InputLimits& limits = {});

}  // namespace graphrun
