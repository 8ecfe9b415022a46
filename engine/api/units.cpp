// Memory sizes for messages.
#include "engine/api/units.h"

#include <cstdio>
#include <unistd.h>

#include <iomanip>
#include <sstream>

namespace graphrun {

std::string human_bytes(uint64_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        ++u;
    }
    std::ostringstream os;
    if (u == 0) os << bytes << " B";
    else os << std::fixed << std::setprecision(2) << v << " " << units[u];
    return os.str();
}

uint64_t resident_bytes() {
    FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long size = 0, rss = 0;
    int n = std::fscanf(f, "%lu %lu", &size, &rss);
    std::fclose(f);
    return n == 2 ? static_cast<uint64_t>(rss) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

}  // namespace graphrun
