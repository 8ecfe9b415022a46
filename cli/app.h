// The command line: option table, subcommands, exit codes (SPEC section 6).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/ir/dtype.h"       // Shape
#include "engine/ir/free_dims.h"  // ShapeBindings

namespace graphrun::cli {

// Exit codes of SPEC section 6.
enum ExitCode : int {
    kExitOk = 0,
    kExitRuntime = 1,  // out of memory, device unusable without soft placement, unreadable file
    kExitUsage = 2,
    kExitInvalidGraph = 3,
    kExitLeak = 4,
    kExitMismatch = 5,  // an output differs from its --expected-output value
};

int run_app(int argc, char** argv);

// The candidate a user most likely meant by `word` (a misspelt command or
// option: `rnu` -> `run`, `--iteration` -> `--iterations`), or "".
std::string suggest(std::string_view word, const std::vector<std::string>& candidates);
// What is wrong with `v` as an integer from lo to hi ("" when nothing is):
// "'abc' is not a whole number; expected an integer from 0 to 2^40".
std::string integer_problem(const std::string& v, int64_t lo, int64_t hi,
                            const std::string& hi_text);
// What is wrong with `v` as a --memory-limit ("" when nothing is).
std::string memory_size_problem(const std::string& v);
// "N=16" (--dim) or "x=1x3x224x224" (--input-shape, `shape`) into its name and
// sizes; what is wrong with it ("" when nothing is).
std::string binding_problem(const std::string& option, const std::string& v, bool shape, std::string& name,
                            Shape& sizes);
// Adds --dim=VALUE or --input-shape=VALUE (`option`) to `b`; what is wrong
// with it ("" when nothing is, and then it is added).
std::string add_binding(ShapeBindings& b, const std::string& option, const std::string& value);

}  // namespace graphrun::cli
