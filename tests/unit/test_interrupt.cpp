// The process's stop request (engine/base/interrupt.h) stops each phase that
// polls it: the text and JSON readers, validation, loading, and planning.
#include <doctest/doctest.h>

#include <csignal>
#include <string>

#include "engine/api/load.h"
#include "engine/api/prepare.h"
#include "engine/base/interrupt.h"
#include "engine/check/validate.h"
#include "engine/frontend/json_reader.h"
#include "engine/frontend/text_parser.h"
#include "engine/plan/plan.h"

using namespace graphrun;

namespace {

// Sets the stop request for one test and clears it after.
struct StopRequested {
    explicit StopRequested(int sig) { g_interrupt_signal.store(sig); }
    ~StopRequested() { g_interrupt_signal.store(0); }
    StopRequested(const StopRequested&) = delete;
    StopRequested& operator=(const StopRequested&) = delete;
};

std::string chain_text(int n) {
    std::string s = "x0 = ones([2])\n";
    for (int i = 1; i < n; ++i) s += "x" + std::to_string(i) + " = relu(x" + std::to_string(i - 1) + ")\n";
    return s;
}

std::string chain_json(int n) {
    std::string s = R"({"graphrun": 1, "nodes": [{"name": "x0", "op": "ones", "attrs": {"shape": [2]}})";
    for (int i = 1; i < n; ++i)
        s += R"(, {"name": "x)" + std::to_string(i) + R"(", "op": "relu", "inputs": ["x)" + std::to_string(i - 1) +
             R"("]})";
    return s + "]}";
}

}  // namespace

TEST_CASE("interrupt: signal names") {
    CHECK(signal_name(SIGINT) == "SIGINT");
    CHECK(signal_name(SIGTERM) == "SIGTERM");
    CHECK(signal_name(1) == "signal 1");
}

TEST_CASE("interrupt: the text parser stops reading at once") {
    const std::string src = chain_text(2000);
    {
        Graph g;
        Diagnostics d;
        CHECK(parse_text(src, g, d));
        CHECK(g.nodes.size() == 2000);
    }
    StopRequested stop(SIGINT);
    Graph g;
    Diagnostics d;
    CHECK_FALSE(parse_text(src, g, d));
    CHECK(g.nodes.size() < 2);
    CHECK_FALSE(d.has_errors());  // the loader says why, once
}

TEST_CASE("interrupt: the JSON reader stops reading at once") {
    const std::string src = chain_json(2000);
    {
        Graph g;
        Diagnostics d;
        CHECK(parse_json(src, g, d));
        CHECK(g.nodes.size() == 2000);
    }
    StopRequested stop(SIGTERM);
    Graph g;
    Diagnostics d;
    CHECK_FALSE(parse_json(src, g, d));
    CHECK(g.nodes.empty());
    CHECK_FALSE(d.has_errors());  // the loader says why, once
}

TEST_CASE("interrupt: validation stops at once, adding no error") {
    // 10000 nodes: validation polls the flag every 4096, the first time at node 0.
    Graph g;
    Diagnostics d;
    REQUIRE(parse_text(chain_text(10000), g, d));
    {
        Diagnostics vd;
        CHECK(validate(g, vd));
        CHECK(g.nodes.back().valid);
    }
    StopRequested stop(SIGTERM);
    Diagnostics vd;
    CHECK_FALSE(validate(g, vd));
    CHECK_FALSE(vd.has_errors());  // the loader says why, once
    size_t valid = 0;
    for (const Node& n : g.nodes) valid += n.valid ? 1 : 0;
    CHECK(valid == 0);
}

TEST_CASE("interrupt: loading says so once, as an interrupted error") {
    StopRequested stop(SIGINT);
    auto lg = load_graph_source("a.graph", chain_text(100), false);
    std::string all;
    for (const Diagnostic& d : lg->diag.all()) all += d.message + "\n";
    INFO(all);
    REQUIRE(lg->diag.all().size() == 1);
    CHECK(lg->diag.all()[0].message == "interrupted by SIGINT while loading; nothing ran");
    const std::optional<Error> e = load_error(*lg);
    REQUIRE(e);
    CHECK(e->kind == ErrorKind::Interrupted);
    CHECK(e->signal == SIGINT);
}

TEST_CASE("interrupt: planning stops and says so") {
    auto lg = load_graph_source("a.graph", chain_text(100) + "output x99\n", false);
    REQUIRE(lg->diag.all().empty());
    const std::vector<NodeId> outputs{lg->graph.outputs.at(0).id};
    std::string error;
    CHECK(compile_plan(lg->graph, outputs, &error));
    StopRequested stop(SIGTERM);
    CHECK_FALSE(compile_plan(lg->graph, outputs, &error));
    CHECK(error == "interrupted by SIGTERM while planning");
}
