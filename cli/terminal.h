// Standard error made safe for a terminal whatever is written to it: every
// message, warning and log line passes through one filter that shows control
// characters and bytes that are not UTF-8 as \xHH (engine/base/printable.h)
// and cuts a line past kMaxStderrLine bytes with "...(N more bytes)". '\n',
// '\t' and '\r' (the progress line) pass as they are.
#pragma once
#include <cstddef>
#include <mutex>
#include <ostream>
#include <streambuf>
#include <string>

namespace graphrun::cli {

constexpr size_t kMaxStderrLine = 4096;

class TerminalSafeBuf final : public std::streambuf {
public:
    explicit TerminalSafeBuf(std::streambuf* to, size_t max_line = kMaxStderrLine) : to_(to), max_line_(max_line) {}
    ~TerminalSafeBuf() override { sync(); }
    TerminalSafeBuf(const TerminalSafeBuf&) = delete;
    TerminalSafeBuf& operator=(const TerminalSafeBuf&) = delete;

protected:
    int_type overflow(int_type c) override;
    std::streamsize xsputn(const char* s, std::streamsize n) override;
    int sync() override;

private:
    void put(const char* s, std::streamsize n);
    // Writes the complete characters of pending_ (all of it when `all`).
    void drain(bool all);
    void end_line(char c);

    std::mutex mu_;  // a thread may write while another does (cerr is shared)
    std::streambuf* to_;
    size_t max_line_;
    std::string pending_;    // bytes of the current line not yet written
    std::string shown_;      // scratch: their escaped text
    size_t line_bytes_ = 0;  // bytes written of the current line
    size_t dropped_ = 0;     // bytes of the current line left out
};

// Puts the filter between `os` and its buffer for its lifetime.
class TerminalSafeStream {
public:
    explicit TerminalSafeStream(std::ostream& os) : os_(os), target_(os.rdbuf()), buf_(target_) { os_.rdbuf(&buf_); }
    ~TerminalSafeStream() {
        os_.flush();
        os_.rdbuf(target_);
    }
    TerminalSafeStream(const TerminalSafeStream&) = delete;
    TerminalSafeStream& operator=(const TerminalSafeStream&) = delete;

private:
    std::ostream& os_;
    std::streambuf* target_;
    TerminalSafeBuf buf_;
};

}  // namespace graphrun::cli
