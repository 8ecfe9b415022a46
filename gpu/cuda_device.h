// One session's GPU: its stream, memory pool, cuBLAS handle and the context
// its kernels run in, reached by the engine only through graphrun::Device.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "engine/runtime/device.h"
#include "gpu/cuda_allocator.h"
#include "gpu/gpu_context.h"

namespace graphrun::gpu {

// The oldest GPUs this build has kernels for: gpu/CMakeLists.txt compiles
// sm_80 machine code (which 8.x GPUs run) and compute_90 PTX (which 9.0 and
// newer run). Keep the two in step.
constexpr int kMinComputeCapabilityMajor = 8;

// Why this build cannot run on a GPU of compute capability major.minor (below
// kMinComputeCapabilityMajor): `graphrun devices`, placement and opening it
// all say it in these words.
inline std::string unsupported_reason(int major, int minor) {
    return "compute capability " + std::to_string(major) + "." + std::to_string(minor) +
           "; this build of graphrun has kernels for " +
           std::to_string(kMinComputeCapabilityMajor) + ".0 and newer";
}

// Move-only owners (tiny-cuda-nn's GPUMemory): each releases its handle once,
// logging a failure instead of throwing.
struct StreamDestroyer {
    void operator()(cudaStream_t s) const noexcept;
};
using StreamOwner = std::unique_ptr<std::remove_pointer_t<cudaStream_t>, StreamDestroyer>;

struct EventDestroyer {
    void operator()(cudaEvent_t e) const noexcept;
};
using EventOwner = std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, EventDestroyer>;

struct CublasDestroyer {
    void operator()(cublasHandle_t h) const noexcept;
};
using CublasOwner = std::unique_ptr<std::remove_pointer_t<cublasHandle_t>, CublasDestroyer>;

// A device buffer the device itself holds (not a tensor), counted as the
// session allocator's workspace and given back to it by reset() or the
// destructor.
class DeviceBuffer {
  public:
    DeviceBuffer() = default;
    DeviceBuffer(CudaAllocator* alloc, void* p, uint64_t bytes)
        : alloc_(alloc), p_(p), bytes_(bytes) {}
    DeviceBuffer(DeviceBuffer&& o) noexcept : alloc_(o.alloc_), p_(o.p_), bytes_(o.bytes_) {
        o.p_ = nullptr;
    }
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer() { reset(); }

    void reset() noexcept;
    void* get() const { return p_; }
    uint64_t bytes() const { return bytes_; }

  private:
    CudaAllocator* alloc_ = nullptr;
    void* p_ = nullptr;
    uint64_t bytes_ = 0;
};

class CudaDevice final : public graphrun::Device {
  public:
    // Opens GPU `index` for one session; throws CudaError (what failed, with
    // the call and its place) when it cannot. What was created before the
    // failure is destroyed in reverse order by the members' destructors.
    CudaDevice(int index, const GpuDeviceOptions& opts);
    ~CudaDevice() override;  // close()
    CudaDevice(const CudaDevice&) = delete;
    CudaDevice& operator=(const CudaDevice&) = delete;

    const std::string& name() const override { return name_; }
    DeviceKind kind() const override { return DeviceKind::Gpu; }
    graphrun::Allocator& allocator() override { return *allocator_; }
    bool supports(OpKind op, DType dtype) const override;
    std::unique_ptr<Kernel> make_kernel(const Graph& g, const Node& n) override;
    std::string copy_from_host(void* dst, const void* src, uint64_t bytes) override;
    std::string copy_to_host(void* dst, const void* src, uint64_t bytes) override;
    std::optional<std::string> copy_from_device(void* dst, Device& src, const void* src_ptr,
                                                uint64_t bytes) override;
    std::string synchronize() override;
    void set_allocation_retry(AllocationRetry retry) override { retry_ = std::move(retry); }
    void close() override;

    // The cuBLAS workspace this device chose (bytes; 0 when none fitted).
    uint64_t cublas_workspace_bytes() const { return workspace_.bytes(); }
    // How many kernels it loaded when it opened (preload_kernels).
    size_t preloaded_kernels() const { return preloaded_; }

  private:
    // Members in order of creation; close() and the destructor take them
    // down in reverse. Every CUDA object the device uses is one of them, made
    // anew for each session and destroyed by close() before a --reset-device
    // ends the context: nothing of one session's context survives into the
    // next (the plugin caches no CUDA object of its own: device count and PCI
    // bus ids only, which a reset does not change).
    const int index_;
    const std::string name_;
    const bool reset_device_;
    size_t preloaded_ = 0;
    StreamOwner stream_;
    CublasOwner cublas_;
    std::unique_ptr<CudaAllocator> allocator_;
    DeviceBuffer workspace_;
    DeviceBuffer error_flag_;
    // Copies between GPUs: `ready_` is recorded on this device's stream when
    // another device copies from it, `done_` after this device copied from another.
    EventOwner ready_;
    EventOwner done_;
    GpuContext ctx_;
    AllocationRetry retry_;  // the session's, for scratch (Device::set_allocation_retry)
    bool closed_ = false;
};

}  // namespace graphrun::gpu
