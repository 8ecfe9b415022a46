// Opens the session's devices by their placed names: "cpu" is a CpuDevice,
// "gpu:N" the CUDA plugin's device N (GpuRuntime::open).
#pragma once
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "engine/runtime/cleanup_strategy.h"
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

// The devices a session opened, by placed name. Both executors (Session,
// EagerSession) keep theirs in one and share these steps.
using DeviceMap = std::map<std::string, std::unique_ptr<Device>, std::less<>>;

// The device for a placed name, opened through `factory` on first use and
// added to `devices`: allocations its kernels make themselves (GPU scratch)
// take the second chance of the session's strategy, whichever `*cleanup`
// holds then, and a CPU's kernel scratch goes into `ctx`. nullptr with
// `error` when it cannot be opened.
// `fail_countdown`: the session's allocation-failure test hook (SessionOptions), or null.
Device* open_device(DeviceMap& devices, const DeviceFactory& factory, std::string_view name,
                    const std::unique_ptr<Cleanup>& cleanup, KernelContext& ctx,
                    std::atomic<int64_t>* fail_countdown, std::string* error);
// One counted allocation; when it fails (over the limit, or the device is
// full) the strategy may give back what it holds for one more try.
void* allocate_with_retry(Device& dev, Cleanup& cleanup, uint64_t bytes);
// Statistics and memory limits per device (statistics: an empty "cpu" entry when none is open).
std::map<std::string, MemoryStats> device_stats(const DeviceMap& devices);
std::map<std::string, uint64_t> device_limits(const DeviceMap& devices);

}  // namespace graphrun
