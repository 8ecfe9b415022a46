// Pass latencies and node times over the measured passes of a run.
#include "engine/api/bench.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "engine/ir/device_name.h"

namespace graphrun {

namespace {

double ms_between(RunClock::time_point a, RunClock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

double percentile_of_sorted(const std::vector<double>& sorted, double q) {
    if (sorted.empty()) return 0;
    const double rank = q * static_cast<double>(sorted.size() - 1);
    const auto lo = static_cast<size_t>(std::floor(rank));
    const size_t hi = std::min(lo + 1, sorted.size() - 1);
    const double frac = rank - static_cast<double>(lo);
    // Written so that equal neighbours give that value exactly, and the result
    // never leaves [sorted[lo], sorted[hi]]: the percentiles stay ordered.
    return std::clamp(sorted[lo] + (sorted[hi] - sorted[lo]) * frac, sorted[lo], sorted[hi]);
}

BenchRecorder::BenchRecorder(const Graph& g, const BenchOptions& opts) : g_(g), opts_(opts) {
    for (const Node& n : g.nodes)
        if (n.valid && !n.placed.empty() && device_kind(n.placed) == DeviceKind::Gpu) gpu_ = true;
    if (opts_.nodes) {
        calls_.assign(g.nodes.size(), 0);
        ns_.assign(g.nodes.size(), 0);
    }
}

void BenchRecorder::on_start(const std::vector<ObservedDevice>&) {
    pass_start_ = RunClock::now();
}

void BenchRecorder::on_node(const NodeRun& n) {
    if (!opts_.nodes || iterations_done_ < opts_.warmup) return;
    const Node* first = g_.nodes.data();
    const Node* p = &n.node;
    // Every node a session runs is one of the graph's; anything else is not counted.
    if (std::less<const Node*>{}(p, first) || !std::less<const Node*>{}(p, first + g_.nodes.size()))
        return;
    const auto id = static_cast<size_t>(p - first);
    ++calls_[id];
    ns_[id] += std::chrono::duration_cast<std::chrono::nanoseconds>(n.end - n.start).count();
}

void BenchRecorder::on_pass_end(const PassEnd& p) {
    if (!p.loops.empty()) return;  // a repeat pass: the iteration goes on
    const RunClock::time_point now = RunClock::now();
    const double ms = ms_between(pass_start_, now);
    pass_start_ = now;
    if (iterations_done_++ < opts_.warmup) return;
    PassLatency& l = lat_;
    l.min_ms = l.passes == 0 ? ms : std::min(l.min_ms, ms);
    l.max_ms = l.passes == 0 ? ms : std::max(l.max_ms, ms);
    l.total_ms += ms;
    ++l.passes;
    if (samples_.size() < kMaxSamples) {
        samples_.push_back(ms);
        return;
    }
    // Past kMaxSamples, a reservoir: each measured pass is in it with the same
    // chance (Algorithm R), with a fixed-seed SplitMix64 so runs are repeatable.
    uint64_t z = (rng_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const uint64_t slot = z % static_cast<uint64_t>(l.passes);
    if (slot < kMaxSamples) samples_[static_cast<size_t>(slot)] = ms;
}

BenchResult BenchRecorder::finish() {
    BenchResult r;
    r.recorded = true;
    r.warmup = std::min(iterations_done_, opts_.warmup);
    r.gpu_waits = gpu_ && opts_.nodes;
    PassLatency& l = lat_;
    std::sort(samples_.begin(), samples_.end());
    l.sampled = samples_.size();
    if (l.passes > 0) {
        l.mean_ms = std::clamp(l.total_ms / static_cast<double>(l.passes), l.min_ms, l.max_ms);
        // The percentiles of a sample stay within the exact extremes.
        auto at = [&](double q) {
            return std::clamp(percentile_of_sorted(samples_, q), l.min_ms, l.max_ms);
        };
        l.median_ms = at(0.5);
        l.p90_ms = at(0.9);
        l.p99_ms = at(0.99);
        l.per_second = l.total_ms > 0 ? static_cast<double>(l.passes) * 1000.0 / l.total_ms : 0;
    }
    r.latency = l;
    for (size_t id = 0; id < calls_.size(); ++id) {
        if (!calls_[id]) continue;
        const Node& n = g_.nodes[id];
        r.nodes.push_back(NodeTime{std::string(n.display()), op_name(n.op), n.dtype, n.shape,
                                   std::string(n.placed), calls_[id],
                                   static_cast<double>(ns_[id]) / 1e6});
    }
    std::stable_sort(r.nodes.begin(), r.nodes.end(),
                     [](const NodeTime& a, const NodeTime& b) { return a.ms > b.ms; });
    samples_ = {};
    return r;
}

}  // namespace graphrun
