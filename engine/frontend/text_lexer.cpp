// The `.graph` lexer: numbers, strings, words, punctuation, comments, and
// the byte-level checks (UTF-8, control bytes) that keep garbage out.
#include "engine/frontend/text_lexer.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>

namespace graphrun {

namespace {

// Character classes, one table lookup per byte in the hot loops.
enum : uint8_t { kDigit = 1, kWordStart = 2 };
constexpr auto kClass = [] {
    std::array<uint8_t, 256> t{};
    for (int c = '0'; c <= '9'; ++c) t[static_cast<size_t>(c)] = kDigit;
    for (int c = 'a'; c <= 'z'; ++c) t[static_cast<size_t>(c)] = kWordStart;
    for (int c = 'A'; c <= 'Z'; ++c) t[static_cast<size_t>(c)] = kWordStart;
    t['_'] = kWordStart;
    return t;
}();

bool is_digit(unsigned char c) {
    return kClass[c] == kDigit;
}
bool is_word_start(unsigned char c) {
    return kClass[c] == kWordStart;
}
bool is_word_char(unsigned char c) {
    return kClass[c] != 0;
}
bool is_control(unsigned char c) {
    return (c < 0x20 && c != '\t' && c != '\r' && c != '\n') || c == 0x7F;
}

std::string hex_byte(unsigned char c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%02X", static_cast<unsigned>(c));
    return buf;
}

std::string control_message(unsigned char c) {
    std::string msg = "invalid control byte " + hex_byte(c);
    if (c == 0) msg += " (NUL)";
    return msg + " in the script";
}

Tok keyword(std::string_view w) {
    // Every keyword starts with one of these; most names do not.
    switch (w[0]) {
        case 'f': case 'i': case 'n': case 'o': case 'r': case 't': case 'w':
            break;
        default:
            return Tok::Ident;
    }
    switch (w.size()) {
        case 3:
            if (w == "nan") return Tok::KwNan;
            if (w == "inf") return Tok::KwInf;
            break;
        case 4:
            if (w == "with") return Tok::KwWith;
            if (w == "true") return Tok::KwTrue;
            break;
        case 5:
            if (w == "false") return Tok::KwFalse;
            break;
        case 6:
            if (w == "repeat") return Tok::KwRepeat;
            if (w == "output") return Tok::KwOutput;
            break;
        default:
            break;
    }
    return Tok::Ident;
}

}  // namespace

size_t utf8_sequence_length(const unsigned char* p, size_t avail) {
    unsigned char c = p[0];
    if (c < 0x80) return 1;
    auto cont = [&](size_t i, unsigned char lo, unsigned char hi) {
        return i < avail && p[i] >= lo && p[i] <= hi;
    };
    if (c < 0xC2) return 0;
    if (c < 0xE0) return cont(1, 0x80, 0xBF) ? 2 : 0;
    if (c < 0xF0) {
        unsigned char lo = c == 0xE0 ? 0xA0 : 0x80;
        unsigned char hi = c == 0xED ? 0x9F : 0xBF;
        return cont(1, lo, hi) && cont(2, 0x80, 0xBF) ? 3 : 0;
    }
    if (c < 0xF5) {
        unsigned char lo = c == 0xF0 ? 0x90 : 0x80;
        unsigned char hi = c == 0xF4 ? 0x8F : 0xBF;
        return cont(1, lo, hi) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF) ? 4 : 0;
    }
    return 0;
}

std::string literal_limit_message(const InputLimits& limits) {
    return "literal too large: more than " + std::to_string(limits.literal_elements) +
           " elements in this file's literals; use fill(), zeros() or random_*() for large tensors";
}

std::string node_limit_message(const InputLimits& limits) {
    return "graph too large: more than " + std::to_string(limits.nodes) +
           " nodes and loops in this file (every operation and literal operand is a node); use repeat for long chains";
}

std::string json_value_limit_message(const InputLimits& limits) {
    return "JSON document too large: more than " + std::to_string(limits.json_values) +
           " values (numbers, strings, arrays and objects); use fill(), zeros() or random_*() for large tensors";
}

