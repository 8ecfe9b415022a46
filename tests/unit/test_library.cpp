// The library API (include/graphrun/graphrun.h), through the facade only: no
// engine header here, as a program built on the installed package sees it.
#include <doctest/doctest.h>

#include <graphrun/graphrun.h>

#include <string>
#include <thread>
#include <vector>

namespace {

graphrun::CompileOptions on_cpu() {
    graphrun::CompileOptions o;
    o.device = "cpu";
    return o;
}

graphrun::Error compile_error(const std::string& src, const std::string& name = "bad.graph") {
    try {
        graphrun::compile_source(src, on_cpu(), name);
    } catch (const graphrun::Error& e) {
        return e;
    }
    FAIL("compiled without an error: " << src);
    return graphrun::Error(graphrun::ErrorKind::Runtime, "unreachable");
}

graphrun::Error run_error(graphrun::Session& s, const graphrun::Executable& exe, const graphrun::Feeds& feeds,
                          const std::vector<std::string>& fetch = {}) {
    try {
        s.run(exe, feeds, fetch);
    } catch (const graphrun::Error& e) {
        return e;
    }
    FAIL("ran without an error");
    return graphrun::Error(graphrun::ErrorKind::Runtime, "unreachable");
}

bool nothing_held(const std::map<std::string, graphrun::MemoryStats>& m) {
    for (const auto& [dev, s] : m)
        if (s.in_use || s.pending || s.reserved || s.live || s.workspace || s.allocs != s.frees) return false;
    return true;
}

// Designated initializers would do, but GCC 12's -Wmissing-field-initializers
// warns on every member left out after the last one named.
graphrun::SessionOptions options(graphrun::Cleanup cleanup, int threads, uint64_t memory_limit = 0) {
    graphrun::SessionOptions o;
    o.cleanup = cleanup;
    o.threads = threads;
    o.memory_limit = memory_limit;
    o.device = "cpu";
    return o;
}

const char* const kAffine = "x = input([2, 2])\ny = x * 2 + 1\ns = reduce_sum(y)\noutput y, s\n";

}  // namespace

TEST_CASE("library: a compile error comes back as data, with every diagnostic's line and column") {
    graphrun::Error e = compile_error("x = [1, 2]\ny = x + nosuch\nz = relu(x, bogus=1)\noutput y\n");
    CHECK(e.kind() == graphrun::ErrorKind::InvalidGraph);
    CHECK(std::string(graphrun::error_kind_name(e.kind())) == "invalid_graph");
    REQUIRE(e.diagnostics().size() >= 2);  // both errors, not only the first
    const graphrun::Diagnostic& d = e.diagnostics()[0];
    CHECK(d.severity == graphrun::Severity::Error);
    CHECK(d.file == "bad.graph");
    CHECK(d.line == 2);
    CHECK(d.column == 9);
    CHECK(d.message.find("nosuch") != std::string::npos);
    CHECK(d.formatted.rfind("bad.graph:2:9: error: ", 0) == 0);
    CHECK(d.formatted.find("^") != std::string::npos);  // the source line and its caret
    CHECK(e.diagnostics()[1].line == 3);
    CHECK(std::string(e.what()).find("nosuch") != std::string::npos);
}

TEST_CASE("library: a JSON graph's error carries its JSON pointer") {
    graphrun::Error e = compile_error(
        R"({"graphrun": 1, "nodes": [{"name": "a", "op": "const", "attrs": {"value": [1, 2]}},
                      {"name": "b", "op": "add", "inputs": ["a", "nosuch"]}], "outputs": ["b"]})",
        "bad.json");
    CHECK(e.kind() == graphrun::ErrorKind::InvalidGraph);
    REQUIRE_FALSE(e.diagnostics().empty());
    CHECK(e.diagnostics()[0].json_pointer == "/nodes/1/inputs/1");
    CHECK(e.diagnostics()[0].line == 0);
}

TEST_CASE("library: an unknown fetch name at compile time is a usage error") {
    graphrun::CompileOptions o = on_cpu();
    o.fetch = {"nosuch"};
    try {
        graphrun::compile_source(kAffine, o);
        FAIL("compiled");
    } catch (const graphrun::Error& e) {
        CHECK(e.kind() == graphrun::ErrorKind::Usage);
        CHECK(std::string(e.what()).find("nosuch") != std::string::npos);
    }
}

