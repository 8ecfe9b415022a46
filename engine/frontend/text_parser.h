// The text front end (SPEC section 1): a `.graph` script into the graph IR.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/diagnostics.h"
#include "engine/base/limits.h"
#include "engine/ir/graph.h"

namespace graphrun {

// Parses `source` into `g` (which must be empty) through a GraphBuilder,
// reporting every independent error into `diag`, reading under `limits`.
// Returns !diag.has_errors().
bool parse_text(std::string_view source, Graph& g, Diagnostics& diag, const InputLimits& limits = {});

// A name bound before the script starts (a live session's stored value): the
// script sees it as an `input` node of this dtype and shape, bound to the name.
struct PredeclaredName {
    std::string name;
    DType dtype = DType::F32;
    Shape shape;
};
// parse_text, with `names` bound first (in this order, as input nodes at the
// top of the program); where `bare_expression_name` is given, a statement that
// is a bare expression (`x @ y`) is read as `bare_expression_name = x @ y`;
// its lines are numbered from `first_line`.
bool parse_text(std::string_view source, Graph& g, Diagnostics& diag, const InputLimits& limits,
                const std::vector<PredeclaredName>& names, std::string_view bare_expression_name,
                uint32_t first_line = 1);

}  // namespace graphrun
