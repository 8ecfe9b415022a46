// Memory sizes for messages.
#include "engine/api/units.h"

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

}  // namespace graphrun
