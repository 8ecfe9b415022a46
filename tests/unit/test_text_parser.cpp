// Tests of the text front end: lexical rules, grammar, weak literals, scoping
// through the builder, error messages with their places, recovery, limits.
#include <doctest/doctest.h>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "tests/unit/text_parser_helpers.h"

using namespace graphrun;
using namespace text_test;

// ---------------------------------------------------------------------------
// Lexer

TEST_CASE("text lexer: tokens, columns and follower flags") {
    std::string src = "x1 = a**-1.5e3 @ [.5, 1.] # c\n  s=\"q\\\"\\\\\"; -nan -inf -x\n";
    Diagnostics d("t", src);
    std::vector<Token> t = lex_all(src, d);
    CHECK_FALSE(d.has_errors());
    std::vector<Tok> kinds;
    for (const Token& k : t) kinds.push_back(k.kind);
    std::vector<Tok> want = {Tok::Ident,  Tok::Assign,    Tok::Ident,    Tok::StarStar, Tok::Minus,
                             Tok::Number, Tok::At,        Tok::LBracket, Tok::Number,   Tok::Comma,
                             Tok::Number, Tok::RBracket,  Tok::Newline,  Tok::Ident,    Tok::Assign,
                             Tok::String, Tok::Semicolon, Tok::Minus,    Tok::KwNan,    Tok::Minus,
                             Tok::KwInf,  Tok::Minus,     Tok::Ident,    Tok::Newline,  Tok::Eof};
    REQUIRE(kinds == want);
    CHECK(t[0].eq_follows);
    CHECK(t[4].number_follows);  // -1.5e3
    CHECK_FALSE(t[5].int_form);
    CHECK(t[8].col == 19);  // .5
    CHECK(t[13].line == 2);
    CHECK(t[13].col == 3);
    CHECK(t[13].eq_follows);
    CHECK(t[17].number_follows);        // -nan
    CHECK(t[19].number_follows);        // -inf
    CHECK_FALSE(t[21].number_follows);  // -x
}

TEST_CASE("text lexer: keywords and ** versus *") {
    std::string src = "with repeat output true false nan inf device a*b";
    Diagnostics d("t", src);
    std::vector<Token> t = lex_all(src, d);
    CHECK(t[0].kind == Tok::KwWith);
    CHECK(t[1].kind == Tok::KwRepeat);
    CHECK(t[2].kind == Tok::KwOutput);
    CHECK(t[3].kind == Tok::KwTrue);
    CHECK(t[4].kind == Tok::KwFalse);
    CHECK(t[5].kind == Tok::KwNan);
    CHECK(t[6].kind == Tok::KwInf);
    CHECK(t[7].kind == Tok::Ident);  // `device` is an ordinary word
    CHECK(t[9].kind == Tok::Star);
}

TEST_CASE("text lexer: utf8 validation") {
    const unsigned char ok2[] = {0xC3, 0xA4};
    const unsigned char ok4[] = {0xF0, 0x9F, 0x98, 0x80};
    const unsigned char overlong[] = {0xC0, 0x80};
    const unsigned char surrogate[] = {0xED, 0xA0, 0x80};
    const unsigned char truncated[] = {0xE2, 0x82};
    CHECK(utf8_sequence_length(ok2, 2) == 2);
    CHECK(utf8_sequence_length(ok4, 4) == 4);
    CHECK(utf8_sequence_length(overlong, 2) == 0);
    CHECK(utf8_sequence_length(surrogate, 3) == 0);
    CHECK(utf8_sequence_length(truncated, 2) == 0);
}

// ---------------------------------------------------------------------------
// Numbers

