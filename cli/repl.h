// `graphrun repl` (SPEC section 8): statements read from a terminal or a
// pipe and run in one live session (engine/api/live.h), with `:commands`
// that show and manage the session's names and memory.
#pragma once
#include "engine/api/live.h"

namespace graphrun::cli {

struct ReplOptions {
    LiveOptions live;         // --cleanup, placement, --memory-limit, --threads
    bool echo_stats = false;  // --echo-stats: a memory line per device after each statement
};

// Reads standard input until its end or `:quit`, then closes the session and
// prints the statistics after teardown. On a terminal: prompts, line editing,
// history and completion, and the exit code is 0 (143 after SIGTERM). From a
// pipe: no prompt, and the exit code is the first failed statement's or
// command's (SPEC section 6), or 0.
int repl_command(const ReplOptions& opts);

}  // namespace graphrun::cli
