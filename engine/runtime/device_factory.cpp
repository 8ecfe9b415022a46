// Device names to devices.
#include "engine/runtime/device_factory.h"

#include "engine/ir/device_name.h"
#include "engine/runtime/cpu_device.h"

namespace graphrun {

std::unique_ptr<Device> DeviceFactory::open(std::string_view name, std::string* error) const {
    auto dn = parse_device_name(name);
    if (!dn || dn->kind == DeviceKind::Cpu) return std::make_unique<CpuDevice>(cpu_memory_limit_);
    std::string why = "graphrun was built without CUDA support";
    std::unique_ptr<Device> dev;
    if (gpu_runtime_) dev = gpu_runtime_->open(dn->index, gpu_, &why);
    if (!dev && error) *error = why;
    return dev;
}

Device* open_device(DeviceMap& devices, const DeviceFactory& factory, std::string_view name,
                    const std::unique_ptr<Cleanup>& cleanup, KernelContext& ctx,
                    std::atomic<int64_t>* fail_countdown, std::string* error) {
    auto it = devices.find(name);
    if (it != devices.end()) return it->second.get();
    std::unique_ptr<Device> dev = factory.open(name, error);
    if (!dev) return nullptr;
    Device* raw = dev.get();
    raw->allocator().set_failure_countdown(fail_countdown);
    // Kernel scratch takes the same second chance as the session's own allocations.
    raw->set_allocation_retry(
        [&cleanup, raw](uint64_t bytes) { return cleanup->release_for_retry(raw->allocator(), bytes); });
    if (raw->kind() == DeviceKind::Cpu) ctx.scratch = raw->kernel_scratch();
    devices.emplace(std::string(name), std::move(dev));
    return raw;
}

void* allocate_with_retry(Device& dev, Cleanup& cleanup, uint64_t bytes) {
    Allocator& a = dev.allocator();
    void* data = a.allocate(bytes);
    if (!data && cleanup.release_for_retry(a, bytes)) data = a.allocate(bytes);
    return data;
}

std::map<std::string, MemoryStats> device_stats(const DeviceMap& devices) {
    std::map<std::string, MemoryStats> out;
    for (const auto& [name, dev] : devices) out[name] = dev->allocator().stats();
    if (out.empty()) out[std::string(kCpuDeviceName)] = MemoryStats{};
    return out;
}

std::map<std::string, uint64_t> device_limits(const DeviceMap& devices) {
    std::map<std::string, uint64_t> out;
    for (const auto& [name, dev] : devices) out[name] = dev->allocator().limit();
    return out;
}

}  // namespace graphrun
