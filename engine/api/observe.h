// What a run can record of itself through the session's RunObserver
// (engine/runtime/run_observer.h): the --timeline (memory at pass ends,
// sampled evenly) and the memory series of `graphrun compare` (in_use over
// the executed nodes, sampled evenly). run_prepared() makes them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/plan/plan.h"
#include "engine/runtime/allocator.h"
#include "engine/runtime/run_observer.h"

namespace graphrun {

// One enclosing repeat of a timeline row: where it is written and its pass.
struct TimelinePass {
    std::string at;  // "line 3", or a JSON graph's pointer "/nodes/1"
    int64_t pass = 0;    // from 1
    int64_t passes = 0;
};

// The memory at one pass end.
struct TimelineRow {
    // What ended: "repeat pass", "iteration"; or the last row, when the run's
    // last pass end was not sampled: "run end" (the figures at the end of the
    // run, as in the statistics before teardown) or "stopped" (an error or a
    // signal stopped it after the pass end the row names).
    std::string end;
    int64_t iteration = 0;              // from 1
    std::vector<TimelinePass> repeats;  // outermost first; empty for an iteration end
    std::map<std::string, MemoryStats> memory;  // per device
};

struct Timeline {
    std::vector<TimelineRow> rows;
    uint64_t pass_ends = 0;  // pass ends the run went through (rows are a sample of them)
    uint64_t every = 1;      // a row every `every` pass ends
};

// Pass ends a run of `iterations` goes through: one per iteration and one per
// repeat pass (nested ones multiplied out); saturates at UINT64_MAX / 2.
uint64_t expected_pass_ends(const Graph& g, int64_t iterations);
// Nodes a run of `iterations` executes (Run steps, repeat bodies multiplied out); saturating.
uint64_t expected_node_runs(const Graph& g, const Plan& plan, int64_t iterations);

// --timeline: a row at every `every`-th pass end, `every` chosen from the
// expected count so that there are at most `max_rows` rows, plus the run's
// last position if it stopped elsewhere. Reads the statistics only for a row.
class TimelineRecorder final : public RunObserver {
public:
    TimelineRecorder(const Graph& g, int64_t iterations, size_t max_rows);
    void on_start(const std::vector<ObservedDevice>& devices) override;
    void on_pass_end(const PassEnd& p) override;
    // After the run: the last position, if not sampled, with the figures now.
    Timeline finish(bool completed);

private:
    void add_row(const char* end, int64_t iteration, const std::vector<LoopPass>& loops);

    const Graph& g_;
    std::vector<ObservedDevice> devices_;
    Timeline t_;
    bool last_sampled_ = true;
    int64_t last_iteration_ = 0;
    std::vector<LoopPass> last_loops_;
};

// in_use per device after an executed node.
struct SeriesPoint {
    uint64_t node = 0;  // executed nodes so far (from 1)
    std::map<std::string, uint64_t> in_use;
};

// graphrun compare's series: in_use after every `every`-th executed node,
// at most about `max_points` points, and after the last one.
class SeriesRecorder final : public RunObserver {
public:
    SeriesRecorder(uint64_t expected_nodes, size_t max_points);
    bool wants_nodes() const override { return true; }
    void on_start(const std::vector<ObservedDevice>& devices) override;
    void on_node(const NodeRun& n) override;
    std::vector<SeriesPoint> finish();
    uint64_t executed() const { return executed_; }

private:
    void add_point();

    std::vector<ObservedDevice> devices_;
    std::vector<SeriesPoint> points_;
    uint64_t every_ = 1, executed_ = 0;
};

// Several observers as one (the session takes one).
class ObserverFanout final : public RunObserver {
public:
    void add(RunObserver* o) {
        if (o) list_.push_back(o);
    }
    bool empty() const { return list_.empty(); }
    RunObserver* single() const { return list_.size() == 1 ? list_[0] : nullptr; }
    bool wants_nodes() const override;
    bool wants_pass_sync() const override;
    void on_start(const std::vector<ObservedDevice>& devices) override;
    void on_node(const NodeRun& n) override;
    void on_pass_end(const PassEnd& p) override;
    void on_release_batch(RunClock::time_point start, RunClock::time_point end, size_t buffers,
                          uint64_t bytes) override;

private:
    std::vector<RunObserver*> list_;
};

}  // namespace graphrun
