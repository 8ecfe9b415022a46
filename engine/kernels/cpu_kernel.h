// The CPU kernel interface: one kernel object per node, prepared once before a
// run (attributes read, broadcast strides computed), then run on buffers that
// the executor allocates through the counting allocator.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "engine/dtype.h"
#include "engine/graph.h"

namespace graphrun {

// A tensor buffer as a kernel sees it: row-major, contiguous.
struct TensorRef {
    void* data = nullptr;  // may be null when numel == 0
    DType dtype = DType::F32;
    const Shape* shape = nullptr;
    int64_t numel = 0;
};

struct KernelContext {
    int threads = 1;  // worker threads a kernel may use (--threads)
};

class CpuKernel {
public:
    virtual ~CpuKernel() = default;
    // Computes the node's output into `out` (allocated with the node's dtype
    // and shape). Returns an error message for a runtime error of the data
    // (integer division by zero, ...), or "" on success. Never throws.
    virtual std::string run(const TensorRef* inputs, size_t n_inputs, TensorRef& out, const KernelContext& ctx) = 0;
};

// The kernel for a validated node (every op of SPEC section 3 except LoopParam
// and Invalid). reshape and identity copy their input; the executor skips them
// when they alias.
std::unique_ptr<CpuKernel> make_cpu_kernel(const Graph& g, const Node& n);

}  // namespace graphrun
