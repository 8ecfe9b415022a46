// The process's stop request: the signal (SIGINT 2, SIGTERM 15) that asked
// graphrun to stop, or 0. cli/ installs the handler that sets it; every phase
// that can take long (loading and folding a model, planning, running, writing
// files) polls it in its loops and stops with an Interrupted error within a
// second. One flag for the process, since a signal is the process's.
#pragma once
#include <atomic>
#include <string>

namespace graphrun {

// Constant-initialised (no guard), so a signal handler may store to it.
extern std::atomic<int> g_interrupt_signal;

// The pending stop request's signal, or 0; cheap enough for any inner loop
// that polls it every few thousand steps.
inline int interrupted() { return g_interrupt_signal.load(std::memory_order_relaxed); }

// Forgets the stop request: an interactive session (`graphrun repl`) whose
// Ctrl-C stopped one statement goes on with the next.
inline void clear_interrupt() { g_interrupt_signal.store(0, std::memory_order_relaxed); }

// "SIGINT", "SIGTERM", or "signal N" for another, as messages name it.
std::string signal_name(int sig);

}  // namespace graphrun
