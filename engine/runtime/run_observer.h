// The seam through which a run can be watched (--timeline, --trace, graphrun
// compare): a session calls its RunObserver at the ends of passes, and per
// node only when the observer asks for it. A session without an observer pays
// nothing per node: the per-node path tests one flag it tested already (the
// profile's), and the pass ends one pointer.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/runtime/allocator.h"

namespace graphrun {

using RunClock = std::chrono::steady_clock;

// A device the session opened, with its allocator (whose stats() an observer
// may read at any of its calls).
struct ObservedDevice {
    std::string name;  // "cpu", "gpu:0"
    const Allocator* allocator = nullptr;
};

// One enclosing repeat at a pass end: which, and its pass (from 0) of how many.
struct LoopPass {
    int32_t repeat = -1;  // index into Graph::repeats
    int64_t pass = 0;
    int64_t passes = 0;
};

// Where a pass end is: the iteration (--iterations pass, from 0) and, for the
// end of a repeat pass, that repeat and each enclosing one, outermost first
// (the repeat whose pass ended is the last). Empty `loops`: an iteration ended.
struct PassEnd {
    int64_t iteration = 0;
    const std::vector<LoopPass>& loops;
};

// A node that ran, as the executing thread saw it.
struct NodeRun {
    const Node& node;
    std::string_view device;  // where it ran
    uint64_t bytes = 0;       // its output buffer as the plan counts it (0 for an alias)
    RunClock::time_point start, end;
};

class RunObserver {
public:
    virtual ~RunObserver() = default;
    // Read once when the session opens: whether on_node is wanted. A session
    // whose observer says no runs the same per-node path as one without.
    virtual bool wants_nodes() const { return false; }
    // Read once when the session opens: whether the session waits for every
    // device at the end of each iteration, before on_pass_end, so that the
    // pass end seen on the host comes after the devices' work (GPU kernels
    // return before they have run). A benchmark's per-pass time.
    virtual bool wants_pass_sync() const { return false; }
    // Before the first pass, with every device the session opened.
    virtual void on_start(const std::vector<ObservedDevice>& /*devices*/) {}
    // A node ran (on the executing thread; wants_nodes() only). On a GPU the
    // session waits for the node's kernel first, so that `end` is its end.
    virtual void on_node(const NodeRun& /*n*/) {}
    // The end of a repeat pass or of an iteration, after its safe point.
    virtual void on_pass_end(const PassEnd& /*p*/) {}
    // The background reclaimer released a batch (on the reclaimer's thread,
    // concurrently with the other calls).
    virtual void on_release_batch(RunClock::time_point /*start*/, RunClock::time_point /*end*/, size_t /*buffers*/,
                                  uint64_t /*bytes*/) {}
};

}  // namespace graphrun
