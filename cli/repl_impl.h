// The REPL's state, shared by its loop (repl.cpp) and its `:commands`
// (repl_commands.cpp); nothing outside cli/repl*.cpp includes it.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/observe_output.h"  // print_memory_table
#include "cli/repl.h"
#include "cli/repl_line.h"

namespace graphrun::cli {

class Repl {
  public:
    Repl(const ReplOptions& opts, bool terminal, std::ostream& out, std::ostream& err);
    // Reads and runs until the end of input, `:quit` or a signal that ends
    // the session; closes it and prints the statistics. The exit code.
    int run();

    Completion complete(std::string_view before) const;

  private:
    // One line read: a statement's line (run once the statement is
    // complete), a `:command`, or nothing (blank, a comment).
    void take_line(const std::string& line);
    void execute(const std::string& text, uint32_t first_line);
    // Warnings, the error or the shown value of an execute() or load().
    void report(const StatementResult& r);
    // A signal seen after a statement or command: Ctrl-C on a terminal is
    // forgotten (the session goes on); anything else ends the session.
    void after_signal();
    void print_error(const Error& e);
    void fail(int code);  // the first failure's exit code is kept
    void echo_stats();
    // The statistics before and after teardown and the session's line.
    void print_teardown(const TeardownReport& t);

    // repl_commands.cpp
    void command(std::string_view line);
    void cmd_help(const std::vector<std::string>& args);
    void cmd_stats(const std::vector<std::string>& args);
    void cmd_vars(const std::vector<std::string>& args);
    void cmd_del(const std::vector<std::string>& args);
    void cmd_reset(const std::vector<std::string>& args);
    void cmd_close(const std::vector<std::string>& args);
    void cmd_cleanup(const std::vector<std::string>& args);
    void cmd_load(const std::vector<std::string>& args);
    void cmd_save(const std::vector<std::string>& args);
    void cmd_timeline(const std::vector<std::string>& args);
    void cmd_quit(const std::vector<std::string>& args);
    void usage_error(const std::string& message);

    struct Command {
        const char* name;  // without the ':'
        const char* args;  // as :help shows them
        const char* help;
        void (Repl::*run)(const std::vector<std::string>&);
    };
    static const std::vector<Command>& commands();

    ReplOptions opts_;
    bool terminal_;
    std::ostream& out_;
    std::ostream& err_;
    LiveSession session_;
    std::string display_;  // "<repl>" or "<stdin>": the statements' file in messages

    std::string pending_;  // the lines of a statement not complete yet
    uint32_t pending_line_ = 0;
    uint32_t line_no_ = 0;  // lines read so far
    bool quit_ = false;
    int stop_signal_ = 0;    // a signal that ends the session
    int first_failure_ = 0;  // exit code of the first failed statement or command
    std::map<std::string, MemoryStats>
        last_stats_;  // --echo-stats: the figures after the last statement
    // Since the session (re)opened, for the line printed at teardown.
    uint64_t statements_ = 0;
    double run_ms_ = 0;
};

// Splits a command line into words: blanks separate them, double quotes
// group (with \" and \\ inside). nullopt-like: `error` set on an open quote.
std::vector<std::string> command_words(std::string_view line, std::string& error);

}  // namespace graphrun::cli
