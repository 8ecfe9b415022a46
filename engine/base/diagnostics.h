// Diagnostics: errors and warnings with their place in the source, printed
// as FILE:LINE:COL: error: MESSAGE with the source line and a caret, or, for
// JSON graphs, as FILE: /json/pointer: error: MESSAGE.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/compact_string.h"

namespace graphrun {

// A place in a graph file: line and column (1-based) for text and for
// malformed JSON, or a JSON pointer for a value inside a well-formed JSON graph.
struct Loc {
    uint32_t line = 0;  // 0: unknown
    uint32_t col = 0;
    CompactString pointer;  // JSON pointer ("/nodes/3/inputs/1"); empty for text
    bool known() const { return line != 0 || !pointer.empty(); }
};

enum class Severity { Error, Warning, Note };

struct Diagnostic {
    Severity severity = Severity::Error;
    Loc loc;
    std::string message;
};

// Collects the diagnostics of one file; knows the file's name and text so that
// it can print the source line under each message.
class Diagnostics {
public:
    Diagnostics() = default;
    Diagnostics(std::string file, std::string_view source) : file_(std::move(file)), source_(source) {}

    void error(const Loc& loc, std::string message);
    void warning(const Loc& loc, std::string message);
    void note(const Loc& loc, std::string message);
    // An error that is no fault of the file but a bound on this run: what it
    // holds would pass the memory limit (a runtime error, exit 1, where the
    // other errors of a load are an invalid graph, exit 3).
    void over_limit_error(const Loc& loc, std::string message);

    bool has_errors() const { return errors_ > 0; }
    bool over_limit() const { return over_limit_; }
    size_t error_count() const { return errors_; }
    const std::vector<Diagnostic>& all() const { return diags_; }
    const std::string& file() const { return file_; }
    // The source's first line is line `line` of what the user typed (a
    // REPL's statement on its 40th line): places count from it.
    void set_first_line(uint32_t line) { first_line_ = line ? line : 1; }
    uint32_t first_line() const { return first_line_; }

    // Prints the diagnostics in the order reported, as printed() lists them.
    void print(std::ostream& os) const;
    // What print() prints, one entry per diagnostic shown: every error (the
    // front ends stop after 50), and of the warnings at most
    // kMaxWarningsPerKind alike (the same message but for its quoted names and
    // numbers) and kMaxWarnings in all, then one line per kind left out:
    // "FILE: warning: ... N more warnings like this: MESSAGE".
    std::vector<std::string> printed() const;
    // One diagnostic, formatted (with the source line and caret where known).
    // The message is shown as terminal_text shows it (printable.h): control
    // characters and bytes that are not UTF-8 as \xHH, at most
    // kMaxShownLine bytes.
    std::string format(const Diagnostic& d) const;

private:
    std::string file_;
    std::string_view source_;
    std::vector<Diagnostic> diags_;
    size_t errors_ = 0;
    bool over_limit_ = false;
    uint32_t first_line_ = 1;
};

// Warnings printed of one kind, and in all, before the rest are counted.
constexpr size_t kMaxWarningsPerKind = 20;
constexpr size_t kMaxWarnings = 100;

// Levenshtein distance, for "did you mean" suggestions.
size_t edit_distance(std::string_view a, std::string_view b);
// The candidate nearest to `word`, if it is near enough to be a likely typo; else "".
std::string nearest_name(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace graphrun
