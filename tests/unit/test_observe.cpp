// The RunObserver seam (engine/runtime/run_observer.h) and what engine/api
// builds on it: a session calls its observer at every pass end and, only when
// asked, at every node; the timeline's even sample; the trace's cap.
#include <doctest/doctest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "engine/api/load.h"
#include "engine/api/observe.h"
#include "engine/api/prepare.h"
#include "engine/api/run.h"
#include "engine/api/trace.h"
#include "engine/runtime/session.h"

using namespace graphrun;

namespace {

// x: 2 outer passes of (3 inner passes of one mul, then a sum and its reduce).
const std::string kNested =
    "x = ones([3])\ns = zeros([])\nrepeat 2 {\n    repeat 3 { x = x * 2 }\n    s = s + reduce_sum(x)\n}\noutput x, s\n";

PrepareResult prepared(const std::string& src) {
    static const DeviceAvailability no_gpu;
    PrepareOptions o;
    o.placement.device = "cpu";
    o.devices = &no_gpu;
    std::ostringstream err;
    PrepareResult pr = prepare(load_graph_source("test.graph", src, false), o, err);
    INFO(err.str());
    REQUIRE(pr.ok());
    return pr;
}

struct Counting final : RunObserver {
    bool nodes = false;
    uint64_t starts = 0, node_calls = 0, pass_ends = 0, iteration_ends = 0, batches = 0;
    std::vector<std::vector<LoopPass>> positions;
    bool wants_nodes() const override { return nodes; }
    void on_start(const std::vector<ObservedDevice>& d) override {
        ++starts;
        CHECK(d.size() == 1);
        CHECK(d[0].name == "cpu");
    }
    void on_node(const NodeRun& n) override {
        ++node_calls;
        CHECK(n.end >= n.start);
        CHECK(n.device == "cpu");
    }
    void on_pass_end(const PassEnd& p) override {
        ++pass_ends;
        if (p.loops.empty()) ++iteration_ends;
        positions.push_back(p.loops);
    }
    void on_release_batch(RunClock::time_point, RunClock::time_point, size_t, uint64_t) override { ++batches; }
};

void run_with(PrepareResult& pr, RunObserver& o, CleanupStrategy cleanup, int64_t iterations) {
    SessionOptions so;
    so.cleanup = cleanup;
    so.threads = 1;
    so.cpu_memory_limit = uint64_t{1} << 30;
    so.observer = &o;
    Session s(pr.prepared.graph(), *pr.prepared.plan, so);
    std::vector<HostTensor> out;
    CHECK_FALSE(s.run(iterations, pr.prepared.graph().outputs, out));
    s.close();
}

}  // namespace

TEST_CASE("observer: pass ends everywhere, nodes only when asked, the reclaimer's batches under background") {
    PrepareResult pr = prepared(kNested);
    const Graph& g = pr.prepared.graph();
    CHECK(expected_pass_ends(g, 3) == 3 * (1 + 2 + 6));
    const uint64_t nodes = expected_node_runs(g, *pr.prepared.plan, 3);
    CHECK(nodes > 3 * 6);
    for (CleanupStrategy c : {CleanupStrategy::Background, CleanupStrategy::Safepoint, CleanupStrategy::Close}) {
        CAPTURE(cleanup_name(c));
        Counting quiet;
        run_with(pr, quiet, c, 3);
        CHECK(quiet.starts == 1);
        CHECK(quiet.node_calls == 0);  // did not ask
        CHECK(quiet.pass_ends == expected_pass_ends(g, 3));
        CHECK(quiet.iteration_ends == 3);
        // Inner passes name both repeats, outermost first, with their passes from 0.
        REQUIRE(quiet.positions.size() >= 3);
        REQUIRE(quiet.positions[2].size() == 2);
        CHECK(quiet.positions[2][0].repeat == 0);
        CHECK(quiet.positions[2][0].pass == 0);
        CHECK(quiet.positions[2][0].passes == 2);
        CHECK(quiet.positions[2][1].pass == 2);
        CHECK(quiet.positions[2][1].passes == 3);
        REQUIRE(quiet.positions[3].size() == 1);  // the outer pass's end
        Counting all;
        all.nodes = true;
        run_with(pr, all, c, 3);
        CHECK(all.node_calls == nodes);
        if (c != CleanupStrategy::Background) CHECK(all.batches == 0);
    }
}

