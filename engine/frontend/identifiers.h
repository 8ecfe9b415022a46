// What the text and JSON forms accept as a name, and the name each writer
// gives an output, in one place for both writers and the ONNX front end.
#pragma once
#include <string_view>

#include "engine/ir/graph.h"

namespace graphrun {

// An identifier of SPEC section 1 ([A-Za-z_][A-Za-z0-9_]*) that is not a keyword.
bool is_identifier(std::string_view w);

// The name an output is written under by `convert`: as requested when that
// name is an identifier bound to the output's node (a script's `output x`),
// or `x#k` (the builder's name for a rebinding of x, made again on reading);
// else the node's own identifier (an ONNX output `4` or `output.1`, whose
// identifier is v_4 or output_1), so that what convert writes always loads.
std::string_view written_output_name(const Graph& g, const Output& o);

}  // namespace graphrun
