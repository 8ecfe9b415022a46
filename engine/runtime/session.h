// A session: runs a compiled plan pass after pass on the devices' allocators,
// releases unreferenced tensors by its cleanup strategy (SPEC section 4), and
// tears everything down on close, after errors too.
//
// It is the executor; each of its other concerns has its own part:
//   DeviceFactory (device_factory.h)    opens the devices the plan is placed on;
//   ExecutionFrame (execution_frame.h)  buffers, reference counts, in place;
//   Cleanup (cleanup_strategy.h)        when unreferenced buffers go back;
//   PlanWalker (engine/plan)            the steps of a pass, shared with the static peak;
//   RunObserver (run_observer.h)        watches the run, when SessionOptions::observer is set.
// SessionOptions, HostTensor, Error, OpProfile and CleanupStrategy are in
// session_options.h, included here.
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
#include "engine/plan/plan.h"
#include "engine/plan/plan_walker.h"
#include "engine/runtime/allocator.h"
#include "engine/runtime/cleanup_strategy.h"
#include "engine/runtime/device.h"
#include "engine/runtime/device_factory.h"
#include "engine/runtime/execution_frame.h"
#include "engine/runtime/run_observer.h"
#include "engine/runtime/session_options.h"

namespace graphrun {

class Session {
public:
    // Opens the session: the cleanup strategy (background: its reclaimer
    // thread) and the CPU workers. Devices open when an executable placed on
    // them is loaded, and stay open until close().
    explicit Session(SessionOptions opts);
    // Session(opts), then load(g, plan): a device that cannot be opened is
    // reported by the first run().
    Session(const Graph& g, const Plan& plan, SessionOptions opts);
    ~Session();  // closes if close() was not called
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // Makes (g, plan) the executable that run() runs: opens the devices it is
    // placed on and makes its kernels, which read the graph (g and plan must
    // outlive the session, or the next load). Loading another executable
    // replaces this one: the values the last run still holds become
    // unreferenced and go by the strategy; the same one again costs nothing.
    // An error (a device that cannot be opened) leaves nothing loaded.
    std::optional<Error> load(const Graph& g, const Plan& plan);

    // Runs `iterations` passes of the loaded executable, then copies
    // `outputs` to the host. `feeds`: one value per `input` node of the graph
    // (host bytes of its dtype and shape, kept by the caller until run()
    // returns); feeds never enter the graph. The last run's outputs stay
    // referenced until this run's first safe point. Stops at the first error;
    // the session stays open, so that statistics can be taken and it can run
    // again.
    std::optional<Error> run(const std::vector<FeedView>& feeds, int64_t iterations,
                                const std::vector<Output>& outputs, std::vector<HostTensor>& fetched);
    // run() on a graph with no inputs.
    std::optional<Error> run(int64_t iterations, const std::vector<Output>& outputs,
                                std::vector<HostTensor>& fetched) {
        return run({}, iterations, outputs, fetched);
    }
    // Unreferences what the last run holds (its outputs), now rather than at
    // the next run's first safe point, and gives it back by the strategy at
    // once: between runs the session then holds no tensor (caches and
    // workspace aside), except under close, which holds all until close().
    void release_outputs();
    // Statistics per device the session used.
    std::map<std::string, MemoryStats> stats() const;
    // The memory limit of each device the session opened.
    std::map<std::string, uint64_t> limits() const;
    // Teardown: freezes the peak figures (they are the run's: SPEC section 4),
    // releases every remaining tensor, joins the reclaimer, gives every
    // allocator cache back to the system. Idempotent.
    void close();

    // Per-op totals, slowest first (empty unless SessionOptions::profile).
    std::vector<OpProfile> profile() const;
    double run_ms() const { return run_ms_; }
    double teardown_ms() const { return teardown_ms_; }
    bool reclaimer_running() const { return cleanup_->thread_running(); }

private:
    template <bool Observed>
    struct PassVisitor;  // the executor as PlanWalker's visitor (session.cpp)

