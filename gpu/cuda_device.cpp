// The CUDA device of one session: opening (stream, pool, cuBLAS, workspace,
// error flag), copies, synchronisation and teardown in reverse order.
#include "gpu/cuda_device.h"

#include <algorithm>

#include "gpu/cublas_api.h"
#include "gpu/cuda_check.h"

namespace graphrun::gpu {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// The text of a failed call, in CudaError's words: what, the call, the place.
// cuda_error_text, as GR_CUDA_THROW's: a sticky fault of earlier work (an
// illegal address) surfaces here, at the synchronize() after a run or the
// copy of a node's input, and must not read as that copy's failure.
std::string cuda_message(cudaError_t err, const char* expr, const char* file, int line) {
    return CudaError(cuda_error_text(err), expr, file, line).what();
}

}  // namespace
}  // namespace graphrun::gpu

// For the Device entry points that answer "" or an error message.
#define GR_CUDA_RETURN_MESSAGE(expr)                                                  \
    do {                                                                              \
        cudaError_t gr_err_ = (expr);                                                 \
        if (gr_err_ != cudaSuccess)                                                   \
            return ::graphrun::gpu::cuda_message(gr_err_, #expr, __FILE__, __LINE__); \
    } while (0)

namespace graphrun::gpu {

void StreamDestroyer::operator()(cudaStream_t s) const noexcept {
    GR_CUDA_LOG(cudaStreamDestroy(s));
}

void EventDestroyer::operator()(cudaEvent_t e) const noexcept {
    GR_CUDA_LOG(cudaEventDestroy(e));
}

void CublasDestroyer::operator()(cublasHandle_t h) const noexcept {
    // A handle exists only where cuBLAS was loaded.
    const CublasApi* api = cublas_api(nullptr);
    cublasStatus_t st = api ? api->destroy(h) : CUBLAS_STATUS_NOT_INITIALIZED;
    if (st != CUBLAS_STATUS_SUCCESS)
        log_cuda_failure(std::string("cuBLAS error ") + cublas_status_name(st), "cublasDestroy(h)",
                         __FILE__, __LINE__);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
        reset();
        alloc_ = o.alloc_;
        p_ = o.p_;
        bytes_ = o.bytes_;
        o.p_ = nullptr;
        o.bytes_ = 0;
    }
    return *this;
}

void DeviceBuffer::reset() noexcept {
    if (p_ && alloc_) alloc_->release_workspace(p_, bytes_);
    p_ = nullptr;
    bytes_ = 0;
}

CudaDevice::CudaDevice(int index, const GpuDeviceOptions& opts)
    : index_(index), name_(DeviceName{DeviceKind::Gpu, index}.str()), reset_device_(opts.reset_device) {
    std::string no_cublas;
    if (!cublas_api(&no_cublas)) throw CudaError(no_cublas, "cublas_api()", __FILE__, __LINE__);
    // The device's attributes are read before cudaSetDevice, which creates its
    // primary context: a GPU this build cannot use gets none (a context would
    // hold its memory until the process ends, --reset-device or not).
    int major = 0, minor = 0, pools = 0;
    GR_CUDA_THROW(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, index_));
    GR_CUDA_THROW(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, index_));
    if (major < kMinComputeCapabilityMajor)
        throw CudaError(unsupported_reason(major, minor), "cudaDevAttrComputeCapabilityMajor",
                        __FILE__, __LINE__);
    GR_CUDA_THROW(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, index_));
    if (!pools)
        throw CudaError("the GPU (or its driver) does not support stream-ordered memory pools",
                        "cudaDevAttrMemoryPoolsSupported", __FILE__, __LINE__);
    // Makes the device current and creates its primary context.
    GR_CUDA_THROW(cudaSetDevice(index_));

    // Everything that takes device memory the allocator does not count comes
    // before the free memory is read: every kernel of the plugin, loaded now
    // (with CUDA's lazy loading it would be at its first launch), the stream,
    // and the cuBLAS handle (its own allocations).
    preloaded_ = preload_kernels();

    // Non-blocking: the session's stream never waits for the legacy default
    // stream that libraries or other code in the process may use.
    cudaStream_t stream = nullptr;
    GR_CUDA_THROW(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    stream_.reset(stream);

    cublasHandle_t handle = nullptr;
    GR_CUBLAS_THROW(cublas().create(&handle));
    cublas_.reset(handle);
    // cublasSetStream resets the workspace to cuBLAS's own: set the stream first.
    GR_CUBLAS_THROW(cublas().set_stream(handle, stream));
    GR_CUBLAS_THROW(cublas().set_math_mode(
        handle, opts.allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));

    // The memory limit: --memory-limit, else what is free now, less a headroom
    // of max(512 MiB, 5% of it) for what is not counted and comes later:
    // kernels cuBLAS loads at its first call of a kind, other processes'
    // growth. It holds tensors and workspace together (MemoryStats): the
    // cuBLAS workspace and error flag below come out of it.
    uint64_t limit = opts.memory_limit;
    if (limit == 0) {
        size_t free_bytes = 0, total_bytes = 0;
        GR_CUDA_THROW(cudaMemGetInfo(&free_bytes, &total_bytes));
        const uint64_t headroom = std::max<uint64_t>(512 * kMiB, free_bytes / 20);
        // A card with less than that free keeps half of what is free.
        limit = free_bytes > headroom ? free_bytes - headroom : free_bytes / 2;
    }
    allocator_ = std::make_unique<CudaAllocator>(index_, stream, limit);

    // The cuBLAS workspace comes from the counting allocator, as workspace,
    // so that no buffer bypasses it (otherwise cuBLAS cudaMallocs its own).
    // Size: what the cuBLAS documentation recommends, 32 MiB on Hopper and
    // newer, 4 MiB before, but never more than an eighth of the memory limit,
    // so that a small --memory-limit is left to the graph; below 64 KiB none
    // at all (cuBLAS then runs without a workspace, on slower algorithms).
    uint64_t workspace = major >= 9 ? 32 * kMiB : 4 * kMiB;
    while (workspace >= 128 * 1024 && workspace * 8 > limit) workspace /= 2;
    if (workspace * 8 > limit) workspace = 0;
    if (workspace > 0) {
        // Pool blocks are aligned to at least 256 bytes, as cuBLAS requires.
        void* p = allocator_->allocate_workspace(workspace, false);
        if (p) workspace_ = DeviceBuffer(allocator_.get(), p, workspace);
    }
    GR_CUBLAS_THROW(cublas().set_workspace(handle, workspace_.get(), workspace_.bytes()));

    // The flag a kernel raises for a data error (integer division by zero).
    constexpr uint64_t kFlagBytes = 64;  // one int, counted in the 64-byte granule
    void* flag = allocator_->allocate_workspace(kFlagBytes, false);
    if (!flag)
        throw CudaError("no room for the device's 64-byte error flag within the memory limit of " +
                            std::to_string(limit) + " bytes",
                        "allocator_->allocate_workspace(kFlagBytes, false)", __FILE__, __LINE__);
    error_flag_ = DeviceBuffer(allocator_.get(), flag, kFlagBytes);
    GR_CUDA_THROW(cudaMemsetAsync(flag, 0, kFlagBytes, stream));

    cudaEvent_t ev = nullptr;
    GR_CUDA_THROW(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    ready_.reset(ev);
    GR_CUDA_THROW(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    done_.reset(ev);
    GR_CUDA_THROW(cudaStreamSynchronize(stream));

    ctx_.device = index_;
    ctx_.stream = stream;
    ctx_.cublas = handle;
    ctx_.allow_tf32 = opts.allow_tf32;
    ctx_.host_kernel = opts.host_kernel;
    CudaAllocator* alloc = allocator_.get();
    // A failed scratch allocation takes the session's second chance, as a
    // tensor's: the strategy's backlog goes back and the allocation is tried
    // once more (the allocator itself syncs and trims on a device failure).
    ctx_.scratch_alloc = [this, alloc](uint64_t bytes) {
        const uint64_t rounded = round_up_64(bytes);
        void* p = alloc->allocate_workspace(rounded, true);
        if (!p && retry_ && retry_(rounded)) p = alloc->allocate_workspace(rounded, true);
        return p;
    };
    ctx_.scratch_free = [alloc](void* p, uint64_t bytes) {
        alloc->release_workspace(p, round_up_64(bytes));
    };
    ctx_.session_alloc = [alloc](uint64_t bytes) {
        return alloc->allocate_workspace(round_up_64(bytes), false);
    };
    ctx_.session_free = [alloc](void* p, uint64_t bytes) {
        alloc->release_workspace(p, round_up_64(bytes));
    };
    ctx_.trim_memory = [alloc] { alloc->trim(); };
    ctx_.error_flag = static_cast<int*>(flag);
}

CudaDevice::~CudaDevice() {
    close();
}

bool CudaDevice::supports(OpKind op, DType dtype) const {
    return gpu_runs(op, dtype);
}

std::unique_ptr<Kernel> CudaDevice::make_kernel(const Graph& g, const Node& n) {
    return make_gpu_kernel(g, n, ctx_);
}

std::string CudaDevice::copy_from_host(void* dst, const void* src, uint64_t bytes) {
    if (bytes == 0) return "";
    if (closed_) return name_ + " is closed";
    GR_CUDA_RETURN_MESSAGE(cudaSetDevice(index_));
    GR_CUDA_RETURN_MESSAGE(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_.get()));
    // The caller may free the host source as soon as this returns.
    GR_CUDA_RETURN_MESSAGE(cudaStreamSynchronize(stream_.get()));
    return "";
}

std::string CudaDevice::copy_to_host(void* dst, const void* src, uint64_t bytes) {
    if (bytes == 0) return "";
    if (closed_) return name_ + " is closed";
    GR_CUDA_RETURN_MESSAGE(cudaSetDevice(index_));
    GR_CUDA_RETURN_MESSAGE(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_.get()));
    GR_CUDA_RETURN_MESSAGE(cudaStreamSynchronize(stream_.get()));
    return "";
}