TEST_CASE("text numbers: integers, floats, nan, inf and their ranges") {
    auto p = parse(
        "a = 3\nb = 2.5\nc = 1e-3\nd = .5\ne = 1.\nf = nan\ng = inf\nh = -inf\n"
        "i = 9223372036854775807\nj = 9223372036854775808\nk = -9223372036854775808\n"
        "l = 1e-400\nm = 007\nn = 99999999999999999999999999\n");
    REQUIRE_MESSAGE(p->ok, errors(*p).front());
    CHECK(value_of(bound(*p, "a")).is_int);
    CHECK(value_of(bound(*p, "a")).i == 3);
    CHECK_FALSE(value_of(bound(*p, "b")).is_int);
    CHECK(value_of(bound(*p, "b")).f == 2.5);
    CHECK(value_of(bound(*p, "c")).f == 1e-3);
    CHECK(value_of(bound(*p, "d")).f == 0.5);
    CHECK_FALSE(value_of(bound(*p, "e")).is_int);
    CHECK(value_of(bound(*p, "e")).f == 1.0);
    CHECK(std::isnan(value_of(bound(*p, "f")).f));
    CHECK(value_of(bound(*p, "g")).f == INFINITY);
    CHECK(value_of(bound(*p, "h")).f == -INFINITY);
    CHECK(bound(*p, "h").op == OpKind::Const);  // folded, not neg
    CHECK(value_of(bound(*p, "i")).is_int);
    CHECK(value_of(bound(*p, "i")).i == INT64_MAX);
    CHECK_FALSE(value_of(bound(*p, "j")).is_int);
    CHECK(value_of(bound(*p, "j")).f == 9223372036854775808.0);
    CHECK(value_of(bound(*p, "k")).is_int);
    CHECK(value_of(bound(*p, "k")).i == INT64_MIN);
    CHECK(value_of(bound(*p, "l")).f == 0.0);
    CHECK(value_of(bound(*p, "m")).i == 7);
    CHECK_FALSE(value_of(bound(*p, "n")).is_int);
}

TEST_CASE("text numbers: out of range and malformed") {
    CHECK(first_error("x = 1e999\n") ==
          "1:5: number out of range: '1e999' does not fit a 64-bit float");
    CHECK(first_error("x = [1, -1e400]\n") ==
          "1:9: number out of range: '-1e400' does not fit a 64-bit float");
    CHECK(first_error("x = 1e\n") ==
          "1:5: malformed number '1e': expected digits after the exponent");
    CHECK(first_error("x = 12abc\n") == "1:5: malformed number '12abc'");
    CHECK(first_error("x = 1.2.3\n") == "1:5: malformed number '1.2.3'");
    // Each is one error: the bad token does not cascade.
    auto p = parse("x = 1e + 2\ny = 1\n");
    CHECK(errors(*p).size() == 1);
}

// ---------------------------------------------------------------------------
// Minus folding and precedence

TEST_CASE("text minus folds into an adjacent literal only in operand position") {
    auto p = parse(
        "a = [1]\n"
        "b = -1\n"
        "c = a * -3\n"
        "d = 2 ** -1\n"
        "e = a -1\n"
        "f = - 1\n"
        "g = -a\n"
        "h = a - -1\n"
        "i = [-1, -2.5, -inf]\n"
        "j = reduce_sum(a, axes=[-1])\n"
        "k = softmax(a, axis=-1)\n");
    REQUIRE(p->ok);
    CHECK(bound(*p, "b").op == OpKind::Const);
    CHECK(value_of(bound(*p, "b")).i == -1);
    const Node& c = bound(*p, "c");
    CHECK(c.op == OpKind::Mul);
    CHECK(value_of(input(*p, c, 1)).i == -3);
    const Node& d = bound(*p, "d");
    CHECK(d.op == OpKind::Pow);
    CHECK(value_of(input(*p, d, 1)).i == -1);
    const Node& e = bound(*p, "e");
    CHECK(e.op == OpKind::Sub);
    CHECK(value_of(input(*p, e, 1)).i == 1);
    const Node& f = bound(*p, "f");
    CHECK(f.op == OpKind::Neg);
    CHECK(value_of(input(*p, f, 0)).i == 1);
    CHECK_FALSE(input(*p, f, 0).weak);
    CHECK(bound(*p, "g").op == OpKind::Neg);
    const Node& h = bound(*p, "h");
    CHECK(h.op == OpKind::Sub);
    CHECK(value_of(input(*p, h, 1)).i == -1);
    const Attr& i = value_of(bound(*p, "i"));
    REQUIRE(i.list.size() == 3);
    CHECK(i.list[0].i == -1);
    CHECK(i.list[1].f == -2.5);
    CHECK(i.list[2].f == -INFINITY);
    CHECK(attr(bound(*p, "j"), "axes").list[0].i == -1);
    CHECK(attr(bound(*p, "k"), "axis").i == -1);
}

