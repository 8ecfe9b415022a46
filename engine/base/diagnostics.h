// Diagnostics: errors and warnings with their place in the source, printed
// as FILE:LINE:COL: error: MESSAGE with the source line and a caret, or, for
// JSON graphs, as FILE: /json/pointer: error: MESSAGE.
#pragma once
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/compact_string.h"

namespace graphrun {

// A place in a graph file: line and column (1-based) for text and for
// malformed JSON; for a value inside a well-formed JSON graph, a JSON pointer,
// either given (a place that is no value in the text, an ONNX model's) or
// found from the value's byte offset in the text when it is shown
// (json_pointer.h): a graph keeps millions of places, nearly none of which is
// ever shown.
struct Loc {
    uint32_t line = 0;  // 0: unknown, or a place in a JSON text
    uint32_t col = 0;   // with line 0: 1 + the byte offset of a JSON value (in_json)
    CompactString pointer;  // a given JSON pointer ("/nodes/3/inputs/1"); empty for text
    bool known() const { return line != 0 || col != 0 || !pointer.empty(); }

    // The value (an array's item) or object member (its key's opening quote)
    // at byte `offset` of a JSON text.
    static Loc json_at(uint32_t offset) {
        Loc loc;
        loc.col = offset + 1;  // a text is at most 4 GiB - 1 bytes (json_document.h)
        return loc;
    }
    bool in_json() const { return line == 0 && col != 0; }
    uint32_t json_offset() const { return col - 1; }
};

class JsonPointerFinder;

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

    // An error in how the file is used, not in the file: an option that
    // names or binds something the file does not have (a usage error, exit 2).
    void usage_error(const Loc& loc, std::string message);

    bool has_errors() const { return errors_ > 0; }
    bool usage() const { return usage_; }
    bool over_limit() const { return over_limit_; }
    size_t error_count() const { return errors_; }
    const std::vector<Diagnostic>& all() const { return diags_; }
    const std::string& file() const { return file_; }
    std::string_view source() const { return source_; }
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
    // The JSON pointer of `loc`: its own, or found in the source for a place
    // in a JSON text (Loc::in_json); empty for a text place or an unknown one.
    std::string pointer(const Loc& loc) const;

private:
    std::string file_;
    std::string_view source_;
    std::vector<Diagnostic> diags_;
    size_t errors_ = 0;
    bool over_limit_ = false;
    bool usage_ = false;
    uint32_t first_line_ = 1;
    // Finds the pointers of places in a JSON source, made when first asked;
    // copies share it, as they share the source.
    mutable std::shared_ptr<JsonPointerFinder> pointers_;
};

// Warnings printed of one kind, and in all, before the rest are counted.
constexpr size_t kMaxWarningsPerKind = 20;
constexpr size_t kMaxWarnings = 100;

// Levenshtein distance, for "did you mean" suggestions.
size_t edit_distance(std::string_view a, std::string_view b);
// The candidate nearest to `word`, if it is near enough to be a likely typo; else "".
std::string nearest_name(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace graphrun
