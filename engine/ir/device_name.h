// Device names (SPEC section 5): cpu, cpu:0, gpu, gpu:N, cuda:N, /GPU:0, /device:CPU:0.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace graphrun {

struct DeviceName {
    enum class Kind { Cpu, Gpu };
    Kind kind = Kind::Cpu;
    int index = 0;
    std::string str() const { return kind == Kind::Cpu ? "cpu" : "gpu:" + std::to_string(index); }
    bool operator==(const DeviceName&) const = default;
};

// Case-insensitive; "gpu" means gpu:0. nullopt for anything else (cpu:1 included).
std::optional<DeviceName> parse_device_name(std::string_view s);

// `d.str()`, kept for the life of the process: what a node holds of the device
// it is placed on (16 bytes and no heap per node; a graph may have millions).
// Thread-safe.
std::string_view interned_device_name(const DeviceName& d);

}  // namespace graphrun
