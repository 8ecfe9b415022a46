// Graphviz DOT of a prepared graph (`graphrun dot`): one box per node
// labelled with its name, op, dtype, shape and buffer bytes, filled by the
// device it is placed on; one edge per operand; each repeat body a cluster.
#pragma once
#include <ostream>
#include <string>
#include <string_view>

#include "engine/api/prepare.h"

namespace graphrun {

// Writes `p`'s graph as a DOT digraph. Bytes are the plan's (64-byte rounded,
// 0 for an alias) when p.plan is set, otherwise the buffer size of the node's
// type. Nodes are named n<id>; a carried value is an ellipse inside its
// repeat's cluster, with an edge from its initial value and a dashed one from
// its update of each pass; the fetched outputs have a double border.
void write_dot(const Prepared& p, std::ostream& out);

// A DOT string literal's contents: quotes and backslashes escaped, control
// characters as spaces.
std::string dot_escape(std::string_view s);

}  // namespace graphrun
