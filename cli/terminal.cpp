// The terminal filter of standard error (terminal.h).
#include "cli/terminal.h"

#include "engine/api/output_text.h"

namespace graphrun::cli {

TerminalSafeBuf::int_type TerminalSafeBuf::overflow(int_type c) {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    std::lock_guard<std::mutex> lock(mu_);
    put(&ch, 1);
    return c;
}

std::streamsize TerminalSafeBuf::xsputn(const char* s, std::streamsize n) {
    std::lock_guard<std::mutex> lock(mu_);
    put(s, n);
    return n;
}

void TerminalSafeBuf::put(const char* s, std::streamsize n) {
    for (std::streamsize i = 0; i < n; ++i) {
        const char c = s[i];
        if (c == '\n' || c == '\r') {
            end_line(c);
            continue;
        }
        pending_ += c;
        if (pending_.size() >= 4096) drain(false);
    }
}

int TerminalSafeBuf::sync() {
    std::lock_guard<std::mutex> lock(mu_);
    drain(false);
    return to_->pubsync();
}

void TerminalSafeBuf::drain(bool all) {
    // A UTF-8 character cut at the end waits for its other bytes.
    size_t end = pending_.size();
    if (!all) {
        for (size_t back = 1; back <= 3 && back <= pending_.size(); ++back) {
            const auto c = static_cast<unsigned char>(pending_[pending_.size() - back]);
            if (c < 0xC0) continue;  // ASCII or a continuation byte
            const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
            if (need > back) end = pending_.size() - back;
            break;
        }
    }
    shown_.clear();
    const std::string_view text(pending_.data(), end);
    for (size_t i = 0; i < text.size();) {
        const size_t room = line_bytes_ + shown_.size() < max_line_ ? max_line_ - line_bytes_ - shown_.size() : 0;
        if (room == 0) {
            dropped_ += text.size() - i;
            break;
        }
        // A run of printable ASCII (nearly everything) goes as it is.
        size_t run = 0;
        while (run < room && i + run < text.size() &&
               ((text[i + run] >= 0x20 && text[i + run] < 0x7F) || text[i + run] == '\t'))
            ++run;
        if (run > 0) {
            shown_.append(text, i, run);
            i += run;
            continue;
        }
        i += append_terminal_char(shown_, text, i, true);
    }
    to_->sputn(shown_.data(), static_cast<std::streamsize>(shown_.size()));
    line_bytes_ += shown_.size();
    pending_.erase(0, end);
}

void TerminalSafeBuf::end_line(char c) {
    drain(true);
    if (dropped_ > 0) {
        const std::string note = "...(" + std::to_string(dropped_) + " more bytes)";
        to_->sputn(note.data(), static_cast<std::streamsize>(note.size()));
    }
    to_->sputc(c);
    line_bytes_ = 0;
    dropped_ = 0;
}

}  // namespace graphrun::cli
