// The timeline and the node series: even samples of a run's memory.
#include "engine/api/observe.h"

#include <algorithm>

namespace graphrun {

namespace {

constexpr uint64_t kSaturated = UINT64_MAX / 2;

uint64_t sat_mul(uint64_t a, uint64_t b) {
    if (a == 0 || b == 0) return 0;
    return a > kSaturated / b ? kSaturated : a * b;
}

uint64_t sat_add(uint64_t a, uint64_t b) { return std::min(kSaturated, a + std::min(b, kSaturated)); }

// Passes of repeat r per iteration: its count times its enclosing repeats'.
uint64_t passes_per_iteration(const Graph& g, int32_t r) {
    uint64_t n = 1;
    for (; r >= 0; r = g.repeats[static_cast<size_t>(r)].parent)
        n = sat_mul(n, static_cast<uint64_t>(std::max<int64_t>(0, g.repeats[static_cast<size_t>(r)].count)));
    return n;
}

uint64_t every_for(uint64_t expected, size_t max) {
    if (max == 0) return kSaturated;
    return std::max<uint64_t>(1, (expected + max - 1) / max);
}

std::string repeat_place(const Repeat& rep) {
    if (!rep.loc.pointer.empty()) return std::string(rep.loc.pointer.view());
    if (rep.loc.line) return "line " + std::to_string(rep.loc.line);
    return "?";
}

}  // namespace

uint64_t expected_pass_ends(const Graph& g, int64_t iterations) {
    uint64_t per = 1;
    for (size_t r = 0; r < g.repeats.size(); ++r) per = sat_add(per, passes_per_iteration(g, static_cast<int32_t>(r)));
    return sat_mul(per, static_cast<uint64_t>(std::max<int64_t>(0, iterations)));
}

uint64_t expected_node_runs(const Graph& g, const Plan& plan, int64_t iterations) {
    uint64_t per = 0;
    for (const PlanStep& s : plan.steps)
        if (s.kind == PlanStep::Kind::Run) per = sat_add(per, passes_per_iteration(g, g.node(s.arg).repeat));
    return sat_mul(per, static_cast<uint64_t>(std::max<int64_t>(0, iterations)));
}

// --- timeline ---------------------------------------------------------------

TimelineRecorder::TimelineRecorder(const Graph& g, int64_t iterations, size_t max_rows) : g_(g) {
    t_.every = every_for(expected_pass_ends(g, iterations), max_rows);
}

void TimelineRecorder::on_start(const std::vector<ObservedDevice>& devices) { devices_ = devices; }

void TimelineRecorder::add_row(const char* end, int64_t iteration, const std::vector<LoopPass>& loops) {
    TimelineRow row;
    row.end = end;
    row.iteration = iteration + 1;
    for (const LoopPass& l : loops)
        row.repeats.push_back(TimelinePass{repeat_place(g_.repeats[static_cast<size_t>(l.repeat)]), l.pass + 1, l.passes});
    for (const ObservedDevice& d : devices_) row.memory[d.name] = d.allocator->stats();
    t_.rows.push_back(std::move(row));
}

void TimelineRecorder::on_pass_end(const PassEnd& p) {
    ++t_.pass_ends;
    last_sampled_ = t_.pass_ends % t_.every == 0;
    if (last_sampled_) {
        add_row(p.loops.empty() ? "iteration" : "repeat pass", p.iteration, p.loops);
    } else {
        last_iteration_ = p.iteration;
        last_loops_.assign(p.loops.begin(), p.loops.end());
    }
}

Timeline TimelineRecorder::finish(bool completed) {
    if (!last_sampled_) {
        add_row(completed ? "run end" : "stopped", last_iteration_, last_loops_);
        last_sampled_ = true;
    }
    return std::move(t_);
}

// --- node series ------------------------------------------------------------

SeriesRecorder::SeriesRecorder(uint64_t expected_nodes, size_t max_points)
    : every_(every_for(expected_nodes, max_points)) {}

void SeriesRecorder::on_start(const std::vector<ObservedDevice>& devices) {
    devices_ = devices;
    add_point();  // node 0: before the first
}

void SeriesRecorder::add_point() {
    SeriesPoint p;
    p.node = executed_;
    for (const ObservedDevice& d : devices_) p.in_use[d.name] = d.allocator->stats().in_use;
    points_.push_back(std::move(p));
}

void SeriesRecorder::on_node(const NodeRun&) {
    if (++executed_ % every_ == 0) add_point();
}

std::vector<SeriesPoint> SeriesRecorder::finish() {
    if (!devices_.empty() && (points_.empty() || points_.back().node != executed_)) add_point();
    return std::move(points_);
}

// --- fan-out ----------------------------------------------------------------

bool ObserverFanout::wants_nodes() const {
    for (RunObserver* o : list_)
        if (o->wants_nodes()) return true;
    return false;
}

bool ObserverFanout::wants_pass_sync() const {
    for (RunObserver* o : list_)
        if (o->wants_pass_sync()) return true;
    return false;
}

void ObserverFanout::on_start(const std::vector<ObservedDevice>& devices) {
    for (RunObserver* o : list_) o->on_start(devices);
}

void ObserverFanout::on_node(const NodeRun& n) {
    for (RunObserver* o : list_)
        if (o->wants_nodes()) o->on_node(n);
}

void ObserverFanout::on_pass_end(const PassEnd& p) {
    for (RunObserver* o : list_) o->on_pass_end(p);
}

void ObserverFanout::on_release_batch(RunClock::time_point start, RunClock::time_point end, size_t buffers,
                                      uint64_t bytes) {
    for (RunObserver* o : list_) o->on_release_batch(start, end, buffers, bytes);
}

}  // namespace graphrun
