// What this build and machine can run on: the placement's view of the GPUs, the
// `graphrun devices` listing, and the CUDA plugin's version.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/check/placement.h"  // DeviceAvailability
#include "engine/runtime/device.h"   // GpuInfo

namespace graphrun {

// The CUDA plugin's GPUs, or why there are none; what place() needs.
DeviceAvailability device_availability();

struct DeviceListing {
    unsigned cpu_cores = 0;
    uint64_t cpu_memory = 0;  // physical memory, bytes (0: unknown)
    std::string cpu_model;    // /proc/cpuinfo's model name ("" when unknown)
    std::string cpu_kernels;  // what the CPU kernels chose by its features (cpu_kernels_text)
    // One entry per GPU the plugin counts, by index; nullopt where it cannot be queried.
    std::vector<std::optional<GpuInfo>> gpus;
    std::string driver_version;  // empty: unknown
    std::string why_no_gpu;      // set when `gpus` is empty
};
DeviceListing list_devices();

// The CUDA plugin's "CUDA runtime X, cuBLAS Y" text; nullopt, with the reason
// in `why`, when the plugin cannot be loaded here.
std::optional<std::string> gpu_plugin_version(std::string* why);

}  // namespace graphrun
