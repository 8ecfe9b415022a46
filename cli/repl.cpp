// `graphrun repl`: the loop that reads lines, gathers them into complete
// statements, runs them in the live session and prints what they show; the
// signal handling that keeps a session alive through Ctrl-C; completion.
#include "cli/repl.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/repl_impl.h"
#include "cli/values.h"
#include "engine/api/interrupt.h"
#include "engine/api/output_text.h"
#include "engine/api/units.h"

namespace graphrun::cli {

namespace {

// On a terminal, Ctrl-C asks the running statement to stop (or discards the
// line being typed) and never ends the process, however often it comes:
// app.cpp's handler, which exits on a second SIGINT, is set aside while the
// REPL runs. SIGTERM ends the session (after teardown and the statistics).
extern "C" void on_repl_signal(int sig) {
    if (sig == SIGTERM) {
        g_interrupt_signal.store(SIGTERM, std::memory_order_relaxed);
        return;
    }
    int none = 0;
    g_interrupt_signal.compare_exchange_strong(none, sig);
}

class ReplSignals {
  public:
    ReplSignals() {
        struct sigaction sa {};
        sa.sa_handler = on_repl_signal;  // no SA_RESTART: a read in progress returns
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &old_int_);
        sigaction(SIGTERM, &sa, &old_term_);
    }
    ~ReplSignals() {
        sigaction(SIGINT, &old_int_, nullptr);
        sigaction(SIGTERM, &old_term_, nullptr);
    }
    ReplSignals(const ReplSignals&) = delete;
    ReplSignals& operator=(const ReplSignals&) = delete;

  private:
    struct sigaction old_int_ {
    }, old_term_{};
};

std::string_view trim(std::string_view s) {
    const size_t b = s.find_first_not_of(" \t\r");
    if (b == std::string_view::npos) return {};
    return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

bool is_word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

std::string signed_text(uint64_t now, uint64_t before) {
    if (now >= before) return "+" + std::to_string(now - before);
    return "-" + std::to_string(before - now);
}

// Files and folders that complete `word` (a path typed so far).
std::vector<std::string> path_candidates(std::string_view word) {
    namespace fs = std::filesystem;
    const size_t slash = word.rfind('/');
    const std::string dir(slash == std::string_view::npos ? "" : word.substr(0, slash + 1));
    const std::string_view base = slash == std::string_view::npos ? word : word.substr(slash + 1);
    std::vector<std::string> out;
    std::error_code ec;
    for (fs::directory_iterator it(dir.empty() ? "." : dir, ec), end; !ec && it != end;
         it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.compare(0, base.size(), base) != 0) continue;
        if (name[0] == '.' && (base.empty() || base[0] != '.'))
            continue;  // hidden unless asked for
        std::error_code dir_ec;
        out.push_back(dir + name + (it->is_directory(dir_ec) ? "/" : ""));
        if (out.size() >= 1000) break;
    }
    return out;
}

void add_matching(std::set<std::string>& into, const std::vector<std::string>& from,
                  std::string_view word, const char* suffix = "") {
    for (const std::string& s : from)
        if (s.compare(0, word.size(), word) == 0) into.insert(s + suffix);
}

}  // namespace

Repl::Repl(const ReplOptions& opts, bool terminal, std::ostream& out, std::ostream& err)
    : opts_(opts),
      terminal_(terminal),
      out_(out),
      err_(err),
      session_(opts.live),
      display_(terminal ? "<repl>" : "<stdin>") {
    last_stats_ = session_.stats();
}

