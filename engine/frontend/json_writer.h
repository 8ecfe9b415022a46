// Writes a graph as a JSON graph that reads back to the same graph.
#pragma once
#include <string>

#include "engine/frontend/const_files.h"
#include "engine/ir/graph.h"

namespace graphrun {

// `external`: host constants written as "file"/"key" references instead of
// their values (graphrun convert -o).
std::string write_json(const Graph& g, const ExternalConsts* external = nullptr);

}  // namespace graphrun
