#include "engine/base/interrupt.h"

#include <csignal>

namespace graphrun {

constinit std::atomic<int> g_interrupt_signal{0};

std::string signal_name(int sig) {
    if (sig == SIGINT) return "SIGINT";
    if (sig == SIGTERM) return "SIGTERM";
    return "signal " + std::to_string(sig);
}

}  // namespace graphrun
