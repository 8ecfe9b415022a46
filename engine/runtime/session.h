// A session: runs a compiled plan pass after pass on the devices' allocators,
// releases unreferenced tensors by its cleanup strategy (SPEC section 4), and
// tears everything down on close, after errors too.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/runtime/allocator.h"
#include "engine/runtime/device.h"
#include "engine/ir/graph.h"
#include "engine/kernels/common/kernel.h"
#include "engine/plan/plan.h"
#include "engine/base/thread_pool.h"

namespace graphrun {

enum class CleanupStrategy { Background, Safepoint, Close };
const char* cleanup_name(CleanupStrategy s);

struct SessionOptions {
    CleanupStrategy cleanup = CleanupStrategy::Background;
    int threads = 1;
    uint64_t cpu_memory_limit = 0;  // 0: default_cpu_memory_limit()
    // GPUs: opened through this runtime (the CUDA plugin); nodes placed on a
    // GPU need it. gpu.memory_limit 0 means the card's free memory.
    GpuRuntime* gpu_runtime = nullptr;
    GpuDeviceOptions gpu;
    bool profile = false;           // time every node (--profile)
    // Set asynchronously (a signal handler) to the signal's number to stop the
    // run at the next node boundary. Optional.
    const std::atomic<int>* interrupt = nullptr;
};

// Per-op totals of a profiled run.
struct OpProfile {
    std::string op;
    uint64_t count = 0;
    double ms = 0;
    uint64_t bytes = 0;  // allocated for outputs
};

// An output copied to the host for the report; belongs to no allocator.
struct HostTensor {
    std::string name;
    DType dtype = DType::F32;
    Shape shape;
    std::string device;
    std::vector<uint8_t> data;
};

struct RunError {
    std::string message;
    Loc loc;
    int signal = 0;  // the run was interrupted by this signal
};

class Session {
public:
    // Opens the session: allocators, kernels, and (background) the reclaimer thread.
    Session(const Graph& g, const Plan& plan, SessionOptions opts);
    ~Session();  // closes if close() was not called
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // Runs `iterations` passes, then copies `outputs` to the host. Stops at the
    // first error; the session stays open so that statistics can be taken.
    std::optional<RunError> run(int64_t iterations, const std::vector<Output>& outputs,
                                std::vector<HostTensor>& fetched);
    // Statistics per device the session used.
    std::map<std::string, MemoryStats> stats() const;
    // The memory limit of each device the session opened.
    std::map<std::string, uint64_t> limits() const;
    // Teardown: releases every remaining tensor, joins the reclaimer, gives
    // every allocator cache back to the system. Idempotent.
    void close();

    // Per-op totals, slowest first (empty unless SessionOptions::profile).
    std::vector<OpProfile> profile() const;
    double run_ms() const { return run_ms_; }
    double teardown_ms() const { return teardown_ms_; }
    bool reclaimer_running() const { return reclaimer_.joinable(); }

private:
    struct Buffer {
        void* data = nullptr;
        uint64_t bytes = 0;
        int32_t refs = 0;
        Device* dev = nullptr;
    };
    using Freed = PendingRelease;

    std::optional<RunError> run_pass();
    std::optional<RunError> run_node(NodeId id);
    void drop(NodeId v);
    void share(NodeId to, NodeId from);
    void unreferenced(int32_t b);
    void safe_point();
    void release_pending_now();
    void mark_pending();
    // Releases pending buffers, one call per run of the same allocator;
    // `marked`: add_pending was called for them (mark_pending, or close at once).
    static void release_all(const Freed* items, size_t n, bool marked);
    // Hands the batch over; then, if more than `wait_above` bytes are still
    // queued, waits until the reclaimer has released them all.
    void flush_to_reclaimer(uint64_t wait_above);
    void reclaimer_loop();
    Device* device_for(std::string_view name);
    void* allocate_on(Device& dev, uint64_t bytes);
    void release_scratch();
    std::optional<RunError> copy_input(const Node& n, const Node& in, const Buffer& src, Device& dev, TensorRef& ref);
    std::string oom_message(const Node& n, uint64_t bytes, const Allocator& a, const std::string& what) const;

    const Graph& g_;
    const Plan& plan_;
    SessionOptions opts_;
    std::map<std::string, std::unique_ptr<Device>, std::less<>> devices_;
    std::optional<RunError> open_error_;  // a device that could not be opened
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
        NodeId donor = kNoNode;     // the input whose buffer it may take (Plan::donor)
    };
    struct ExecInput {
        NodeId id;
        TensorRef ref;  // dtype, shape, numel; data set per run
    };
    std::vector<ExecNode> exec_;          // per node
    std::vector<ExecInput> exec_inputs_;
    std::vector<std::unique_ptr<Kernel>> kernels_;
    std::vector<Freed> scratch_;          // the running node's copies of inputs from other devices
    std::vector<TensorRef> scratch_inputs_;
    std::vector<Buffer> bufs_;
    std::vector<int32_t> free_bufs_;
    std::vector<int32_t> value_buf_;  // per node: index into bufs_, -1 when it holds none
    std::vector<int64_t> passes_left_;
    std::unique_ptr<ThreadPool> pool_;  // the CPU kernels' workers (--threads)
    KernelContext ctx_;
    // background: a hand-over inside a pass waits when the backlog exceeds
    // backlog_limit_ (the static peak, at least kMinBacklogBytes); the one at
    // the end of a pass when it exceeds static_peak_, so that no pass starts
    // with more than one static peak of garbage and the peak cannot grow with
    // the iterations.
    uint64_t backlog_limit_ = 0;
    uint64_t static_peak_ = 0;

    // safepoint and close: the pending list; background: the batch to hand over.
    std::vector<Freed> pending_;
    uint64_t batch_bytes_ = 0;  // bytes in pending_
    // pending_[0, pending_marked_) is counted as pending (add_pending), the
    // rest not yet: safepoint and background count a batch when it goes.
    size_t pending_marked_ = 0;

    // The reclaimer thread (background only).
    std::thread reclaimer_;
    std::mutex mu_;
    std::condition_variable cv_work_, cv_drained_;
    std::vector<Freed> queue_;
    uint64_t queued_bytes_ = 0;  // handed over, not yet released
    bool stop_ = false;
    bool busy_ = false;

    std::vector<OpProfile> op_profile_;  // by OpKind

    bool closed_ = false;
    double run_ms_ = 0, teardown_ms_ = 0;
};

}  // namespace graphrun