TEST_CASE("text precedence and associativity") {
    SUBCASE("a + b * c") {
        auto p = parse("a = [1]\nb = [2]\nc = [3]\ny = a + b * c\n");
        REQUIRE(p->ok);
        const Node& y = bound(*p, "y");
        CHECK(y.op == OpKind::Add);
        CHECK(input(*p, y, 0).name == "a");
        CHECK(input(*p, y, 1).op == OpKind::Mul);
    }
    SUBCASE("-a ** 2 is neg(pow(a, 2))") {
        auto p = parse("a = [1]\ny = -a ** 2\n");
        REQUIRE(p->ok);
        const Node& y = bound(*p, "y");
        CHECK(y.op == OpKind::Neg);
        CHECK(input(*p, y, 0).op == OpKind::Pow);
    }
    SUBCASE("2 ** 3 ** 2 is right-associative") {
        auto p = parse("y = 2 ** 3 ** 2\n");
        REQUIRE(p->ok);
        const Node& y = bound(*p, "y");
        CHECK(y.op == OpKind::Pow);
        CHECK(value_of(input(*p, y, 0)).i == 2);
        const Node& r = input(*p, y, 1);
        CHECK(r.op == OpKind::Pow);
        CHECK(value_of(input(*p, r, 0)).i == 3);
        CHECK(value_of(input(*p, r, 1)).i == 2);
    }
    SUBCASE("-2 ** 2 folds the minus into the literal") {
        auto p = parse("y = -2 ** 2\n");
        REQUIRE(p->ok);
        const Node& y = bound(*p, "y");
        CHECK(y.op == OpKind::Pow);
        CHECK(value_of(input(*p, y, 0)).i == -2);
    }
    SUBCASE("- 2 ** 2 with a space is neg(pow)") {
        auto p = parse("y = - 2 ** 2\n");
        REQUIRE(p->ok);
        CHECK(bound(*p, "y").op == OpKind::Neg);
    }
    SUBCASE("left-associative - / @ and parentheses") {
        auto p =
            parse("a = [1]\nb = [2]\nc = [3]\ny = a - b - c\nz = a / (b @ c)\nw = (a + b) * c\n");
        REQUIRE(p->ok);
        const Node& y = bound(*p, "y");
        CHECK(y.op == OpKind::Sub);
        CHECK(input(*p, y, 0).op == OpKind::Sub);
        CHECK(input(*p, y, 1).name == "c");
        const Node& z = bound(*p, "z");
        CHECK(z.op == OpKind::Div);
        CHECK(input(*p, z, 1).op == OpKind::Matmul);
        const Node& w = bound(*p, "w");
        CHECK(w.op == OpKind::Mul);
        CHECK(input(*p, w, 0).op == OpKind::Add);
        CHECK(w.inputs[0].loc.col == 5);  // the operand starts at '('
    }
    SUBCASE("program order: operands left to right, then the op") {
        auto p = parse("a = [1]\ny = relu(a) * 2 + a\n");
        REQUIRE(p->ok);
        std::vector<OpKind> ops;
        for (const Node& n : p->g.nodes) ops.push_back(n.op);
        CHECK(ops == std::vector<OpKind>{OpKind::Const, OpKind::Relu, OpKind::Const, OpKind::Mul,
                                         OpKind::Add});
    }
}

