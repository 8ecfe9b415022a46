// The one error the engine API returns: what kind of failure, and its message.
// The kind says what went wrong, not how a program reports it: cli/ maps each
// kind to its exit code (SPEC section 6); a REPL or a library user may not exit
// at all.
#pragma once
#include <string>

namespace graphrun {

enum class ErrorKind {
    Usage,         // the request names something the graph lacks (--fetch)
    InvalidGraph,  // parse, validation or planning errors
    Runtime,       // unreadable file, unusable device, out of memory, over the memory limit
    Interrupted,   // a signal stopped the run (Error::signal)
    Leak,          // memory left after teardown (RunFileOptions::check_leaks)
    Mismatch,      // an output differs from its expected value (--expected-output)
};

struct Error {
    ErrorKind kind = ErrorKind::Runtime;
    // One line: the first diagnostic's first line, or the message as printed.
    std::string message;
    int signal = 0;  // ErrorKind::Interrupted: the signal's number
};

}  // namespace graphrun
