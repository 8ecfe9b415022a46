// Finding the JSON pointer of a place in a JSON text by scanning up to it.
#include "engine/base/json_pointer.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>

namespace graphrun {

void append_json_pointer_token(std::string& out, std::string_view key) {
    // One pass that looks for both characters (find_first_of would search the
    // set once per character of the key: a pointer is built per listed node).
    size_t plain = 0;
    while (plain < key.size() && key[plain] != '~' && key[plain] != '/') ++plain;
    out.append(key.data(), plain);
    for (size_t i = plain; i < key.size(); ++i) {
        const char c = key[i];
        if (c == '~')
            out += "~0";
        else if (c == '/')
            out += "~1";
        else
            out += c;
    }
}

namespace {

// Bytes between tokens, and bytes that end a number, true, false or null.
constexpr uint8_t kBlank = 1, kEndsWord = 2;
constexpr std::array<uint8_t, 256> kByteClass = [] {
    std::array<uint8_t, 256> t{};
    for (unsigned char c : std::string_view(" \n\r\t:")) t[c] = kBlank | kEndsWord;
    for (unsigned char c : std::string_view(",]}")) t[c] = kEndsWord;
    return t;
}();

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

inline uint32_t JsonPointerFinder::step(uint32_t at) {
    const char c = text_[at];
    switch (c) {
        case ' ':
        case '\n':
        case '\r':
        case '\t':
        case ':':
            return at + 1;
        case ',':
            if (!stack_.empty()) {
                Frame& f = stack_.back();
                f.expect = true;
                if (f.array) ++f.index;
            }
            return at + 1;
        case '}':
        case ']':
            if (!stack_.empty()) stack_.pop_back();
            return at + 1;
        case '"': {
            if (!stack_.empty() && !stack_.back().array && stack_.back().expect) {
                Frame& f = stack_.back();
                f.member_start = at;
                f.expect = false;
                f.key_start = at + 1;
                const uint32_t end = skip_string(at);
                f.key_size = end - f.key_start - (end > f.key_start && text_[end - 1] == '"' ? 1 : 0);
                return end;
            }
            value_starts(at);
            return skip_string(at);
        }
        case '{':
        case '[': {
            value_starts(at);
            Frame f;
            f.array = c == '[';
            stack_.push_back(f);
            return at + 1;
        }
        default: {
            // A number, true, false or null.
            value_starts(at);
            const uint32_t size = text_size();
            const char* s = text_.data();
            uint32_t p = at + 1;
            while (p < size && !(kByteClass[static_cast<unsigned char>(s[p])] & kEndsWord)) ++p;
            return p;
        }
    }
}

std::string_view JsonPointerFinder::pointer(const Loc& loc) {
    if (!loc.pointer.empty()) return loc.pointer.view();
    if (!loc.in_json() || text_.empty()) return {};
    return pointer_at(loc.json_offset());
}

const std::string& JsonPointerFinder::pointer_at(uint32_t offset) {
    if (offset < pos_) {
        // The start of a member still open (check's listing asks for a node
        // after its literal input): its pointer is the stack down to it, with
        // no rewind and no scan.
        for (size_t k = stack_.size(); k > 0; --k) {
            const uint32_t start = stack_[k - 1].member_start;
            // (Past a member's comma, its frame already counts the next one.)
            if (start == offset && !stack_[k - 1].expect) {
                build_pointer(k);
                return out_;
            }
            if (start != kNoMember && start < offset) break;  // outer members start earlier still
        }
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
    if (pos_ == offset && pos_ < text_size() && !stack_.empty()) {
        if (!stack_.back().array && stack_.back().expect && text_[pos_] == '"')
            pos_ = step(pos_);  // the member's key
        else
            value_starts(pos_);
    }
    build_pointer(stack_.size());
    return out_;
}

void JsonPointerFinder::build_pointer(size_t depth) {
    // Places asked one after another share most of their frames (a node, its
    // inputs, the next node): the tokens of the frames that did not change
    // since the last pointer are kept.
    size_t same = 0;
    const size_t shared = std::min(depth, built_.size());
    while (same < shared) {
        const Frame& f = stack_[same];
        const Built& b = built_[same];
        if (f.array != b.array || (f.array ? f.index != b.index : f.key_start != b.key_start || f.key_size != b.key_size))
            break;
        ++same;
    }
    built_.resize(same);
    out_.resize(same == 0 ? 0 : built_.back().end);
    for (size_t k = same; k < depth; ++k) {
        const Frame& f = stack_[k];
        if (f.array) {
            char digits[16];
            digits[0] = '/';
            out_.append(digits, std::to_chars(digits + 1, digits + sizeof digits, f.index).ptr);
        } else {
            out_ += '/';
            const std::string_view key = text_.substr(f.key_start, f.key_size);
            if (std::memchr(key.data(), '\\', key.size()) == nullptr) {
                append_json_pointer_token(out_, key);
            } else {
                unescape(key, key_);
                append_json_pointer_token(out_, key_);
            }
        }
        built_.push_back(Built{f.array, f.index, f.key_start, f.key_size, out_.size()});
    }
}

void JsonPointerFinder::scan_to(uint32_t target) {
    const uint32_t size = text_size();
    target = std::min(target, size);
    const char* s = text_.data();
    uint32_t p = pos_;
    while (p < target) {
        if (kByteClass[static_cast<unsigned char>(s[p])] & kBlank) {  // most of a graph's bytes between tokens
            ++p;
            continue;
        }
        // A state is saved at most every kCheckpointBytes of text scanned for
        // the first time (deeper states cost more to keep: kept further apart).
        if (p >= checkpoint_due_ && p > scanned_) {
            const uint64_t gap = uint64_t{kCheckpointBytes} * (1 + stack_.size() / 16);
            const uint64_t last = checkpoints_.empty() ? 0 : checkpoints_.back().pos;
            if (p >= last + gap) {
                checkpoints_.push_back(Checkpoint{p, stack_});
                checkpoint_due_ = static_cast<uint64_t>(p) + kCheckpointBytes;
            }
        }
        p = step(p);
    }
    pos_ = p;
    scanned_ = std::max(scanned_, p);
}

void JsonPointerFinder::value_starts(uint32_t at) {
    if (stack_.empty()) return;
    Frame& f = stack_.back();
    if (f.array && f.expect) {
        f.member_start = at;
        f.expect = false;
    }
}

uint32_t JsonPointerFinder::skip_string(uint32_t at) const {
    // (Strings in a graph are short: a loop beats memchr's call.)
    const size_t size = text_size();
    const char* s = text_.data();
    size_t p = size_t{at} + 1;  // an escape's second byte may be past a text of 4 GiB - 1
    while (p < size) {
        const char c = s[p];
        if (c == '"') return static_cast<uint32_t>(p + 1);
        p += c == '\\' ? 2 : 1;
    }
    return static_cast<uint32_t>(size);
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