TEST_CASE(
    "text weak flags: a scalar literal is weak exactly as an operand of a binary elementwise op") {
    auto p = parse(
        "x = [1, 2]\n"
        "a = x * 2\n"
        "b = 2 @ x\n"
        "c = add(x, 1)\n"
        "d = maximum(0, x)\n"
        "e = relu(1)\n"
        "f = 5\n"
        "g = true\n"
        "h = x * (2)\n"
        "i = concat(x, 1)\n"
        "j = x ** 0.5\n"
        "k = [3]\n");
    REQUIRE(p->ok);
    CHECK(input(*p, bound(*p, "a"), 1).weak);
    CHECK_FALSE(input(*p, bound(*p, "b"), 0).weak);
    CHECK(input(*p, bound(*p, "c"), 1).weak);
    CHECK(input(*p, bound(*p, "d"), 0).weak);
    CHECK_FALSE(input(*p, bound(*p, "e"), 0).weak);
    CHECK_FALSE(bound(*p, "f").weak);
    CHECK_FALSE(bound(*p, "g").weak);
    CHECK(value_of(bound(*p, "g")).kind == Attr::Kind::Bool);
    CHECK(input(*p, bound(*p, "h"), 1).weak);
    CHECK_FALSE(input(*p, bound(*p, "i"), 1).weak);
    CHECK(input(*p, bound(*p, "j"), 1).weak);
    CHECK_FALSE(bound(*p, "k").weak);
}

// ---------------------------------------------------------------------------
// Statements, blocks, newlines

TEST_CASE("text newlines inside brackets do not end a statement") {
    auto p = parse(
        "a = [[1, 2],\n"
        "     [3, 4]]\n"
        "b = matmul(a,\n"
        "           a,\n"
        "           transpose_b=true\n"
        "    )\n"
        "c = (a\n"
        "     + b)\n");
    REQUIRE_MESSAGE(p->ok, errors(*p).front());
    CHECK(value_of(bound(*p, "a")).list.size() == 2);
    CHECK(attr(bound(*p, "b"), "transpose_b").b);
    CHECK(bound(*p, "c").op == OpKind::Add);
}

TEST_CASE("text statements end at newline, ';', '}' and end of file; comments") {
    auto p = parse("a = [1]; b = a + 1 # comment ; c = 3\n\n;;\nrepeat 3 { a = a * 2 }\nd = a");
    REQUIRE(p->ok);
    CHECK(p->g.bindings.count("b") == 1);
    CHECK(p->g.bindings.count("c") == 0);
    CHECK(p->g.bindings.count("d") == 1);
    REQUIRE(p->g.outputs.size() == 1);
    CHECK(p->g.outputs[0].name == "d");
}

TEST_CASE("text one-line blocks and '{' on the line of its keyword") {
    auto p = parse("x = [1]\nrepeat 3 { x = x * 2 }\nwith device(\"gpu\") { y = x + 1; z = y }\n");
    REQUIRE(p->ok);
    REQUIRE(p->g.repeats.size() == 1);
    CHECK(p->g.repeats[0].count == 3);
    CHECK(bound(*p, "y").device == "gpu");
    CHECK(bound(*p, "y").device_from_block);

    auto q = parse("x = [1]\nrepeat 3\n{ x = x * 2 }\ny = x\n");
    CHECK(errors(*q) ==
          std::vector<std::string>{"3:1: '{' must be on the same line as its 'repeat' (line 2)"});
    auto r = parse("with device(\"gpu\")\n{\n  x = [1]\n}\ny = x\n");
    CHECK(errors(*r) ==
          std::vector<std::string>{"2:1: '{' must be on the same line as its 'with' (line 1)"});
    CHECK(first_error("x = [1]\nrepeat 3\nx = 2\n") ==
          "2:9: expected '{' after 'repeat 3', found newline");
}

