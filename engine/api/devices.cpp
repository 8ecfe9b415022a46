// Asking the CUDA plugin what it offers.
#include "engine/api/devices.h"

#include <fstream>
#include <thread>
#include <unistd.h>

#include "engine/kernels/cpu/dnnl_kernels.h"
#include "engine/kernels/cpu/kernel_families.h"

namespace graphrun {

DeviceAvailability device_availability() {
    DeviceAvailability a;
    std::string why;
    GpuRuntime* rt = gpu_runtime(&why);
    if (!rt) {
        a.why_no_gpu = why;
        return a;
    }
    a.gpu_count = rt->device_count(&why);
    a.why_no_gpu = why;
    for (int i = 0; i < a.gpu_count; ++i) {
        std::optional<GpuInfo> info = rt->info(i);
        a.gpu_unusable.push_back(info ? info->unusable : "its properties cannot be read");
    }
    a.gpu_supports = [rt](OpKind op, DType dt) { return rt->supports(op, dt); };
    return a;
}

DeviceListing list_devices() {
    DeviceListing l;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    l.cpu_memory = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
    l.cpu_cores = std::thread::hardware_concurrency();
    std::ifstream info("/proc/cpuinfo");
    for (std::string line; l.cpu_model.empty() && std::getline(info, line);)
        if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
            l.cpu_model = line.substr(line.find(':') + 1);
            l.cpu_model.erase(0, l.cpu_model.find_first_not_of(" \t"));
        }
    l.cpu_kernels = kernels::cpu_kernels_text();
    if (const std::string dnnl = kernels::dnnl_text(); !dnnl.empty()) l.cpu_kernels += ", " + dnnl;
    GpuRuntime* rt = gpu_runtime(&l.why_no_gpu);
    int count = rt ? rt->device_count(&l.why_no_gpu) : 0;
    if (count == 0) return l;
    l.driver_version = rt->driver_version();
    for (int i = 0; i < count; ++i) l.gpus.push_back(rt->info(i));
    return l;
}

std::optional<std::string> gpu_plugin_version(std::string* why) {
    if (GpuRuntime* rt = gpu_runtime(why)) return rt->toolkit_version();
    return std::nullopt;
}

}  // namespace graphrun
