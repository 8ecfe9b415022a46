// Reads a graph file (or standard input), picks the front end, and validates.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/diagnostics.h"
#include "engine/base/json_pointer.h"
#include "engine/base/limits.h"
#include "engine/frontend/text_parser.h"  // PredeclaredName
#include "engine/ir/free_dims.h"
#include "engine/ir/graph.h"

namespace graphrun {

struct LoadedGraph {
    std::string path;      // as given ("-" for standard input)
    std::string display;   // for messages ("<stdin>" for "-")
    std::string source;
    bool json = false;
    bool onnx = false;         // an ONNX model (the name ends in .onnx): `source` holds its bytes
    bool read_failed = false;  // the file could not be read: a runtime error (exit 1)
    // The array files its const(file=) nodes read, or an ONNX model's external
    // data files (paths as resolved), for the check that no output overwrites
    // a file the run reads.
    std::vector<std::string> side_files;
    Graph graph;
    Diagnostics diag;
    bool ok() const { return !read_failed && !diag.has_errors(); }
};

// Finds the JSON pointers of the places in lg's graph (a JSON file's are byte
// offsets in its source, Loc::in_json). It reads lg's source: keep lg.
inline JsonPointerFinder json_places(const LoadedGraph& lg) {
    return JsonPointerFinder(lg.json ? std::string_view(lg.source) : std::string_view());
}

// A file is JSON when its name ends in .json or its first non-blank character is '{'.
bool looks_like_json(const std::string& path, const std::string& source);
// A file is an ONNX model when its name ends in .onnx.
bool looks_like_onnx(const std::string& path);

// Called on the loading thread once the file is parsed, before validation
// (check starts finding a big JSON graph's places on a second core then). The
// graph's nodes and places and the source may be read, not kept: validation
// goes on to change the nodes.
using OnParsed = std::function<void(const LoadedGraph&)>;

// Reads, parses and validates `path`. Never throws; errors are in the result's
// diagnostics. Returned by pointer so that the diagnostics' view of the
// source stays valid. `shapes` binds an ONNX model's free input dimensions;
// binding one a file does not have is a usage error (LoadedGraph::diag.usage()).
std::unique_ptr<LoadedGraph> load_graph(const std::string& path, const InputLimits& limits = {},
                                        const ShapeBindings& shapes = {}, const OnParsed& on_parsed = {});
// The same for text already in memory (tests, fuzzing).
std::unique_ptr<LoadedGraph> load_graph_source(const std::string& display, std::string source, bool json,
                                               const InputLimits& limits = {});

// Text statements for a live session (SPEC section 8): `names` are bound
// before them as input nodes of their dtype and shape (the session's stored
// values the statements may read); a bare expression is bound to
// `bare_expression_name` (parse_text); lines count from `first_line`.
std::unique_ptr<LoadedGraph> load_statements(const std::string& display, std::string source,
                                             const std::vector<PredeclaredName>& names,
                                             std::string_view bare_expression_name, uint32_t first_line = 1,
                                             const InputLimits& limits = {});

}  // namespace graphrun
