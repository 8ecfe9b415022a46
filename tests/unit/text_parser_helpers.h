// Helpers of the text front end tests: parse a script, find its nodes and errors.
#pragma once
#include <doctest/doctest.h>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <vector>
#include "engine/frontend/text_lexer.h"
#include "engine/frontend/text_parser.h"

namespace text_test {

using namespace graphrun;

struct Parsed {
    std::string src;
    Graph g;
    Diagnostics d;
    bool ok = false;
    explicit Parsed(std::string s) : src(std::move(s)), d("t.graph", src) {}
};

inline std::unique_ptr<Parsed> parse(std::string src) {
    auto p = std::make_unique<Parsed>(std::move(src));
    p->ok = parse_text(p->src, p->g, p->d);
    return p;
}

// "LINE:COL: message" for every error, in order.
inline std::vector<std::string> errors(const Parsed& p) {
    std::vector<std::string> v;
    for (const Diagnostic& d : p.d.all())
        if (d.severity == Severity::Error)
            v.push_back(std::to_string(d.loc.line) + ":" + std::to_string(d.loc.col) + ": " +
                        d.message);
    return v;
}

inline std::string first_error(const std::string& src) {
    auto p = parse(src);
    std::vector<std::string> e = errors(*p);
    return e.empty() ? std::string("(no error)") : e[0];
}

// The node the name finally holds at top level.
inline const Node& bound(const Parsed& p, const std::string& name) {
    auto it = p.g.bindings.find(name);
    REQUIRE_MESSAGE(it != p.g.bindings.end(), "no binding " << name);
    return p.g.node(it->second);
}

inline const Node& input(const Parsed& p, const Node& n, size_t i) {
    REQUIRE(i < n.inputs.size());
    return p.g.node(n.inputs[i].id);
}

inline const Attr& attr(const Node& n, const std::string& name) {
    const NamedAttr* a = n.find_attr(name);
    REQUIRE_MESSAGE(a != nullptr, "no attribute " << name << " on " << n.name);
    return a->value;
}

inline const Attr& value_of(const Node& n) {
    return attr(n, "value");
}

// "x" + std::to_string(i), written so that GCC 12's -Wrestrict false positive stays quiet.
inline std::string numbered(const char* prefix, int i) {
    std::string s(prefix);
    s += std::to_string(i);
    return s;
}

inline std::vector<Token> lex_all(std::string_view src, Diagnostics& d) {
    Lexer lex(src, d, 50);
    std::vector<Token> v;
    for (;;) {
        Token t = lex.next();
        v.push_back(t);
        if (t.kind == Tok::Eof) return v;
    }
}

}  // namespace text_test