TEST_CASE("text creation ops take leading attributes positionally") {
    auto p = parse(
        "a = zeros([2, 3])\n"
        "b = range(5)\n"
        "c = range(1, 5, 2)\n"
        "d = fill([2], 1.5, dtype=f64)\n"
        "e = const([1, 2], dtype=i32)\n"
        "f = zeros(shape=[2])\n"
        "g = const(value=[1, 2], dtype=\"i32\")\n"
        "h = random_normal([4], seed=7, mean=0.5)\n"
        "i = const(3)\n"
        "j = ones([])\n");
    REQUIRE_MESSAGE(p->ok, errors(*p).front());
    const Node& a = bound(*p, "a");
    CHECK(a.op == OpKind::Zeros);
    REQUIRE(a.attrs.size() == 1);
    CHECK(a.attrs[0].name == "shape");
    CHECK(a.attrs[0].value.list.size() == 2);
    const Node& b = bound(*p, "b");
    REQUIRE(b.attrs.size() == 1);
    CHECK(b.attrs[0].name == "limit");
    CHECK(b.attrs[0].value.i == 5);
    const Node& c = bound(*p, "c");
    REQUIRE(c.attrs.size() == 3);
    CHECK(c.attrs[0].name == "start");
    CHECK(c.attrs[1].name == "limit");
    CHECK(c.attrs[2].name == "delta");
    CHECK(c.attrs[2].value.i == 2);
    const Node& d = bound(*p, "d");
    CHECK(attr(d, "value").f == 1.5);
    CHECK(attr(d, "dtype").kind == Attr::Kind::Ident);
    CHECK(attr(d, "dtype").s == "f64");
    CHECK(attr(bound(*p, "e"), "dtype").s == "i32");
    CHECK(attr(bound(*p, "f"), "shape").list[0].i == 2);
    CHECK(attr(bound(*p, "g"), "dtype").kind == Attr::Kind::String);
    CHECK(attr(bound(*p, "h"), "seed").i == 7);
    CHECK(value_of(bound(*p, "i")).i == 3);
    CHECK(attr(bound(*p, "j"), "shape").list.empty());
    CHECK(bound(*p, "a").inputs.empty());
}

TEST_CASE("text creation op errors: too many positional, given twice") {
    CHECK(first_error("x = range(1, 2, 3, 4)\n") ==
          "1:20: range takes at most 3 positional arguments (start, limit, delta), got 4; give the "
          "others by "
          "keyword, e.g. dtype=f32");
    CHECK(first_error("x = zeros([2], f32)\n") ==
          "1:16: zeros takes at most 1 positional argument (shape), got 2; give the others by "
          "keyword, e.g. "
          "dtype=f32");
    CHECK(first_error("x = zeros([2], shape=[3])\n") ==
          "1:16: attribute 'shape' given twice (first at 1:11)");
    CHECK(first_error("x = [1]\ny = reduce_sum(x, axes=1, axes=2)\n") ==
          "2:27: attribute 'axes' given twice (first at 2:19)");
}

