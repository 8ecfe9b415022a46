// The REPL's line readers (repl_line.h): a pipe read with poll(2), and a
// terminal through libedit's histedit interface (or, in a build without
// libedit, with a prompt and the pipe's reader).
#include "cli/repl_line.h"

#include <errno.h>
#ifdef GRAPHRUN_HAVE_LIBEDIT
#include <histedit.h>
#endif
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <clocale>
#include <cstdlib>
#include <cstring>
#include <cwchar>

#include "engine/api/interrupt.h"

namespace graphrun::cli {

namespace {

// How long a reader waits for input before it looks at g_interrupt_signal
// again: a signal may be delivered to any of the process's threads (the
// compute workers block none), so a blocked read(2) cannot count on EINTR.
constexpr int kPollMs = 50;

// Waits until `fd` has input (true), or a stop is requested (false).
bool wait_readable(int fd) {
    for (;;) {
        if (interrupted()) return false;
        pollfd p{fd, POLLIN, 0};
        const int r = poll(&p, 1, kPollMs);
        if (r > 0) return true;  // input, end of input or an error: read() says which
        if (r < 0 && errno != EINTR) return true;
    }
}

class PipeReader final : public LineReader {
  public:
    explicit PipeReader(int fd) : fd_(fd) {}

    ReadStatus read(const std::string&, std::string& line) override {
        line.clear();
        for (;;) {
            if (size_t nl = buf_.find('\n', pos_); nl != std::string::npos) {
                line.assign(buf_, pos_, nl - pos_);
                pos_ = nl + 1;
                return ReadStatus::Line;
            }
            if (ended_) {
                if (pos_ >= buf_.size()) return ReadStatus::End;
                line.assign(buf_, pos_, std::string::npos);  // the last line, without a newline
                pos_ = buf_.size();
                return ReadStatus::Line;
            }
            if (!wait_readable(fd_)) return ReadStatus::Interrupted;
            buf_.erase(0, pos_);
            pos_ = 0;
            char chunk[65536];
            const ssize_t n = ::read(fd_, chunk, sizeof chunk);
            if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (n <= 0)
                ended_ = true;  // end of input, or an error that ends it
            else
                buf_.append(chunk, static_cast<size_t>(n));
        }
    }

  private:
    int fd_;
    std::string buf_;
    size_t pos_ = 0;
    bool ended_ = false;
};

#ifdef GRAPHRUN_HAVE_LIBEDIT
class TerminalReader final : public LineReader {
  public:
    TerminalReader(Completer complete, std::string history_file, std::ostream& err)
        : complete_(std::move(complete)), history_file_(std::move(history_file)) {
        std::setlocale(LC_CTYPE, "");  // libedit reads and shows the terminal's characters by it
        hist_ = history_init();
        HistEvent ev;
        history(hist_, &ev, H_SETSIZE, 1000);
        history(hist_, &ev, H_SETUNIQUE, 1);  // a line repeated at once is kept once
        if (!history_file_.empty() && access(history_file_.c_str(), F_OK) == 0 &&
            history(hist_, &ev, H_LOAD, history_file_.c_str()) < 0)
            err << "graphrun: warning: the history in " << history_file_ << " could not be read\n";

        el_ = el_init("graphrun", stdin, stdout, stderr);
        el_set(el_, EL_CLIENTDATA, this);
        el_set(el_, EL_EDITOR, "emacs");
        el_set(el_, EL_HIST, history, hist_);
        el_set(el_, EL_PROMPT, &TerminalReader::prompt_of);
        el_set(el_, EL_GETCFN, &TerminalReader::read_char);
        el_set(el_, EL_ADDFN, "graphrun-complete", "complete an op, a name, a command or a file",
               &TerminalReader::on_tab);
        el_set(el_, EL_BIND, "^I", "graphrun-complete", nullptr);
        el_source(el_, nullptr);  // ~/.editrc, as in every libedit program
    }

    ~TerminalReader() override {
        el_end(el_);
        history_end(hist_);
    }

    ReadStatus read(const std::string& prompt, std::string& line) override {
        prompt_ = prompt;
        // The terminal in libedit's mode before the prompt shows, so that a
        // key typed as soon as it shows is read as a key (^D as the end);
        // el_gets() restores the mode it found when it returns.
        el_set(el_, EL_PREP_TERM, 1);
        int count = 0;
        const char* got = el_gets(el_, &count);
        if (got == nullptr || count <= 0) {
            if (count < 0 && interrupted()) return ReadStatus::Interrupted;
            return ReadStatus::End;
        }
        line.assign(got, static_cast<size_t>(count));
        if (!line.empty() && line.back() == '\n') line.pop_back();
        return ReadStatus::Line;
    }

    void remember(const std::string& line) override {
        if (line.find_first_not_of(" \t") == std::string::npos) return;
        HistEvent ev;
        history(hist_, &ev, H_ENTER, line.c_str());
    }

    void save_history(std::ostream& err) override {
        if (history_file_.empty()) return;
        HistEvent ev;
        errno = 0;
        if (history(hist_, &ev, H_SAVE, history_file_.c_str()) < 0) {
            const int e = errno;
            err << "graphrun: warning: the history was not saved to " << history_file_
                << (e ? std::string(": ") + std::strerror(e) : std::string()) << "\n";
        }
    }

