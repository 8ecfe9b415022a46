// Where `graphrun repl` reads its lines: a terminal, through libedit (line
// editing, persistent history, tab completion), or a pipe, line by line with
// no prompt. The REPL's loop (repl.cpp) sees one interface for both.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace graphrun::cli {

enum class ReadStatus {
    Line,         // a line was read (without its newline)
    End,          // end of input (Ctrl-D on an empty line)
    Interrupted,  // a signal (g_interrupt_signal) came while reading; the typed line is discarded
};

class LineReader {
  public:
    virtual ~LineReader() = default;
    // Reads one line; `prompt` is shown on a terminal only.
    virtual ReadStatus read(const std::string& prompt, std::string& line) = 0;
    // Adds a line the user typed to the history (a terminal only).
    virtual void remember(const std::string& /*line*/) {}
    // Writes the history file, if there is one; a failure is a warning on
    // `err`, never an error.
    virtual void save_history(std::ostream& /*err*/) {}
};

// What a completer offers for the word that ends at the cursor: where that
// word starts in the line (what the completion replaces) and every candidate
// that starts with it. The reader inserts their common part, or lists them
// when that adds nothing.
struct Completion {
    size_t word_start = 0;
    std::vector<std::string> candidates;
};
// `before` is the line up to the cursor.
using Completer = std::function<Completion(std::string_view before)>;

// Lines from the file descriptor `fd`, each as read (a final line without a
// newline counts); a stop request (g_interrupt_signal) while waiting for input
// gives Interrupted.
std::unique_ptr<LineReader> make_pipe_reader(int fd);

// A terminal (stdin and stdout), through libedit's histedit interface in
// emacs mode (~/.editrc applies). `history_file` ("" for none) is read now
// (a file that cannot be read is a warning on `err`) and written by
// save_history(). A signal (Ctrl-C) while reading ends read() with
// Interrupted, whatever was typed discarded.
std::unique_ptr<LineReader> make_terminal_reader(Completer complete,
                                                 const std::string& history_file,
                                                 std::ostream& err);

// Whether this build has libedit: without it a terminal gets the prompt but
// no line editing, history or completion.
bool line_editing_built_in();

// The history file: $GRAPHRUN_HISTFILE (set but empty: none), else
// $XDG_STATE_HOME/graphrun/history where XDG_STATE_HOME is set (the folder
// is created), else ~/.graphrun_history; "" when none can be named.
std::string history_file_path();

}  // namespace graphrun::cli