std::optional<std::string> CudaDevice::copy_from_device(void* dst, Device& src, const void* src_ptr,
                                                        uint64_t bytes) {
    auto* peer = dynamic_cast<CudaDevice*>(&src);
    if (!peer || peer == this || closed_ || peer->closed_) return std::nullopt;
    if (bytes == 0) return "";
    // Only where the two GPUs reach each other: the copy engines then move
    // the bytes directly; otherwise the session goes through the host. The
    // pools grant no access to each other (cudaMemPoolSetAccess): a peer copy
    // needs none, some drivers lose peer copies into a pool that granted it
    // (JuliaGPU/CUDA.jl#3112), and an access a reset context leaves behind in
    // another device's pool is one more stale object.
    int can = 0;
    GR_CUDA_RETURN_MESSAGE(cudaDeviceCanAccessPeer(&can, index_, peer->index_));
    if (!can) return std::nullopt;
    // The copy waits for the source's work so far (its producer)...
    GR_CUDA_RETURN_MESSAGE(cudaSetDevice(peer->index_));
    GR_CUDA_RETURN_MESSAGE(cudaEventRecord(peer->ready_.get(), peer->stream_.get()));
    GR_CUDA_RETURN_MESSAGE(cudaSetDevice(index_));
    GR_CUDA_RETURN_MESSAGE(cudaStreamWaitEvent(stream_.get(), peer->ready_.get(), 0));
    GR_CUDA_RETURN_MESSAGE(
        cudaMemcpyPeerAsync(dst, index_, src_ptr, peer->index_, bytes, stream_.get()));
    // ...and the source's later work (the stream-ordered free of the buffer
    // read here) waits for the copy.
    GR_CUDA_RETURN_MESSAGE(cudaEventRecord(done_.get(), stream_.get()));
    GR_CUDA_RETURN_MESSAGE(cudaSetDevice(peer->index_));
    GR_CUDA_RETURN_MESSAGE(cudaStreamWaitEvent(peer->stream_.get(), done_.get(), 0));
    GR_CUDA_RETURN_MESSAGE(cudaSetDevice(index_));
    return "";
}

