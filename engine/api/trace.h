// --trace=FILE: a run as Chrome trace-event JSON (Perfetto, chrome://tracing).
// Each graph file run is one process of the trace; in it the executing thread
// has one complete slice per executed node (args: name, op, shape, device,
// bytes), the background reclaimer has one slice per release batch on its own
// track, and each device has counter tracks for in_use, pending and reserved
// (a counter event only when a figure changed). The last counters of a run are
// the statistics before teardown. Bounded: past `max_events` events nothing
// more is recorded but those last counters, and the file's metadata (and
// dropped_events()) says how many were left out.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/runtime/allocator.h"
#include "engine/runtime/run_observer.h"

namespace graphrun {

class TraceRecorder {
public:
    static constexpr size_t kDefaultMaxEvents = 200000;
    explicit TraceRecorder(size_t max_events = kDefaultMaxEvents);
    ~TraceRecorder();
    TraceRecorder(const TraceRecorder&) = delete;
    TraceRecorder& operator=(const TraceRecorder&) = delete;

    // The observer of the next run, labelled `file`. It must outlive the
    // session, and the run ends with end_run().
    std::unique_ptr<RunObserver> begin_run(const std::string& file);
    // The run's statistics before teardown, as its last counter values; events
    // after this (the reclaimer's, while the session closes) are not recorded.
    void end_run(RunObserver& run, const std::map<std::string, MemoryStats>& before_teardown);

    size_t max_events() const { return max_events_; }
    size_t events() const;
    size_t dropped_events() const;
    // The trace as one JSON object: {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}.
    void write(std::ostream& out) const;

    struct Event {
        char ph = 'X';  // X: complete slice, C: counter, M: metadata, i: instant
        int pid = 0;
        int tid = 0;
        double ts = 0, dur = 0;  // microseconds from the run's start
        std::string name;
        std::string args;  // a JSON object's text, or empty
    };

private:
    class Run;
    friend class Run;
    // Adds an event unless the cap is reached (then counts it as dropped); `forced`
    // events (metadata, the last counters) are always added. Under mu_.
    void add_locked(Event e, bool forced = false);

    const size_t max_events_;
    mutable std::mutex mu_;
    std::vector<Event> events_;
    size_t dropped_ = 0;
    bool cap_marked_ = false;
    int runs_ = 0;
};

}  // namespace graphrun