TEST_CASE("expected counts saturate rather than overflow") {
    PrepareResult pr = prepared("x = ones([3])\nrepeat 1000000000 { repeat 1000000000 { x = x * 2 } }\n");
    CHECK(expected_pass_ends(pr.prepared.graph(), int64_t{1} << 40) == UINT64_MAX / 2);
    CHECK(expected_node_runs(pr.prepared.graph(), *pr.prepared.plan, int64_t{1} << 40) == UINT64_MAX / 2);
}

TEST_CASE("run_prepared: a timeline of at most the rows asked, ending at the run's end") {
    PrepareResult pr = prepared(kNested);
    RunFileOptions o;
    o.threads = 1;
    o.cleanup = CleanupStrategy::Close;
    o.iterations = 4;  // 36 pass ends
    o.timeline_rows = 5;
    std::ostringstream err;
    RunResult r = run_prepared(pr.prepared, {}, o, err);
    REQUIRE_FALSE(r.error);
    CHECK(r.timeline.pass_ends == 36);
    CHECK(r.timeline.every == 8);  // ceil(36 / 5)
    REQUIRE(r.timeline.rows.size() == 5);  // pass ends 8, 16, 24, 32, then the end
    CHECK(r.timeline.rows.back().end == "run end");
    CHECK(r.timeline.rows.back().iteration == 4);
    CHECK(r.timeline.rows.back().memory.at("cpu").in_use == r.before.at("cpu").in_use);
    for (size_t i = 1; i < r.timeline.rows.size(); ++i)
        CHECK(r.timeline.rows[i].memory.at("cpu").in_use > r.timeline.rows[i - 1].memory.at("cpu").in_use);
}

TEST_CASE("trace: capped, says so, keeps the last counters, and is valid JSON") {
    PrepareResult pr = prepared(kNested);
    TraceRecorder trace(40);
    RunFileOptions o;
    o.threads = 1;
    o.cleanup = CleanupStrategy::Safepoint;
    o.iterations = 5;
    o.trace = &trace;
    std::ostringstream err;
    RunResult r = run_prepared(pr.prepared, {}, o, err);
    REQUIRE_FALSE(r.error);
    CHECK(trace.dropped_events() > 0);
    std::ostringstream out;
    trace.write(out);
    nlohmann::json doc = nlohmann::json::parse(out.str());
    CHECK(doc["otherData"]["truncated"] == true);
    CHECK(doc["otherData"]["dropped_events"] == trace.dropped_events());
    const auto& ev = doc["traceEvents"];
    CHECK(ev.size() <= 40 + 1 + 3);  // the cap, the instant that marks it, the last counters
    uint64_t last_in_use = UINT64_MAX;
    for (const auto& e : ev)
        if (e["ph"] == "C" && e["name"] == "in_use (cpu)") last_in_use = e["args"]["bytes"];
    CHECK(last_in_use == r.before.at("cpu").in_use);
}

TEST_CASE("trace: background's reclaimer records its batches while the executor records nodes") {
    PrepareResult pr = prepared("x = zeros([4096])\nrepeat 300 { x = x + ones([4096]) }\noutput x\n");
    TraceRecorder trace;
    RunFileOptions o;
    o.threads = 1;
    o.cleanup = CleanupStrategy::Background;
    o.iterations = 3;
    o.trace = &trace;
    std::ostringstream err;
    RunResult r = run_prepared(pr.prepared, {}, o, err);
    REQUIRE_FALSE(r.error);
    CHECK(trace.dropped_events() == 0);
    std::ostringstream out;
    trace.write(out);
    nlohmann::json doc = nlohmann::json::parse(out.str());
    size_t slices = 0, batches = 0;
    for (const auto& e : doc["traceEvents"]) {
        if (e["ph"] != "X") continue;
        if (e["tid"] == 1) ++slices;
        else ++batches;
    }
    CHECK(slices == 3 * (1 + 2 * 300));
    CHECK(batches > 0);
}