TEST_CASE("text device keyword and with device") {
    auto p = parse(
        "a = [1]\n"
        "b = matmul(a, a, transpose_b=true, device=\"gpu:0\")\n"
        "with device(\"gpu:1\") {\n"
        "    c = a + 1\n"
        "    d = relu(c, device=\"cpu\")\n"
        "}\n"
        "e = a\n");
    REQUIRE(p->ok);
    const Node& b = bound(*p, "b");
    CHECK(b.device == "gpu:0");
    CHECK_FALSE(b.device_from_block);
    CHECK(b.device_loc.line == 2);
    CHECK(b.device_loc.col == 43);
    CHECK(b.find_attr("device") == nullptr);
    CHECK(b.attrs.size() == 1);
    const Node& c = bound(*p, "c");
    CHECK(c.device == "gpu:1");
    CHECK(c.device_from_block);
    CHECK(input(*p, c, 1).weak);
    CHECK(input(*p, c, 1).device.empty());  // a weak literal runs where its consumer runs
    const Node& d = bound(*p, "d");
    CHECK(d.device == "cpu");
    CHECK_FALSE(d.device_from_block);
    CHECK(bound(*p, "e").device.empty());

    CHECK(first_error("with devise(\"gpu\") { x = [1] }\n") ==
          "1:6: expected 'device(\"...\")' after 'with' (did you mean 'device'?), found 'devise'");
    CHECK(first_error("with device(gpu) { x = [1] }\n") ==
          "1:13: expected a device name in quotes, as in with device(\"gpu\"), found 'gpu'");
    CHECK(first_error("x = [1]\ny = relu(x, device=gpu)\n") ==
          "2:20: expected a device name in quotes after 'device=', as in device=\"gpu:0\", found "
          "'gpu'");
    CHECK(first_error("x = relu([1], device=\"\")\n") ==
          "1:22: empty device name: write a device such as \"gpu:0\"");
    // A bad header still reads the block, so its names are known after it.
    auto q = parse("with devise(\"gpu\") {\n  x = [1]\n}\ny = x\n");
    CHECK(errors(*q).size() == 1);
}

TEST_CASE("text repeat scoping through the builder") {
    SUBCASE("loop-carried name") {
        auto p = parse("x = [1]\nw = [2]\nrepeat 4 { x = x * w }\ny = x\n");
        REQUIRE(p->ok);
        REQUIRE(p->g.repeats.size() == 1);
        const Repeat& r = p->g.repeats[0];
        CHECK(r.count == 4);
        REQUIRE(r.carries.size() == 1);
        CHECK(r.carries[0].name == "x");
        CHECK(p->g.node(r.carries[0].param).op == OpKind::LoopParam);
        CHECK(input(*p, bound(*p, "y"), 0).op == OpKind::LoopParam);
        CHECK(p->g.node(r.carries[0].update).op == OpKind::Mul);
    }
    SUBCASE("locals are not visible after the body") {
        auto p = parse("x = [1]\nrepeat 2 { t = x + 1 }\ny = t\n");
        CHECK(errors(*p) ==
              std::vector<std::string>{
                  "3:5: 't' is local to the repeat body where it is bound (line 2); bind it before "
                  "the loop to carry its value out of the body"});
    }
    SUBCASE("repeat 0 and nested repeats") {
        auto p =
            parse("x = [1]\nrepeat 0 { x = x + 1 }\nrepeat 2 {\n  repeat 3 { x = x * 2 }\n}\n");
        REQUIRE(p->ok);
        REQUIRE(p->g.repeats.size() == 3);
        CHECK(p->g.repeats[0].count == 0);
        CHECK(p->g.repeats[2].parent == 1);
    }
    SUBCASE("repeat count errors") {
        CHECK(first_error("x = [1]\nrepeat -1 { x = x + 1 }\n") ==
              "2:8: repeat count must be a non-negative integer, found '-1'");
        CHECK(first_error("x = [1]\nrepeat 2.5 { x = x + 1 }\n") ==
              "2:8: repeat count must be a non-negative integer, found '2.5'");
        CHECK(first_error("x = [1]\nrepeat n { x = x + 1 }\n") ==
              "2:8: repeat count must be an integer literal, found 'n'");
        CHECK(
            first_error("x = [1]\nrepeat 99999999999999999999 { x = x + 1 }\n") ==
            "2:8: repeat count '99999999999999999999' is too large (at most 9223372036854775807)");
        CHECK(first_error("x = [1]\nrepeat { x = x + 1 }\n") ==
              "2:8: expected a repeat count after 'repeat', found '{'");
        // Each is one error: the body is still read.
        auto p = parse("x = [1]\nrepeat n {\n  x = x + 1\n  t = x\n}\ny = x\n");
        CHECK(errors(*p).size() == 1);
    }
}

