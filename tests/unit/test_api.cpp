// The engine API (engine/api): prepare() and run_file() return one typed
// error whose kind matches the failure; a run returns its outputs and
// statistics, with nothing left in use after teardown.
#include <doctest/doctest.h>

#include <atomic>
#include <csignal>
#include <sstream>
#include <string>

#include "engine/api/convert.h"
#include "engine/api/prepare.h"
#include "engine/api/run.h"
#include "engine/api/units.h"

using namespace graphrun;

namespace {

const std::string kExamples = std::string(GRAPHRUN_SOURCE_DIR) + "/scripts/examples/";

PrepareOptions cpu_options() {
    static const DeviceAvailability no_gpu;
    PrepareOptions o;
    o.placement.device = "cpu";
    o.devices = &no_gpu;
    return o;
}

PrepareResult prepare_source(const std::string& src, const PrepareOptions& opts, std::ostream& err) {
    return prepare(load_graph_source("test.graph", src, false), opts, err);
}

bool released(const MemoryStats& s) {
    return s.in_use == 0 && s.pending == 0 && s.reserved == 0 && s.live == 0 && s.allocs == s.frees;
}

}  // namespace

TEST_CASE("prepare: a good graph is loaded, placed and planned") {
    std::ostringstream err;
    PrepareResult r = prepare(kExamples + "add.graph", cpu_options(), err);
    CHECK(r.ok());
    CHECK(r.file == kExamples + "add.graph");
    REQUIRE(r.prepared.plan);
    CHECK(r.prepared.plan->static_peak.count("cpu") == 1);
    CHECK(r.prepared.cpu_memory_limit > 0);  // the default limit the peak was checked against
    CHECK(r.prepared.graph().outputs.size() == 1);
    CHECK(err.str().empty());
}

TEST_CASE("prepare: an unknown --fetch name is a usage error") {
    PrepareOptions o = cpu_options();
    o.fetch = {"nosuch"};
    std::ostringstream err;
    PrepareResult r = prepare(kExamples + "add.graph", o, err);
    REQUIRE(r.error);
    CHECK(r.error->kind == ErrorKind::Usage);
    CHECK(r.error->message.rfind("--fetch=nosuch: no top-level name or node 'nosuch'", 0) == 0);
    CHECK(err.str() == "graphrun: error: " + r.error->message + "\n");
    CHECK_FALSE(r.prepared.plan);
}

TEST_CASE("prepare: a known --fetch name replaces the outputs") {
    PrepareOptions o = cpu_options();
    o.fetch = {"a", "b"};
    std::ostringstream err;
    PrepareResult r = prepare(kExamples + "add.graph", o, err);
    REQUIRE(r.ok());
    REQUIRE(r.prepared.graph().outputs.size() == 2);
    CHECK(r.prepared.graph().outputs[0].name == "a");
}

TEST_CASE("prepare: an invalid graph is InvalidGraph with the first diagnostic's first line") {
    std::ostringstream err;
    PrepareResult r = prepare_source("a = [1, 2]\nb = a +\noutput b\n", cpu_options(), err);
    REQUIRE(r.error);
    CHECK(r.error->kind == ErrorKind::InvalidGraph);
    CHECK(r.error->message.rfind("test.graph:2:", 0) == 0);
    CHECK(r.error->message.find('\n') == std::string::npos);
    CHECK(err.str().rfind(r.error->message + "\n", 0) == 0);  // printed first, with the source line after it
}

TEST_CASE("prepare: an unreadable file is a runtime error") {
    std::ostringstream err;
    PrepareResult r = prepare("/nonexistent/graph.graph", cpu_options(), err);
    REQUIRE(r.error);
    CHECK(r.error->kind == ErrorKind::Runtime);
    CHECK(r.error->message.find("cannot read the file") != std::string::npos);
    CHECK(r.file == "/nonexistent/graph.graph");
}

TEST_CASE("prepare: a device that cannot be used without soft placement is a runtime error") {
    PrepareOptions o = cpu_options();
    o.placement.device = "gpu";
    o.placement.soft = false;
    std::ostringstream err;
    PrepareResult r = prepare(kExamples + "add.graph", o, err);
    REQUIRE(r.error);
    CHECK(r.error->kind == ErrorKind::Runtime);
    CHECK(r.error->message.find("cannot run on gpu:0") != std::string::npos);
}

TEST_CASE("prepare: a static peak over the memory limit is refused as a runtime error") {
    PrepareOptions o = cpu_options();
    o.memory_limit = 1024;
    const std::string src = "a = zeros([1024], dtype=f32)\nb = a + a\noutput b\n";
    std::ostringstream err;
    PrepareResult r = prepare_source(src, o, err);
    REQUIRE(r.error);
    CHECK(r.error->kind == ErrorKind::Runtime);
    CHECK(r.error->message.find("on cpu at its peak, more than the memory limit of 1024 bytes (1.00 KiB); "
                                "refused before running") != std::string::npos);
    CHECK(err.str() == "test.graph: error: " + r.error->message + "\n");
    CHECK(r.prepared.plan);  // planned, then refused

    SUBCASE("not refused when the caller only lists the plan (check)") {
        o.refuse_over_limit = false;
        std::ostringstream err2;
        PrepareResult ok = prepare_source(src, o, err2);
        CHECK(ok.ok());
        CHECK(ok.prepared.cpu_memory_limit == 0);
    }
}

