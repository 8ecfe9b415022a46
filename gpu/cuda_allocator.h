// The GPU's allocator: a memory pool of its own per session, on the session's
// stream, counted by the one accounting path (CountingAllocator, SPEC section 4).
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

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
class CudaAllocator final : public CountingAllocator<CudaAllocator> {
  public:
    // Creates the pool on `device`; throws CudaError when it cannot. `stream`
    // stays owned by the caller and must outlive destroy().
    CudaAllocator(int device, cudaStream_t stream, uint64_t limit_bytes);
    ~CudaAllocator() override;  // destroy(), in case the device did not


    // Teardown: waits for the stream, trims and destroys the pool. Idempotent;
    // logs CUDA errors, never throws. Buffers released later are freed on the
    // legacy default stream.
    void destroy();

  private:
    friend class CountingAllocator<CudaAllocator>;
    // nullptr when the device has no memory left even after the pool's cache
    // was trimmed, or after destroy().
    void* obtain_locked(uint64_t bytes);
    void give_back_locked(void* p, uint64_t bytes);
    // Waits for the stream, then gives every cached block back to the driver.
    void trim_locked();
    uint64_t reserved_locked() const;
    void* pool_malloc(uint64_t bytes, cudaError_t* err);

    const int device_;
    const cudaStream_t stream_;
    cudaMemPool_t pool_ = nullptr;  // under mu_, as is its lifetime
    std::atomic<bool> free_failure_logged_{false};
};

}  // namespace graphrun::gpu
