// Finding the JSON pointer of a place in a JSON text by scanning up to it.
#include "engine/base/json_pointer.h"

#include <algorithm>
#include <charconv>

namespace graphrun {

void append_json_pointer_token(std::string& out, std::string_view key) {
    if (key.find_first_of("~/") == std::string_view::npos) {
        out += key;
        return;
    }
    for (char c : key) {
        if (c == '~')
            out += "~0";
        else if (c == '/')
            out += "~1";
        else
            out += c;
    }
}

namespace {

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// The four hex digits at `at` of `s`, or -1.
long hex4(std::string_view s, size_t at) {
    if (at + 4 > s.size()) return -1;
    long v = 0;
    for (size_t i = at; i < at + 4; ++i) {
        const int d = hex_digit(s[i]);
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

void append_utf8(std::string& out, unsigned long cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

// A JSON string's characters as written (between its quotes), unescaped as
// its reader unescaped them.
void unescape(std::string_view raw, std::string& out) {
    out.clear();
    for (size_t i = 0; i < raw.size(); ++i) {
        const char c = raw[i];
        if (c != '\\' || i + 1 == raw.size()) {
            out += c;
            continue;
        }
        const char e = raw[++i];
        switch (e) {
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case 'u': {
                long cp = hex4(raw, i + 1);
                if (cp < 0) {
                    out += e;  // not in a document its reader accepted
                    break;
                }
                i += 4;
                // A surrogate pair is one character.
                if (cp >= 0xD800 && cp < 0xDC00 && i + 2 < raw.size() && raw[i + 1] == '\\' && raw[i + 2] == 'u') {
                    const long low = hex4(raw, i + 3);
                    if (low >= 0xDC00 && low < 0xE000) {
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                        i += 6;
                    }
                }
                append_utf8(out, static_cast<unsigned long>(cp));
                break;
            }
            default: out += e; break;  // '"', '\\', '/'
        }
    }
}

}  // namespace

std::string_view JsonPointerFinder::pointer(const Loc& loc) {
    if (!loc.pointer.empty()) return loc.pointer.view();
    if (!loc.in_json() || text_.empty()) return {};
    return pointer_at(loc.json_offset());
}

const std::string& JsonPointerFinder::pointer_at(uint32_t offset) {
    if (offset < pos_) {
        // Where the scan got to is kept: the next place asked is likely past
        // it (check's listing asks for a node's literal input, then the node,
        // then the next node's literal).
        if (pos_ > ahead_pos_) {
            ahead_pos_ = pos_;
            ahead_stack_ = stack_;
        }
        rewind(offset);
    } else if (offset >= ahead_pos_ && ahead_pos_ > pos_) {
        pos_ = ahead_pos_;
        stack_ = ahead_stack_;
    }
    scan_to(offset);
    const auto size = static_cast<uint32_t>(std::min<size_t>(text_.size(), UINT32_MAX));
    if (pos_ == offset && pos_ < size && !stack_.empty()) {
        if (!stack_.back().array && stack_.back().expect && text_[pos_] == '"')
            step();  // the member's key
        else
            value_starts();
    }
    out_.clear();
    for (const Frame& f : stack_) {
        out_ += '/';
        if (f.array) {
            char digits[16];
            out_.append(digits, std::to_chars(digits, digits + sizeof digits, f.index).ptr);
            continue;
        }
        const std::string_view key = text_.substr(f.key_start, f.key_size);
        if (key.find('\\') == std::string_view::npos) {
            append_json_pointer_token(out_, key);
        } else {
            unescape(key, key_);
            append_json_pointer_token(out_, key_);
        }
    }
    return out_;
}

void JsonPointerFinder::scan_to(uint32_t target) {
    const auto size = static_cast<uint32_t>(std::min<size_t>(text_.size(), UINT32_MAX));
    target = std::min(target, size);
    while (pos_ < target) {
        const char c = text_[pos_];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == ':') {  // most of a graph's bytes between tokens
            ++pos_;
            continue;
        }
        if (pos_ > scanned_) {
            scanned_ = pos_;
            // Deeper states cost more to keep: kept further apart.
            const uint64_t gap = uint64_t{kCheckpointBytes} * (1 + stack_.size() / 16);
            const uint64_t last = checkpoints_.empty() ? 0 : checkpoints_.back().pos;
            if (pos_ >= last + gap) checkpoints_.push_back(Checkpoint{pos_, stack_});
        }
        step();
    }
}

void JsonPointerFinder::value_starts() {
    if (stack_.empty()) return;
    Frame& f = stack_.back();
    if (f.array && f.expect) {
        f.member_start = pos_;
        f.expect = false;
    }
}

void JsonPointerFinder::skip_string() {
    const size_t size = std::min<size_t>(text_.size(), UINT32_MAX);
    size_t p = pos_ + size_t{1};
    while (p < size) {
        const char c = text_[p];
        if (c == '\\') {
            p += 2;
            continue;
        }
        ++p;
        if (c == '"') break;
    }
    pos_ = static_cast<uint32_t>(std::min(p, size));
}

void JsonPointerFinder::step() {
    const char c = text_[pos_];
    switch (c) {
        case ' ':
        case '\n':
        case '\r':
        case '\t':
        case ':':
            ++pos_;
            return;
        case ',':
            if (!stack_.empty()) {
                Frame& f = stack_.back();
                f.expect = true;
                if (f.array) ++f.index;
            }
            ++pos_;
            return;
        case '}':
        case ']':
            if (!stack_.empty()) stack_.pop_back();
            ++pos_;
            return;
        case '"':
            if (!stack_.empty() && !stack_.back().array && stack_.back().expect) {
                Frame& f = stack_.back();
                f.member_start = pos_;
                f.expect = false;
                f.key_start = pos_ + 1;
                skip_string();
                f.key_size = pos_ - f.key_start - (pos_ > f.key_start && text_[pos_ - 1] == '"' ? 1 : 0);
                return;
            }
            value_starts();
            skip_string();
            return;
        case '{':
        case '[': {
            value_starts();
            Frame f;
            f.array = c == '[';
            stack_.push_back(f);
            ++pos_;
            return;
        }
        default: {
            // A number, true, false or null.
            value_starts();
            const size_t size = std::min<size_t>(text_.size(), UINT32_MAX);
            size_t p = pos_ + size_t{1};
            while (p < size) {
                const char d = text_[p];
                if (d == ',' || d == ']' || d == '}' || d == ' ' || d == '\n' || d == '\r' || d == '\t' || d == ':')
                    break;
                ++p;
            }
            pos_ = static_cast<uint32_t>(p);
            return;
        }
    }
}

void JsonPointerFinder::rewind(uint32_t target) {
    // The deepest open member that starts at or before the target holds it:
    // the state at its start is the stack down to it.
    size_t k = stack_.size();
    while (k > 0 && (stack_[k - 1].member_start == kNoMember || stack_[k - 1].member_start > target)) --k;
    auto cp = std::upper_bound(checkpoints_.begin(), checkpoints_.end(), target,
                               [](uint32_t t, const Checkpoint& c) { return t < c.pos; });
    const Checkpoint* checkpoint = cp == checkpoints_.begin() ? nullptr : &*(cp - 1);
    if (k > 0 && (!checkpoint || stack_[k - 1].member_start >= checkpoint->pos)) {
        stack_.resize(k);
        Frame& f = stack_.back();
        pos_ = f.member_start;
        f.expect = true;
    } else if (checkpoint) {
        pos_ = checkpoint->pos;
        stack_ = checkpoint->stack;
    } else {
        pos_ = 0;
        stack_.clear();
    }
}

}  // namespace graphrun