TEST_CASE("load_and_place, then plan_prepared: the two halves of prepare") {
    std::ostringstream err;
    PrepareOptions o = cpu_options();
    PrepareResult r = load_and_place(kExamples + "mlp.graph", o, err);
    REQUIRE(r.ok());
    CHECK_FALSE(r.prepared.plan);
    for (const Node& n : r.prepared.graph().nodes)
        if (n.op != OpKind::LoopParam) CHECK(n.placed == "cpu");
    CHECK_FALSE(plan_prepared(r.prepared, o, err));
    CHECK(r.prepared.plan);
}

TEST_CASE("run_file: outputs and statistics, nothing in use after teardown") {
    for (CleanupStrategy cleanup : {CleanupStrategy::Background, CleanupStrategy::Safepoint, CleanupStrategy::Close}) {
        CAPTURE(cleanup_name(cleanup));
        RunFileOptions o;
        o.prepare = cpu_options();
        o.cleanup = cleanup;
        o.iterations = 2;
        o.threads = 1;
        o.check_leaks = true;
        std::ostringstream err;
        RunResult r = run_file(kExamples + "add.graph", o, err);
        CHECK_FALSE(r.error);
        CHECK(err.str().empty());
        CHECK(r.ran);
        REQUIRE(r.outputs.size() == 1);
        CHECK(r.outputs[0].name == "c");
        CHECK(r.outputs[0].device == "cpu");
        REQUIRE(r.outputs[0].data.size() == 3 * sizeof(float));
        const float* c = reinterpret_cast<const float*>(r.outputs[0].data.data());
        CHECK(c[0] == 11.0f);
        CHECK(c[2] == 33.0f);
        REQUIRE(r.before.count("cpu") == 1);
        REQUIRE(r.after.count("cpu") == 1);
        CHECK(r.before.at("cpu").peak > 0);
        CHECK(r.after.at("cpu").in_use == 0);
        CHECK(released(r.after.at("cpu")));
        CHECK(leak_report(r.after).empty());
        CHECK(r.rss_session > 0);
        CHECK(r.gpu_system.empty());
    }
}

TEST_CASE("run_file: a failed prepare opens no session") {
    RunFileOptions o;
    o.prepare = cpu_options();
    o.prepare.fetch = {"nosuch"};
    std::ostringstream err;
    RunResult r = run_file(kExamples + "add.graph", o, err);
    REQUIRE(r.error);
    CHECK(r.error->kind == ErrorKind::Usage);
    CHECK_FALSE(r.ran);
    CHECK(r.before.empty());
    CHECK(r.file == kExamples + "add.graph");
}

TEST_CASE("run_prepared: an error while running is a runtime error, after teardown") {
    RunFileOptions o;
    o.prepare = cpu_options();
    o.threads = 1;
    std::ostringstream err;
    PrepareResult p =
        prepare_source("a = const([1, 2], dtype=i64)\nb = a / const([1, 0], dtype=i64)\noutput b\n", o.prepare, err);
    REQUIRE(p.ok());
    RunResult r = run_prepared(p.prepared, {}, o, err);
    REQUIRE(r.error);
    CHECK(r.error->kind == ErrorKind::Runtime);
    CHECK(r.error->message == "node 'b' (div) on cpu: integer division by zero");
    CHECK(err.str().rfind("test.graph:2:7: error: " + r.error->message + "\n", 0) == 0);
    CHECK(r.ran);
    CHECK(released(r.after.at("cpu")));
}

TEST_CASE("run_prepared: a pending signal stops the run as Interrupted") {
    std::atomic<int> interrupt{SIGINT};
    RunFileOptions o;
    o.prepare = cpu_options();
    o.threads = 1;
    o.interrupt = &interrupt;
    std::ostringstream err;
    RunResult r = run_file(kExamples + "mlp.graph", o, err);
    REQUIRE(r.error);
    CHECK(r.error->kind == ErrorKind::Interrupted);
    CHECK(r.error->signal == SIGINT);
    CHECK(err.str().find("; the session was torn down\n") != std::string::npos);
    CHECK(r.outputs.empty());
    CHECK(released(r.after.at("cpu")));
}

TEST_CASE("leak_report names what an allocator still holds") {
    MemoryStats s;
    s.in_use = 64;
    s.live = 1;
    s.allocs = 2;
    s.frees = 1;
    CHECK(leak_report({{"cpu", MemoryStats{}}}).empty());
    CHECK(leak_report({{"cpu", s}}) ==
          "cpu: in_use 64, pending 0, reserved 0, live 1, allocs 2 vs frees 1; ");
}

TEST_CASE("human_bytes and write_graph") {
    CHECK(human_bytes(1216) == "1.19 KiB");
    CHECK(human_bytes(1023) == "1023 B");
    CHECK(human_bytes(uint64_t{3} << 20) == "3.00 MiB");
    auto lg = load_graph(kExamples + "add.graph");
    REQUIRE(lg->ok());
    std::string json = write_graph(lg->graph, GraphForm::Json);
    auto back = load_graph_source("add.json", json, true);
    CHECK(back->ok());
    CHECK(write_graph(back->graph, GraphForm::Text) == write_graph(lg->graph, GraphForm::Text));
}
