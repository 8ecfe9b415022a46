// Device names (SPEC section 5): cpu, cpu:0, gpu, gpu:N, cuda:N, /GPU:0, /device:CPU:0.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace graphrun {

// What kind of device: the one thing code branches on between the CPU and a
// GPU. Compare kinds, not names.
enum class DeviceKind { Cpu, Gpu };

// The canonical name of the CPU; a GPU's is "gpu:N".
inline constexpr std::string_view kCpuDeviceName = "cpu";

struct DeviceName {
    DeviceKind kind = DeviceKind::Cpu;
    int index = 0;
    std::string str() const {
        return kind == DeviceKind::Cpu ? std::string(kCpuDeviceName) : "gpu:" + std::to_string(index);
    }
    bool operator==(const DeviceName&) const = default;
};

// The kind of a canonical name (DeviceName::str(), Node::placed, Device::name()).
inline DeviceKind device_kind(std::string_view canonical) {
    return canonical == kCpuDeviceName ? DeviceKind::Cpu : DeviceKind::Gpu;
}

// Case-insensitive; "gpu" means gpu:0. nullopt for anything else (cpu:1 included).
std::optional<DeviceName> parse_device_name(std::string_view s);

// `d.str()`, kept for the life of the process: what a node holds of the device
// it is placed on (16 bytes and no heap per node; a graph may have millions).
// Thread-safe.
std::string_view interned_device_name(const DeviceName& d);

}  // namespace graphrun
