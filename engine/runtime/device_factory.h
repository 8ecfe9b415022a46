// Opens the session's devices by their placed names: "cpu" is a CpuDevice,
// "gpu:N" the CUDA plugin's device N (GpuRuntime::open).
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "engine/runtime/device.h"

namespace graphrun {

class DeviceFactory {
public:
    // `cpu_memory_limit`: the CPU allocator's limit; `gpu_runtime`: the
    // plugin GPUs are opened through (nullptr: none, a GPU cannot be opened).
    DeviceFactory(uint64_t cpu_memory_limit, GpuRuntime* gpu_runtime, const GpuDeviceOptions& gpu)
        : cpu_memory_limit_(cpu_memory_limit), gpu_runtime_(gpu_runtime), gpu_(gpu) {}

    // A new device for a placed name; nullptr with `error` (why) when it
    // cannot be opened. A name that is no device name opens the CPU.
    std::unique_ptr<Device> open(std::string_view name, std::string* error) const;

private:
    uint64_t cpu_memory_limit_;
    GpuRuntime* gpu_runtime_;
    GpuDeviceOptions gpu_;
};

}  // namespace graphrun
