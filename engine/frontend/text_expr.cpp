// The text parser's expressions (sum, product, unary, power, postfix, calls)
// and attribute values (numbers, lists, dtypes); text_parser_impl.h declares
// the parser.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>

#include "engine/base/printable.h"
#include "engine/frontend/text_lexer.h"
#include "engine/frontend/text_parser_impl.h"

namespace graphrun::textparse {

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
    bool binary = op && takes_weak_literals(*op);
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
        report(loc, "number out of range: '" + clipped_text(copy, 43) + "' does not fit a 64-bit float");
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

}  // namespace graphrun::textparse
