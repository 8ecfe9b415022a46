// The CPU as a Device: the caching CpuAllocator, the CPU kernels, and copies
// that are plain memcpy.
#pragma once
#include <string>

#include "engine/runtime/device.h"

namespace graphrun {

class CpuDevice final : public Device {
public:
    explicit CpuDevice(uint64_t memory_limit) : alloc_(memory_limit) {}
    const std::string& name() const override { return name_; }
    DeviceKind kind() const override { return DeviceKind::Cpu; }
    Allocator& allocator() override { return alloc_; }
    bool supports(OpKind op, DType dtype) const override;
    std::unique_ptr<Kernel> make_kernel(const Graph& g, const Node& n) override;
    std::string copy_from_host(void* dst, const void* src, uint64_t bytes) override;
    std::string copy_to_host(void* dst, const void* src, uint64_t bytes) override;
    std::string synchronize() override { return {}; }
    void close() override;
    void set_allocation_retry(AllocationRetry retry) override { scratch_.retry = std::move(retry); }
    ScratchMemory* kernel_scratch() override { return &scratch_; }

private:
    // Kernel scratch as workspace of alloc_ (refusable by the failure-injection hook).
    struct Scratch final : ScratchMemory {
        explicit Scratch(CpuAllocator& a) : alloc(a) {}
        void* allocate(uint64_t bytes) override;
        void release(void* p, uint64_t bytes) override;
        CpuAllocator& alloc;
        AllocationRetry retry;
    };

    const std::string name_ = DeviceName{}.str();
    CpuAllocator alloc_;
    Scratch scratch_{alloc_};
};

}  // namespace graphrun
