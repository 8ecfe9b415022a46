// libFuzzer target for the text front end: parse, validate, and check that a
// script that parsed writes back (write_text) to one that parses to as many nodes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/api/load.h"
#include "engine/frontend/text_parser.h"
#include "engine/frontend/text_writer.h"

using namespace graphrun;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string source(reinterpret_cast<const char*>(data), size);

    Graph g;
    Diagnostics diag("fuzz.graph", source);
    if (!parse_text(source, g, diag)) {
        // Validation runs on what parsed, too: it must not crash either.
        (void)load_graph_source("fuzz.graph", std::move(source), false);
        return 0;
    }
    std::string written = write_text(g);
    Graph again;
    Diagnostics again_diag("rewritten.graph", written);
    if (!parse_text(written, again, again_diag) || again.nodes.size() != g.nodes.size())
        __builtin_trap();

    auto lg = load_graph_source("fuzz.graph", std::move(source), false);
    if (lg->ok()) {
        // A valid graph stays valid when written and read back.
        auto rt = load_graph_source("rewritten.graph", write_text(lg->graph), false);
        if (!rt->ok() || rt->graph.nodes.size() != lg->graph.nodes.size()) __builtin_trap();
    }
    return 0;
}
