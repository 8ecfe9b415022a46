// The benchmark mode (`run --bench`) and the per-node profile
// (`--profile=nodes`), recorded through the session's RunObserver seam
// (engine/runtime/run_observer.h): the time of each pass between pass ends,
// and each node's time as the executing thread saw it. run_prepared() makes
// the recorder; the first `warmup` iterations are run but neither timed nor
// profiled.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/runtime/run_observer.h"

namespace graphrun {

struct BenchOptions {
    bool passes = false;  // --bench: the latency of each measured pass
    bool nodes = false;   // --profile=nodes: each node's time over the measured passes
    int64_t warmup =
        0;  // iterations run first and not counted (--warmup); part of --iterations' total
};

// Per-pass latency over the measured passes (ms). The percentiles are
// NumPy's default (linear between the closest ranks); exact up to
// BenchRecorder::kMaxSamples passes, from an even sample of that many past it.
// min, max, mean and the total are always exact.
struct PassLatency {
    int64_t passes = 0;    // measured passes (0: the run stopped before the first ended)
    uint64_t sampled = 0;  // passes the percentiles are taken from (= passes up to kMaxSamples)
    double total_ms = 0, min_ms = 0, median_ms = 0, mean_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0;
    double per_second = 0;  // passes / (total_ms / 1000)
};

// One node's time over the measured passes.
struct NodeTime {
    std::string name;  // its display name, as `check` lists it
    std::string op;
    DType dtype = DType::F32;
    Shape shape;         // its output's
    std::string device;  // where it ran
    uint64_t calls = 0;  // runs (a node in a repeat body runs once per repeat pass)
    double ms = 0;       // all its runs together
};

struct BenchResult {
    bool recorded = false;  // a recorder ran (the session opened)
    int64_t warmup = 0;   // warm-up iterations the run went through (at most BenchOptions::warmup)
    PassLatency latency;  // BenchOptions::passes
    // BenchOptions::nodes: every node that ran in a measured pass, slowest first
    // (ties in program order).
    std::vector<NodeTime> nodes;
    // A GPU ran nodes and the per-node profile was asked for: the session
    // waited for each GPU node's kernel (as it does for --profile), so a pass's
    // time includes no overlap of one node's dispatch with the previous one's work.
    bool gpu_waits = false;
};

class BenchRecorder final : public RunObserver {
  public:
    static constexpr size_t kMaxSamples = size_t{1} << 20;
    BenchRecorder(const Graph& g, const BenchOptions& opts);
    // Nodes for the profile (on a GPU each node's kernel is then waited for).
    bool wants_nodes() const override { return opts_.nodes; }
    // On a GPU the session waits for the devices at each pass end, so that a
    // pass's time includes the device's work (kernels still overlap within it).
    bool wants_pass_sync() const override { return gpu_; }
    void on_start(const std::vector<ObservedDevice>& devices) override;
    void on_node(const NodeRun& n) override;
    void on_pass_end(const PassEnd& p) override;
    BenchResult finish();

  private:
    const Graph& g_;
    BenchOptions opts_;
    bool gpu_ = false;
    int64_t iterations_done_ = 0;
    RunClock::time_point pass_start_{};
    std::vector<double> samples_;  // measured passes' ms (a reservoir past kMaxSamples)
    uint64_t rng_ = 0x9E3779B97F4A7C15ull;
    PassLatency lat_;
    std::vector<uint64_t> calls_;  // per node id (BenchOptions::nodes)
    std::vector<int64_t> ns_;
};

// The value at `q` (0 to 1) of sorted samples, NumPy's linear method.
double percentile_of_sorted(const std::vector<double>& sorted, double q);

}  // namespace graphrun
