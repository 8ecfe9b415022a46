// The process's stop request (engine/base/interrupt.h), for cli/: it installs
// the SIGINT/SIGTERM handler that sets g_interrupt_signal, and every phase of
// the API (load, place, plan, run, write) polls it and stops with an
// ErrorKind::Interrupted error.
#pragma once
#include "engine/base/interrupt.h"