int Repl::run() {
    std::optional<ReplSignals> signals;
    std::unique_ptr<LineReader> reader;
    if (terminal_) {
        signals.emplace();
        reader = make_terminal_reader([this](std::string_view before) { return complete(before); },
                                      history_file_path(), err_);
        out_ << "graphrun " << GRAPHRUN_VERSION
             << " interactive session (cleanup=" << cleanup_name(session_.cleanup())
             << "); :help lists the commands, Ctrl-D ends it\n";
        if (!line_editing_built_in())
            out_ << "(built without libedit: no line editing, history or completion)\n";
    } else {
        reader = make_pipe_reader(STDIN_FILENO);
    }
    while (!quit_ && !stop_signal_) {
        out_.flush();
        std::string line;
        const ReadStatus st = reader->read(pending_.empty() ? ">>> " : "... ", line);
        if (st == ReadStatus::Interrupted) {
            if (terminal_ && interrupted() == SIGINT) {  // Ctrl-C at the prompt: the typed lines go
                clear_interrupt();
                pending_.clear();
                out_ << "\n";
                continue;
            }
            after_signal();
            break;
        }
        if (st == ReadStatus::End) {
            if (terminal_) out_ << "\n";
            // A statement left open at the end: run what there is, so that
            // its error says what is missing and where.
            if (!trim(pending_).empty()) execute(std::exchange(pending_, {}), pending_line_);
            break;
        }
        ++line_no_;
        reader->remember(line);
        take_line(line);
    }
    if (terminal_) reader->save_history(err_);
    print_teardown(session_.close());
    out_.flush();
    if (stop_signal_) return first_failure_ ? first_failure_ : 128 + stop_signal_;
    clear_interrupt();  // a Ctrl-C after the last statement has nothing left to stop
    return terminal_ ? kExitOk : first_failure_;
}

void Repl::take_line(const std::string& line) {
    if (pending_.empty()) {
        const std::string_view t = trim(line);
        if (t.empty() || t[0] == '#') return;
        if (t[0] == ':') {
            command(t);
            after_signal();
            return;
        }
        pending_line_ = line_no_;
    }
    pending_ += line;
    pending_ += '\n';
    if (LiveSession::needs_more(pending_)) return;
    execute(std::exchange(pending_, {}), pending_line_);
}

void Repl::execute(const std::string& text, uint32_t first_line) {
    StatementResult r = session_.execute(text, display_, first_line);
    // A bare name shows under its own name; an expression's value under `_`,
    // the name the session keeps it by (as Python's REPL does).
    if (r.shown) {
        std::string_view t = trim(text);
        while (!t.empty() && (t.back() == ';' || t.back() == '\n' || t.back() == ' ' ||
                              t.back() == '\t' || t.back() == '\r'))
            t.remove_suffix(1);
        if (!t.empty() && !(t[0] >= '0' && t[0] <= '9') &&
            std::all_of(t.begin(), t.end(), is_word_char))
            r.shown->name = std::string(t);
    }
    report(r);
    after_signal();
}

void Repl::report(const StatementResult& r) {
    statements_ += r.statements;
    run_ms_ += r.ms;
    if (!r.warnings.empty() || r.error)
        out_.flush();  // the order of what is printed, when both go to one log
    for (const std::string& w : r.warnings)
        err_ << w << (w.empty() || w.back() != '\n' ? "\n" : "");
    if (r.error) {
        // The terminal echoed ^C where the cursor was: the message starts on a line of its own.
        if (terminal_ && r.error->kind == ErrorKind::Interrupted) err_ << "\n";
        print_error(*r.error);
        fail(exit_code(*r.error));
    } else if (r.shown) {
        const HostTensor& t = *r.shown;
        if (!t.name.empty()) out_ << terminal_text(t.name) << ": ";
        out_ << type_string(t.dtype, t.shape) << " (" << terminal_text(t.device) << ")\n";
        write_values(out_, t);
        out_ << "\n";
    }
    if (opts_.echo_stats) echo_stats();
    out_.flush();
}

void Repl::after_signal() {
    const int sig = interrupted();
    if (sig == 0) return;
    if (terminal_ && sig == SIGINT) {
        clear_interrupt();  // it stopped one statement (or came too late to); the session goes on
        return;
    }
    // From a pipe, the first Ctrl-C ends the session as it ends `graphrun
    // run`: torn down, the statistics printed, exit 130. SIGTERM always does.
    stop_signal_ = sig;
    err_ << "graphrun: " << signal_name(sig) << ": the session ends\n";
}

void Repl::print_error(const Error& e) {
    out_.flush();
    if (e.diagnostics.empty()) {
        err_ << "graphrun: error: " << e.message << "\n";
        return;
    }
    for (const std::string& d : e.diagnostics)
        err_ << d << (d.empty() || d.back() != '\n' ? "\n" : "");
}

void Repl::fail(int code) {
    if (first_failure_ == 0) first_failure_ = code;
}

