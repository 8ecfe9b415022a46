// libFuzzer target for the whole pipeline through the engine API: load (text or
// JSON), prepare (place on the CPU, plan, refuse a static peak over 16 MiB), run
// a session under that limit, tear it down, and check that teardown left
// nothing behind. The first byte picks the format, the
// cleanup strategy and the iteration count; the rest is the graph.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "engine/api/feeds.h"
#include "engine/api/load.h"
#include "engine/api/prepare.h"
#include "engine/api/run.h"

using namespace graphrun;

namespace {

constexpr uint64_t kMemoryLimit = uint64_t{16} << 20;
// Inputs whose run would take longer than a few milliseconds are skipped: the
// fuzzer looks for crashes, not for slow graphs.
constexpr double kMaxWork = 5e6;
// Inputs whose static-peak simulation (up to two passes of every loop per
// pass of its parent) would take longer are skipped too.
constexpr double kMaxSimulated = 1e6;

// How many times node `n` runs in one pass: the product of its enclosing
// repeat counts (and, for the simulation, of min(count, 2)).
double executions(const Graph& g, const Node& n, bool simulated) {
    double times = 1;
    for (int32_t r = n.repeat; r >= 0; r = g.repeats[static_cast<size_t>(r)].parent) {
        double c = static_cast<double>(g.repeats[static_cast<size_t>(r)].count);
        times *= simulated ? std::max(1.0, std::min(c, 2.0)) : c;
    }
    return times;
}

// Elements a node touches when it runs once: its output's element count, and
// matmul's m·n·k (the inner dimension of the larger operand bounds k). Every
// node also costs a fixed overhead, so that empty tensors in a long loop count.
double node_work(const Graph& g, const Node& n) {
    double numel = 1;
    for (int64_t d : n.shape) numel *= static_cast<double>(d);
    if (n.op == OpKind::Matmul) {
        double k = 1;
        for (const Input& in : n.inputs) {
            const Shape& s = g.node(in.id).shape;
            for (size_t i = s.size() >= 2 ? s.size() - 2 : 0; i < s.size(); ++i)
                k = std::max(k, static_cast<double>(s[i]));
        }
        numel *= k;
    }
    if (is_reduction(n.op) || n.op == OpKind::Softmax || n.op == OpKind::Concat ||
        n.op == OpKind::Transpose)
        for (const Input& in : n.inputs) {
            double in_numel = 1;
            for (int64_t d : g.node(in.id).shape) in_numel *= static_cast<double>(d);
            numel += in_numel;
        }
    return numel + 16;
}

// An estimate of the work one pass does, and of the plan simulation's steps.
void estimate(const Graph& g, double& work, double& simulated) {
    work = 0;
    simulated = 0;
    for (const Node& n : g.nodes) {
        work += node_work(g, n) * executions(g, n, false);
        simulated += executions(g, n, true);
    }
}

bool all_released(const MemoryStats& s) {
    return s.in_use == 0 && s.pending == 0 && s.reserved == 0 && s.live == 0 && s.weights == 0 && s.allocs == s.frees;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const uint8_t mode = data[0];
    const bool json = (mode & 1) != 0;
    const CleanupStrategy strategies[] = {CleanupStrategy::Background, CleanupStrategy::Safepoint,
                                          CleanupStrategy::Close, CleanupStrategy::Safepoint};
    const CleanupStrategy cleanup = strategies[(mode >> 1) & 3];
    const int64_t iterations = (mode & 8) ? 2 : 1;

    auto lg =
        load_graph_source(json ? "fuzz.json" : "fuzz.graph",
                          std::string(reinterpret_cast<const char*>(data) + 1, size - 1), json);
    if (!lg->ok()) return 0;
    Graph& g = lg->graph;

    double work = 0, simulated = 0;
    estimate(g, work, simulated);
    if (work * static_cast<double>(iterations) > kMaxWork || simulated > kMaxSimulated) return 0;

    std::ostringstream log;
    const DeviceAvailability cpu_only;
    RunFileOptions opts;
    opts.prepare.placement.device = "cpu";
    opts.prepare.memory_limit = kMemoryLimit;
    opts.prepare.devices = &cpu_only;
    opts.cleanup = cleanup;
    opts.iterations = iterations;
    opts.threads = 1;
    PrepareResult prepared = prepare(std::move(lg), opts.prepare, log);
    if (!prepared.ok()) return 0;
    // Inputs get --fill=random values (the seed from the mode byte), as the CLI feeds them.
    FeedOptions feeds;
    feeds.fill = FillMode::Random;
    feeds.seed = mode;
    InputValues values;
    if (read_feeds(prepared.prepared.graph(), feeds, "fuzz", values, log)) return 0;
    // Out of memory and the like are fine outcomes; teardown must still be complete.
    RunResult r = run_prepared(prepared.prepared, values, opts, log);
    for (const auto& [device, stats] : r.after)
        if (!all_released(stats)) __builtin_trap();
    return 0;
}
