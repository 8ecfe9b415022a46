// Input limits (issue "Hardening"): every limit gives a clear error, never a
// crash, a hang or a huge allocation. Limits that are named constants are
// reached with small inputs by passing lowered InputLimits to the front end.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <string>

#include "engine/frontend/json_reader.h"
#include "engine/api/load.h"
#include "engine/frontend/text_lexer.h"
#include "engine/frontend/text_parser.h"
#include "engine/check/validate.h"

using namespace graphrun;

namespace {

std::string messages(const Diagnostics& d) {
    std::string s;
    for (const Diagnostic& x : d.all())
        s += std::to_string(x.loc.line) + ":" + std::to_string(x.loc.col) + " " + d.pointer(x.loc) +
             " " + x.message + "\n";
    return s;
}

bool has_message(const Diagnostics& d, const std::string& part) {
    for (const Diagnostic& x : d.all())
        if (x.message.find(part) != std::string::npos) return true;
    return false;
}

std::string zeros_list(size_t n) {
    std::string s = "[";
    for (size_t i = 0; i < n; ++i) s += i ? ",0" : "0";
    return s + "]";
}

std::string json_graph(const std::string& nodes) {
    return "{\"graphrun\": 1, \"nodes\": [" + nodes + "]}";
}

}  // namespace

TEST_CASE("limits: the constants are the documented ones") {
    CHECK(kMaxNesting == 256);
    CHECK(kMaxRank == 32);
    CHECK(kMaxElements == int64_t{1} << 40);
    CHECK(kMaxFileBytes == uint64_t{1} << 30);
    CHECK(kMaxLiteralElements == size_t{1} << 22);
    CHECK(kMaxNodes == size_t{1} << 20);
    CHECK(kMaxJsonValues == size_t{1} << 24);
    // The default limits are the constants.
    const InputLimits defaults;
    CHECK(defaults.literal_elements == kMaxLiteralElements);
    CHECK(defaults.nodes == kMaxNodes);
    CHECK(defaults.json_values == kMaxJsonValues);
}

TEST_CASE("limits: nesting depth, text and JSON") {
    std::string deep_text =
        "x = " + std::string(100000, '(') + "1" + std::string(100000, ')') + "\n";
    auto t = load_graph_source("deep.graph", deep_text, false);
    INFO(messages(t->diag));
    CHECK(has_message(t->diag, "nesting too deep"));

    std::string deep_list =
        "x = " + std::string(100000, '[') + "1" + std::string(100000, ']') + "\n";
    auto l = load_graph_source("deep.graph", deep_list, false);
    CHECK(has_message(l->diag, "nesting too deep"));

    std::string deep_json =
        json_graph("{\"name\": \"x\", \"op\": \"const\", \"value\": " + std::string(100000, '[') +
                   "1" + std::string(100000, ']') + "}");
    auto j = load_graph_source("deep.json", deep_json, true);
    CHECK(has_message(j->diag, "nesting too deep"));
}

TEST_CASE("limits: tensor rank") {
    std::string shape = "[";
    for (int i = 0; i <= kMaxRank; ++i) shape += i ? ",1" : "1";
    shape += "]";
    auto t = load_graph_source("rank.graph", "x = zeros(" + shape + ")\n", false);
    INFO(messages(t->diag));
    CHECK_FALSE(t->ok());
    CHECK(has_message(t->diag, "at most " + std::to_string(kMaxRank)));

    // A list literal nested one level deeper than the rank limit.
    std::string lit = std::string(kMaxRank + 1, '[') + "1" + std::string(kMaxRank + 1, ']');
    auto l = load_graph_source("rank.graph", "x = " + lit + "\n", false);
    INFO(messages(l->diag));
    CHECK_FALSE(l->ok());
    CHECK(has_message(l->diag, std::to_string(kMaxRank)));

    auto r =
        load_graph_source("rank.graph", "x = reshape(zeros([1]), shape=" + shape + ")\n", false);
    INFO(messages(r->diag));
    CHECK_FALSE(r->ok());
}

