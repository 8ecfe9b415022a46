// A graph written in either form, for `graphrun convert`.
#pragma once
#include <string>

#include "engine/ir/graph.h"

namespace graphrun {

enum class GraphForm { Text, Json };

// The graph as a .graph script or a JSON document; either reads back to the same graph.
std::string write_graph(const Graph& g, GraphForm form);

}  // namespace graphrun
