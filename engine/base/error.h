// The one error the engine returns, from every layer that can fail at run
// time (runtime's Session and EagerSession, placement, api's prepare and run):
// what kind of failure, its message, its place in the graph's text where it
// has one, and its rendered diagnostics. The kind says what went wrong, not
// how a program reports it: cli/ maps each kind to its exit code (SPEC section
// 6); a REPL or a library user may not exit at all. The engine returns it and
// never prints it: a caller that has the graph's text renders `place` with it
// (api's describe()), and cli/ prints.
#pragma once
#include <string>
#include <vector>

#include "engine/base/diagnostics.h"

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
    // Every diagnostic the failure printed, in order, each in full as printed
    // (several lines with the source line and caret where known); empty when
    // `message` is all there is, or before describe() rendered `place`.
    std::vector<std::string> diagnostics = {};
    // Where in the graph's text the failure is (the node's statement or JSON
    // pointer); unknown for a failure of no one node (a device, a feed).
    Loc place = {};
};

// A run-time failure at `place` (unknown when omitted).
inline Error runtime_error_at(std::string message, Loc place = {}) {
    return Error{ErrorKind::Runtime, std::move(message), 0, {}, std::move(place)};
}

// A run stopped by signal `sig`.
inline Error interrupted_by(std::string message, int sig) {
    return Error{ErrorKind::Interrupted, std::move(message), sig, {}, {}};
}

}  // namespace graphrun