const char* tok_spelling(Tok k) {
    switch (k) {
        case Tok::Eof:
            return "end of file";
        case Tok::Newline:
            return "newline";
        case Tok::Ident:
            return "name";
        case Tok::Number:
            return "number";
        case Tok::String:
            return "string";
        case Tok::KwWith:
            return "'with'";
        case Tok::KwRepeat:
            return "'repeat'";
        case Tok::KwOutput:
            return "'output'";
        case Tok::KwTrue:
            return "'true'";
        case Tok::KwFalse:
            return "'false'";
        case Tok::KwNan:
            return "'nan'";
        case Tok::KwInf:
            return "'inf'";
        case Tok::LParen:
            return "'('";
        case Tok::RParen:
            return "')'";
        case Tok::LBracket:
            return "'['";
        case Tok::RBracket:
            return "']'";
        case Tok::LBrace:
            return "'{'";
        case Tok::RBrace:
            return "'}'";
        case Tok::Comma:
            return "','";
        case Tok::Semicolon:
            return "';'";
        case Tok::Assign:
            return "'='";
        case Tok::Plus:
            return "'+'";
        case Tok::Minus:
            return "'-'";
        case Tok::Star:
            return "'*'";
        case Tok::Slash:
            return "'/'";
        case Tok::At:
            return "'@'";
        case Tok::StarStar:
            return "'**'";
        case Tok::Bad:
            return "invalid input";
    }
    return "?";
}

Lexer::Lexer(std::string_view source, Diagnostics& diag, size_t max_errors)
    : src_(source), diag_(diag), base_errors_(diag.error_count()), max_errors_(max_errors) {
    // A UTF-8 byte order mark is not part of the script (columns still count its bytes).
    if (src_.substr(0, 3) == "\xEF\xBB\xBF") st_.pos = 3;
}

Loc Lexer::loc_at(size_t at) const {
    Loc l;
    l.line = st_.line;
    l.col = static_cast<uint32_t>(at - st_.line_start + 1);
    return l;
}

bool Lexer::may_report(size_t at) const {
    return at >= reported_upto_ && diag_.error_count() - base_errors_ < max_errors_;
}

void Lexer::error(size_t at, const std::string& msg, size_t key) {
    if (key == SIZE_MAX) key = at;
    if (!may_report(key)) return;
    diag_.error(loc_at(at), msg);
    reported_upto_ = key + 1;
}

void Lexer::byte_error(size_t at, const std::string& msg) {
    if (st_.line == last_byte_error_line_) return;
    if (!may_report(at)) return;
    last_byte_error_line_ = st_.line;
    error(at, msg);
}

