// What every GPU kernel family shares: the checked, non-throwing run() of a
// node's kernel, grid-stride launch geometry, the fixed-rank stride tables
// passed by value to kernels, stream-ordered scratch memory and the device
// error flag.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/kernels/common/kernel.h"
#include "engine/kernels/common/kernel_common.h"
#include "gpu/cuda_check.h"
#include "gpu/gpu_context.h"

namespace graphrun::gpu {

// Validation caps ranks at 32; merged stride tables never have more dims.
constexpr int kMaxRank = 32;
constexpr int kBlock = 256;          // threads per block of the elementwise kernels
constexpr int64_t kMaxGrid = 65535;  // blocks of a grid-stride launch, at most

// A data error of the computation (integer division by zero): run() returns
// its text unchanged.
class DataError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// A walk over some dims of a contiguous tensor, outermost first: flat index ->
// element offset. Passed to kernels by value (as a __grid_constant__). Most
// walks have at most the rank's dims; tile's has two per axis (WideDims).
template <int N>
struct DimsOf {
    int rank = 0;
    int64_t size[N] = {};
    int64_t stride[N] = {};
};
using Dims = DimsOf<kMaxRank>;
using WideDims = DimsOf<2 * kMaxRank>;

// The element offset of flat index i (row-major over d's sizes). The
// outermost dim takes the quotient unreduced, so a one-dim walk divides nothing.
template <int N>
__device__ inline int64_t dims_offset(const DimsOf<N>& d, int64_t i) {
    int64_t off = 0;
    for (int k = d.rank - 1; k > 0; --k) {
        const int64_t q = i / d.size[k];
        off += (i - q * d.size[k]) * d.stride[k];
        i = q;
    }
    if (d.rank > 0) off += i * d.stride[0];
    return off;
}

__device__ inline int64_t thread_index() {
    return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t thread_count() {
    return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

// Blocks for a grid-stride loop over n items with `block` threads each.
inline unsigned grid_for(int64_t n, int block = kBlock) {
    int64_t blocks = (n + block - 1) / block;
    if (blocks < 1) blocks = 1;
    if (blocks > kMaxGrid) blocks = kMaxGrid;
    return static_cast<unsigned>(blocks);
}

// How a reduction of `outputs` results over `len` elements each is cut into
// chunks (reduce.cu, arg_reduce.cu): with few results and a long axis each is
// split, so that the GPU has enough blocks (`block`: a block per chunk) or
// threads (a thread per chunk) to fill it; the chunks' partial results are
// combined by a second kernel. Every chunk is non-empty; splits == 1 means
// none is split.
constexpr int kReduceBlock = 256;          // threads of a block-per-chunk kernel (a power of two)
constexpr int64_t kBlockTarget = 4096;     // blocks worth splitting a reduction for
constexpr int64_t kBlockChunk = 4096;      // input elements per block, at least, when split
constexpr int64_t kSerialTarget = 262144;  // threads worth splitting a reduction for
constexpr int64_t kSerialChunk = 256;      // input elements per thread, at least, when split

struct ReductionSplit {
    int64_t chunk = 0;   // elements of the axis per chunk
    int64_t splits = 1;  // chunks per result
};

inline ReductionSplit split_reduction(int64_t outputs, int64_t len, bool block) {
    const int64_t target = block ? kBlockTarget : kSerialTarget;
    const int64_t min_chunk = block ? kBlockChunk : kSerialChunk;
    int64_t splits = 1;
    if (outputs < target && len >= 2 * min_chunk)
        splits = std::min((len + min_chunk - 1) / min_chunk, (target + outputs - 1) / outputs);
    ReductionSplit s;
    s.chunk = (len + splits - 1) / splits;
    s.splits = (len + s.chunk - 1) / s.chunk;  // every chunk non-empty
    return s;
}

// Every kernel that launch() launches, registered when the plugin is loaded
// (a variable template's initialiser per kernel), so that a device can load
// them all when it opens (preload_kernels, gpu/kernels/common.cu), before it
// reads the free memory its default limit comes from: with CUDA's lazy
// loading (the default since 12.2) a kernel's module would otherwise be
// loaded, into device memory that no limit counted, at its first launch.
bool register_kernel(const void* kernel);
const std::vector<const void*>& registered_kernels();
template <auto Kernel>
inline const bool kKernelRegistered = register_kernel(reinterpret_cast<const void*>(Kernel));

// preload_kernels() (gpu_context.h) loads them.

// Launches Kernel<<<grid, block, 0, ctx.stream>>>(args...) and checks the
// launch. A launch that finds no device memory (a kernel's module to load, its
// local memory) is tried once more after the stream is synchronized and the
// pool's cache given back (ctx.trim_memory); any other failure throws CudaError.
template <auto Kernel, class... Args>
void launch(GpuContext& ctx, dim3 grid, dim3 block, const Args&... args) {
    (void)kKernelRegistered<Kernel>;
    Kernel<<<grid, block, 0, ctx.stream>>>(args...);
    cudaError_t err = cudaGetLastError();
    if (err == cudaErrorMemoryAllocation && ctx.trim_memory) {
        ctx.trim_memory();
        Kernel<<<grid, block, 0, ctx.stream>>>(args...);
        err = cudaGetLastError();
    }
    if (err != cudaSuccess)
        throw CudaError(cuda_error_text(err), "Kernel<<<grid, block, 0, ctx.stream>>>(args...)", __FILE__,
                        __LINE__);
}

// The base of every GPU kernel: checks the executor's buffers before
// compute() launches anything (NodeKernel), makes the context's device
// current, and turns any exception into run()'s error.
class GpuKernel : public kernels::NodeKernel {
  public:
    GpuKernel(const Graph& g, const Node& n, GpuContext& ctx) : NodeKernel(g, n), ctx_(ctx) {}
    std::string run(const TensorRef* inputs, size_t n_inputs, TensorRef& out,
                    const KernelContext& kctx) final;

  protected:
    // Enqueues the work on ctx_.stream. Throws CudaError on a CUDA failure,
    // DataError on a data error. Called only with checked buffers.
    virtual void compute(const TensorRef* inputs, TensorRef& out) = 0;

    GpuContext& ctx_;
};

// Stream-ordered scratch memory from the session's counting allocator,
// released when the owner goes out of scope (after the launches that use it
// have been enqueued). Throws when the allocator refuses.
class Scratch {
  public:
    Scratch(GpuContext& ctx, uint64_t bytes, const char* what);
    // As above, but get() is nullptr when the allocator refuses (after the
    // session's second chance), for a caller that then tries a smaller buffer
    // (conv's tiles). `bytes` > 0.
    Scratch(GpuContext& ctx, uint64_t bytes, std::nothrow_t);
    ~Scratch();
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    void* get() const { return p_; }

  private:
    GpuContext& ctx_;
    void* p_ = nullptr;
    uint64_t bytes_ = 0;
};

// Waits for the stream, returns the device error flag and clears it.
int take_error_flag(GpuContext& ctx);

}  // namespace graphrun::gpu
