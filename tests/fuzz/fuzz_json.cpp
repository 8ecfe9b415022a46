// libFuzzer target for the JSON front end: parse, validate, and check that a
// graph that parsed writes back (write_json) to one that parses to as many nodes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/frontend/json_reader.h"
#include "engine/frontend/json_writer.h"
#include "engine/api/load.h"

using namespace graphrun;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string source(reinterpret_cast<const char*>(data), size);

    Graph g;
    Diagnostics diag("fuzz.json", source);
    if (!parse_json(source, g, diag)) {
        (void)load_graph_source("fuzz.json", std::move(source), true);
        return 0;
    }
    std::string written = write_json(g);
    Graph again;
    Diagnostics again_diag("rewritten.json", written);
    if (!parse_json(written, again, again_diag) || again.nodes.size() != g.nodes.size())
        __builtin_trap();

    auto lg = load_graph_source("fuzz.json", std::move(source), true);
    if (lg->ok()) {
        auto rt = load_graph_source("rewritten.json", write_json(lg->graph), true);
        if (!rt->ok() || rt->graph.nodes.size() != lg->graph.nodes.size()) __builtin_trap();
    }
    return 0;
}