  private:
    static TerminalReader* self(EditLine* el) {
        void* p = nullptr;
        el_get(el, EL_CLIENTDATA, &p);
        return static_cast<TerminalReader*>(p);
    }

    static char* prompt_of(EditLine* el) { return self(el)->prompt_.data(); }

    // One character from the terminal, waiting with poll(2) so that Ctrl-C
    // (a stop request, whichever thread took the signal) ends the read:
    // -1 then, and el_gets() returns with nothing.
    static int read_char(EditLine*, wchar_t* out) {
        char bytes[MB_LEN_MAX];
        size_t n = 0;
        for (;;) {
            if (!wait_readable(STDIN_FILENO)) return -1;
            const ssize_t got = ::read(STDIN_FILENO, bytes + n, 1);
            if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (got < 0) return -1;
            if (got == 0) return 0;
            ++n;
            std::mbstate_t state{};
            wchar_t wc = 0;
            const size_t used = std::mbrtowc(&wc, bytes, n, &state);
            if (used == static_cast<size_t>(-2) && n < sizeof bytes)
                continue;  // a character cut short so far
            if (used == static_cast<size_t>(-1) || used == static_cast<size_t>(-2)) wc = L'?';
            *out = wc;
            return 1;
        }
    }

    static unsigned char on_tab(EditLine* el, int) { return self(el)->complete(el); }

    unsigned char complete(EditLine* el) {
        const LineInfo* li = el_line(el);
        const std::string_view before(li->buffer, static_cast<size_t>(li->cursor - li->buffer));
        Completion c = complete_(before);
        if (c.candidates.empty() || c.word_start > before.size()) return CC_ERROR;  // a beep
        const std::string_view word = before.substr(c.word_start);
        std::string common = c.candidates.front();
        for (const std::string& cand : c.candidates) {
            size_t k = 0;
            while (k < common.size() && k < cand.size() && common[k] == cand[k]) ++k;
            common.resize(k);
        }
        if (common.size() > word.size()) {
            el_insertstr(el, common.substr(word.size()).c_str());
            return CC_REFRESH;
        }
        if (c.candidates.size() == 1) return CC_NORM;  // complete already
        list(el, c.candidates);
        return CC_REDISPLAY;
    }

    // The candidates in columns under the line, as a shell lists them.
    static void list(EditLine* el, std::vector<std::string> names) {
        std::sort(names.begin(), names.end());
        int columns = 80;
        el_get(el, EL_GETTC, "co", &columns, nullptr);
        size_t width = 0;
        for (const std::string& n : names) width = std::max(width, n.size());
        width += 2;
        const size_t per_row =
            std::max<size_t>(1, static_cast<size_t>(std::max(columns, 1)) / width);
        const size_t rows = (names.size() + per_row - 1) / per_row;
        std::string text = "\n";
        for (size_t r = 0; r < rows; ++r) {
            for (size_t c = 0; c < per_row; ++c) {
                const size_t i = c * rows + r;
                if (i >= names.size()) break;
                text += names[i];
                if (c + 1 < per_row && i + rows < names.size())
                    text.append(width - names[i].size(), ' ');
            }
            text += "\n";
        }
        std::fputs(text.c_str(), stdout);
        std::fflush(stdout);
    }

    Completer complete_;
    std::string history_file_;
    std::string prompt_;
    History* hist_ = nullptr;
    EditLine* el_ = nullptr;
};

#else
// Built without libedit: the prompt, then lines as a pipe gives them.
class TerminalReader final : public LineReader {
  public:
    TerminalReader(const Completer&, const std::string&, std::ostream&) : in_(STDIN_FILENO) {}
    ReadStatus read(const std::string& prompt, std::string& line) override {
        std::fputs(prompt.c_str(), stdout);
        std::fflush(stdout);
        return in_.read(prompt, line);
    }

  private:
    PipeReader in_;
};
#endif

}  // namespace

bool line_editing_built_in() {
#ifdef GRAPHRUN_HAVE_LIBEDIT
    return true;
#else
    return false;
#endif
}

std::unique_ptr<LineReader> make_pipe_reader(int fd) {
    return std::make_unique<PipeReader>(fd);
}

std::unique_ptr<LineReader> make_terminal_reader(Completer complete,
                                                 const std::string& history_file,
                                                 std::ostream& err) {
    return std::make_unique<TerminalReader>(std::move(complete), history_file, err);
}

std::string history_file_path() {
    if (const char* f = std::getenv("GRAPHRUN_HISTFILE")) return f;
    if (const char* state = std::getenv("XDG_STATE_HOME"); state && state[0] == '/') {
        const std::string dir = std::string(state) + "/graphrun";
        mkdir(dir.c_str(), 0700);  // where it cannot be made, saving the history warns
        return dir + "/history";
    }
    if (const char* home = std::getenv("HOME"); home && home[0])
        return std::string(home) + "/.graphrun_history";
    return {};
}

}  // namespace graphrun::cli
