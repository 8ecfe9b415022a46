// Renumbering a graph after a plan pass rewrote it (fusion, fuse.h; the
// storage types' casts, storage_types.h): new nodes, appended to Graph::nodes
// while the pass ran, take their place just before the node they were made
// for, and the nodes the pass removed leave.
#pragma once
#include <cstddef>
#include <vector>

#include "engine/ir/graph.h"

namespace graphrun {

// `before[i]`, per node i < original: the new nodes (ids >= original) to
// place just before it, in that order; `removed[i]`: node i leaves. Node ids,
// inputs, statement lists, carries, bindings, outputs and dels are renumbered
// (a name bound to a removed node is unbound). Returns how many nodes left.
size_t renumber_nodes(Graph& g, size_t original, const std::vector<std::vector<NodeId>>& before,
                      const std::vector<bool>& removed);

// Marks `n`, a node a pass made, as generated, valid and named `name`, in
// `like`'s repeat, on its device (placed and as written) and at its location.
void make_generated_like(Node& n, const Node& like, std::string name);

}  // namespace graphrun