    std::optional<Error> run_pass();
    std::optional<Error> run_node(NodeId id);
    std::optional<Error> run_node_instrumented(NodeId id);  // --profile, or an observer of nodes
    void observe_pass_end(int32_t loop);  // loop -1: the iteration ended
    Error interrupted(NodeId before, int sig) const;  // the error of a run stopped by `sig`
    Device* device_for(std::string_view name);
    void release_scratch();
    // Node id's output buffer of `bytes` (kPlannedBytes or more) on the CPU,
    // at its offset of the plan where it has one (Plan::cpu_offset).
    void* allocate_planned(NodeId id, Device& dev, uint64_t bytes);
    std::optional<Error> copy_input(const Node& n, const Node& in, const ExecutionFrame::Buffer& src, Device& dev,
                                       TensorRef& ref);
    std::string oom_message(const Node& n, uint64_t bytes, const Allocator& a, const std::string& what) const;
    // Where in the run node n is running: ", iteration 2 of 5, pass 7 of 20
    // of the repeat at line 3" (each enclosing repeat, outermost first).
    std::string run_position(const Node& n) const;

    const Graph* g_ = nullptr;  // the loaded executable (load)
    const Plan* plan_ = nullptr;
    SessionOptions opts_;
    DeviceFactory factory_;
    DeviceMap devices_;
    std::optional<Error> open_error_;  // a device that could not be opened
    std::optional<Error> load_error_;  // the constructor's load()
    // What the per-node path reads, per node, compiled once: one record and
    // its inputs' fixed parts back to back, so that a chain of tiny nodes
    // touches a few cache lines per node rather than the Graph's nodes.
    struct ExecNode {
        Kernel* kernel = nullptr;  // null for an alias (and for a node that never runs)
        Device* dev = nullptr;
        uint64_t bytes = 0;        // of the output buffer, as the static plan counts it
        TensorRef out;             // dtype, shape, numel; data set per run
        uint32_t first_input = 0;  // into exec_inputs_
        uint32_t n_inputs = 0;
        NodeId alias_of = kNoNode;  // reshape/identity sharing its input's buffer
        NodeId donor = kNoNode;     // the input whose buffer it may take (Plan::donor; none under close)
        bool input = false;         // an `input` node: its kernel takes the run's feed
        int32_t weight = -1;        // a weight (is_weight): its frame buffer, placed at load
    };
    // A weight's memory, held from load to close (or the next load).
    struct Weight {
        int32_t buf;
        void* data;
        uint64_t bytes;
        Allocator* alloc;
        bool adopted;  // the graph's own bytes, used in place (a CPU weight): counted, not allocated
    };
    std::vector<Weight> weights_;
    // The loaded plan's Plan::cpu_offset, or nullptr: no buffer is planned
    // (none is large enough, the plan has loops, or the strategy is close).
    const uint64_t* planned_ = nullptr;
    // Places node n's constant (`bytes`: its buffer's; `packed`: its pre-packed
    // bytes, or nullptr) on `dev` as a weight: `buf`, its frame buffer.
    std::optional<Error> place_weight(const Node& n, const PrepackedWeight* packed, uint64_t bytes, Device& dev,
                                      int32_t& buf);
    void release_weights();  // after every value has dropped them
    struct ExecInput {
        NodeId id;
        TensorRef ref;  // dtype, shape, numel; data set per run
    };
    std::vector<ExecNode> exec_;          // per node
    std::vector<ExecInput> exec_inputs_;
    std::vector<std::unique_ptr<Kernel>> kernels_;
    std::vector<PendingRelease> scratch_;  // the running node's copies of inputs from other devices
    std::vector<TensorRef> scratch_inputs_;
    std::unique_ptr<ThreadPool> pool_;  // the CPU kernels' workers (--threads)
    KernelContext ctx_;

    // Declared after devices_: destroyed before the allocators they refer to.
    std::unique_ptr<Cleanup> cleanup_;
    // The strategy holds every buffer until close: no donors, scratch copies held.
    const bool holds_all_;
    ExecutionFrame frame_;
    std::optional<PlanWalker> walker_;  // over the loaded plan
    bool holding_ = false;  // the last pass's outputs (Plan::held) are still referenced
    bool failed_ = false;   // the last run stopped at an error: the frame holds what it left

    std::vector<OpProfile> op_profile_;  // by OpKind

    int64_t pass_ = 0, iterations_ = 0;  // the pass running (from 0), of how many
    RunObserver* const observer_;        // SessionOptions::observer
    // run_node_instrumented rather than run_node: profile, or observer_ wants nodes.
    const bool instrumented_;
    std::vector<LoopPass> position_;  // observe_pass_end's, reused
    bool closed_ = false;
    double run_ms_ = 0, teardown_ms_ = 0;
};

}  // namespace graphrun
