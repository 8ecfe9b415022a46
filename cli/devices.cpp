// `graphrun devices`, `--version`, and what this build can run on.
#include <ostream>
#include <thread>
#include <unistd.h>

#include "cli/app.h"
#include "cli/commands.h"

namespace graphrun::cli {

#ifndef GRAPHRUN_VERSION
#define GRAPHRUN_VERSION "0.0.0"
#endif

DeviceAvailability device_availability() {
    DeviceAvailability a;
    a.gpu_count = 0;
    a.why_no_gpu = "graphrun was built without CUDA support";
    return a;
}

std::string version_string() {
    return std::string("graphrun ") + GRAPHRUN_VERSION + " (CUDA support: not built in)";
}

int devices_command(std::ostream& out) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    uint64_t mem = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
    out << "cpu: " << std::thread::hardware_concurrency() << " cores, " << human_bytes(mem) << " memory\n";
    DeviceAvailability a = device_availability();
    if (a.gpu_count == 0) out << "gpu: none usable: " << a.why_no_gpu << "\n";
    return kExitOk;
}

}  // namespace graphrun::cli
