// The text front end (SPEC section 1): a `.graph` script into the graph IR.
#pragma once
#include <string_view>

#include "engine/base/diagnostics.h"
#include "engine/ir/graph.h"

namespace graphrun {

// Deepest nesting of brackets, parentheses, unary operators and blocks accepted;
// deeper input gets a "nesting too deep" error instead of exhausting the stack.
constexpr int kMaxNesting = 256;

// Parses `source` into `g` (which must be empty) through a GraphBuilder,
// reporting every independent error into `diag`. Returns !diag.has_errors().
bool parse_text(std::string_view source, Graph& g, Diagnostics& diag);

}  // namespace graphrun