void Repl::echo_stats() {
    const std::map<std::string, MemoryStats> now = session_.stats();
    for (const auto& [dev, s] : now) {
        auto it = last_stats_.find(dev);
        const MemoryStats before = it == last_stats_.end() ? MemoryStats{} : it->second;
        out_ << "stats " << terminal_text(dev) << ": in_use " << s.in_use << " ("
             << signed_text(s.in_use, before.in_use) << "), pending " << s.pending << " ("
             << signed_text(s.pending, before.pending) << "), peak " << s.peak << " ("
             << signed_text(s.peak, before.peak) << ")\n";
    }
    last_stats_ = now;
}

void Repl::print_teardown(const TeardownReport& t) {
    print_memory_table("memory before teardown", t.before, out_);
    out_ << "  system (cpu): process resident memory before teardown: " << t.rss_before
         << " bytes (" << human_bytes(t.rss_before) << ")\n";
    print_memory_table("memory after teardown", t.after, out_);
    out_ << "  system (cpu): process resident memory after teardown: " << t.rss_after << " bytes ("
         << human_bytes(t.rss_after) << ")\n";
    std::ostringstream line;
    line << std::fixed << std::setprecision(3)
         << "session: cleanup=" << cleanup_name(session_.cleanup()) << " statements=" << statements_
         << " run " << run_ms_ << " ms, teardown " << t.teardown_ms << " ms";
    out_ << line.str() << "\n";
    statements_ = 0;
    run_ms_ = 0;
    last_stats_ = session_.stats();
}

Completion Repl::complete(std::string_view before) const {
    Completion c;
    const size_t first = before.find_first_not_of(" \t");
    if (first == std::string_view::npos) {  // a blank line: a tab indents, as in Python's REPL
        c.word_start = before.size();
        c.candidates = {"    "};
        return c;
    }
    std::set<std::string> found;
    if (pending_.empty() && before[first] == ':') {
        const size_t blank = before.find_first_of(" \t", first);
        if (blank == std::string_view::npos) {  // the command's name
            c.word_start = first;
            for (const Command& cmd : commands()) {
                const std::string name = std::string(":") + cmd.name;
                if (name.compare(0, before.size() - first, before.substr(first)) == 0)
                    found.insert(name + (cmd.args[0] ? " " : ""));
            }
        } else {  // an argument
            const std::string_view name = before.substr(first + 1, blank - first - 1);
            const size_t start = before.find_last_of(" \t") + 1;
            const std::string_view word = before.substr(start);
            c.word_start = start;
            if (name == "load") {
                if (word.rfind("--", 0) == 0)
                    add_matching(found, {"--input=", "--fill=", "--seed="}, word);
                else
                    for (std::string& p : path_candidates(word)) found.insert(std::move(p));
            } else if (name == "cleanup") {
                add_matching(found, {"background", "safepoint", "close"}, word);
            } else if (name == "del" || name == "save") {
                add_matching(found, session_.names(), word);
                if (name == "save")
                    for (std::string& p : path_candidates(word)) found.insert(std::move(p));
            }
        }
        c.candidates.assign(found.begin(), found.end());
        return c;
    }
    size_t start = before.size();
    while (start > 0 && is_word_char(before[start - 1])) --start;
    c.word_start = start;
    const std::string_view word = before.substr(start);
    if (word.empty() || (word[0] >= '0' && word[0] <= '9')) return c;
    const std::vector<std::string> names = session_.names();
    add_matching(found, names, word);
    add_matching(found, {"repeat", "with", "device", "del", "true", "false", "nan", "inf"}, word);
    for (const std::string& op : LiveSession::op_names()) {
        if (op.compare(0, word.size(), word) != 0) continue;
        // An op alone is called: its "(" comes with it (a bound name of the same spelling stays
        // bare).
        const bool bound = std::binary_search(names.begin(), names.end(), op);
        found.insert(bound ? op : op + "(");
    }
    c.candidates.assign(found.begin(), found.end());
    return c;
}

int repl_command(const ReplOptions& opts) {
    const bool terminal = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
    Repl repl(opts, terminal, std::cout, std::cerr);
    return repl.run();
}

}  // namespace graphrun::cli
