// The GPU's counting allocator: a memory pool of its own per session, on the
// session's stream, feeding the one statistics struct (SPEC section 4).
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "engine/runtime/allocator.h"

namespace graphrun::gpu {

// Stream-ordered allocation from a private cudaMemPool_t: a buffer is handed
// out again only after every kernel queued on the stream before its free has
// finished, whichever thread freed it, so the background reclaimer may release
// a tensor as soon as its last reader has been queued, without waiting for the
// GPU. Freed blocks stay cached in the pool (release threshold raised to the
// maximum) until trim(); `reserved` is what the pool holds from the driver.
//
// Thread-safe: the executor allocates while the reclaimer releases. Every
// entry point first makes the device current on the calling thread.
class CudaAllocator final : public Allocator {
  public:
    // Creates the pool on `device`; throws CudaError when it cannot. `stream`
    // stays owned by the caller and must outlive destroy().
    CudaAllocator(int device, cudaStream_t stream, uint64_t limit_bytes);
    ~CudaAllocator() override;  // destroy(), in case the device did not
    CudaAllocator(const CudaAllocator&) = delete;
    CudaAllocator& operator=(const CudaAllocator&) = delete;

    // nullptr when in_use + bytes would exceed the limit, when the device has
    // no memory left even after the pool's cache was trimmed, or when the test
    // hook g_fail_allocation_countdown says so.
    void* allocate(uint64_t bytes) override;
    void release(void* p, uint64_t bytes) override;
    // A buffer that was never pending: an input's scratch copy, a kernel's
    // scratch memory, the device's own buffers.
    void release_scratch(void* p, uint64_t bytes) override;
    void add_pending(uint64_t bytes) override;
    // Waits for the stream, then gives every cached block back to the driver.
    void trim() override;
    MemoryStats stats() const override;
    void add_copied_in(uint64_t bytes) override;
    uint64_t limit() const override { return limit_; }

    // For the device's own long-lived buffers (cuBLAS workspace, error flag):
    // counted like any buffer, but not subject to the failure-injection hook,
    // so that an injected failure lands on the graph's buffers and not on
    // opening the device.
    void* allocate_untested(uint64_t bytes);

    // Teardown: waits for the stream, trims and destroys the pool. Idempotent;
    // logs CUDA errors, never throws. Buffers released later are freed on the
    // legacy default stream.
    void destroy();

  private:
    void* allocate_counted(uint64_t bytes);
    void release_locked(void* p, uint64_t bytes);
    void* pool_malloc(uint64_t bytes, cudaError_t* err);

    const int device_;
    const cudaStream_t stream_;
    const uint64_t limit_;
    mutable std::mutex mu_;  // guards s_, pool_ and the pool's lifetime
    MemoryStats s_;
    cudaMemPool_t pool_ = nullptr;
    std::atomic<bool> free_failure_logged_{false};
};

}  // namespace graphrun::gpu