TEST_CASE("library: two runs in one session with different feeds give each its values") {
    graphrun::Session session(options(graphrun::Cleanup::Safepoint, 1));
    graphrun::Executable exe = session.compile_source(kAffine);
    REQUIRE(exe.inputs().size() == 1);
    CHECK(exe.inputs()[0].name == "x");
    CHECK(exe.inputs()[0].shape == std::vector<int64_t>{2, 2});
    CHECK(exe.inputs()[0].device == "cpu");
    REQUIRE(exe.outputs().size() == 2);
    CHECK(exe.outputs()[1].name == "s");
    CHECK(exe.static_peak().count("cpu") == 1);

    graphrun::RunResult a = session.run(exe, {{"x", graphrun::Array::of<float>({2, 2}, {1, 2, 3, 4})}});
    graphrun::RunResult b = session.run(exe, {{"x", graphrun::Array::of<float>({2, 2}, {-1, 0, 0.5f, 10})}});
    CHECK(a.output("y").value.values<float>() == std::vector<float>{3, 5, 7, 9});
    CHECK(a.output("s").value.values<float>() == std::vector<float>{24});
    CHECK(a.output("s").value.shape.empty());
    CHECK(b.output("y").value.values<float>() == std::vector<float>{-1, 1, 2, 21});
    CHECK(b.output("s").value.values<float>() == std::vector<float>{23});
    CHECK(b.output("y").device == "cpu");
    CHECK(session.runs() == 2);
    // One session over both runs: its counters go on, the same graph
    // allocating as much again, and between runs it holds no tensor.
    REQUIRE(a.stats.count("cpu") == 1);
    CHECK(a.stats.at("cpu").peak > 0);
    CHECK(a.stats.at("cpu").allocs > 0);
    CHECK(a.stats.at("cpu").in_use > 0);  // the outputs, held until fetched
    CHECK(b.stats.at("cpu").allocs == 2 * a.stats.at("cpu").allocs);
    CHECK(b.stats.at("cpu").peak == a.stats.at("cpu").peak);
    CHECK(session.stats().at("cpu").in_use == 0);
    CHECK(session.stats().at("cpu").live == 0);
    CHECK(session.stats().at("cpu").allocs == session.stats().at("cpu").frees);
    // A fetch picks outputs, in its order.
    graphrun::RunResult c = session.run(exe, {{"x", graphrun::Array::of<float>({2, 2}, {0, 0, 0, 0})}}, {"s"});
    REQUIRE(c.outputs.size() == 1);
    CHECK(c.outputs[0].name == "s");
    CHECK(c.outputs[0].value.values<float>() == std::vector<float>{4});
}

TEST_CASE("library: the session stays open between runs; close tears it down") {
    graphrun::Session session(options(graphrun::Cleanup::Close, 1));
    CHECK(session.stats().empty());  // nothing opened yet
    graphrun::Executable exe = session.compile_source("a = ones([64, 64])\nb = a @ a\nrepeat 3 { b = b + a }\n");
    graphrun::RunResult r = session.run(exe);
    // close holds every value until the session closes: the next run adds its own.
    const uint64_t one_run = r.stats.at("cpu").in_use;
    CHECK(one_run >= 5 * 64 * 64 * 4);
    CHECK(session.stats().at("cpu").in_use == one_run);
    graphrun::RunResult r2 = session.run(exe);
    CHECK(r2.stats.at("cpu").in_use == 2 * one_run);
    CHECK(r2.output("b").value.values<float>() == r.output("b").value.values<float>());
    graphrun::Teardown t = session.close();
    CHECK(t.before.at("cpu").in_use == 2 * one_run);
    CHECK(t.after.at("cpu").peak == 2 * one_run);  // the peaks are the session's
    CHECK(nothing_held(t.after));
    CHECK(session.stats() == t.after);
    graphrun::Error e = run_error(session, exe, {});
    CHECK(e.kind() == graphrun::ErrorKind::Usage);
    CHECK(nothing_held(session.close().after));  // again: nothing more
}

TEST_CASE("library: an error leaves the session open, and the next run starts clean") {
    graphrun::Session session(options(graphrun::Cleanup::Safepoint, 1));
    graphrun::Executable div = session.compile_source("x = input([2], dtype=i64)\ny = const([6, 8], dtype=i64) / x\n");
    graphrun::Error e = run_error(session, div, {{"x", graphrun::Array::of<int64_t>({2}, {2, 0})}});
    CHECK(e.kind() == graphrun::ErrorKind::Runtime);
    CHECK(std::string(e.what()).find("integer division by zero") != std::string::npos);
    graphrun::RunResult ok = session.run(div, {{"x", graphrun::Array::of<int64_t>({2}, {2, 4})}});
    CHECK(ok.output("y").value.values<int64_t>() == std::vector<int64_t>{3, 2});
    // Another executable replaces the first in the same session.
    graphrun::Executable other = session.compile_source("z = ones([3]) * 2\n");
    CHECK(session.run(other).output("z").value.values<float>() == std::vector<float>{2, 2, 2});
    CHECK(session.run(div, {{"x", graphrun::Array::of<int64_t>({2}, {3, 8})}}).output("y").value.values<int64_t>() ==
          std::vector<int64_t>{2, 1});
    CHECK(session.stats().at("cpu").in_use == 0);
    CHECK(session.runs() == 4);
    CHECK(nothing_held(session.close().after));
}

