#include "engine/base/interrupt.h"

namespace graphrun {

constinit std::atomic<int> g_interrupt_signal{0};

}  // namespace graphrun
