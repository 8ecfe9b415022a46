// The benchmark section, the per-node profile table and their JSON.
#include "cli/bench_output.h"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <string>

#include "cli/table.h"

namespace graphrun::cli {

namespace {

using ojson = nlohmann::ordered_json;

std::string fixed(double v, int digits) {
    std::ostringstream s;
    s << std::fixed << std::setprecision(digits) << v;
    return s.str();
}

// Milliseconds to a tenth of a microsecond: a small graph's pass is a few
// microseconds, a model's tens of milliseconds.
std::string ms_text(double ms) {
    return fixed(ms, 4);
}

// A node's name in the text table: a long one (ONNX's are paths) keeps its
// beginning and its end, which says which output it is; JSON has it whole.
std::string short_name(const std::string& name) {
    constexpr size_t kMax = 60, kHead = 24;
    if (name.size() <= kMax) return name;
    return name.substr(0, kHead) + "..." + name.substr(name.size() - (kMax - kHead - 3));
}

std::string plural(int64_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

double share_of(const BenchResult& b, double ms) {
    return b.latency.total_ms > 0 ? ms / b.latency.total_ms : 0;
}

}  // namespace

void print_bench(const BenchResult& b, std::ostream& out) {
    const PassLatency& l = b.latency;
    out << "bench (latency per pass; " << plural(b.warmup, "warm-up pass", "warm-up passes")
        << " before, not counted):\n";
    if (l.passes == 0) {
        out << "  no pass was measured: the run stopped before the first measured pass ended\n";
        return;
    }
    TextTable t(
        {"passes", "min ms", "median ms", "mean ms", "p90 ms", "p99 ms", "max ms", "passes/s"}, 0);
    t.add({std::to_string(l.passes), ms_text(l.min_ms), ms_text(l.median_ms), ms_text(l.mean_ms),
           ms_text(l.p90_ms), ms_text(l.p99_ms), ms_text(l.max_ms), fixed(l.per_second, 1)});
    t.print(out);
    if (l.sampled < static_cast<uint64_t>(l.passes))
        out << "  median, p90 and p99 from an even sample of " << l.sampled << " of the "
            << l.passes << " passes (min, max and mean from all)\n";
    if (b.gpu_waits)
        out << "  GPU nodes were waited for one by one: a pass's time includes the device's work, "
               "without "
               "overlap between nodes\n";
}

void print_node_profile(const BenchResult& b, bool bench, std::ostream& out) {
    const int64_t passes = b.latency.passes;
    out << "profile (per node, slowest first, over " << (bench ? "the " : "")
        << plural(passes, bench ? "measured pass" : "pass", bench ? "measured passes" : "passes");
    if (b.nodes.size() > kNodeProfileRows)
        out << "; the slowest " << kNodeProfileRows << " of " << b.nodes.size();
    out << "):\n";
    if (b.nodes.empty()) {
        out << "  no node ran\n";
        return;
    }
    TextTable t({"node", "op", "output", "calls", "total ms", "ms/call", "share"}, 3);
    double all_ms = 0;
    for (const NodeTime& n : b.nodes) all_ms += n.ms;
    for (size_t i = 0; i < b.nodes.size() && i < kNodeProfileRows; ++i) {
        const NodeTime& n = b.nodes[i];
        t.add({short_name(n.name), n.op, type_string(n.dtype, n.shape), std::to_string(n.calls),
               ms_text(n.ms), ms_text(n.ms / static_cast<double>(n.calls)),
               fixed(100 * share_of(b, n.ms), 1) + "%"});
    }
    t.print(out);
    out << "  all " << plural(static_cast<int64_t>(b.nodes.size()), "node", "nodes") << ": "
        << ms_text(all_ms) << " ms, " << fixed(100 * share_of(b, all_ms), 1) << "% of the passes' "
        << ms_text(b.latency.total_ms)
        << " ms (the rest is the executor's own: inputs, releases, safe points)\n";
}

std::string apply_bench_options(int64_t warmup, bool iterations_given, RunFileOptions& engine) {
    if (!iterations_given) {
        engine.iterations = kDefaultBenchPasses;
    } else if (engine.iterations == 0) {
        return "--bench measures passes, and --iterations=0 runs none: give --iterations=1 or more "
               "(the measured "
               "passes), or leave it out for " +
               std::to_string(kDefaultBenchPasses);
    }
    constexpr int64_t kMaxPasses = int64_t{1} << 40;
    if (warmup > kMaxPasses - engine.iterations)
        return "--warmup=" + std::to_string(warmup) +
               " and --iterations=" + std::to_string(engine.iterations) + " make " +
               std::to_string(warmup + engine.iterations) +
               " passes in all, more than the 2^40 one session runs";
    engine.bench.passes = true;
    engine.bench.warmup = warmup;
    engine.iterations +=
        warmup;  // the session runs them all; the recorder leaves the first `warmup` out
    return {};
}

ojson bench_json(const BenchResult& b) {
    const PassLatency& l = b.latency;
    auto figure = [&](double v) { return l.passes ? ojson(v) : ojson(nullptr); };
    return ojson{{"warmup", b.warmup},
                 {"passes", l.passes},
                 {"sampled", l.sampled},
                 {"min_ms", figure(l.min_ms)},
                 {"median_ms", figure(l.median_ms)},
                 {"mean_ms", figure(l.mean_ms)},
                 {"p90_ms", figure(l.p90_ms)},
                 {"p99_ms", figure(l.p99_ms)},
                 {"max_ms", figure(l.max_ms)},
                 {"total_ms", l.total_ms},
                 {"passes_per_s", figure(l.per_second)},
                 {"gpu_waits_per_node", b.gpu_waits}};
}

ojson node_profile_json(const BenchResult& b) {
    auto nodes = ojson::array();
    for (const NodeTime& n : b.nodes)
        nodes.push_back(ojson{{"name", n.name},
                              {"op", n.op},
                              {"dtype", dtype_name(n.dtype)},
                              {"shape", n.shape},
                              {"device", n.device},
                              {"calls", n.calls},
                              {"ms", n.ms},
                              {"ms_per_call", n.ms / static_cast<double>(n.calls)},
                              {"share", share_of(b, n.ms)}});
    return ojson{
        {"passes", b.latency.passes}, {"pass_ms", b.latency.total_ms}, {"nodes", std::move(nodes)}};
}

}  // namespace graphrun::cli