TEST_CASE("library: one Executable runs in two sessions at once, each with its own feeds") {
    // Feeds never enter the Executable: two threads run it side by side.
    graphrun::Executable exe = graphrun::compile_source(kAffine, on_cpu());
    auto worker = [&](float base, std::vector<float>* sums) {
        graphrun::Session s(options(graphrun::Cleanup::Background, 1));
        for (int i = 0; i < 50; ++i) {
            const float v = base + static_cast<float>(i);
            graphrun::RunResult r = s.run(exe, {{"x", graphrun::Array::of<float>({2, 2}, {v, v, v, v})}});
            sums->push_back(r.output("s").value.values<float>()[0]);
        }
        s.close();
    };
    std::vector<float> a, b;
    std::thread ta(worker, 0.0f, &a), tb(worker, 1000.0f, &b);
    ta.join();
    tb.join();
    REQUIRE(a.size() == 50);
    REQUIRE(b.size() == 50);
    for (int i = 0; i < 50; ++i) {
        // y = 2x + 1 elementwise; s = sum(y) = 4 (2v + 1)
        CHECK(a[static_cast<size_t>(i)] == 4 * (2 * static_cast<float>(i) + 1));
        CHECK(b[static_cast<size_t>(i)] == 4 * (2 * (1000.0f + static_cast<float>(i)) + 1));
    }
}

TEST_CASE("library: feeds are checked, and a run keeps none of them for the next") {
    graphrun::Session session(options(graphrun::Cleanup::Background, 1));
    graphrun::Executable exe = session.compile_source(kAffine);
    graphrun::Error missing = run_error(session, exe, {});
    CHECK(missing.kind() == graphrun::ErrorKind::Usage);
    CHECK(std::string(missing.what()) == "input 'x' (f32[2,2]) has no feed");
    graphrun::Error unknown = run_error(session, exe, {{"xx", graphrun::Array::of<float>({2, 2}, {1, 2, 3, 4})}});
    CHECK(std::string(unknown.what()) == "feed 'xx': the graph has no input 'xx'; did you mean 'x'?");
    graphrun::Error shape = run_error(session, exe, {{"x", graphrun::Array::of<float>({4}, {1, 2, 3, 4})}});
    CHECK(std::string(shape.what()) == "feed 'x' is f32[4], but input 'x' is f32[2,2]");
    graphrun::Error dtype = run_error(session, exe, {{"x", graphrun::Array::of<double>({2, 2}, {1, 2, 3, 4})}});
    CHECK(std::string(dtype.what()) == "feed 'x' is f64[2,2], but input 'x' is f32[2,2]");
    graphrun::Error fetch = run_error(session, exe, {{"x", graphrun::Array::of<float>({2, 2}, {1, 2, 3, 4})}}, {"q"});
    CHECK(fetch.kind() == graphrun::ErrorKind::Usage);
    // A good run, then one without feeds: the first run's values did not stay in the Executable.
    session.run(exe, {{"x", graphrun::Array::of<float>({2, 2}, {1, 2, 3, 4})}});
    CHECK(std::string(run_error(session, exe, {}).what()) == "input 'x' (f32[2,2]) has no feed");
}

TEST_CASE("library: one Executable runs in two sessions with their own strategies and limits") {
    graphrun::Executable exe = graphrun::compile_source("a = ones([256, 256])\nb = a + 1\nc = b * b\noutput c\n", on_cpu());
    graphrun::Session close(options(graphrun::Cleanup::Close, 1));
    graphrun::Session safepoint(options(graphrun::Cleanup::Safepoint, 2));
    graphrun::RunResult rc = close.run(exe);
    graphrun::RunResult rs = safepoint.run(exe);
    CHECK(rc.output("c").value.values<float>() == rs.output("c").value.values<float>());
    CHECK(rc.output("c").value.values<float>()[0] == 4.0f);
    // close keeps a and b until teardown; safepoint gives them back as it goes.
    CHECK(rc.stats.at("cpu").in_use > rs.stats.at("cpu").in_use);
    // A session whose memory limit is under the plan's static peak refuses before running.
    graphrun::Session small(options(graphrun::Cleanup::Background, 1, 1024));
    graphrun::Error e = run_error(small, exe, {});
    CHECK(e.kind() == graphrun::ErrorKind::Runtime);
    CHECK(std::string(e.what()).find("more than the memory limit of 1024 bytes") != std::string::npos);
}

