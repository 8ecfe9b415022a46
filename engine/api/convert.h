// A graph written in either form, for `graphrun convert`.
#pragma once
#include <cstdint>
#include <string>

#include "engine/api/output_paths.h"
#include "engine/ir/graph.h"

namespace graphrun {

enum class GraphForm { Text, Json };

// The graph as a .graph script or a JSON document; either reads back to the same graph.
std::string write_graph(const Graph& g, GraphForm form);

// Host constants (ONNX initializers) with more elements than this go to the
// side file unless --inline-limit says otherwise.
constexpr int64_t kDefaultInlineLimit = 1024;

struct ConvertOptions {
    GraphForm form = GraphForm::Text;
    // Where the script goes ("" or "-": returned, for standard output). Host
    // constants over inline_limit elements go to the side file <stem>.npz in
    // the output's directory (model.graph -> model.npz), which the script
    // references by that name (relative to its own directory).
    std::string output;
    int64_t inline_limit = kDefaultInlineLimit;
    // The files the conversion read (output_paths.h): neither file written may
    // be one of them. Optional.
    const ReadFiles* reads = nullptr;
};

struct ConvertResult {
    bool ok = false;
    bool usage = false;      // a request that cannot be met (large constants, no output file): exit 2
    std::string error;       // when !ok
    std::string script;      // for standard output (output "" or "-")
    std::string side_file;   // the .npz written, "" if none
    bool replaced_side_file = false;  // a file was at side_file before
    size_t external = 0;     // constants in it
};

// Writes the graph (and its side file) as `o` says, each file whole or not at
// all, both checked before either is written: a file in o.reads or two
// outputs that are one file is a usage error, a path that cannot be written a
// runtime error. Never throws.
ConvertResult convert_graph(const Graph& g, const ConvertOptions& o);

}  // namespace graphrun
