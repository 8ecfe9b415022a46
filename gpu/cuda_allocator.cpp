// The GPU allocator: a stream-ordered CUDA memory pool behind CountingAllocator.
#include "gpu/cuda_allocator.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "gpu/cuda_check.h"

namespace graphrun::gpu {

CudaAllocator::CudaAllocator(int device, cudaStream_t stream, uint64_t limit_bytes)
    : CountingAllocator(limit_bytes), device_(device), stream_(stream) {
    GR_CUDA_THROW(cudaSetDevice(device_));
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device_;
    GR_CUDA_THROW(cudaMemPoolCreate(&pool_, &props));
    // Keep freed blocks for reuse for as long as the session runs (the default
    // threshold, 0, hands memory back to the driver at every synchronisation);
    // trim() gives them back.
    uint64_t threshold = std::numeric_limits<uint64_t>::max();
    cudaError_t err = cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold);
    if (err != cudaSuccess) {
        GR_CUDA_LOG(cudaMemPoolDestroy(pool_));
        pool_ = nullptr;
        GR_CUDA_THROW(err);
    }
}

CudaAllocator::~CudaAllocator() {
    destroy();
}

void* CudaAllocator::pool_malloc(uint64_t bytes, cudaError_t* err) {
    void* p = nullptr;
    *err = cudaMallocFromPoolAsync(&p, bytes, pool_, stream_);
    return *err == cudaSuccess ? p : nullptr;
}

void* CudaAllocator::obtain_locked(uint64_t bytes) {
    if (!pool_) return nullptr;  // after destroy()
    GR_CUDA_LOG(cudaSetDevice(device_));
    cudaError_t err = cudaSuccess;
    void* p = pool_malloc(bytes, &err);
    if (err == cudaErrorMemoryAllocation) {
        // The device is full. A failed allocation leaves its error as the
        // thread's last error; clear it, or the next synchronize() would
        // report it as a fault of some kernel.
        (void)cudaGetLastError();
        // The pool may hold enough cached memory, but in blocks of other
        // sizes: wait until every queued free has happened, hand the cache
        // back to the driver and try once more.
        GR_CUDA_LOG(cudaStreamSynchronize(stream_));
        GR_CUDA_LOG(cudaMemPoolTrimTo(pool_, 0));
        p = pool_malloc(bytes, &err);
        if (err == cudaErrorMemoryAllocation) (void)cudaGetLastError();
    }
    if (err != cudaSuccess) {
        // Anything but plain exhaustion (a broken context, say) would
        // otherwise surface as a bare "out of memory": say what it was.
        if (err != cudaErrorMemoryAllocation)
            log_cuda_failure(cuda_error_text(err),
                             "cudaMallocFromPoolAsync(&p, bytes, pool_, stream_)", __FILE__,
                             __LINE__);
        return nullptr;
    }
    return p;
}

void CudaAllocator::give_back_locked(void* p, uint64_t bytes) {
    (void)bytes;  // the pool knows each block's size
    if (!p) return;
    // The reclaimer thread calls this too: the device must be current on it.
    cudaError_t err = cudaSetDevice(device_);
    // Stream-ordered: the block returns to the pool once the stream has
    // finished every kernel queued before this point, which includes every
    // reader of the tensor. After destroy() the stream is gone: the legacy
    // default stream orders the free after all earlier work on the device.
    if (err == cudaSuccess) err = cudaFreeAsync(p, pool_ ? stream_ : nullptr);
    // After a fault (cudaErrorIllegalAddress is sticky) every free fails the
    // same way: say it once, not once per tensor.
    if (err != cudaSuccess && !free_failure_logged_.exchange(true))
        log_cuda_failure(
            cuda_error_text(err) + "; later failures to free GPU buffers are not shown",
            "cudaFreeAsync(p, stream_)", __FILE__, __LINE__);
}

void CudaAllocator::trim_locked() {
    if (!pool_) return;
    GR_CUDA_LOG(cudaSetDevice(device_));
    // Frees still queued on the stream count as outstanding: wait for them,
    // or trimming would leave their blocks reserved.
    GR_CUDA_LOG(cudaStreamSynchronize(stream_));
    GR_CUDA_LOG(cudaMemPoolTrimTo(pool_, 0));
}

// What the pool really holds from the driver, in the driver's own granularity
// (2 MiB and up), not a sum of our sizes: that is the figure a user compares
// with the driver's used memory, and it is exactly 0 once trim() has given
// everything back.
uint64_t CudaAllocator::reserved_locked() const {
    if (!pool_) return 0;
    uint64_t reserved = 0;
    cudaError_t err = cudaSetDevice(device_);
    if (err == cudaSuccess) err = cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &reserved);
    // When the context is broken, the pool holds at least what is in use.
    return err == cudaSuccess ? reserved : in_use_locked();
}

void CudaAllocator::destroy() {
    std::lock_guard<BriefMutex> lock(mu_);
    if (!pool_) return;
    trim_locked();
    // With buffers still outstanding (a leak the statistics show), the driver
    // frees the pool once they are freed; destroying it is still right.
    GR_CUDA_LOG(cudaMemPoolDestroy(pool_));
    pool_ = nullptr;
}

}  // namespace graphrun::gpu
