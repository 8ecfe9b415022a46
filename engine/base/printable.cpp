// Names and messages made safe for JSON and for a terminal (printable.h).
#include "engine/base/printable.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace graphrun {

namespace {

bool continuation(std::string_view s, size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    if (i >= s.size()) return false;
    const auto c = static_cast<unsigned char>(s[i]);
    return c >= lo && c <= hi;
}

void append_hex_byte(std::string& out, unsigned char c) {
    static const char kDigits[] = "0123456789abcdef";
    out += "\\x";
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
}

uint32_t code_point(std::string_view s, size_t i, size_t len) {
    const auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(s[i + k])); };
    switch (len) {
        case 1: return b(0);
        case 2: return (b(0) & 0x1F) << 6 | (b(1) & 0x3F);
        case 3: return (b(0) & 0x0F) << 12 | (b(1) & 0x3F) << 6 | (b(2) & 0x3F);
        default: return (b(0) & 0x07) << 18 | (b(1) & 0x3F) << 12 | (b(2) & 0x3F) << 6 | (b(3) & 0x3F);
    }
}

// Characters a terminal acts on instead of showing: C0 and C1 controls, DEL,
// and the Unicode ones that reorder (bidirectional overrides, isolates,
// marks) or break (line and paragraph separators) the text around them.
bool terminal_control(uint32_t cp, bool keep_line_breaks) {
    if (keep_line_breaks && (cp == '\n' || cp == '\t')) return false;
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
           (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

size_t utf8_char_length(std::string_view s, size_t i) {
    if (i >= s.size()) return 0;
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return continuation(s, i + 1) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        // No overlong forms (E0 80..9F) and no surrogates (ED A0..BF).
        const unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        return continuation(s, i + 1, lo, hi) && continuation(s, i + 2) ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        // No overlong forms (F0 80..8F) and nothing past U+10FFFF (F4 90..).
        const unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        return continuation(s, i + 1, lo, hi) && continuation(s, i + 2) && continuation(s, i + 3) ? 4 : 0;
    }
    return 0;
}

bool json_safe(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            if (c == '\\' && i + 1 < s.size() && s[i + 1] == 'x') return false;
            ++i;
            continue;
        }
        const size_t len = utf8_char_length(s, i);
        if (len == 0) return false;
        i += len;
    }
    return true;
}

void append_json_safe(std::string& out, std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c == '\\' && i + 1 < s.size() && s[i + 1] == 'x') {
            append_hex_byte(out, c);  // "\x5c": the backslash itself, so that "\x.." reads back unchanged
            ++i;
            continue;
        }
        const size_t len = utf8_char_length(s, i);
        if (len == 0) {
            append_hex_byte(out, c);
            ++i;
            continue;
        }
        out.append(s.substr(i, len));
        i += len;
    }
}

std::string json_safe_text(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    append_json_safe(out, s);
    return out;
}

std::string json_quoted(std::string_view s) {
    std::string safe;
    if (!json_safe(s)) {
        append_json_safe(safe, s);
        s = safe;
    }
    std::string out;
    out.reserve(s.size() + 2);
    out += '"';
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20) {
                    static const char kDigits[] = "0123456789abcdef";
                    out += "\\u00";
                    out += kDigits[c >> 4];
                    out += kDigits[c & 15];
                } else {
                    out += ch;
                }
        }
    }
    out += '"';
    return out;
}

size_t append_terminal_char(std::string& out, std::string_view s, size_t i, bool keep_line_breaks) {
    const size_t len = utf8_char_length(s, i);
    if (len == 0) {
        append_hex_byte(out, static_cast<unsigned char>(s[i]));
        return 1;
    }
    if (terminal_control(code_point(s, i, len), keep_line_breaks)) {
        for (size_t k = 0; k < len; ++k) append_hex_byte(out, static_cast<unsigned char>(s[i + k]));
    } else {
        out.append(s.substr(i, len));
    }
    return len;
}

bool terminal_safe(std::string_view s) {
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c >= 0x7F) return false;
    }
    return true;
}

void append_terminal_text(std::string& out, std::string_view s, size_t max_bytes, bool keep_line_breaks) {
    if (s.size() <= max_bytes && terminal_safe(s)) {
        out += s;
        return;
    }
    // The head, a character at a time, until it is all there or too long.
    std::string head;
    std::vector<std::pair<size_t, size_t>> head_ends;  // per character: its end in `head`, and in `s`
    size_t i = 0;
    while (i < s.size() && head.size() <= max_bytes) {
        i += append_terminal_char(head, s, i, keep_line_breaks);
        head_ends.emplace_back(head.size(), i);
    }
    if (i == s.size() && head.size() <= max_bytes) {
        out += head;
        return;
    }
    // Too long: about two thirds from the start, a third from the end.
    const std::string mark = "...(" + std::to_string(s.size()) + " bytes)...";
    const size_t room = max_bytes > mark.size() ? max_bytes - mark.size() : 0;
    const size_t head_room = room * 2 / 3, tail_room = room - head_room;
    size_t keep = 0, shown_upto = 0;
    for (const auto& [end, source_end] : head_ends)
        if (end <= head_room) keep = end, shown_upto = source_end;
    out.append(head, 0, keep);
    out += mark;
    // The tail: escaped from at most tail_room bytes before the end (back to
    // the start of a character cut there), then trimmed from the front to fit.
    size_t from = std::max(shown_upto, s.size() > tail_room ? s.size() - tail_room : 0);
    for (int k = 0; k < 3 && from > shown_upto && (static_cast<unsigned char>(s[from]) & 0xC0) == 0x80; ++k) --from;
    std::string tail;
    std::vector<size_t> starts;  // where each character's text starts in `tail`
    for (size_t j = from; j < s.size();) {
        starts.push_back(tail.size());
        j += append_terminal_char(tail, s, j, keep_line_breaks);
    }
    size_t start = tail.size();
    for (auto it = starts.rbegin(); it != starts.rend() && tail.size() - *it <= tail_room; ++it) start = *it;
    out.append(tail, start, std::string::npos);
}

std::string terminal_text(std::string_view s, size_t max_bytes, bool keep_line_breaks) {
    std::string out;
    append_terminal_text(out, s, max_bytes, keep_line_breaks);
    return out;
}

std::string clipped_text(std::string_view s, size_t max_bytes) {
    if (s.size() <= max_bytes) return std::string(s);
    size_t keep = max_bytes > 3 ? max_bytes - 3 : 0;
    // Back to the start of the character the cut would fall in.
    while (keep > 0 && (static_cast<unsigned char>(s[keep]) & 0xC0) == 0x80) --keep;
    std::string out(s.substr(0, keep));
    out += "...";
    return out;
}

}  // namespace graphrun