std::string CudaDevice::synchronize() {
    if (closed_) return "";
    GR_CUDA_RETURN_MESSAGE(cudaSetDevice(index_));
    GR_CUDA_RETURN_MESSAGE(cudaStreamSynchronize(stream_.get()));
    // A launch error that a kernel did not check for itself.
    GR_CUDA_RETURN_MESSAGE(cudaGetLastError());
    return "";
}

void CudaDevice::close() {
    if (closed_) return;
    closed_ = true;
    GR_CUDA_LOG(cudaSetDevice(index_));
    // A fault of the session's kernels (cudaErrorIllegalAddress, ...) is
    // sticky: it leaves the process's context on this device unusable, so
    // that every later session in this process (the next FILE) would fail
    // too. Only ending the context clears it.
    bool faulted = false;
    if (stream_) {
        cudaError_t err = cudaStreamSynchronize(stream_.get());
        if (err != cudaSuccess) {
            faulted = true;
            log_cuda_failure(
                cuda_error_text(err) + "; " + name_ + " is reset at the end of its teardown",
                "cudaStreamSynchronize(stream_.get())", __FILE__, __LINE__);
        }
    }
    ctx_ = GpuContext{};
    ctx_.device = index_;
    // Reverse order of creation. The allocator object itself stays: the
    // session reads its statistics after teardown.
    error_flag_.reset();
    workspace_.reset();
    done_.reset();
    ready_.reset();
    cublas_.reset();
    if (allocator_) allocator_->destroy();
    stream_.reset();
    // Every failed call above (after a fault, nearly all of them) left its
    // error as this thread's last one, which a reset need not clear: the
    // next session on this thread (the next FILE) would read it at its first
    // launch() or synchronize() as a failure of its own. Teardown logged them.
    // Taken before the reset: no CUDA call follows a reset that succeeded.
    (void)cudaGetLastError();
    // Ends the process's CUDA context on this device (--reset-device), so that
    // the driver's used-memory figure after teardown shows nothing of graphrun.
    if (reset_device_ || faulted) {
        const cudaError_t err = cudaDeviceReset();
        if (err != cudaSuccess) {
            log_cuda_failure(cuda_error_text(err), "cudaDeviceReset()", __FILE__, __LINE__);
            (void)cudaGetLastError();
        }
    }
}

}  // namespace graphrun::gpu
