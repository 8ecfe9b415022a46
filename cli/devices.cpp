// `graphrun devices`, `--version`, and what this build and machine can run on.
#include <ostream>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "cli/app.h"
#include "cli/commands.h"
#include "engine/runtime/device.h"

namespace graphrun::cli {

#ifndef GRAPHRUN_VERSION
#define GRAPHRUN_VERSION "0.0.0"
#endif

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
    a.gpu_supports = [rt](OpKind op, DType dt) { return rt->supports(op, dt); };
    return a;
}

std::string version_string() {
    std::string s = std::string("graphrun ") + GRAPHRUN_VERSION + " (CUDA support: ";
#ifdef GRAPHRUN_CUDA_VERSION
    s += "built in, CUDA toolkit " GRAPHRUN_CUDA_VERSION;
    std::string why;
    if (GpuRuntime* rt = gpu_runtime(&why)) s += "; " + rt->toolkit_version();
    else s += "; the plugin is not usable here: " + why;
#else
    s += "not built in";
#endif
    return s + ")";
}

int devices_command(std::ostream& out) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    uint64_t mem = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
    out << "cpu: " << std::thread::hardware_concurrency() << " cores, " << human_bytes(mem) << " memory\n";
    std::string why;
    GpuRuntime* rt = gpu_runtime(&why);
    int count = rt ? rt->device_count(&why) : 0;
    if (count == 0) {
        out << "gpu: none usable: " << why << "\n";
        return kExitOk;
    }
    std::string driver = rt->driver_version();
    for (int i = 0; i < count; ++i) {
        auto info = rt->info(i);
        if (!info) {
            out << "gpu:" << i << ": cannot be queried\n";
            continue;
        }
        out << "gpu:" << i << ": " << info->name << ", " << human_bytes(info->total_memory) << " memory, compute capability "
            << info->cc_major << "." << info->cc_minor << ", driver " << (driver.empty() ? "unknown" : driver)
            << ", PCI " << info->pci_bus_id << "\n";
    }
    return kExitOk;
}

}  // namespace graphrun::cli
