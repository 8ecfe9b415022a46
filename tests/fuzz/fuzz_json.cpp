// libFuzzer target for the JSON front end: parse, validate, and check that a
// graph that parsed writes back (write_json) to one that parses to as many
// nodes; and that the pointer finder names every place of a document its
// reader accepted as the document does, asked in check's listing order (a
// place, then the start of the member that holds it); and that the graph read
// while its document is read (StreamedDocument, which parse_json uses for big
// files) is the whole reading's, with the same messages.
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

// What a reading gave: every message as printed, and the graph when it parsed.
std::string outcome(bool ok, const Graph& g, const Diagnostics& diag) {
    std::string s = ok ? "ok\n" : "failed\n";
    for (const Diagnostic& d : diag.all()) s += diag.format(d) + "\n";
    if (ok) s += write_json(g);
    return s;
}

void check_streamed(const std::string& source) {
    Graph whole, streamed;
    Diagnostics whole_diag("fuzz.json", source), streamed_diag("fuzz.json", source);
    const bool whole_ok = parse_json_whole(source, whole, whole_diag);
    const bool streamed_ok = parse_json_streamed(source, streamed, streamed_diag);
    if (outcome(whole_ok, whole, whole_diag) != outcome(streamed_ok, streamed, streamed_diag)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string source(reinterpret_cast<const char*>(data), size);
    check_pointers(source);
    check_streamed(source);

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