TEST_CASE("limits: element counts and byte sizes that overflow") {
    const char* scripts[] = {
        // The product of the dimensions overflows int64.
        "x = zeros([4294967296, 4294967296, 4])\n",
        "x = ones([9223372036854775807, 2], dtype=f64)\n",
        // Over kMaxElements without overflowing.
        "x = zeros([2097152, 1048576])\n",
        "x = random_normal([1099511627776, 2])\n",
        "x = fill([1099511627777], 1)\n",
        "x = range(0, 1e300)\n",
        "x = range(0, 1e15, 0.5)\n",
        // A const filled from one value.
        "x = const(1, shape=[1099511627776])\n",
        // Broadcasting and reshape make the big shapes.
        "a = zeros([2097152, 1])\nb = zeros([1, 2097152])\nc = a + b\n",
        "a = zeros([1])\nb = reshape(a, shape=[4294967296, 4294967296])\n",
        "a = zeros([2097152, 1, 1, 1])\nb = zeros([1, 1048576, 1, 1])\nc = matmul(a, b)\n",
        // Dimensions that are negative or not integers.
        "x = zeros([-1])\n",
        "x = zeros([1e30])\n",
        "x = zeros([99999999999999999999999999])\n",
    };
    for (const char* s : scripts) {
        auto t = load_graph_source("big.graph", s, false);
        INFO(std::string(s));
        INFO(messages(t->diag));
        CHECK_FALSE(t->ok());
    }
    // The largest allowed tensor is accepted by validation (it is refused later, by
    // the static plan against the memory limit, before anything is allocated).
    auto ok = load_graph_source("big.graph", "x = zeros([1048576, 1048576], dtype=f64)\n", false);
    INFO(messages(ok->diag));
    CHECK(ok->ok());
    CHECK(ok->graph.nodes[0].shape == Shape{1048576, 1048576});
}

TEST_CASE("limits: literal elements per file, text") {
    const InputLimits lowered{100, kMaxNodes, kMaxJsonValues};
    // At the limit: fine, across several literals.
    auto at = load_graph_source(
        "lit.graph", "a = " + zeros_list(60) + "\nb = const(" + zeros_list(40) + ")\n", false, lowered);
    INFO(messages(at->diag));
    CHECK(at->ok());

    // One over, in one literal or spread over several; nested lists count too.
    for (std::string src :
         {"a = " + zeros_list(101) + "\n",
          "a = " + zeros_list(60) + "\nb = const(" + zeros_list(41) + ")\n",
          "a = const(" + zeros_list(60) + ", shape=[60])\nb = " + zeros_list(40) + "\n",
          "a = [" + zeros_list(49) + "," + zeros_list(50) + "]\n"}) {
        auto over = load_graph_source("lit.graph", src, false, lowered);
        INFO(src);
        INFO(messages(over->diag));
        CHECK_FALSE(over->ok());
        CHECK(has_message(
            over->diag,
            "literal too large: more than 100 elements in this file's literals; use fill()"));
        // Reading stopped there: one error, no cascade.
        CHECK(over->diag.error_count() == 1);
    }
}

TEST_CASE("limits: literal elements per file, JSON") {
    const InputLimits lowered{100, kMaxNodes, kMaxJsonValues};
    auto at = load_graph_source(
        "lit.json",
        json_graph("{\"name\": \"a\", \"op\": \"const\", \"value\": " + zeros_list(60) +
                   "}, {\"name\": \"b\", \"op\": \"const\", \"attrs\": {\"value\": " +
                   zeros_list(40) + "}}"),
        true, lowered);
    INFO(messages(at->diag));
    CHECK(at->ok());

    auto over = load_graph_source(
        "lit.json",
        json_graph("{\"name\": \"a\", \"op\": \"const\", \"value\": " + zeros_list(60) +
                   "}, {\"name\": \"b\", \"op\": \"zeros\", \"shape\": " + zeros_list(41) + "}"),
        true, lowered);
    INFO(messages(over->diag));
    CHECK_FALSE(over->ok());
    CHECK(has_message(over->diag, "literal too large: more than 100 elements"));
    CHECK(over->diag.error_count() == 1);
    CHECK(over->diag.pointer(over->diag.all()[0].loc) == "/nodes/1/shape/40");
}

TEST_CASE("limits: nodes per file, text") {
    const InputLimits lowered{kMaxLiteralElements, 50, kMaxJsonValues};
    std::string at = "x = zeros([1])\n";
    for (int i = 1; i < 50; ++i) at += "x = neg(x)\n";
    auto ok = load_graph_source("nodes.graph", at, false, lowered);
    INFO(messages(ok->diag));
    CHECK(ok->ok());
    CHECK(ok->graph.nodes.size() == 50);

    // One statement alone can make many nodes (every literal operand is one).
    std::string sum = "x = 1";
    for (int i = 0; i < 100; ++i) sum += " + 1";
    for (std::string src : {at + "x = neg(x)\n", sum + "\n"}) {
        auto over = load_graph_source("nodes.graph", src, false, lowered);
        INFO(messages(over->diag));
        CHECK_FALSE(over->ok());
        CHECK(
            has_message(over->diag, "graph too large: more than 50 nodes and loops in this file"));
        CHECK(over->graph.nodes.size() <= 52);
    }

    // Empty loops make no node but cost memory: they count too.
    std::string loops = "x = zeros([1])\n";
    for (int i = 0; i < 100; ++i) loops += "repeat 1 {}\n";
    auto rep = load_graph_source("loops.graph", loops, false, lowered);
    INFO(messages(rep->diag));
    CHECK_FALSE(rep->ok());
    CHECK(has_message(rep->diag, "graph too large: more than 50 nodes and loops in this file"));
    CHECK(rep->graph.repeats.size() <= 51);
}

