// A big JSON graph read while its document is read (json_document.h:
// StreamedDocument): the same graph and the same diagnostics, places
// included, as reading the document whole first (parse_json_whole), for
// well-formed graphs and for every way the document can turn out not to be
// one the streamed reading can take. In the tsan stage's filter (scripts/test.sh).
#include <doctest/doctest.h>

#include <string>

#include "engine/frontend/json_reader.h"
#include "engine/frontend/json_writer.h"

using namespace graphrun;

namespace {

struct Read {
    Graph g;
    Diagnostics diag;
    bool ok = false;
};

// What a reading gave: the graph as JSON (when it has no errors) and every
// diagnostic as printed (its place as line:col or pointer, and the line).
std::string outcome(const Read& r) {
    std::string s = r.ok ? "ok\n" : "failed\n";
    for (const Diagnostic& d : r.diag.all()) s += r.diag.format(d) + "\n";
    if (r.ok) s += write_json(r.g);
    return s;
}

Read read(const std::string& src, bool whole, const InputLimits& limits) {
    Read r;
    r.diag = Diagnostics("big.json", src);
    r.ok = whole ? parse_json_whole(src, r.g, r.diag, limits) : parse_json(src, r.g, r.diag, limits);
    return r;
}

// The streamed reading (the source is over its megabyte) against the whole one.
void same_as_whole(const std::string& src, const InputLimits& limits = {}) {
    REQUIRE(src.size() >= (size_t{1} << 20));
    const std::string streamed = outcome(read(src, false, limits));
    const std::string whole = outcome(read(src, true, limits));
    INFO(whole.substr(0, 2000));
    CHECK(streamed == whole);
}

// `n` statements `x = x + 1` as `graphrun convert` writes them, with `at(i)`
// in place of the i-th when it gives one.
template <class At>
std::string items(size_t n, At at) {
    std::string s = "    {\"name\": \"x\", \"op\": \"zeros\", \"attrs\": {\"shape\": [4]}}";
    for (size_t i = 0; i < n; ++i) {
        s += ",\n    ";
        std::string other = at(i);
        s += other.empty() ? "{\"name\": \"x\", \"op\": \"add\", \"inputs\": [\"x\", 1]}" : other;
    }
    return s;
}
std::string items(size_t n) {
    return items(n, [](size_t) { return std::string(); });
}

constexpr size_t kN = 25000;  // about 1.2 MB of statements

std::string graph(const std::string& nodes, const std::string& rest = ", \"outputs\": [\"x\"]") {
    return "{\n  \"graphrun\": 1,\n  \"nodes\": [\n" + nodes + "\n  ]" + rest + "\n}\n";
}

}  // namespace

TEST_CASE("json stream: a big graph reads as it does whole") {
    same_as_whole(graph(items(kN)));
    same_as_whole(graph(items(kN), ""));  // no outputs: the last node
    same_as_whole(graph(items(kN), ", \"outputs\": [\"x\", \"nope\"]"));
    // Loops, del and literals of every kind among the items.
    same_as_whole(graph(items(kN, [](size_t i) -> std::string {
        if (i % 1000 == 7)
            return "{\"repeat\": 2, \"body\": [{\"name\": \"x\", \"op\": \"mul\", \"inputs\": [\"x\", 2.5]}]}";
        if (i % 1000 == 8) return "{\"name\": \"y\", \"op\": \"const\", \"value\": [[1, 2], [3, 4]]}";
        if (i % 1000 == 9) return "{\"del\": \"y\"}";
        if (i % 1000 == 10) return "{\"name\": \"x\", \"op\": \"add\", \"inputs\": [\"x\", -1, true, null]}";
        return "";
    })));
}

TEST_CASE("json stream: errors in the items are those of the whole reading") {
    // A few errors, with their places (pointers found from offsets).
    same_as_whole(graph(items(kN, [](size_t i) -> std::string {
        if (i == 100) return "{\"name\": \"x\", \"op\": \"nope\", \"inputs\": [\"x\"]}";
        if (i == kN - 2) return "{\"name\": \"x\", \"op\": \"add\", \"inputs\": [\"zz\", 1], \"colour\": 1}";
        if (i == 5000) return "[1]";
        return "";
    })));
    // So many that the reading stops at 50.
    same_as_whole(graph(items(kN, [](size_t i) -> std::string {
        return i % 100 == 0 ? "{\"name\": \"x\", \"op\": \"nope\"}" : "";
    })));
    // Past the node limit.
    InputLimits few;
    few.nodes = 1000;
    same_as_whole(graph(items(kN)), few);
}

TEST_CASE("json stream: documents the streamed reading leaves to the whole one") {
    const std::string nodes = items(kN);
    // Malformed near the end, after thousands of items were read.
    same_as_whole(graph(nodes, ", \"outputs\": [\"x\""));
    same_as_whole(graph(nodes + ",\n    {\"name\": \"x\", \"op\": \"add\" \"inputs\": []}"));
    // Too many values for the limit.
    InputLimits values;
    values.json_values = 50000;
    same_as_whole(graph(nodes), values);
    // A duplicate key: in an item, and of the root after the array.
    same_as_whole(graph(items(kN, [](size_t i) -> std::string {
        return i == 20000 ? "{\"name\": \"x\", \"op\": \"add\", \"op\": \"mul\", \"inputs\": [\"x\", 1]}" : "";
    })));
    same_as_whole(graph(nodes, ", \"nodes\": []"));
    same_as_whole(graph(nodes, ", \"graphrun\": 2"));
    // An escape the fast reader leaves to nlohmann's, past the first items.
    same_as_whole(graph(items(kN, [](size_t i) -> std::string {
        return i == 15000 ? "{\"name\": \"x\", \"op\": \"add\", \"inputs\": [\"x\", 1], \"device\": \"c\\u0070u\"}" : "";
    })));
    // Another member after the array, and other orders of the root's members.
    same_as_whole(graph(nodes, ", \"colour\": 1"));
    same_as_whole("{\"nodes\": [\n" + nodes + "\n], \"graphrun\": 1}");
    same_as_whole("{\"graphrun\": 1, \"outputs\": [\"x\"], \"nodes\": [\n" + nodes + "\n]}");
    same_as_whole("{\"graphrun\": 2, \"nodes\": [\n" + nodes + "\n]}");
    same_as_whole("{\"graphrun\": 1.0, \"nodes\": [\n" + nodes + "\n]}");
    same_as_whole("{\"graphrun\": 1, \"nodes\": {\"a\": [\n" + nodes + "\n]}}");
    same_as_whole("[\n" + nodes + "\n]");
    // Nothing after the array's items: the array never closes.
    same_as_whole("{\"graphrun\": 1, \"nodes\": [\n" + nodes);
}
