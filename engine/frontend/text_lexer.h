// The tokens of a `.graph` script (SPEC section 1, lexical rules) and the
// lexer that reads them one at a time, reporting lexical errors itself.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/base/diagnostics.h"
#include "engine/base/limits.h"

namespace graphrun {

// The messages, shared so that both front ends say the same thing.
std::string literal_limit_message(const InputLimits& limits);
std::string node_limit_message(const InputLimits& limits);
std::string json_value_limit_message(const InputLimits& limits);

// clang-format off
enum class Tok : uint8_t {
    Eof, Newline, Ident, Number, String,
    // keywords
    KwWith, KwRepeat, KwOutput, KwTrue, KwFalse, KwNan, KwInf,
    // punctuation
    LParen, RParen, LBracket, RBracket, LBrace, RBrace, Comma, Semicolon, Assign,
    Plus, Minus, Star, Slash, At, StarStar,
    // a token that could not be read; its error is already reported
    Bad,
};
// clang-format on

struct Token {
    Tok kind = Tok::Eof;
    bool int_form = false;        // Number: digits only (no fraction or exponent)
    bool eq_follows = false;      // word: '=' is the next character on the line (after blanks)
    bool paren_follows = false;   // word: '(' is the next character on the line (after blanks)
    bool number_follows = false;  // Minus: a numeric literal starts right after it (no blank)
    uint32_t line = 0;
    uint32_t col = 0;
    size_t start = 0;  // byte range in the source
    size_t len = 0;
};

// True for the kinds that spell a word: identifiers and keywords.
inline bool is_word(Tok k) {
    return k == Tok::Ident || (k >= Tok::KwWith && k <= Tok::KwInf);
}
// The spelling of a punctuation or keyword kind ("')'", "newline"), for messages.
const char* tok_spelling(Tok k);

// Reads tokens on demand. Its position can be saved and restored for
// lookahead; an error is reported only the first time its place is read, and
// byte-level errors (bad UTF-8, control bytes, stray characters) at most once
// per line. Stops reporting once `max_errors` errors are in `diag`.
class Lexer {
  public:
    struct State {
        size_t pos = 0;
        size_t line_start = 0;
        uint32_t line = 1;
    };

    Lexer(std::string_view source, Diagnostics& diag, size_t max_errors);

    // Lines count from `line` (a live session's text that goes on from line `line`).
    void set_first_line(uint32_t line) {
        st_.line = line;
        first_line_ = line;
    }
    Token next();
    State state() const { return st_; }
    void restore(const State& s) { st_ = s; }
    std::string_view text(const Token& t) const { return src_.substr(t.start, t.len); }
    // Where the file ends, for "found end of file" (the end of the last line).
    Loc eof_loc() const;

  private:
    void skip_comment();
    Token make(Tok kind, size_t start) const;
    Token lex_word(size_t start);
    Token lex_number(size_t start);
    Token lex_string(size_t start);
    Token lex_bad(size_t start);
    // Looks at the next non-blank character on the line after a word.
    void mark_follower(Token& t) const;
    // A byte-level problem at `at`: reported once per line.
    void byte_error(size_t at, const std::string& msg);
    // Reported once: `key` (default `at`) is the byte whose first reading reports it.
    void error(size_t at, const std::string& msg, size_t key = SIZE_MAX);
    Loc loc_at(size_t at) const;
    bool may_report(size_t at) const;

    std::string_view src_;
    Diagnostics& diag_;
    size_t base_errors_;
    size_t max_errors_;
    State st_;
    size_t reported_upto_ = 0;  // errors before this byte were reported already
    uint32_t last_byte_error_line_ = 0;
    mutable Loc eof_;  // computed on first use
    uint32_t first_line_ = 1;
};

// The length of the valid UTF-8 sequence at `p` (at most `avail` bytes), or 0.
size_t utf8_sequence_length(const unsigned char* p, size_t avail);

}  // namespace graphrun