Loc Lexer::eof_loc() const {
    if (eof_.line == 0) {
        // Point at the end of the last line, not at the empty line after its newline.
        size_t n = src_.size();
        size_t end = n > 0 && src_[n - 1] == '\n' ? n - 1 : n;
        size_t line_start = end == 0 ? std::string_view::npos : src_.rfind('\n', end - 1);
        line_start = line_start == std::string_view::npos ? 0 : line_start + 1;
        eof_.line = static_cast<uint32_t>(
            first_line_ + std::count(src_.begin(), src_.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
        eof_.col = static_cast<uint32_t>(end - line_start + 1);
    }
    return eof_;
}

Token Lexer::make(Tok kind, size_t start) const {
    Token t;
    t.kind = kind;
    t.start = start;
    t.len = st_.pos - start;
    t.line = st_.line;
    t.col = static_cast<uint32_t>(start - st_.line_start + 1);
    return t;
}

void Lexer::skip_comment() {
    const auto* s = reinterpret_cast<const unsigned char*>(src_.data());
    size_t n = src_.size();
    size_t p = st_.pos;
    while (p < n && s[p] != '\n') {
        unsigned char c = s[p];
        if (c < 0x80) {
            if (is_control(c)) byte_error(p, control_message(c));
            ++p;
            continue;
        }
        size_t len = utf8_sequence_length(s + p, n - p);
        if (len == 0) {
            byte_error(p, "invalid UTF-8 byte " + hex_byte(c) + " in a comment");
            len = 1;
        }
        p += len;
    }
    st_.pos = p;
}

void Lexer::mark_follower(Token& t) const {
    size_t p = t.start + t.len;
    while (p < src_.size() && (src_[p] == ' ' || src_[p] == '\t')) ++p;
    if (p >= src_.size()) return;
    t.eq_follows = src_[p] == '=';
    t.paren_follows = src_[p] == '(';
}

Token Lexer::lex_word(size_t start) {
    const auto* s = reinterpret_cast<const unsigned char*>(src_.data());
    const size_t n = src_.size();
    size_t p = start + 1;
    while (p < n && is_word_char(s[p])) ++p;
    st_.pos = p;
    Token t = make(keyword(std::string_view(src_.data() + start, p - start)), start);
    mark_follower(t);
    return t;
}

Token Lexer::lex_number(size_t start) {
    const auto* s = reinterpret_cast<const unsigned char*>(src_.data());
    size_t n = src_.size();
    size_t p = start;
    bool int_form = true;
    while (p < n && is_digit(s[p])) ++p;
    if (p < n && s[p] == '.') {
        int_form = false;
        ++p;
        while (p < n && is_digit(s[p])) ++p;
    }
    bool bad_exponent = false;
    if (p < n && (s[p] == 'e' || s[p] == 'E')) {
        int_form = false;
        size_t q = p + 1;
        if (q < n && (s[q] == '+' || s[q] == '-')) ++q;
        if (q < n && is_digit(s[q])) {
            while (q < n && is_digit(s[q])) ++q;
            p = q;
        } else {
            bad_exponent = true;
            p = q;
        }
    }
    bool trailing = p < n && (is_word_char(s[p]) || s[p] == '.');
    if (bad_exponent || trailing) {
        while (p < n && (is_word_char(s[p]) || s[p] == '.')) ++p;
        st_.pos = p;
        std::string_view text = src_.substr(start, p - start);
        std::string shown(text.substr(0, 40));
        if (text.size() > 40) shown += "...";
        error(start, "malformed number '" + shown + "'" +
                         (bad_exponent ? ": expected digits after the exponent" : ""));
        return make(Tok::Bad, start);
    }
    st_.pos = p;
    Token t = make(Tok::Number, start);
    t.int_form = int_form;
    return t;
}

Token Lexer::lex_string(size_t start) {
    const auto* s = reinterpret_cast<const unsigned char*>(src_.data());
    size_t n = src_.size();
    size_t p = start + 1;
    bool bad = false;
    for (;;) {
        if (p >= n || s[p] == '\n' || (s[p] == '\r' && p + 1 < n && s[p + 1] == '\n')) {
            st_.pos = p;
            // Keyed by where the string stops: errors inside it came first.
            error(start,
                  "unterminated string: a string must end with '\"' on the line where it starts",
                  p);
            return make(Tok::Bad, start);
        }
        unsigned char c = s[p];
        if (c == '"') {
            ++p;
            break;
        }
        if (c == '\\') {
            if (p + 1 >= n || s[p + 1] == '\n') {
                ++p;
                continue;
            }
            unsigned char e = s[p + 1];
            if (e == '"' || e == '\\') {
                p += 2;
                continue;
            }
            std::string shown =
                e >= 0x20 && e < 0x7F ? std::string(1, static_cast<char>(e)) : hex_byte(e);
            error(p,
                  "unknown escape '\\" + shown + "' in a string: only \\\" and \\\\ are allowed");
            bad = true;
            p += 1;
            continue;
        }
        if (c < 0x80) {
            if (is_control(c) || c == '\r') {
                byte_error(p, control_message(c));
                bad = true;
            }
            ++p;
            continue;
        }
        size_t len = utf8_sequence_length(s + p, n - p);
        if (len == 0) {
            byte_error(p, "invalid UTF-8 byte " + hex_byte(c) + " in a string");
            bad = true;
            len = 1;
        }
        p += len;
    }
    st_.pos = p;
    return make(bad ? Tok::Bad : Tok::String, start);
}

Token Lexer::lex_bad(size_t start) {
    const auto* s = reinterpret_cast<const unsigned char*>(src_.data());
    unsigned char c = s[start];
    size_t len = 1;
    if (c >= 0x80) {
        len = utf8_sequence_length(s + start, src_.size() - start);
        if (len == 0) {
            byte_error(start, "invalid UTF-8 byte " + hex_byte(c));
            len = 1;
        } else {
            byte_error(start, "unexpected character '" + std::string(src_.substr(start, len)) +
                                  "': names and operators are ASCII");
        }
    } else if (is_control(c)) {
        byte_error(start, control_message(c));
    } else if (c == '\'') {
        byte_error(start, "unexpected character '''; strings use double quotes");
    } else {
        std::string message = "unexpected character '";
        message += static_cast<char>(c);
        message += '\'';
        byte_error(start, message);
    }
    st_.pos = start + len;
    return make(Tok::Bad, start);
}

Token Lexer::next() {
    const auto* s = reinterpret_cast<const unsigned char*>(src_.data());
    size_t n = src_.size();
    for (;;) {
        size_t p = st_.pos;
        while (p < n && (s[p] == ' ' || s[p] == '\t' || s[p] == '\r')) ++p;
        st_.pos = p;
        if (p < n && s[p] == '#') {
            skip_comment();
            continue;
        }
        break;
    }
    size_t start = st_.pos;
    if (start >= n) {
        Token t;
        t.kind = Tok::Eof;
        t.start = n;
        Loc l = eof_loc();
        t.line = l.line;
        t.col = l.col;
        return t;
    }
    unsigned char c = s[start];
    if (c == '\n') {
        st_.pos = start + 1;
        Token t = make(Tok::Newline, start);
        st_.line += 1;
        st_.line_start = start + 1;
        return t;
    }
    if (is_word_start(c)) return lex_word(start);
    if (is_digit(c) || (c == '.' && start + 1 < n && is_digit(s[start + 1])))
        return lex_number(start);
    if (c == '"') return lex_string(start);
    Tok kind = Tok::Bad;
    switch (c) {
        case '(':
            kind = Tok::LParen;
            break;
        case ')':
            kind = Tok::RParen;
            break;
        case '[':
            kind = Tok::LBracket;
            break;
        case ']':
            kind = Tok::RBracket;
            break;
        case '{':
            kind = Tok::LBrace;
            break;
        case '}':
            kind = Tok::RBrace;
            break;
        case ',':
            kind = Tok::Comma;
            break;
        case ';':
            kind = Tok::Semicolon;
            break;
        case '=':
            kind = Tok::Assign;
            break;
        case '+':
            kind = Tok::Plus;
            break;
        case '-':
            kind = Tok::Minus;
            break;
        case '/':
            kind = Tok::Slash;
            break;
        case '@':
            kind = Tok::At;
            break;
        case '*':
            if (start + 1 < n && s[start + 1] == '*') {
                st_.pos = start + 2;
                return make(Tok::StarStar, start);
            }
            kind = Tok::Star;
            break;
        default:
            return lex_bad(start);
    }
    st_.pos = start + 1;
    Token t = make(kind, start);
    if (kind == Tok::Minus) {
        size_t q = start + 1;
        if (q < n && (is_digit(s[q]) || (s[q] == '.' && q + 1 < n && is_digit(s[q + 1])))) {
            t.number_follows = true;
        } else if (q + 3 <= n && (src_.substr(q, 3) == "nan" || src_.substr(q, 3) == "inf") &&
                   (q + 3 == n || !is_word_char(s[q + 3]))) {
            t.number_follows = true;
        }
    }
    return t;
}

}  // namespace graphrun
