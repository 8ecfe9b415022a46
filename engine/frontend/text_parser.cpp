// The text front end: a recursive-descent parser (SPEC section 1 grammar)
// that hands every node, name and block to the GraphBuilder, and recovers
// from syntax errors clox-style (panic mode, then synchronize at the next
// statement) so that one run reports every independent error.
#include "engine/frontend/text_parser.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

#include "engine/base/interrupt.h"
#include "engine/frontend/text_lexer.h"
#include "engine/frontend/text_parser_impl.h"

namespace graphrun {

namespace textparse {

// ---------------------------------------------------------------------------
// Tokens

void TextParser::advance() {
    prev_ = tok_;
    nl_.reset();
    if (stopped_) {
        tok_ = eof_tok_;
        return;
    }
    tok_ = lex_.next();
    if (nest_ > 0) {
        while (tok_.kind == Tok::Newline) {
            if (!nl_) {
                nl_ = tok_;
                nl_state_ = lex_.state();
            }
            tok_ = lex_.next();
        }
    }
    check_limit();
    if (!stopped_ && interrupted()) {  // a signal: read no further (the loader reports it)
        stopped_ = true;
        tok_ = eof_tok_;
        nl_.reset();
        return;
    }
    // A token adds at most a few nodes or one loop, so checking here bounds the graph.
    if (!stopped_ && g_.nodes.size() + g_.repeats.size() > limits_.nodes) stop_at_limit(loc_of(tok_), node_limit_message(limits_));
}

std::string TextParser::describe(const Token& t) const {
    switch (t.kind) {
        case Tok::Eof:
        case Tok::Newline:
            return tok_spelling(t.kind);
        case Tok::Ident:
        case Tok::Number:
        case Tok::String:
        case Tok::Bad: {
            std::string_view s = text(t);
            if (s.size() > 40) return "'" + std::string(s.substr(0, 40)) + "...'";
            return "'" + std::string(s) + "'";
        }
        default:
            return tok_spelling(t.kind);
    }
}

// A token that begins a new statement more plausibly than it continues the
// current one (used to tell a bracket left open at the end of a line).
bool TextParser::at_statement_start(const Token& t) const {
    switch (t.kind) {
        case Tok::Ident:
            return t.eq_follows;
        case Tok::KwWith:
        case Tok::KwRepeat:
        case Tok::KwOutput:
        case Tok::RBrace:
            return true;
        default:
            return false;
    }
}

std::string TextParser::source_between(const Token& from, const Token& to) const {
    size_t end = to.start + to.len;
    if (end <= from.start) return std::string(text(from));
    std::string_view s = src_.substr(from.start, end - from.start);
    if (s.size() > 40 || s.find('\n') != std::string_view::npos) return std::string(text(from));
    return std::string(s);
}

// ---------------------------------------------------------------------------
// Errors and recovery

void TextParser::report(const Loc& loc, std::string msg) {
    if (stopped_ || diag_.error_count() - base_errors_ >= kMaxErrors) return;
    diag_.error(loc, std::move(msg));
    check_limit();
}

void TextParser::stop_for_errors() {
    stopped_ = true;
    diag_.error(loc_of(tok_),
                "too many errors (" + std::to_string(kMaxErrors) + "); stopping here");
    tok_ = eof_tok_;
    nl_.reset();
}

// An input limit is reached: reports it and reads no further, so that memory
// stays bounded (the errors after it would be noise anyway).
void TextParser::stop_at_limit(const Loc& loc, std::string msg) {
    if (stopped_) return;
    diag_.error(loc, std::move(msg));
    stopped_ = true;
    tok_ = eof_tok_;
    nl_.reset();
}

// "expected X, found Y" at the current token; enters panic mode. When the
// statement was left open at the end of a line (a newline was skipped inside
// brackets and a new statement follows), the error points at that newline and
// parsing resumes there. `what_at_end` replaces `what` when the found token is
// a newline or the end of the file.
void TextParser::syntax_error(const std::string& what, const std::string& what_at_end) {
    if (panic_) return;
    panic_ = true;
    if (tok_.kind == Tok::Bad) return;  // the lexer said what is wrong
    const std::string& at_end = what_at_end.empty() ? what : what_at_end;
    if (nl_ && at_statement_start(tok_)) {
        report(loc_of(*nl_), at_end + ", found newline");
        tok_ = *nl_;
        lex_.restore(nl_state_);
        nl_.reset();
        nest_ = 0;
        return;
    }
    bool end = tok_.kind == Tok::Newline || tok_.kind == Tok::Eof;
    report(loc_of(tok_), (end ? at_end : what) + ", found " + describe(tok_));
}

void TextParser::keyword_as_name(const Token& t) {
    report(loc_of(t), "'" + std::string(text(t)) + "' is a keyword and cannot be used as a name");
}

void TextParser::too_deep() {
    if (panic_) return;
    report(loc_of(tok_), "nesting too deep (more than " + std::to_string(kMaxNesting) + " levels)");
    panic_ = true;
}

// Skips to the end of the statement that failed: a newline or ';' outside
// brackets, a '}' or the end of the file. Blocks met on the way are skipped
// whole, so that their '}' does not close the enclosing block.
void TextParser::synchronize() {
    int depth = nest_;
    nest_ = 0;
    nl_.reset();
    for (;;) {
        switch (tok_.kind) {
            case Tok::Eof:
            case Tok::Semicolon:
                return;
            case Tok::RBrace:
                if (block_depth_ > 0) return;
                break;  // no block is open: a stray '}' belongs to the failed statement
            case Tok::Newline:
                if (next_line_starts_statement(depth > 0)) return;
                break;
            case Tok::LParen:
            case Tok::LBracket:
                ++depth;
                break;
            case Tok::RParen:
            case Tok::RBracket:
                if (depth > 0) --depth;
                break;
            case Tok::LBrace:
                skip_braces();
                continue;
            default:
                break;
        }
        advance();
    }
}

void TextParser::skip_braces() {
    int64_t open = 0;
    for (;;) {
        if (tok_.kind == Tok::Eof) return;
        if (tok_.kind == Tok::LBrace) ++open;
        if (tok_.kind == Tok::RBrace && --open == 0) {
            advance();
            return;
        }
        advance();
    }
}

// At a newline after a failed statement: does the next line start a
// statement of its own, rather than continue the failed one? A line that
// cannot start a statement (`    + 1`) would only repeat the error. Inside
// brackets, a line that closes them or ends with ',' continues the call.
bool TextParser::next_line_starts_statement(bool in_brackets) {
    Lexer::State saved = lex_.state();
    Token t = lex_.next();
    while (t.kind == Tok::Newline) t = lex_.next();
    bool starts = false;
    if (t.kind == Tok::Eof || t.kind == Tok::RBrace) {
        starts = true;
    } else if (at_statement_start(t) && !in_brackets) {
        starts = true;
    } else if (at_statement_start(t)) {
        // `transpose_b=true)` or `seed=7,` continue a call; `y = 2` does not.
        int balance = 0;
        bool closes = false;
        Tok last = t.kind;
        for (Token u = lex_.next(); u.kind != Tok::Newline && u.kind != Tok::Eof; u = lex_.next()) {
            if (u.kind == Tok::LParen || u.kind == Tok::LBracket) ++balance;
            if ((u.kind == Tok::RParen || u.kind == Tok::RBracket) && --balance < 0) closes = true;
            last = u.kind;
        }
        starts = !closes && last != Tok::Comma;
    }
    lex_.restore(saved);
    return starts;
}

// After an error in a `with`/`repeat` header: skip to a '{' on the same line
// so that the block is still read (and its names known); false if there is none.
bool TextParser::recover_to_brace() {
    nest_ = 0;
    nl_.reset();
    while (tok_.kind != Tok::LBrace && tok_.kind != Tok::Newline && tok_.kind != Tok::Semicolon &&
           tok_.kind != Tok::RBrace && tok_.kind != Tok::Eof)
        advance();
    if (tok_.kind != Tok::LBrace) return false;
    panic_ = false;
    return true;
}

// ---------------------------------------------------------------------------
// Statements

void TextParser::predeclare(const std::vector<PredeclaredName>& names) {
    for (const PredeclaredName& p : names) {
        std::vector<Attr> dims;
        dims.reserve(p.shape.size());
        for (int64_t d : p.shape) dims.push_back(Attr::integer(d));
        std::vector<NamedAttr> attrs;
        attrs.push_back(NamedAttr{"shape", Attr::make_list(std::move(dims)), {}});
        attrs.push_back(NamedAttr{"dtype", Attr::ident(dtype_name(p.dtype)), {}});
        b_.predeclare(p.name, b_.add_node(OpKind::Input, {}, std::move(attrs), Loc{}));
    }
}

void TextParser::run() {
    // Room for every node up front: a big script would otherwise move its
    // node list while it grows, touching twice the memory. A statement makes
    // a node, and so does each operator and call in it; counting the
    // characters that can start one gives a bound that is rarely far over,
    // and room reserved but never used costs no memory.
    size_t nodes = 1, lines = 1;
    for (const char c : src_) {
        switch (c) {
            case '\n': case ';': ++lines; ++nodes; break;
            case '(': case '+': case '-': case '*': case '/': case '@': case '[': ++nodes; break;
            default: break;
        }
    }
    b_.reserve(std::min(nodes, limits_.nodes + 1), lines);
    advance();
    statements(false);
    if (interrupted()) return;  // a signal stopped the reading: nothing to finish (the loader says why)
    if (have_output_ && !stopped_) b_.set_outputs(std::move(outputs_), output_loc_);
    b_.finish(lex_.eof_loc());
}

// program := { statement } ; block body := { statement } up to '}'
void TextParser::statements(bool in_block) {
    for (;;) {
        while (tok_.kind == Tok::Newline || tok_.kind == Tok::Semicolon) advance();
        if (tok_.kind == Tok::Eof) return;
        if (tok_.kind == Tok::RBrace) {
            if (in_block) return;
            report(loc_of(tok_), "unexpected '}': no '{' is open");
            advance();
            continue;
        }
        statement();
        if (!panic_) {
            Tok k = tok_.kind;
            if (k != Tok::Newline && k != Tok::Semicolon && k != Tok::RBrace && k != Tok::Eof)
                syntax_error("expected a newline or ';' after the statement");
        }
        if (panic_) {
            synchronize();
            panic_ = false;
        }
    }
}

// statement := assign | with_device | repeat | output | del
void TextParser::statement() {
    switch (tok_.kind) {
        case Tok::Ident:
            if (tok_.eq_follows) return assignment();
            if (at_del()) return del_stmt();
            if (!expression_name_.empty()) return bare_expression();
            advance();
            return syntax_error("expected '=' after '" + std::string(text(prev_)) + "'");
        case Tok::KwWith:
            if (tok_.eq_follows) return keyword_assignment();
            return with_device();
        case Tok::KwRepeat:
            if (tok_.eq_follows) return keyword_assignment();
            return repeat_stmt();
        case Tok::KwOutput:
            if (tok_.eq_follows) return keyword_assignment();
            return output_stmt();
        case Tok::KwTrue:
        case Tok::KwFalse:
        case Tok::KwNan:
        case Tok::KwInf:
            if (tok_.eq_follows) return keyword_assignment();
            [[fallthrough]];
        case Tok::Number:
        case Tok::LParen:
        case Tok::LBracket:
        case Tok::Minus:
            if (!expression_name_.empty()) return bare_expression();
            [[fallthrough]];
        default:
            return syntax_error("expected a statement (name = expression, with, repeat or output)");
    }
}

// A live session's bare expression (`x`, `x @ y`): bound to expression_name_.
void TextParser::bare_expression() {
    Token first = tok_;
    Value v = expr();
    NodeId id = v.ok() ? materialize(v, false) : b_.add_invalid(loc_of(first));
    b_.assign(expression_name_, id, loc_of(first));
}

// assign := IDENT '=' expr
void TextParser::assignment() {
    Token name = tok_;
    b_.will_assign(text(name));
    advance();
    advance();  // '='
    Value v = expr();
    NodeId id = v.ok() ? materialize(v, false) : b_.add_invalid(loc_of(name));
    b_.assign(text(name), id, loc_of(name));
}

// `repeat = 3`: say so, and still read the expression for its own errors.
void TextParser::keyword_assignment() {
    keyword_as_name(tok_);
    advance();
    advance();  // '='
    Value v = expr();
    if (v.ok()) materialize(v, false);
}

// with_device := 'with' IDENT('device') '(' STRING ')' block
void TextParser::with_device() {
    Token kw = tok_;
    advance();
    std::string device;
    Loc device_loc;
    bool ok = false;
    if (tok_.kind == Tok::Ident && text(tok_) == "device" && tok_.paren_follows) {
        advance();
        Token open = tok_;
        ++nest_;
        advance();
        if (tok_.kind == Tok::String) {
            device = unescape(tok_);
            device_loc = loc_of(tok_);
            if (device.empty())
                report(device_loc, "empty device name: write a device such as \"gpu:0\"");
            advance();
            if (tok_.kind == Tok::RParen) {
                --nest_;
                advance();
                ok = true;
            } else {
                syntax_error("expected ')' to close '(' at " + where(open));
            }
        } else {
            syntax_error("expected a device name in quotes, as in with device(\"gpu\")");
        }
    } else {
        std::string msg = "expected 'device(\"...\")' after 'with'";
        if (tok_.kind == Tok::Ident && nearest_name(text(tok_), {"device"}) == "device")
            msg += " (did you mean 'device'?)";
        syntax_error(msg);
    }
    if (!ok) {
        if (!recover_to_brace()) return;
        block(
            kw, [] {}, [] {});
        return;
    }
    bool pushed = !device.empty();
    block(
        kw,
        [&] {
            if (pushed) b_.push_device(device, device_loc);
        },
        [&] {
            if (pushed) b_.pop_device();
        });
}

// repeat := 'repeat' INT block   (INT >= 0)
void TextParser::repeat_stmt() {
    Token kw = tok_;
    advance();
    int64_t count = 0;
    bool header_ok = true;
    if (tok_.kind == Tok::Number && tok_.int_form) {
        std::string_view s = text(tok_);
        auto r = std::from_chars(s.data(), s.data() + s.size(), count);
        if (r.ec != std::errc() || r.ptr != s.data() + s.size()) {
            count = 0;
            report(loc_of(tok_), "repeat count " + describe(tok_) + " is too large (at most " +
                                     std::to_string(std::numeric_limits<int64_t>::max()) + ")");
        }
        advance();
    } else if (tok_.kind == Tok::Minus && tok_.number_follows) {
        Token minus = tok_;
        advance();
        report(loc_of(minus), "repeat count must be a non-negative integer, found '-" +
                                  std::string(text(tok_)) + "'");
        advance();
    } else if (tok_.kind == Tok::Number || tok_.kind == Tok::KwNan || tok_.kind == Tok::KwInf) {
        report(loc_of(tok_),
               "repeat count must be a non-negative integer, found " + describe(tok_));
        advance();
    } else if (tok_.kind == Tok::Ident) {
        report(loc_of(tok_), "repeat count must be an integer literal, found " + describe(tok_));
        advance();
    } else {
        syntax_error("expected a repeat count after 'repeat'");
        header_ok = false;
    }
    if (!header_ok && !recover_to_brace()) return;
    block(
        kw, [&] { b_.begin_repeat(count, loc_of(kw)); }, [&] { b_.end_repeat(); });
}

// block := '{' { statement } '}'   ('{' on the line of its with/repeat)
template <class Begin, class End>
void TextParser::block(const Token& kw, Begin begin, End end) {
    if (tok_.kind != Tok::LBrace) {
        std::string what = "expected '{' after '" + source_between(kw, prev_) + "'";
        if (tok_.kind != Tok::Newline) return syntax_error(what);
        // A '{' on a later line: say so, and read the block anyway.
        Lexer::State saved = lex_.state();
        Token t = lex_.next();
        while (t.kind == Tok::Newline) t = lex_.next();
        if (t.kind != Tok::LBrace) {
            lex_.restore(saved);
            return syntax_error(what);
        }
        report(loc_of(t), "'{' must be on the same line as its '" + std::string(text(kw)) +
                              "' (line " + std::to_string(kw.line) + ")");
        tok_ = t;
    }
    Token open = tok_;
    Nesting nesting(*this);
    if (!nesting.ok) return skip_braces();
    advance();
    begin();
    ++block_depth_;
    statements(true);
    --block_depth_;
    end();
    if (tok_.kind == Tok::RBrace) {
        advance();
    } else {
        report(loc_of(tok_), "'}' expected to close '{' at line " + std::to_string(open.line) +
                                 ", found " + describe(tok_));
    }
}

// output := 'output' IDENT { ',' IDENT }   (at most once, top level only)
void TextParser::output_stmt() {
    Token kw = tok_;
    advance();
    std::vector<std::pair<std::string, Loc>> names;
    if (!name_list(names)) return;
    if (block_depth_ > 0) {
        report(loc_of(kw), "'output' is only allowed at top level, not inside a block");
    } else if (have_output_) {
        report(loc_of(kw), "only one 'output' statement is allowed (the first is at line " +
                               std::to_string(output_line_) + ")");
    } else {
        have_output_ = true;
        output_line_ = kw.line;
        output_loc_ = loc_of(kw);
        outputs_ = std::move(names);
    }
}

// `del` is a statement only when a name follows it on its line (`del x`);
// otherwise it is an ordinary name (`del = 1`, or a bare `del` in the REPL).
bool TextParser::at_del() {
    if (text(tok_) != "del") return false;
    Lexer::State saved = lex_.state();
    const Token next = lex_.next();
    lex_.restore(saved);
    return next.kind == Tok::Ident || is_word(next.kind);
}

// del := 'del' IDENT { ',' IDENT }   (top level only: GraphBuilder::unbind)
void TextParser::del_stmt() {
    advance();  // 'del'
    std::vector<std::pair<std::string, Loc>> names;
    if (!name_list(names)) return;
    for (const auto& [name, loc] : names) b_.unbind(name, loc);
}

// IDENT { ',' IDENT }: a keyword in the list is reported and skipped. False
// (a syntax error reported) where a name is missing.
bool TextParser::name_list(std::vector<std::pair<std::string, Loc>>& names) {
    for (;;) {
        if (tok_.kind == Tok::Ident) {
            names.emplace_back(std::string(text(tok_)), loc_of(tok_));
            advance();
        } else if (is_word(tok_.kind)) {
            keyword_as_name(tok_);
            advance();
        } else {
            syntax_error("expected a name after " + describe(prev_));
            return false;
        }
        if (tok_.kind != Tok::Comma) return true;
        advance();
    }
}

}  // namespace textparse

bool parse_text(std::string_view source, Graph& g, Diagnostics& diag, const InputLimits& limits) {
    return parse_text(source, g, diag, limits, {}, {});
}

bool parse_text(std::string_view source, Graph& g, Diagnostics& diag, const InputLimits& limits,
                const std::vector<PredeclaredName>& names, std::string_view bare_expression_name,
                uint32_t first_line) {
    textparse::TextParser parser(source, g, diag, limits, first_line);
    parser.predeclare(names);
    parser.bind_bare_expressions(bare_expression_name);
    parser.run();
    return !diag.has_errors() && !interrupted();
}

}  // namespace graphrun
