// libFuzzer target for the JSON front end: parse, validate, and check that a
// graph that parsed writes back (write_json) to one that parses to as many
// nodes; and that the pointer finder names every place of a document its
// reader accepted as the document does, asked in check's listing order (a
// place, then the start of the member that holds it).
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/frontend/json_reader.h"
#include "engine/frontend/json_writer.h"
#include "engine/api/load.h"
#include "engine/base/json_pointer.h"
#include "engine/frontend/json_document.h"

using namespace graphrun;

namespace {

struct Place {
    uint32_t offset;
    std::string pointer;
    size_t parent;  // index of the member that holds it, or SIZE_MAX
};

void collect(jsondoc::JVal v, const std::string& pointer, size_t parent, std::vector<Place>& out) {
    size_t i = 0;
    for (auto [key, item] : v.items()) {
        if (out.size() >= 4096) return;
        std::string p = v.is_array() ? jsondoc::child(pointer, i++) : jsondoc::child(pointer, key);
        out.push_back(Place{item.place(), p, parent});
        collect(item, p, out.size() - 1, out);
    }
}

void check_pointers(const std::string& source) {
    jsondoc::Document doc;
    Diagnostics diag("fuzz.json", source);
    if (!jsondoc::read_document(source, doc, InputLimits{}, diag) || !doc.places || diag.has_errors()) return;
    std::vector<Place> places;
    collect(jsondoc::JVal(doc, doc.root()), "", SIZE_MAX, places);
    JsonPointerFinder finder(source);
    for (const Place& p : places) {
        if (finder.pointer_at(p.offset) != p.pointer) __builtin_trap();
        if (p.parent != SIZE_MAX && finder.pointer_at(places[p.parent].offset) != places[p.parent].pointer)
            __builtin_trap();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string source(reinterpret_cast<const char*>(data), size);
    check_pointers(source);

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
