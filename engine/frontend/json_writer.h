// Writes a graph as a JSON graph that reads back to the same graph.
#pragma once
#include <string>

#include "engine/ir/graph.h"

namespace graphrun {

std::string write_json(const Graph& g);

}  // namespace graphrun
