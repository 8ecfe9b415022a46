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

#include "engine/frontend/text_lexer.h"

namespace graphrun {

namespace {

constexpr size_t kMaxErrors = 50;

Loc make_loc(uint32_t line, uint32_t col) {
    Loc l;
    l.line = line;
    l.col = col;
    return l;
}

Loc loc_of(const Token& t) {
    return make_loc(t.line, t.col);
}

std::string where(const Token& t) {
    return std::to_string(t.line) + ":" + std::to_string(t.col);
}

// An expression's result. A scalar numeric literal stays `pending` until its
// use is known, because it is weakly typed exactly when it is a direct
// operand of a binary elementwise op.
struct Value {
    NodeId id = kNoNode;
    uint32_t line = 0, col = 0;  // where the expression starts (Input::loc)
    bool pending = false;
    bool negative = false;  // pending: a '-' right before the literal folds into it
    Token lit;              // pending: the Number, nan or inf token
    bool ok() const { return pending || id != kNoNode; }
    Loc start() const { return make_loc(line, col); }
};

Value node_value(NodeId id, const Token& at) {
    Value v;
    v.id = id;
    v.line = at.line;
    v.col = at.col;
    return v;
}

class TextParser {
  public:
    TextParser(std::string_view src, Graph& g, Diagnostics& diag, const InputLimits& limits)
        : limits_(limits),
          src_(src),
          g_(g),
          diag_(diag),
          base_errors_(diag.error_count()),
          lex_(src, diag, kMaxErrors),
          b_(g, diag) {
        eof_tok_.kind = Tok::Eof;
        eof_tok_.start = src.size();
        Loc e = lex_.eof_loc();
        eof_tok_.line = e.line;
        eof_tok_.col = e.col;
    }

    void run();

  private:
    // Counts one level of nesting (bracket, parenthesis, unary operator, `**`,
    // block) for as long as it lives; past kMaxNesting it reports once.
    struct Nesting {
        TextParser& p;
        bool ok;
        explicit Nesting(TextParser& parser) : p(parser), ok(++parser.depth_ <= kMaxNesting) {
            if (!ok) p.too_deep();
        }
        ~Nesting() { --p.depth_; }
        Nesting(const Nesting&) = delete;
        Nesting& operator=(const Nesting&) = delete;
    };

    // --- tokens ---
    void advance();
    std::string_view text(const Token& t) const { return src_.substr(t.start, t.len); }
    std::string describe(const Token& t) const;
    bool at_statement_start(const Token& t) const;
    std::string source_between(const Token& from, const Token& to) const;

    // --- errors ---
    void report(const Loc& loc, std::string msg);
    // Stops once kMaxErrors errors are reported (the check runs for every token).
    void check_limit() {
        if (!stopped_ && diag_.error_count() - base_errors_ >= kMaxErrors) stop_for_errors();
    }
    void stop_for_errors();
    void stop_at_limit(const Loc& loc, std::string msg);
    void syntax_error(const std::string& what, const std::string& what_at_end = {});
    void keyword_as_name(const Token& t);
    void too_deep();
    void synchronize();
    void skip_braces();
    bool next_line_starts_statement(bool in_brackets);
    bool recover_to_brace();

    // --- statements ---
    void statements(bool in_block);
    void statement();
    void assignment();
    void keyword_assignment();
    void with_device();
    void repeat_stmt();
    void output_stmt();
    template <class Begin, class End>
    void block(const Token& kw, Begin begin, End end);

    // --- expressions ---
    Value expr() { return sum(); }
    Value sum();
    Value product();
    Value unary();
    Value power();
    Value postfix();
    Value paren();
    Value call();
    Value list_expr();
    Value literal();
    NodeId materialize(Value& v, bool weak);
    NodeId lookup_name(const Token& t);

    // --- attributes ---
    bool attr_value(Attr& out);
    bool list_attr(Attr& out, bool in_expr);
    bool list_elem(Attr& out, bool in_expr, const Token& open);
    bool number_attr(Attr& out);
    Attr make_number(const Token& num, bool negative, const Loc& loc);
    std::string unescape(const Token& t) const;
    bool keyword_arg(std::vector<NamedAttr>& attrs, std::string& device, Loc& device_loc,
                     bool& has_device);
    void finish_attrs(OpKind op, std::vector<NamedAttr>& positional, std::vector<NamedAttr>& attrs);

    const InputLimits limits_;
    std::string_view src_;
    Graph& g_;
    Diagnostics& diag_;
    size_t base_errors_;
    Lexer lex_;
    GraphBuilder b_;

