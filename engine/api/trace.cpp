// The trace recorder: events in memory, capped, written once at the end.
#include "engine/api/trace.h"

#include <cstdio>

#include "engine/base/printable.h"
#include "engine/ir/dtype.h"
#include "engine/ir/ops.h"

namespace graphrun {

namespace {

constexpr int kExecutorTid = 1;
constexpr int kReclaimerTid = 2;

// Any bytes in a name or file name: as \xHH where they are not UTF-8 (printable.h).
std::string quoted(const std::string& s) { return json_quoted(s); }

double us_between(RunClock::time_point from, RunClock::time_point to) {
    return std::chrono::duration<double, std::micro>(to - from).count();
}

}  // namespace

// The observer of one run: one process of the trace.
class TraceRecorder::Run final : public RunObserver {
public:
    Run(TraceRecorder& rec, int pid, std::string file) : rec_(rec), pid_(pid), file_(std::move(file)) {}

    bool wants_nodes() const override { return true; }

    void on_start(const std::vector<ObservedDevice>& devices) override {
        std::lock_guard<std::mutex> lock(rec_.mu_);
        origin_ = RunClock::now();
        devices_ = devices;
        last_.assign(devices.size(), Figures{UINT64_MAX, UINT64_MAX, UINT64_MAX});
        rec_.add_locked(Event{'M', pid_, 0, 0, 0, "process_name", "{\"name\":" + quoted("graphrun " + file_) + "}"},
                        true);
        rec_.add_locked(Event{'M', pid_, kExecutorTid, 0, 0, "thread_name", "{\"name\":\"executing thread\"}"}, true);
        rec_.add_locked(Event{'M', pid_, kReclaimerTid, 0, 0, "thread_name", "{\"name\":\"reclaimer\"}"}, true);
        counters_locked(0, nullptr, false);
    }

    void on_node(const NodeRun& n) override {
        std::lock_guard<std::mutex> lock(rec_.mu_);
        if (ended_) return;
        const double ts = us_between(origin_, n.start);
        std::string args;
        if (rec_.events_.size() < rec_.max_events_)  // past the cap the slice is only counted: no text to build
            args = "{\"name\":" + quoted(std::string(n.node.display())) + ",\"op\":\"" + op_name(n.node.op) +
                   "\",\"shape\":\"" + type_string(n.node.dtype, n.node.shape) + "\",\"device\":\"" +
                   std::string(n.device) + "\",\"bytes\":" + std::to_string(n.bytes) + "}";
        rec_.add_locked(Event{'X', pid_, kExecutorTid, ts, us_between(n.start, n.end), std::string(n.node.display()),
                              std::move(args)});
        counters_locked(us_between(origin_, n.end), nullptr, false);
    }

    void on_release_batch(RunClock::time_point start, RunClock::time_point end, size_t buffers,
                          uint64_t bytes) override {
        std::lock_guard<std::mutex> lock(rec_.mu_);
        if (ended_) return;
        rec_.add_locked(Event{'X', pid_, kReclaimerTid, us_between(origin_, start), us_between(start, end),
                              "release batch",
                              "{\"buffers\":" + std::to_string(buffers) + ",\"bytes\":" + std::to_string(bytes) + "}"});
        counters_locked(us_between(origin_, end), nullptr, false);
    }

    void end(const std::map<std::string, MemoryStats>& before) {
        std::lock_guard<std::mutex> lock(rec_.mu_);
        if (ended_) return;
        ended_ = true;
        if (devices_.empty()) return;  // the run never started
        counters_locked(us_between(origin_, RunClock::now()), &before, true);
    }

private:
    struct Figures {
        uint64_t in_use, pending, reserved;
    };

