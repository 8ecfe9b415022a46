// Preparing a text graph for the plan passes' tests (test_fuse.cpp,
// test_channels_last.cpp, test_prepack.cpp): loaded, placed on the CPU (or a
// stand-in GPU) and planned as `graphrun check` does, with the diagnostics
// shown on a failure; and running it once. And a script only placed and
// planned (test_session.cpp, test_offset_plan.cpp).
#pragma once
#include <doctest/doctest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "engine/api/load.h"
#include "engine/api/prepare.h"
#include "engine/api/run.h"
#include "engine/check/placement.h"
#include "engine/plan/plan.h"

namespace graphrun::test {

// No GPU: every node on the CPU.
inline const DeviceAvailability& no_gpu() {
    static const DeviceAvailability d;
    return d;
}

// `src` prepared with fusion on or off (off: the layout and pre-pack passes
// do not run either), fetching `fetch` where given; `prepack` off keeps every
// constant's values in its literal.
inline PrepareResult prepared(const std::string& src, bool fuse, std::vector<std::string> fetch = {},
                              const DeviceAvailability& devices = no_gpu(), bool prepack = true) {
    PrepareOptions o;
    o.devices = &devices;
    o.fuse = fuse;
    o.prepack = prepack;
    o.fetch = std::move(fetch);
    o.refuse_over_limit = false;
    std::ostringstream err;
    PrepareResult r = prepare(load_graph_source("t.graph", src, false), o, err);
    INFO(err.str());
    REQUIRE(r.ok());
    return r;
}

// Runs a prepared graph once under safepoint with `threads` CPU threads and
// the leak check: its outputs and statistics (the run must succeed).
inline RunResult run_once(const PrepareResult& p, int threads = 2) {
    RunFileOptions o;
    o.cleanup = CleanupStrategy::Safepoint;
    o.threads = threads;
    o.check_leaks = true;
    std::ostringstream err;
    RunResult r = run_prepared(p.prepared, InputValues{}, o, err);
    INFO(err.str());
    REQUIRE_FALSE(r.error);
    return r;
}

// A script loaded, placed on the CPU and planned as written (no fusion or
// other pass): the graph and its plan, for tests of the plan and sessions.
struct PlannedScript {
    std::unique_ptr<LoadedGraph> lg;
    Plan plan;
};

inline PlannedScript plan_script(const std::string& src, const std::string& name = "test.graph", bool json = false) {
    PlannedScript p;
    p.lg = load_graph_source(name, src, json);
    const std::string first = p.lg->diag.all().empty() ? "" : p.lg->diag.format(p.lg->diag.all()[0]);
    INFO(first);
    REQUIRE(p.lg->ok());
    std::ostringstream log;
    PlacementOptions po;
    po.device = "cpu";
    REQUIRE_FALSE(place(p.lg->graph, po, DeviceAvailability{}, log).has_value());
    std::vector<NodeId> outs;
    for (const Output& o : p.lg->graph.outputs) outs.push_back(o.id);
    auto plan = compile_plan(p.lg->graph, outs, nullptr);
    REQUIRE(plan);
    p.plan = std::move(*plan);
    return p;
}

}  // namespace graphrun::test