    Token tok_;   // the current token
    Token prev_;  // the last one consumed
    Token eof_tok_;
    std::optional<Token> nl_;  // the first newline skipped right before tok_ (inside brackets)
    Lexer::State nl_state_;    // the lexer just after that newline
    int nest_ = 0;             // open '(' and '[' of the current statement: newlines are skipped
    int depth_ = 0;            // nesting of the recursion
    int block_depth_ = 0;
    bool panic_ = false;
    bool stopped_ = false;
    size_t literal_elements_ = 0;  // list elements read so far (kMaxLiteralElements)

    bool have_output_ = false;
    uint32_t output_line_ = 0;
    Loc output_loc_;
    std::vector<std::pair<std::string, Loc>> outputs_;
};

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

// statement := assign | with_device | repeat | output
void TextParser::statement() {
    switch (tok_.kind) {
        case Tok::Ident:
            if (tok_.eq_follows) return assignment();
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
        default:
            return syntax_error("expected a statement (name = expression, with, repeat or output)");
    }
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
    for (;;) {
        if (tok_.kind == Tok::Ident) {
            names.emplace_back(std::string(text(tok_)), loc_of(tok_));
            advance();
        } else if (is_word(tok_.kind)) {
            keyword_as_name(tok_);
            advance();
        } else {
            return syntax_error("expected a name after " + describe(prev_));
        }
        if (tok_.kind != Tok::Comma) break;
        advance();
    }
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

// ---------------------------------------------------------------------------
// Expressions

NodeId TextParser::materialize(Value& v, bool weak) {
    if (!v.pending) return v.id;
    v.pending = false;
    Loc l = v.negative ? make_loc(v.lit.line, v.lit.col - 1) : loc_of(v.lit);
    Attr a = make_number(v.lit, v.negative, l);
    v.id = b_.add_scalar_literal(std::move(a), l, weak);
    return v.id;
}

NodeId TextParser::lookup_name(const Token& t) {
    if (stopped_) return b_.add_invalid(loc_of(t));
    std::optional<NodeId> id = b_.lookup(text(t), loc_of(t));
    check_limit();
    return id ? *id : b_.add_invalid(loc_of(t));
}

// sum := product { ('+'|'-') product }
Value TextParser::sum() {
    Value left = product();
    while (left.ok() && (tok_.kind == Tok::Plus || tok_.kind == Tok::Minus)) {
        Token op = tok_;
        NodeId l = materialize(left, true);
        advance();
        Value right = product();
        if (!right.ok()) return right;
        NodeId r = materialize(right, true);
        left.id = b_.add_node(op.kind == Tok::Plus ? OpKind::Add : OpKind::Sub,
                              {Input{l, left.start()}, Input{r, right.start()}}, {}, loc_of(op));
    }
    return left;
}

// product := unary { ('*'|'/'|'@') unary }
Value TextParser::product() {
    Value left = unary();
    while (left.ok() &&
           (tok_.kind == Tok::Star || tok_.kind == Tok::Slash || tok_.kind == Tok::At)) {
        Token op = tok_;
        OpKind kind = op.kind == Tok::Star    ? OpKind::Mul
                      : op.kind == Tok::Slash ? OpKind::Div
                                              : OpKind::Matmul;
        bool weak = is_binary_elementwise(kind);
        NodeId l = materialize(left, weak);
        advance();
        Value right = unary();
        if (!right.ok()) return right;
        NodeId r = materialize(right, weak);
        left.id =
            b_.add_node(kind, {Input{l, left.start()}, Input{r, right.start()}}, {}, loc_of(op));
    }
    return left;
}

// unary := '-' unary | power     ('-' directly before a number folds into it)
Value TextParser::unary() {
    if (tok_.kind != Tok::Minus || tok_.number_follows) return power();
    Nesting nesting(*this);
    if (!nesting.ok) return {};
    Token op = tok_;
    advance();
    Value v = unary();
    if (!v.ok()) return v;
    NodeId x = materialize(v, false);
    return node_value(b_.add_node(OpKind::Neg, {Input{x, v.start()}}, {}, loc_of(op)), op);
}

// power := postfix [ '**' unary ]   (right-associative)
Value TextParser::power() {
    Value base = postfix();
    if (!base.ok() || tok_.kind != Tok::StarStar) return base;
    Nesting nesting(*this);
    if (!nesting.ok) return {};
    Token op = tok_;
    NodeId l = materialize(base, true);
    advance();
    Value e = unary();
    if (!e.ok()) return e;
    NodeId r = materialize(e, true);
    Value v = node_value(
        b_.add_node(OpKind::Pow, {Input{l, base.start()}, Input{r, e.start()}}, {}, loc_of(op)),
        op);
    v.line = base.line;
    v.col = base.col;
    return v;
}

// postfix := NUMBER | 'true' | 'false' | IDENT | call | list | '(' expr ')'
Value TextParser::postfix() {
    switch (tok_.kind) {
        case Tok::Minus:
            if (tok_.number_follows) return literal();
            break;
        case Tok::Number:
        case Tok::KwNan:
        case Tok::KwInf:
            return literal();
        case Tok::KwTrue:
        case Tok::KwFalse: {
            Token t = tok_;
            advance();
            NodeId id = b_.add_scalar_literal(Attr::boolean(t.kind == Tok::KwTrue, loc_of(t)),
                                              loc_of(t), false);
            return node_value(id, t);
        }
        case Tok::Ident: {
            if (tok_.paren_follows) return call();
            // `name =` after a line left open inside brackets starts the next statement.
            if (nl_ && tok_.eq_follows) break;
            Token t = tok_;
            advance();
            return node_value(lookup_name(t), t);
        }
        case Tok::LBracket:
            return list_expr();
        case Tok::LParen:
            return paren();
        case Tok::KwWith:
        case Tok::KwRepeat:
        case Tok::KwOutput:
            if (!panic_) keyword_as_name(tok_);
            panic_ = true;
            return {};
        default:
            break;
    }
    syntax_error("expected an expression after " + describe(prev_));
    return {};
}

// NUMBER, nan, inf, with a '-' folded in: made a node once its use is known.
Value TextParser::literal() {
    Value v;
    v.line = tok_.line;
    v.col = tok_.col;
    if (tok_.kind == Tok::Minus) {
        v.negative = true;
        advance();
        if (tok_.kind == Tok::Bad) {
            panic_ = true;
            return {};
        }
    }
    v.lit = tok_;
    v.pending = true;
    advance();
    return v;
}

// '(' expr ')'
Value TextParser::paren() {
    Token open = tok_;
    Nesting nesting(*this);
    if (!nesting.ok) return {};
    ++nest_;
    advance();
    Value v = expr();
    if (!v.ok()) return v;
    if (tok_.kind != Tok::RParen) {
        syntax_error("expected ')' to close '(' at " + where(open));
        return {};
    }
    --nest_;
    advance();
    v.line = open.line;
    v.col = open.col;
    return v;
}

// A bare list literal is a `const`.
Value TextParser::list_expr() {
    Token open = tok_;
    Attr value;
    if (!list_attr(value, true)) return {};
    std::vector<NamedAttr> attrs;
    attrs.push_back(NamedAttr{"value", std::move(value), loc_of(open)});
    return node_value(b_.add_node(OpKind::Const, {}, std::move(attrs), loc_of(open)), open);
}

// call := IDENT '(' [ arg { ',' arg } ] ')' ;  arg := expr | IDENT '=' attr
// Creation ops take attributes positionally; `device=` is the node's device.
Value TextParser::call() {
    Token name = tok_;
    advance();
    Token open = tok_;
    Nesting nesting(*this);
    if (!nesting.ok) return {};
    ++nest_;
    advance();
    std::string_view op_text = text(name);
    std::optional<OpKind> op = find_op(op_text);
    if (!op) {
        std::string msg = "unknown op '" + std::string(op_text) + "'";
        std::string near = nearest_name(op_text, op_names());
        if (!near.empty()) msg += "; did you mean '" + near + "'?";
        report(loc_of(name), std::move(msg));
    }
    bool creation = op && is_creation(*op);
    bool binary = op && is_binary_elementwise(*op);
    Inputs inputs;
    std::vector<NamedAttr> attrs;
    std::vector<NamedAttr> positional;
    std::string device;
    Loc device_loc;
    bool has_device = false;
    while (tok_.kind != Tok::RParen) {
        if (is_word(tok_.kind) && tok_.eq_follows) {
            if (!keyword_arg(attrs, device, device_loc, has_device)) return {};
        } else if (creation) {
            Token at = tok_;
            Attr a;
            if (!attr_value(a)) return {};
            positional.push_back(NamedAttr{"", std::move(a), loc_of(at)});
        } else {
            Value v = expr();
            if (!v.ok()) return {};
            NodeId id = materialize(v, binary);
            inputs.push_back(Input{id, v.start()});
        }
        if (tok_.kind == Tok::Comma) {
            advance();
            continue;
        }
        if (tok_.kind != Tok::RParen) {
            syntax_error("expected ',' or ')' after the argument",
                         "expected ')' to close '(' at " + where(open));
            return {};
        }
    }
    --nest_;
    advance();
    if (!op) return node_value(b_.add_invalid(loc_of(name)), name);
    finish_attrs(*op, positional, attrs);
    NodeId id = b_.add_node(*op, std::move(inputs), std::move(attrs), loc_of(name),
                            std::move(device), device_loc);
    return node_value(id, name);
}

// IDENT '=' attr inside a call; `device=` sets the node's device.
bool TextParser::keyword_arg(std::vector<NamedAttr>& attrs, std::string& device, Loc& device_loc,
                             bool& has_device) {
    Token key = tok_;
    advance();
    advance();  // '='
    if (key.kind != Tok::Ident) keyword_as_name(key);
    std::string_view k = text(key);
    if (k == "device") {
        if (tok_.kind != Tok::String) {
            syntax_error(
                "expected a device name in quotes after 'device=', as in device=\"gpu:0\"");
            return false;
        }
        if (has_device) report(loc_of(key), "device given twice");
        has_device = true;
        device = unescape(tok_);
        device_loc = loc_of(tok_);
        if (device.empty())
            report(device_loc, "empty device name: write a device such as \"gpu:0\"");
        advance();
        return true;
    }
    Attr a;
    if (!attr_value(a)) return false;
    attrs.push_back(NamedAttr{std::string(k), std::move(a), loc_of(key)});
    return true;
}

// Names the positional attributes of a creation op, puts them first, and
// reports too many of them and attributes given twice.
void TextParser::finish_attrs(OpKind op, std::vector<NamedAttr>& positional,
                              std::vector<NamedAttr>& attrs) {
    if (!positional.empty()) {
        std::optional<std::vector<std::string>> names =
            positional_attr_names(op, positional.size());
        if (!names) {
            size_t most = positional.size();
            while (most > 0 && !positional_attr_names(op, most)) --most;
            std::vector<std::string> allowed =
                positional_attr_names(op, most).value_or(std::vector<std::string>{});
            std::string list;
            for (const std::string& n : allowed) list += (list.empty() ? "" : ", ") + n;
            std::string msg = std::string(op_name(op)) + " takes at most " + std::to_string(most) +
                              " positional argument" + (most == 1 ? "" : "s") +
                              (list.empty() ? "" : " (" + list + ")") + ", got " +
                              std::to_string(positional.size()) +
                              "; give the others by keyword, e.g. dtype=f32";
            report(positional[most].loc, std::move(msg));
            positional.resize(most);
            names = std::move(allowed);
        }
        for (size_t i = 0; i < positional.size(); ++i) positional[i].name = (*names)[i];
    }
    std::vector<NamedAttr> all = std::move(positional);
    all.reserve(all.size() + attrs.size());
    for (NamedAttr& a : attrs) {
        const NamedAttr* first = nullptr;
        for (const NamedAttr& b : all)
            if (b.name == a.name) first = &b;
        if (first) {
            report(a.loc, "attribute '" + a.name + "' given twice (first at " +
                              std::to_string(first->loc.line) + ":" +
                              std::to_string(first->loc.col) + ")");
            continue;
        }
        all.push_back(std::move(a));
    }
    attrs = std::move(all);
}

// ---------------------------------------------------------------------------
// Attributes

// attr := NUMBER | 'true' | 'false' | IDENT | STRING | list
bool TextParser::attr_value(Attr& out) {
    switch (tok_.kind) {
        case Tok::Minus:
            if (!tok_.number_follows) break;
            [[fallthrough]];
        case Tok::Number:
        case Tok::KwNan:
        case Tok::KwInf:
            return number_attr(out);
        case Tok::KwTrue:
        case Tok::KwFalse:
            out = Attr::boolean(tok_.kind == Tok::KwTrue, loc_of(tok_));
            advance();
            return true;
        case Tok::Ident:
            out = Attr::ident(std::string(text(tok_)), loc_of(tok_));
            advance();
            return true;
        case Tok::String:
            out = Attr::string(unescape(tok_), loc_of(tok_));
            advance();
            return true;
        case Tok::LBracket:
            return list_attr(out, false);
        default:
            break;
    }
    syntax_error("expected an attribute value (a number, true, false, a name, a string or a list)");
    return false;
}

// list := '[' [ elem { ',' elem } [','] ] ']'
bool TextParser::list_attr(Attr& out, bool in_expr) {
    Token open = tok_;
    Nesting nesting(*this);
    if (!nesting.ok) return false;
    ++nest_;
    advance();
    std::vector<Attr> items;
    while (tok_.kind != Tok::RBracket) {
        Attr item;
        if (!list_elem(item, in_expr, open)) return false;
        if (++literal_elements_ > limits_.literal_elements) {
            stop_at_limit(loc_of(open), literal_limit_message(limits_));
            return false;
        }
        items.push_back(std::move(item));
        if (tok_.kind == Tok::Comma) {
            advance();
            continue;
        }
        if (tok_.kind != Tok::RBracket) {
            syntax_error("expected ',' or ']' after the list element",
                         "expected ']' to close '[' at " + where(open));
            return false;
        }
    }
    --nest_;
    advance();
    out = Attr::make_list(std::move(items), loc_of(open));
    return true;
}

// elem := NUMBER | 'true' | 'false' | list
bool TextParser::list_elem(Attr& out, bool in_expr, const Token& open) {
    switch (tok_.kind) {
        case Tok::Minus:
            if (!tok_.number_follows) break;
            [[fallthrough]];
        case Tok::Number:
        case Tok::KwNan:
        case Tok::KwInf:
            return number_attr(out);
        case Tok::KwTrue:
        case Tok::KwFalse:
            out = Attr::boolean(tok_.kind == Tok::KwTrue, loc_of(tok_));
            advance();
            return true;
        case Tok::LBracket:
            return list_attr(out, in_expr);
        case Tok::Ident:
            if (in_expr && !nl_) {
                panic_ = true;
                report(loc_of(tok_),
                       "a list literal holds only numbers, true and false, found name " +
                           describe(tok_) + "; to join tensors use concat");
                return false;
            }
            break;
        default:
            break;
    }
    syntax_error("expected a number, true, false or a list",
                 "expected ']' to close '[' at " + where(open));
    return false;
}

bool TextParser::number_attr(Attr& out) {
    bool negative = false;
    Loc l = loc_of(tok_);
    if (tok_.kind == Tok::Minus) {
        negative = true;
        advance();
        if (tok_.kind == Tok::Bad) {
            panic_ = true;
            return false;
        }
    }
    out = make_number(tok_, negative, l);
    advance();
    return true;
}

// A literal's value: an integer when written as one and it fits int64, else a double.
Attr TextParser::make_number(const Token& num, bool negative, const Loc& loc) {
    if (num.kind == Tok::KwNan) return Attr::number(std::numeric_limits<double>::quiet_NaN(), loc);
    if (num.kind == Tok::KwInf)
        return Attr::number(negative ? -std::numeric_limits<double>::infinity()
                                     : std::numeric_limits<double>::infinity(),
                            loc);
    size_t start = negative ? num.start - 1 : num.start;  // the '-' is adjacent
    std::string_view s = src_.substr(start, num.start + num.len - start);
    const char* first = s.data();
    const char* last = s.data() + s.size();
    if (num.int_form) {
        int64_t v = 0;
        auto r = std::from_chars(first, last, v);
        if (r.ec == std::errc() && r.ptr == last) return Attr::integer(v, loc);
    }
    double d = 0;
    auto r = std::from_chars(first, last, d);
    if (r.ec == std::errc() && r.ptr == last) return Attr::number(d, loc);
    // Out of range: an underflow is a (tiny or zero) number, an overflow an error.
    std::string copy(s);
    double v = std::strtod(copy.c_str(), nullptr);
    if (std::isinf(v) || std::isnan(v)) {
        std::string shown = copy.size() > 40 ? copy.substr(0, 40) + "..." : copy;
        report(loc, "number out of range: '" + shown + "' does not fit a 64-bit float");
        return Attr::number(0, loc);
    }
    return Attr::number(v, loc);
}

std::string TextParser::unescape(const Token& t) const {
    std::string_view s = text(t);
    s = s.substr(1, s.size() >= 2 ? s.size() - 2 : 0);
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) ++i;
        out += s[i];
    }
    return out;
}

}  // namespace

bool parse_text(std::string_view source, Graph& g, Diagnostics& diag, const InputLimits& limits) {
    TextParser parser(source, g, diag, limits);
    parser.run();
    return !diag.has_errors();
}

}  // namespace graphrun
