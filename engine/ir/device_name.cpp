// Device names.
#include "engine/ir/device_name.h"

#include <cctype>
#include <deque>
#include <mutex>

namespace graphrun {

std::optional<DeviceName> parse_device_name(std::string_view s) {
    std::string t;
    for (char c : s) t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (t.rfind("/device:", 0) == 0) t = t.substr(8);
    else if (!t.empty() && t[0] == '/') t = t.substr(1);
    std::string kind = t, index;
    if (auto colon = t.find(':'); colon != std::string::npos) {
        kind = t.substr(0, colon);
        index = t.substr(colon + 1);
        if (index.empty() || index.size() > 4) return std::nullopt;
        for (char c : index)
            if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    }
    int n = index.empty() ? 0 : std::stoi(index);
    if (kind == kCpuDeviceName) {
        if (n != 0) return std::nullopt;
        return DeviceName{DeviceKind::Cpu, 0};
    }
    if (kind == "gpu" || kind == "cuda") return DeviceName{DeviceKind::Gpu, n};
    return std::nullopt;
}

std::string_view interned_device_name(const DeviceName& d) {
    if (d.kind == DeviceKind::Cpu) return kCpuDeviceName;
    // GPU indices have at most 4 digits (parse_device_name), so the table
    // stays small; a deque never moves what it holds.
    static std::mutex mutex;
    static std::deque<std::string> names;
    const std::string name = d.str();
    std::lock_guard lock(mutex);
    for (const std::string& s : names)
        if (s == name) return s;
    return names.emplace_back(name);
}

}  // namespace graphrun
