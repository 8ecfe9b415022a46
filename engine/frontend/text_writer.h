// Writes a graph as a text script that parses back to the same graph.
#pragma once
#include <string>

#include "engine/ir/graph.h"

namespace graphrun {

std::string write_text(const Graph& g);

}  // namespace graphrun