    // A counter event per figure that changed; `given`: these figures rather
    // than the allocators' (the statistics before teardown), always written.
    void counters_locked(double ts, const std::map<std::string, MemoryStats>* given, bool forced) {
        for (size_t i = 0; i < devices_.size(); ++i) {
            MemoryStats s;
            if (given) {
                auto it = given->find(devices_[i].name);
                if (it == given->end()) continue;
                s = it->second;
            } else {
                s = devices_[i].allocator->stats();
            }
            const Figures now{s.in_use, s.pending, s.reserved};
            const std::string& dev = devices_[i].name;
            if (forced || now.in_use != last_[i].in_use) counter_locked(ts, "in_use (" + dev + ")", now.in_use, forced);
            if (forced || now.pending != last_[i].pending) counter_locked(ts, "pending (" + dev + ")", now.pending, forced);
            if (forced || now.reserved != last_[i].reserved)
                counter_locked(ts, "reserved (" + dev + ")", now.reserved, forced);
            last_[i] = now;
        }
    }

    void counter_locked(double ts, std::string name, uint64_t bytes, bool forced) {
        rec_.add_locked(Event{'C', pid_, 0, ts, 0, std::move(name), "{\"bytes\":" + std::to_string(bytes) + "}"},
                        forced);
    }

    TraceRecorder& rec_;
    const int pid_;
    const std::string file_;
    RunClock::time_point origin_;
    std::vector<ObservedDevice> devices_;
    std::vector<Figures> last_;
    bool ended_ = false;
};

TraceRecorder::TraceRecorder(size_t max_events) : max_events_(max_events) {}
TraceRecorder::~TraceRecorder() = default;

std::unique_ptr<RunObserver> TraceRecorder::begin_run(const std::string& file) {
    std::lock_guard<std::mutex> lock(mu_);
    return std::make_unique<Run>(*this, ++runs_, file);
}

void TraceRecorder::end_run(RunObserver& run, const std::map<std::string, MemoryStats>& before_teardown) {
    static_cast<Run&>(run).end(before_teardown);
}

void TraceRecorder::add_locked(Event e, bool forced) {
    if (!forced && events_.size() >= max_events_) {
        if (!cap_marked_) {  // where the trace stops: an instant event on the timeline
            cap_marked_ = true;
            events_.push_back(Event{'i', e.pid, kExecutorTid, e.ts, 0, "trace capped",
                                    "{\"max_events\":" + std::to_string(max_events_) + "}"});
        }
        ++dropped_;
        return;
    }
    events_.push_back(std::move(e));
}

size_t TraceRecorder::events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_.size();
}

size_t TraceRecorder::dropped_events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return dropped_;
}

void TraceRecorder::write(std::ostream& out) const {
    std::lock_guard<std::mutex> lock(mu_);
    out << "{\"traceEvents\":[\n";
    char num[64];
    for (size_t i = 0; i < events_.size(); ++i) {
        const Event& e = events_[i];
        out << "{\"ph\":\"" << e.ph << "\",\"pid\":" << e.pid << ",\"tid\":" << e.tid;
        if (e.ph != 'M') {
            std::snprintf(num, sizeof num, "%.3f", e.ts);
            out << ",\"ts\":" << num;
        }
        if (e.ph == 'X') {
            std::snprintf(num, sizeof num, "%.3f", e.dur);
            out << ",\"dur\":" << num << ",\"cat\":\"" << (e.tid == kReclaimerTid ? "release" : "node") << "\"";
        }
        if (e.ph == 'i') out << ",\"s\":\"g\"";
        out << ",\"name\":" << quoted(e.name);
        if (!e.args.empty()) out << ",\"args\":" << e.args;
        out << (i + 1 < events_.size() ? "},\n" : "}\n");
    }
    out << "],\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"graphrun\",\"max_events\":" << max_events_
        << ",\"dropped_events\":" << dropped_ << ",\"truncated\":" << (dropped_ ? "true" : "false")
        << ",\"note\":"
        << quoted(dropped_ ? "the trace stopped at its cap of " + std::to_string(max_events_) + " events; " +
                                 std::to_string(dropped_) +
                                 " later events (node slices, release batches, counters) are not in it; each run's "
                                 "last counters (the statistics before teardown) are"
                           : "every event of the run is in the trace")
        << "}}\n";
}

}  // namespace graphrun
