// What a session is opened with and what it gives back: options, the cleanup
// strategy's name, outputs fetched to the host, per-op profile totals and the
// error of a run. session.h re-exports it.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/base/error.h"
#include "engine/ir/dtype.h"
#include "engine/ir/graph.h"
#include "engine/runtime/device.h"

namespace graphrun {

class RunObserver;  // run_observer.h

// When unreferenced tensors go back to their allocator (SPEC section 4).
enum class CleanupStrategy { Background, Safepoint, Close };
const char* cleanup_name(CleanupStrategy s);

// Where a run is, for a progress display that polls it from another thread.
// Written only at the start of a top-level repeat, at the end of each of its
// passes and at the end of each pass of the run (relaxed stores), never per node.
struct RunProgress {
    std::atomic<int64_t> passes_done{0};  // of the run's iterations
    // The top-level repeat running in the current pass (-1: none yet), its
    // source line, its count and how many passes of it have ended.
    std::atomic<int32_t> repeat{-1};
    std::atomic<uint32_t> repeat_line{0};
    std::atomic<int64_t> repeat_count{0};
    std::atomic<int64_t> repeat_passes_done{0};
};

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
    RunProgress* progress = nullptr;  // updated as the run goes, when set
    // Watches the run (--timeline, --trace, compare); optional. Outlives the session.
    RunObserver* observer = nullptr;
    // Test hook: given to every device allocator the session opens
    // (Allocator::set_failure_countdown). Optional; outlives the session.
    std::atomic<int64_t>* fail_allocation_countdown = nullptr;
};

// The options with their defaults filled in (the CPU's memory limit); both
// executors open with these.
SessionOptions with_defaults(SessionOptions opts);

// Milliseconds since t0, for the run and teardown times.
inline double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The value of one `input` node for a run: host bytes of the node's dtype and
// shape, which the caller keeps until the run returns. Feeds are handed to
// the input's kernel, never written into the graph.
struct FeedView {
    NodeId id = kNoNode;
    const void* data = nullptr;
    uint64_t bytes = 0;
};

// Per-op totals of a profiled run.
struct OpProfile {
    std::string op;
    uint64_t count = 0;
    double ms = 0;
    uint64_t bytes = 0;  // allocated for outputs
};

// The ops that ran (count > 0) of a per-op table, slowest first.
std::vector<OpProfile> slowest_first(const std::vector<OpProfile>& per_op);

// An output copied to the host for the report; belongs to no allocator.
struct HostTensor {
    std::string name;
    DType dtype = DType::F32;
    Shape shape;
    std::string device;
    std::vector<uint8_t> data;
};

}  // namespace graphrun