TEST_CASE("library: arrays convert to and from typed values") {
    graphrun::Array a = graphrun::Array::of<int64_t>({3}, {1, -2, 3});
    CHECK(a.dtype == graphrun::DType::I64);
    CHECK(a.bytes.size() == 24);
    CHECK(a.values<int64_t>() == std::vector<int64_t>{1, -2, 3});
    CHECK_THROWS_AS(a.values<float>(), std::invalid_argument);
    CHECK_THROWS_AS(graphrun::Array::of<float>({2, 2}, {1, 2, 3}), std::invalid_argument);
    graphrun::Array b = graphrun::Array::of<bool>({2}, {true, false});
    CHECK(b.values<bool>() == std::vector<bool>{true, false});
    CHECK(std::string(graphrun::dtype_name(graphrun::DType::Bool)) == "bool");
    CHECK(std::string(graphrun::cleanup_name(graphrun::Cleanup::Safepoint)) == "safepoint");
    CHECK(std::string(graphrun::version()).find('.') != std::string::npos);
}

TEST_CASE("library: a live session keeps names between statements, and an error leaves them as they were") {
    graphrun::LiveSession live(options(graphrun::Cleanup::Safepoint, 1));
    graphrun::StatementResult r = live.execute("x = [1, 2, 3]\ny = x * 2 + 1");
    CHECK(r.bound == std::vector<std::string>{"x", "y"});
    CHECK_FALSE(r.shown);
    r = live.execute("x @ y");
    REQUIRE(r.shown);
    CHECK(r.shown->values<float>() == std::vector<float>{1 * 3 + 2 * 5 + 3 * 7});
    CHECK(live.value("y").values<float>() == std::vector<float>{3, 5, 7});
    const uint64_t held = live.stats().at("cpu").in_use;
    try {
        live.execute("y = y @ [[1, 2]]", "cell", 7);
        FAIL("executed");
    } catch (const graphrun::Error& e) {
        CHECK(e.kind() == graphrun::ErrorKind::InvalidGraph);
        REQUIRE_FALSE(e.diagnostics().empty());
        CHECK(e.diagnostics()[0].file == "cell");
        CHECK(e.diagnostics()[0].line == 7);
        CHECK(e.diagnostics()[0].column > 0);
    }
    CHECK(live.value("y").values<float>() == std::vector<float>{3, 5, 7});
    CHECK(live.stats().at("cpu").in_use == held);
    CHECK_THROWS_AS(live.value("nosuch"), graphrun::Error);
    CHECK(graphrun::LiveSession::needs_more("repeat 3 {"));
    CHECK_FALSE(graphrun::LiveSession::needs_more("x = 1"));
}

TEST_CASE("library: a live session's memory: del releases, close tears down to zero") {
    graphrun::LiveSession live(options(graphrun::Cleanup::Safepoint, 1));
    live.execute("a = ones([16])\nb = ones([32])");  // 64 and 128 bytes
    std::vector<graphrun::Variable> vars = live.variables();
    REQUIRE(vars.size() == 2);
    CHECK(vars[0].name == "a");
    CHECK(vars[0].bytes == 64);
    CHECK(vars[1].shape == std::vector<int64_t>{32});
    CHECK(live.stats().at("cpu").in_use == 64 + 128);
    graphrun::Released gone = live.del("b");
    CHECK(gone.names == 1);
    CHECK(gone.bytes == 128);
    live.execute("c = a + 1");  // the statement boundary gives b back under safepoint
    CHECK(live.stats().at("cpu").in_use == 64 + 64);
    CHECK_THROWS_AS(live.del("b"), graphrun::Error);
    graphrun::Teardown t = live.close();
    CHECK(t.before.at("cpu").in_use == 128);
    CHECK(nothing_held(t.after));
    CHECK(live.variables().empty());
    for (const auto& [dev, s] : live.stats()) CHECK(s.in_use == 0);
    live.set_cleanup(graphrun::Cleanup::Close);
    CHECK(live.cleanup() == graphrun::Cleanup::Close);
}
