// The progress line: a timer thread reads the run's counters and redraws.
#include "cli/progress.h"

#include <cstdio>

namespace graphrun::cli {

ProgressLine::ProgressLine(std::ostream& err, std::string file, int64_t iterations, std::chrono::milliseconds delay,
                           std::chrono::milliseconds period)
    : err_(err), file_(std::move(file)), iterations_(iterations), delay_(delay), period_(period),
      start_(std::chrono::steady_clock::now()), thread_([this] { loop(); }) {}

ProgressLine::~ProgressLine() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    std::lock_guard<std::mutex> lock(mu_);
    clear_locked();
}

std::string ProgressLine::text(const std::string& file, int64_t iterations, const RunProgress& p, double seconds) {
    const int64_t done = p.passes_done.load(std::memory_order_relaxed);
    std::string s = "graphrun: " + file + ": pass " + std::to_string(std::min(done + 1, std::max<int64_t>(iterations, 1))) +
                    "/" + std::to_string(iterations);
    if (p.repeat.load(std::memory_order_relaxed) >= 0 && done < iterations) {
        s += ", repeat";
        if (uint32_t line = p.repeat_line.load(std::memory_order_relaxed)) s += " at line " + std::to_string(line);
        s += ": " + std::to_string(p.repeat_passes_done.load(std::memory_order_relaxed)) + "/" +
             std::to_string(p.repeat_count.load(std::memory_order_relaxed));
    }
    if (done >= iterations) s += ", finishing";
    char t[32];
    std::snprintf(t, sizeof t, ", %.1f s", seconds);
    return s + t;
}

void ProgressLine::loop() {
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_until(lock, start_ + delay_, [this] { return stop_; })) return;
    while (!stop_) {
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
        std::string line = text(file_, iterations_, counters_, seconds);
        const size_t len = line.size();
        if (len < shown_) line.append(shown_ - len, ' ');  // over the longer line before
        err_ << '\r' << line << std::flush;
        shown_ = len < shown_ ? shown_ : len;
        cv_.wait_for(lock, period_, [this] { return stop_; });
    }
}

void ProgressLine::clear_locked() {
    if (shown_ == 0) return;
    err_ << '\r' << std::string(shown_, ' ') << '\r' << std::flush;
    shown_ = 0;
}

int ProgressLine::Buf::overflow(int c) {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    const char ch = static_cast<char>(c);
    return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
}

std::streamsize ProgressLine::Buf::xsputn(const char* s, std::streamsize n) {
    std::lock_guard<std::mutex> lock(owner_.mu_);
    owner_.clear_locked();
    owner_.err_.write(s, n);
    return owner_.err_ ? n : 0;
}

int ProgressLine::Buf::sync() {
    std::lock_guard<std::mutex> lock(owner_.mu_);
    owner_.err_.flush();
    return 0;
}

}  // namespace graphrun::cli
