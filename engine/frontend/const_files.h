// Constants whose values live in a side file beside the script, as
// `graphrun convert -o` writes a model's large initializers:
//
//   w = const(file="model.npz", key="conv1.weight", shape=[64, 3, 7, 7], dtype=f32)
//   {"name": "w", "op": "const", "attrs": {"file": "model.npz", "key": "conv1.weight", ...}}
//
// `file` is an .npz (an array named by `key`) or an .npy (one array, no
// `key`), its path relative to the script's directory (or absolute). `shape`
// and `dtype` are optional; when written they must be the array's.
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/base/diagnostics.h"
#include "engine/ir/graph.h"

namespace graphrun {

// Where the writers put a host constant instead of its values.
struct ExternalConst {
    std::string file;  // as the script names it (relative to the script's directory)
    std::string key;   // the .npz member
};
using ExternalConsts = std::unordered_map<NodeId, ExternalConst>;

// Reads the values of every const with a `file` attribute, before validation:
// each becomes a host constant (Node::host_literal) with the array's shape and
// dtype attributes, its file and key attributes dropped. A problem (a missing
// file or key, a file that is no .npy/.npz, a shape or dtype other than the
// array's) is reported at the attribute, and the node becomes invalid.
// `script_path` is the script as given ("-": standard input; paths are then
// relative to the current directory). Returns whether every one was read.
// Files are read with read_array_file's bounds, lowered to `memory_limit`
// when it is not 0 (the CPU's memory limit: the arrays are host memory).
// `read_paths`, when given, receives each side file's resolved path, once.
bool resolve_const_files(Graph& g, Diagnostics& diag, const std::string& script_path, uint64_t memory_limit = 0,
                         std::vector<std::string>* read_paths = nullptr);

// The directory part of a path ("" for a bare name).
std::string directory_of(const std::string& path);

}  // namespace graphrun
