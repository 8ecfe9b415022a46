// Writes a graph as a text script that parses back to the same graph.
#pragma once
#include <string>

#include "engine/frontend/const_files.h"
#include "engine/ir/graph.h"

namespace graphrun {

// `external`: host constants written as const(file=, key=) references
// instead of their values (graphrun convert -o).
std::string write_text(const Graph& g, const ExternalConsts* external = nullptr);

}  // namespace graphrun
