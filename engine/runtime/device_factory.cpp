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

}  // namespace graphrun
