// `graphrun devices` and `--version`.
#include <ostream>

#include "cli/app.h"
#include "cli/commands.h"
#include "engine/api/devices.h"
#include "engine/api/output_text.h"
#include "engine/api/units.h"

namespace graphrun::cli {

#ifndef GRAPHRUN_VERSION
#define GRAPHRUN_VERSION "0.0.0"
#endif

std::string version_string() {
    std::string s = std::string("graphrun ") + GRAPHRUN_VERSION + " (CUDA support: ";
#ifdef GRAPHRUN_CUDA_VERSION
    s += "built in, CUDA toolkit " GRAPHRUN_CUDA_VERSION;
    std::string why;
    if (auto v = gpu_plugin_version(&why)) s += "; " + *v;
    else s += "; the plugin is not usable here: " + why;
#else
    s += "not built in";
#endif
    return s + ")";
}

int devices_command(std::ostream& out) {
    DeviceListing l = list_devices();
    out << "cpu: " << l.cpu_cores << " cores, " << human_bytes(l.cpu_memory) << " memory";
    if (!l.cpu_model.empty()) out << ", " << terminal_text(l.cpu_model);
    out << "; kernels: " << l.cpu_kernels << "\n";
    if (l.gpus.empty()) {
        out << "gpu: none usable: " << l.why_no_gpu << "\n";
        return kExitOk;
    }
    for (size_t i = 0; i < l.gpus.size(); ++i) {
        const auto& info = l.gpus[i];
        if (!info) {
            out << "gpu:" << i << ": cannot be queried\n";
            continue;
        }
        out << "gpu:" << i << ": " << info->name << ", " << human_bytes(info->total_memory) << " memory, compute capability "
            << info->cc_major << "." << info->cc_minor << ", driver "
            << (l.driver_version.empty() ? "unknown" : l.driver_version) << ", PCI " << info->pci_bus_id;
        if (!info->unusable.empty()) out << " (not usable: " << info->unusable << ")";
        out << "\n";
    }
    return kExitOk;
}

}  // namespace graphrun::cli