TEST_CASE("text output statement") {
    auto p = parse("a = [1]\nb = a + 1\noutput b, a\n");
    REQUIRE(p->ok);
    REQUIRE(p->g.outputs.size() == 2);
    CHECK(p->g.outputs[0].name == "b");
    CHECK(p->g.outputs[1].name == "a");
    CHECK(p->g.explicit_outputs);

    auto q = parse("a = [1]\noutput a\noutput a\nrepeat 1 { output a }\n");
    CHECK(errors(*q) == std::vector<std::string>{
                            "3:1: only one 'output' statement is allowed (the first is at line 2)",
                            "4:12: 'output' is only allowed at top level, not inside a block"});
    CHECK(first_error("a = [1]\noutput\n") == "2:7: expected a name after 'output', found newline");
    CHECK(first_error("a = [1]\noutput a,\n") == "2:10: expected a name after ',', found newline");
    CHECK(first_error("a = [1]\noutput b\n") == "2:8: unknown output 'b'; did you mean 'a'?");
    CHECK(first_error("a = [1]\noutput a, with\n") ==
          "2:11: 'with' is a keyword and cannot be used as a name");
}

TEST_CASE("text display names and generated names") {
    auto p = parse("x = [1]\nx = x + 1\nx = relu(x)\n");
    REQUIRE(p->ok);
    std::vector<std::string> displays;
    for (const Node& n : p->g.nodes) displays.emplace_back(n.display());
    CHECK(displays == std::vector<std::string>{"x", "const", "x#2", "x#3"});

    // Generated names avoid every user name, wherever it is bound.
    auto q = parse("add = [1]\ny = (add + add) * 2 + add\nconst = 5\nadd_1 = 2\n");
    REQUIRE(q->ok);
    std::vector<std::string> names;
    for (const Node& n : q->g.nodes) names.push_back(n.name);
    CHECK(names ==
          std::vector<std::string>{"add", "add_2", "const_1", "mul", "y", "const", "add_1"});
    CHECK(q->g.nodes[1].generated);
    CHECK_FALSE(q->g.nodes[0].generated);
}

TEST_CASE("text assignment of a name makes an identity node") {
    auto p = parse("a = [1]\nb = a\n");
    REQUIRE(p->ok);
    CHECK(bound(*p, "b").op == OpKind::Identity);
    CHECK(input(*p, bound(*p, "b"), 0).name == "a");
}

TEST_CASE("text locations of nodes, inputs and attributes") {
    auto p = parse("a = [1, 2]\nb = reduce_sum(a, axes=[0, -1])\nc = a + -2\nd = -a\n");
    REQUIRE(p->ok);
    const Node& a = bound(*p, "a");
    CHECK(a.loc.line == 1);
    CHECK(a.loc.col == 5);
    CHECK(value_of(a).loc.col == 5);
    CHECK(value_of(a).list[1].loc.col == 9);
    const Node& b = bound(*p, "b");
    CHECK(b.loc.col == 5);
    CHECK(b.inputs[0].loc.col == 16);
    const NamedAttr* axes = b.find_attr("axes");
    REQUIRE(axes != nullptr);
    CHECK(axes->loc.col == 19);
    CHECK(axes->value.loc.col == 24);
    CHECK(axes->value.list[1].loc.col == 28);
    const Node& c = bound(*p, "c");
    CHECK(c.loc.col == 7);  // the operator
    CHECK(c.inputs[1].loc.col == 9);
    CHECK(input(*p, c, 1).loc.col == 9);  // the literal, at its '-'
    CHECK(value_of(input(*p, c, 1)).loc.col == 9);
    const Node& d = bound(*p, "d");
    CHECK(d.loc.col == 5);  // the '-'
    CHECK(d.inputs[0].loc.col == 6);
}
