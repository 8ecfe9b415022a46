// The progress line of `graphrun run` on stderr: file, pass i/N, the
// top-level repeat's passes, elapsed time; redrawn in place with \r from a
// timer thread (the run itself only stores counters at pass boundaries) and
// cleared when the file's run ends.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <ostream>
#include <streambuf>
#include <string>
#include <thread>

#include "engine/api/run.h"  // RunProgress

namespace graphrun::cli {

class ProgressLine {
public:
    // Shows the line on `err` once the run has taken `delay`, every `period`.
    ProgressLine(std::ostream& err, std::string file, int64_t iterations,
                 std::chrono::milliseconds delay = std::chrono::milliseconds(1000),
                 std::chrono::milliseconds period = std::chrono::milliseconds(200));
    ~ProgressLine();  // stops the thread and clears the line
    ProgressLine(const ProgressLine&) = delete;
    ProgressLine& operator=(const ProgressLine&) = delete;

    RunProgress* counters() { return &counters_; }
    // A stream for the run's own messages: each write clears the line first,
    // so that a message never lands in the middle of it.
    std::ostream& messages() { return messages_; }

    // The line for the given state (for tests): "graphrun: a.graph: pass 2/10,
    // repeat at line 3: 400/1000, 1.2 s".
    static std::string text(const std::string& file, int64_t iterations, const RunProgress& p, double seconds);

private:
    class Buf : public std::streambuf {
    public:
        explicit Buf(ProgressLine& owner) : owner_(owner) {}

    protected:
        int overflow(int c) override;
        std::streamsize xsputn(const char* s, std::streamsize n) override;
        int sync() override;

    private:
        ProgressLine& owner_;
    };

    void loop();
    void clear_locked();  // the mutex held

    std::ostream& err_;
    std::string file_;
    int64_t iterations_;
    std::chrono::milliseconds delay_, period_;
    std::chrono::steady_clock::time_point start_;
    RunProgress counters_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    size_t shown_ = 0;  // characters of the line on the terminal now (0: none)
    Buf buf_{*this};
    std::ostream messages_{&buf_};
    std::thread thread_;
};

}  // namespace graphrun::cli
