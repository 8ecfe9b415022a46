// The command line: option table, subcommands, exit codes (SPEC section 6).
#pragma once

namespace graphrun::cli {

// Exit codes of SPEC section 6.
enum ExitCode : int {
    kExitOk = 0,
    kExitRuntime = 1,  // out of memory, device unusable without soft placement, unreadable file
    kExitUsage = 2,
    kExitInvalidGraph = 3,
    kExitLeak = 4,
};

int run_app(int argc, char** argv);

}  // namespace graphrun::cli
