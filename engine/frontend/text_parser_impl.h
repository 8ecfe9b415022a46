// The text parser's internals, shared by its two source files:
// text_parser.cpp (tokens, error recovery, statements) and text_expr.cpp
// (expressions, calls, attribute values). Not a public interface.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/base/diagnostics.h"
#include "engine/base/limits.h"
#include "engine/frontend/text_lexer.h"
#include "engine/frontend/text_parser.h"
#include "engine/ir/graph.h"

namespace graphrun::textparse {

// Errors reported before the parser stops and says "too many errors".
constexpr size_t kMaxErrors = 50;

inline Loc make_loc(uint32_t line, uint32_t col) {
    Loc l;
    l.line = line;
    l.col = col;
    return l;
}

inline Loc loc_of(const Token& t) {
    return make_loc(t.line, t.col);
}

inline std::string where(const Token& t) {
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

inline Value node_value(NodeId id, const Token& at) {
    Value v;
    v.id = id;
    v.line = at.line;
    v.col = at.col;
    return v;
}

class TextParser {
  public:
    TextParser(std::string_view src, Graph& g, Diagnostics& diag, const InputLimits& limits, uint32_t first_line = 1)
        : limits_(limits),
          src_(src),
          g_(g),
          diag_(diag),
          base_errors_(diag.error_count()),
          lex_(src, diag, kMaxErrors),
          b_(g, diag) {
        lex_.set_first_line(first_line);
        eof_tok_.kind = Tok::Eof;
        eof_tok_.start = src.size();
        Loc e = lex_.eof_loc();
        eof_tok_.line = e.line;
        eof_tok_.col = e.col;
    }

    void run();
    // Binds a live session's names before the program (parse_text's `names`).
    void predeclare(const std::vector<PredeclaredName>& names);
    // A statement that is a bare expression binds its value to `name` ("": an error, as in a file).
    void bind_bare_expressions(std::string_view name) {
        expression_name_ = name;
        if (!name.empty()) b_.outputs_optional();
    }

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
    void bare_expression();
    void assignment();
    void keyword_assignment();
    void with_device();
    void repeat_stmt();
    void output_stmt();
    bool at_del();  // the current token starts `del NAME`
    void del_stmt();
    bool name_list(std::vector<std::pair<std::string, Loc>>& names);
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
    std::string_view expression_name_;  // bind_bare_expressions
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


}  // namespace graphrun::textparse