TEST_CASE("limits: nodes per file, JSON") {
    const InputLimits lowered{kMaxLiteralElements, 50, kMaxJsonValues};
    std::string nodes = "{\"name\": \"x\", \"op\": \"zeros\", \"shape\": [1]}";
    for (int i = 1; i < 50; ++i)
        nodes += ", {\"name\": \"x\", \"op\": \"neg\", \"inputs\": [\"x\"]}";
    auto ok = load_graph_source("nodes.json", json_graph(nodes), true, lowered);
    INFO(messages(ok->diag));
    CHECK(ok->ok());

    auto over = load_graph_source(
        "nodes.json",
        json_graph(nodes + ", {\"name\": \"x\", \"op\": \"neg\", \"inputs\": [\"x\"]}"), true, lowered);
    INFO(messages(over->diag));
    CHECK_FALSE(over->ok());
    CHECK(has_message(over->diag, "graph too large: more than 50 nodes"));
    CHECK(over->diag.pointer(over->diag.all()[0].loc) == "/nodes/50");

    // Literal inputs are nodes too.
    std::string many = "{\"name\": \"c\", \"op\": \"concat\", \"inputs\": [";
    for (int i = 0; i < 100; ++i) many += i ? ", 1" : "1";
    many += "]}";
    auto lit = load_graph_source("nodes.json", json_graph(many), true, lowered);
    INFO(messages(lit->diag));
    CHECK_FALSE(lit->ok());
    CHECK(has_message(lit->diag, "graph too large"));
    CHECK(lit->graph.nodes.size() <= 51);

    std::string loops = "{\"name\": \"x\", \"op\": \"zeros\", \"shape\": [1]}";
    for (int i = 0; i < 100; ++i) loops += ", {\"repeat\": 1, \"body\": []}";
    auto rep = load_graph_source("loops.json", json_graph(loops), true, lowered);
    INFO(messages(rep->diag));
    CHECK_FALSE(rep->ok());
    CHECK(has_message(rep->diag, "graph too large: more than 50 nodes and loops"));
    CHECK(rep->graph.repeats.size() <= 50);
}

TEST_CASE("limits: values per JSON document bound the reader's memory") {
    const InputLimits lowered{kMaxLiteralElements, kMaxNodes, 1000};
    auto ok = load_graph_source(
        "v.json",
        json_graph("{\"name\": \"a\", \"op\": \"const\", \"value\": " + zeros_list(900) + "}"),
        true, lowered);
    INFO(messages(ok->diag));
    CHECK(ok->ok());

    // Values anywhere count, even where the graph reader would ignore them.
    std::string objects = "[{}";
    for (int i = 0; i < 2000; ++i) objects += ",{}";
    objects += "]";
    for (std::string src :
         {json_graph("{\"name\": \"a\", \"op\": \"const\", \"value\": " + zeros_list(1000) + "}"),
          "{\"graphrun\": 1, \"junk\": " + zeros_list(5000) + "}", objects}) {
        auto over = load_graph_source("v.json", src, true, lowered);
        INFO(messages(over->diag));
        CHECK_FALSE(over->ok());
        CHECK(over->diag.error_count() == 1);
        CHECK(has_message(over->diag, "JSON document too large: more than 1000 values"));
    }
    auto flat =
        load_graph_source("v.json", "{\"graphrun\": 1, \"junk\": " + zeros_list(5000) + "}", true, lowered);
    CHECK(has_message(flat->diag, "JSON document too large: more than 1000 values"));
}

TEST_CASE("limits: file size is checked before the file is read") {
    char path[] = "/tmp/graphrun_limits_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    // A sparse file one byte over the limit: refused without reading a GiB.
    REQUIRE(ftruncate(fd, static_cast<off_t>(kMaxFileBytes + 1)) == 0);
    close(fd);
    auto lg = load_graph(path);
    std::remove(path);
    CHECK(lg->read_failed);
    CHECK_FALSE(lg->ok());
    CHECK(lg->source.empty());
    CHECK(has_message(lg->diag, "larger than the limit of 1024 MiB"));
}

TEST_CASE("limits: validation stops after 50 errors of its own") {
    // Found while sizing the node limit: 200000 bad nodes took minutes to report.
    std::string src;
    for (int i = 0; i < 20000; ++i) src += "x = zeros([-1])\n";
    auto lg = load_graph_source("bad.graph", src, false);
    CHECK(lg->diag.error_count() == 51);
    CHECK(lg->diag.all().back().message == "too many errors (50); stopping here");
    CHECK(lg->diag.all().back().loc.line == 51);
    std::ostringstream out;
    lg->diag.print(out);
    CHECK(out.str().size() < 20000);
    size_t valid = 0;
    for (const Node& n : lg->graph.nodes) valid += n.valid ? 1 : 0;
    CHECK(valid == 0);
}
