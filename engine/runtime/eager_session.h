// The eager executor (SPEC section 8): a long-lived session that runs a
// graph's statements one at a time as they come, with no whole-program plan.
// It owns what outlives one graph: the devices and their allocators, the
// cleanup strategy, the CPU thread pool, and a store of named values.
//
// Reference rules, which the executor follows statement by statement:
//   - a value is referenced while a name is bound to it (or a repeat body
//     will still read it: loop-carried values, and names bound outside);
//   - the generated nodes of a statement (its temporaries) are unreferenced
//     when the statement ends, that is when its named node has run;
//   - rebinding a name unreferences its old value, once the new one is
//     computed: within a block the previous binding, on a block's next pass
//     the last binding of the pass before;
//   - names first bound in a repeat body are unreferenced when the loop ends;
//   - `del x` unreferences x's value where it stands (top level only).
// Unreferenced buffers go to the cleanup strategy (section 4): the safe
// points are the start of each statement, before each dispatch, and the end
// of each repeat pass and of each run. Nothing runs in place.
//
// Values are bit for bit those of graph mode (Session): the same kernels run
// in the same order on the same inputs.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/thread_pool.h"
#include "engine/ir/graph.h"
#include "engine/kernels/common/kernel.h"
#include "engine/runtime/allocator.h"
#include "engine/runtime/cleanup_strategy.h"
#include "engine/runtime/device.h"
#include "engine/runtime/device_factory.h"
#include "engine/runtime/execution_frame.h"
#include "engine/runtime/run_observer.h"
#include "engine/runtime/session_options.h"

namespace graphrun {

// What one call of EagerSession::run does with a graph.
struct EagerRun {
    int64_t iterations = 1;  // the program runs this many times (names persist between passes)
    // Input nodes whose value is a name of the store (the name is the node's
    // own): they share the store's buffer instead of running.
    std::vector<NodeId> from_store;
    // Values held after the run for fetch() (outputs): each held from when
    // its node runs to the start of the next pass, and after the last pass
    // until release_fetched().
    std::vector<NodeId> fetch;
    // On success, these names are bound in the store to these values
    // (replacing what the names held); on failure the store is as it was.
    std::vector<std::pair<std::string, NodeId>> bind;
    // One value per `input` node (kept by the caller until run() returns).
    std::vector<FeedView> feeds;
};

// A named value of the store.
struct StoredValue {
    std::string name;
    DType dtype = DType::F32;
    Shape shape;
    std::string device;
    uint64_t bytes = 0;
    uint64_t buffer = 0;  // the same for names that share one buffer (`y = x` aliases x)
};

class EagerSession {
public:
    explicit EagerSession(SessionOptions opts);
    ~EagerSession();  // closes if close() was not called
    EagerSession(const EagerSession&) = delete;
    EagerSession& operator=(const EagerSession&) = delete;

    // Runs `g` (validated and placed) statement by statement. Stops at the
    // first error; what the run computed is then unreferenced (the store
    // untouched). The graph must outlive the call only.
    std::optional<Error> run(const Graph& g, const EagerRun& spec);
    // The values of the last run's `fetch` list, copied to the host (after a
    // successful run only); `outputs` name them.
    std::optional<Error> fetch(const Graph& g, const std::vector<Output>& outputs, std::vector<HostTensor>& out);
    // Unreferences the values held for fetch().
    void release_fetched();

    // The store.
    std::vector<StoredValue> values() const;  // sorted by name
    std::optional<StoredValue> find(std::string_view name) const;
    // A stored value copied to the host; nullopt (with `error`) for an unknown name or a failed copy.
    std::optional<HostTensor> value(std::string_view name, Error* error) const;
    // Unbinds a name: its buffer becomes unreferenced unless another name
    // shares it. False for an unknown name. `bytes`/`buffers`: what became unreferenced.
    bool unbind(std::string_view name, uint64_t* bytes = nullptr, uint64_t* buffers = nullptr);

    std::map<std::string, MemoryStats> stats() const;  // per device opened (cpu always)
    std::map<std::string, uint64_t> limits() const;
    // Another strategy from now on: the old one releases what it holds.
    void set_cleanup(CleanupStrategy s);
    CleanupStrategy cleanup() const { return opts_.cleanup; }
    // Teardown as Session::close: frozen peaks, everything released, the
    // reclaimer joined, the devices closed. Idempotent.
    void close();

    std::vector<OpProfile> profile() const;  // per op, slowest first (SessionOptions::profile)
    double run_ms() const { return run_ms_; }
    double teardown_ms() const { return teardown_ms_; }
    uint64_t statements() const { return statements_; }  // statements executed over the session's life

private:
    struct Compiled;  // one run's per-node records (eager_session.cpp)
    struct Runner;

    Device* device_for(std::string_view name, std::optional<Error>& error);
    int32_t store_slot(std::string_view name) const;  // -1: unbound

    SessionOptions opts_;
    DeviceFactory factory_;
    DeviceMap devices_;
    std::unique_ptr<ThreadPool> pool_;
    KernelContext ctx_;
    std::unique_ptr<Cleanup> cleanup_;  // after devices_: destroyed before the allocators
    ExecutionFrame frame_;              // the store's slots first, then a run's values
    // The store: slot i of the frame is names_[i] ("" for a free slot).
    std::vector<std::string> names_;
    std::vector<StoredValue> info_;  // parallel to names_
    std::map<std::string, int32_t, std::less<>> slot_of_;
    std::vector<int32_t> free_slots_;
    // Held for fetch(): frame slots past the store's, and their node ids.
    std::vector<std::pair<NodeId, int32_t>> fetched_;
    std::vector<OpProfile> op_profile_;
    uint64_t statements_ = 0;
    bool closed_ = false;
    bool blas_set_ = false;
    double run_ms_ = 0, teardown_ms_ = 0;
};

}  // namespace graphrun
