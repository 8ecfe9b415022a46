// The kernel interface every device implements: one kernel object per node,
// prepared once before a run (attributes read, broadcast strides computed),
// then run on buffers that the executor allocates through the device's
// counting allocator.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/ir/dtype.h"
#include "engine/ir/graph.h"

namespace graphrun {

// A tensor buffer as a kernel sees it: row-major, contiguous, in the memory of
// the kernel's device.
struct TensorRef {
    void* data = nullptr;  // may be null when numel == 0
    DType dtype = DType::F32;
    const Shape* shape = nullptr;
    int64_t numel = 0;
};

class ThreadPool;

// Temporary memory a CPU kernel needs while it runs (conv's im2col columns),
// from the device's counting allocator: counted as workspace
// (MemoryStats::workspace) under the memory limit, and given back before
// run() returns. allocate: nullptr when the limit has no room even after the
// session's second chance. Thread-safe.
class ScratchMemory {
public:
    virtual ~ScratchMemory() = default;
    virtual void* allocate(uint64_t bytes) = 0;
    virtual void release(void* p, uint64_t bytes) = 0;
};

struct KernelContext {
    int threads = 1;             // worker threads a CPU kernel may use (--threads)
    ThreadPool* pool = nullptr;  // the session's CPU workers (optional)
    ScratchMemory* scratch = nullptr;  // the CPU device's (set by the session)
};

class Kernel {
public:
    virtual ~Kernel() = default;
    // Computes the node's output into `out` (allocated with the node's dtype
    // and shape). Returns an error message for a runtime error of the data
    // (integer division by zero, a device failure, ...), or "" on success.
    // Never throws. A device kernel may return before its work has finished;
    // the device orders later work and copies after it.
    virtual std::string run(const TensorRef* inputs, size_t n_inputs, TensorRef& out, const KernelContext& ctx) = 0;
    // An `input` node's kernel: the value of the runs to come, on the host
    // (the executor calls it before each run; feeds never enter the graph).
    // `data` stays valid until the next set_feed or the kernel's end; a device
    // kernel may copy it now. "" or an error message; other kernels refuse.
    virtual std::string set_feed(const void* data, uint64_t bytes) {
        (void)data;
        (void)bytes;
        return "internal error: a feed given to a node that is not an input";
    }
};

}  // namespace graphrun
