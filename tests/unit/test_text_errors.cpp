// Tests of the text front end, continued: error messages with their places,
// recovery, line ends and limits (the helpers are in text_parser_helpers.h).
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
// Errors

TEST_CASE("text syntax errors with their places") {
    CHECK(first_error("a = [1]\nx = relu(a\ny = 2\n") ==
          "2:11: expected ')' to close '(' at 2:9, found newline");
    CHECK(first_error("x = (1 + 2\ny = 2\n") ==
          "1:11: expected ')' to close '(' at 1:5, found newline");
    CHECK(first_error("x = [1, 2\ny = 2\n") ==
          "1:10: expected ']' to close '[' at 1:5, found newline");
    CHECK(first_error("x = [1, 2") == "1:10: expected ']' to close '[' at 1:5, found end of file");
    CHECK(first_error("x = [1 2]\n") ==
          "1:8: expected ',' or ']' after the list element, found '2'");
    CHECK(first_error("x = [1]\ny = add(x x)\n") ==
          "2:11: expected ',' or ')' after the argument, found 'x'");
    CHECK(first_error("x = \n") == "1:5: expected an expression after '=', found newline");
    CHECK(first_error("x = 1 +\n") == "1:8: expected an expression after '+', found newline");
    CHECK(first_error("x = )\n") == "1:5: expected an expression after '=', found ')'");
    CHECK(first_error("x 1\n") == "1:3: expected '=' after 'x', found '1'");
    CHECK(first_error("x = 1 2\n") ==
          "1:7: expected a newline or ';' after the statement, found '2'");
    CHECK(first_error("+ 1\n") ==
          "1:1: expected a statement (name = expression, with, repeat or output), found '+'");
    CHECK(first_error("x = [1]\n}\n") == "2:1: unexpected '}': no '{' is open");
    CHECK(first_error("x = [1]\nrepeat 2 {\n  x = x + 1\n") ==
          "3:12: '}' expected to close '{' at line 2, found end of file");
    CHECK(first_error("x = \"abc\n") ==
          "1:5: unterminated string: a string must end with '\"' on the line where it starts");
    CHECK(first_error("x = zeros([2], dtype=\"f\\n\")\n") ==
          "1:24: unknown escape '\\n' in a string: only \\\" and \\\\ are allowed");
    CHECK(first_error("x = [1, y]\n") ==
          "1:9: a list literal holds only numbers, true and false, found name 'y'; to join tensors "
          "use concat");
    CHECK(first_error("x = zeros(shape=(2))\n") ==
          "1:17: expected an attribute value (a number, true, false, a name, a string or a list), "
          "found '('");
    CHECK(first_error("x = 'a'\n") == "1:5: unexpected character '''; strings use double quotes");
    CHECK(first_error("x = 1 $ 2\n") == "1:7: unexpected character '$'");
}

TEST_CASE("text unknown ops and names") {
    auto p = parse("x = [1]\ny = relux(x, zz)\nz = y + 1\nw = foo(x)\n");
    CHECK(errors(*p) == std::vector<std::string>{"2:5: unknown op 'relux'; did you mean 'relu'?",
                                                 "2:14: unknown name 'zz'",
                                                 "4:5: unknown op 'foo'"});
    CHECK(first_error("x = [1]\ny = xx + 1\n") == "2:5: unknown name 'xx'; did you mean 'x'?");
    CHECK(first_error("y = relu + 1\n") ==
          "1:5: unknown name 'relu'; 'relu' is an op: call it as relu(...)");
}

TEST_CASE("text keywords cannot be names") {
    CHECK(first_error("repeat = 3\n") == "1:1: 'repeat' is a keyword and cannot be used as a name");
    CHECK(first_error("with = 3\n") == "1:1: 'with' is a keyword and cannot be used as a name");
    CHECK(first_error("output = 3\n") == "1:1: 'output' is a keyword and cannot be used as a name");
    CHECK(first_error("true = 3\n") == "1:1: 'true' is a keyword and cannot be used as a name");
    CHECK(first_error("nan = 3\n") == "1:1: 'nan' is a keyword and cannot be used as a name");
    CHECK(first_error("x = [1]\ny = x + repeat\n") ==
          "2:9: 'repeat' is a keyword and cannot be used as a name");
    CHECK(first_error("x = [1]\ny = relu(x, with=1)\n") ==
          "2:13: 'with' is a keyword and cannot be used as a name");
    auto p = parse("repeat = 3\nx = [1]\n");
    CHECK(errors(*p).size() == 1);
}

TEST_CASE("text reports every independent error in one run, without cascades") {
    auto p = parse(
        "a = [1]\n"
        "x = (1 +\n"           // 1: missing operand (the line is left open)
        "y = relu(a\n"         // 2: unclosed call
        "z = q\n"              // 3: unknown name
        "w = [1, 2\n"          // 4: unclosed list
        "v = x + y + z + w\n"  // names bound to failed expressions: no error
        "repeat 2 {\n"
        "  t = a b\n"  // 5: junk after the expression
        "  u = t * 2\n"
        "}\n"
        "s = matmul(a a,\n"  // 6: missing comma in a multi-line call
        "           transpose_b=true)\n"
        "r = zeros([2]\n"  // 7: unclosed call
        "output v, r\n");
    CHECK(errors(*p) == std::vector<std::string>{
                            "2:9: expected an expression after '+', found newline",
                            "3:11: expected ')' to close '(' at 3:9, found newline",
                            "4:5: unknown name 'q'; did you mean 'a'?",
                            "5:10: expected ']' to close '[' at 5:5, found newline",
                            "8:9: expected a newline or ';' after the statement, found 'b'",
                            "11:14: expected ',' or ')' after the argument, found 'a'",
                            "13:14: expected ')' to close '(' at 13:10, found newline",
                        });
}

TEST_CASE("text recovery skips what only continues a failed statement") {
    // A line that cannot start a statement continues the failed one.
    auto p = parse("x = [1, 2]\ny = x +\n    1\nz = y\n");
    CHECK(errors(*p) ==
          std::vector<std::string>{"2:8: expected an expression after '+', found newline"});
    // A '}' with no block open belongs to the failed statement.
    auto q = parse("x = [1, 2]\nrepeat 3 x = x * 2 }\ny = x\n");
    CHECK(errors(*q) == std::vector<std::string>{"2:10: expected '{' after 'repeat 3', found 'x'"});
    // A block after a failed statement is skipped whole.
    auto r = parse("x = [1, 2]\ny = 1 2 { z = 3 }\nw = x\n");
    CHECK(errors(*r) == std::vector<std::string>{
                            "2:7: expected a newline or ';' after the statement, found '2'"});
    // An error inside a block: the block still closes where it should.
    auto s = parse("x = [1]\nrepeat 2 {\n  x = x * * 2\n  y = x\n}\nz = x\n");
    CHECK(errors(*s) ==
          std::vector<std::string>{"3:11: expected an expression after '*', found '*'"});
}

TEST_CASE("text CRLF line ends, tabs and a byte order mark") {
    auto p = parse(
        "\xEF\xBB\xBFx = [1,\t2]\r\ny = x * 2 # note\r\nz = relu(y,\r\n  device=\"gpu\")\r\n");
    REQUIRE_MESSAGE(p->ok, errors(*p).front());
    CHECK(bound(*p, "z").device == "gpu");
    CHECK(bound(*p, "y").loc.line == 2);
    CHECK(first_error("x = \"a\r\ny = 1\r\n") ==
          "1:5: unterminated string: a string must end with '\"' on the line where it starts");
}

TEST_CASE("text stops after 50 errors") {
    std::string src;
    for (int i = 0; i < 80; ++i) src += numbered("x", i) + " = $\n";
    auto p = parse(src);
    std::vector<std::string> e = errors(*p);
    REQUIRE(e.size() == 51);
    CHECK(e[49] == "50:7: unexpected character '$'");
    CHECK(e[50].find("too many errors") != std::string::npos);

    std::string names;
    for (int i = 0; i < 200; ++i) names += numbered(i ? ", q" : "q", i);
    auto q = parse("x = concat(" + names + ")\n");
    std::vector<std::string> f = errors(*q);
    CHECK(f.size() == 51);
    CHECK(f.back().find("too many errors") != std::string::npos);
}

TEST_CASE("text nesting too deep is one error, never a stack overflow") {
    const std::string msg = "nesting too deep (more than 256 levels)";
    auto check_one = [&](const std::string& src) {
        auto p = parse(src);
        std::vector<std::string> e = errors(*p);
        REQUIRE(e.size() == 1);
        CHECK(e[0].find(msg) != std::string::npos);
    };
    check_one("x = " + std::string(100000, '(') + "1" + std::string(100000, ')') + "\ny = x\n");
    check_one("x = " + std::string(100000, '(') + "\n");
    check_one("x = " + std::string(100000, '[') + "\n");
    check_one("x = " + std::string(100000, '[') + "1" + std::string(100000, ']') + "\n");
    check_one("x = zeros(shape=" + std::string(100000, '[') + ")\n");
    std::string minus;
    for (int i = 0; i < 100000; ++i) minus += "- ";
    check_one("x = " + minus + "1\n");
    std::string pow = "x = 2";
    for (int i = 0; i < 100000; ++i) pow += " ** 2";
    check_one(pow + "\n");
    std::string blocks = "x = [1]\n";
    for (int i = 0; i < 100000; ++i) blocks += "repeat 1 {\n";
    for (int i = 0; i < 100000; ++i) blocks += "}\n";
    check_one(blocks);
    // Within the limit is fine.
    auto ok = parse("x = " + std::string(200, '(') + "1" + std::string(200, ')') + "\n");
    CHECK(ok->ok);
}

TEST_CASE("text bad bytes: invalid UTF-8, NUL, control bytes, garbage") {
    auto p =
        parse(std::string("x = [1] # caf\xC3\xA9 ok\ny = 1 \xFF\xFE\xFD\nz = 2 # \xC3\x28 bad\n") +
              std::string("w = \"\xE2\x82\"\nv = ") + std::string(1, '\0') + " 1 " +
              std::string(1, '\0') + "\nu = \x07\n");
    CHECK(errors(*p) == std::vector<std::string>{
                            "2:7: invalid UTF-8 byte 0xFF",
                            "3:9: invalid UTF-8 byte 0xC3 in a comment",
                            "4:6: invalid UTF-8 byte 0xE2 in a string",
                            "5:5: invalid control byte 0x00 (NUL) in the script",
                            "6:5: invalid control byte 0x07 in the script",
                        });
    auto s = parse(
        "x = \"a\x01"
        "b\ny = 1\n");
    CHECK(errors(*s) == std::vector<std::string>{
                            "1:7: invalid control byte 0x01 in the script",
                            "1:5: unterminated string: a string must end with '\"' on the line "
                            "where it starts"});
    CHECK(first_error("x = caf\xC3\xA9\n") ==
          "1:8: unexpected character '\xC3\xA9': names and operators are ASCII");

    // Random binary garbage: errors, never a crash, and never more than the limit.
    uint32_t seed = 12345;
    std::string garbage;
    for (int i = 0; i < 200000; ++i) {
        seed = seed * 1664525u + 1013904223u;
        garbage += static_cast<char>(seed >> 24);
    }
    auto g = parse(garbage);
    CHECK_FALSE(g->ok);
    CHECK(errors(*g).size() <= 51);
    // Every prefix of a valid program with garbage spliced in.
    std::string prog =
        "a = [1, 2]\nrepeat 2 { a = a * -2 }\nb = relu(a, device=\"gpu\")\noutput a, b\n";
    for (size_t i = 0; i <= prog.size(); ++i) {
        auto q = parse(prog.substr(0, i) + "\x80(\"[" + prog.substr(i));
        CHECK_FALSE(q->ok);
        auto r = parse(prog.substr(0, i));
        (void)r;
    }
}

TEST_CASE("text empty programs") {
    CHECK(first_error("") ==
          "1:1: empty program: a graph needs at least one node (for example: x = [1, 2, 3])");
    CHECK(first_error("# nothing here\n").find("empty program") != std::string::npos);
    CHECK(first_error("\n\n;\n").find("empty program") != std::string::npos);
}

TEST_CASE("text ragged literals parse (validation rejects them)") {
    auto p = parse("x = [[1, 2], [3]]\ny = [[1], 2, [[3]]]\nz = []\n");
    CHECK(p->ok);
}

TEST_CASE("text a large program parses in linear time") {
    const int n = 200000;
    std::string src = "x0 = [1]\nx1 = [2]\n";
    src.reserve(static_cast<size_t>(n) * 28);
    for (int i = 2; i < n; ++i)
        src += numbered("x", i) + numbered(" = add(x", i - 1) + numbered(", x", i - 2) + ")\n";
    auto t0 = std::chrono::steady_clock::now();
    auto p = parse(src);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    REQUIRE(p->ok);
    CHECK(p->g.nodes.size() == static_cast<size_t>(n));
    CHECK(p->g.outputs[0].name == numbered("x", n - 1));
    CHECK(s < 10.0);  // about 0.2 s in a Release build; generous for Debug and sanitizers
}

TEST_CASE("names: the interning table") {
    NameTable t;
    CHECK(t.find("x") == -1);
    CHECK(t.intern("x") == 0);
    CHECK(t.intern("y") == 1);
    CHECK(t.intern("x") == 0);
    CHECK(t.intern("") == 2);  // the empty name is a name like any other
    CHECK(t.find("") == 2);
    CHECK(t.name(1) == "y");
    // Through many rehashes, with names of every length around the 8-byte step of the hash.
    std::vector<std::string> names;
    for (int i = 0; i < 50000; ++i) names.push_back(std::string(static_cast<size_t>(i % 19), 'a') + std::to_string(i));
    for (const std::string& n : names) t.intern(n);
    CHECK(t.size() == names.size() + 3);
    for (size_t i = 0; i < names.size(); ++i) {
        REQUIRE(t.find(names[i]) == static_cast<int32_t>(i + 3));
        REQUIRE(t.name(static_cast<int32_t>(i + 3)) == names[i]);
    }
    CHECK(t.find("a") == -1);
    CHECK(t.find("x ") == -1);
}

TEST_CASE("names: final bindings look up like a map") {
    NameBindings b;
    CHECK(b.empty());
    CHECK(b.find("x") == b.end());
    b.assign({{"x", 3}, {"long_name_over_sixteen_bytes", 7}});
    CHECK(b.size() == 2);
    REQUIRE(b.find("x") != b.end());
    CHECK(b.find("x")->second == 3);
    CHECK(b.find("long_name_over_sixteen_bytes")->second == 7);
    CHECK(b.count("y") == 0);
    CHECK(b.count("x") == 1);
    Graph g;
    g.bindings = b;  // copies keep working
    CHECK(g.bindings.find("x")->second == 3);
}

TEST_CASE("names: generated names of different ops never collide") {
    // finish() relies on it: `<op>_<k>` of one op is never the name of another
    // op, nor `<other op>_<j>`, because no op name ends in '_' and digits.
    for (const OpInfo& o : all_ops()) {
        std::string_view n = o.name;
        size_t underscore = n.rfind('_');
        if (underscore == std::string_view::npos) continue;
        std::string_view tail = n.substr(underscore + 1);
        bool digits = !tail.empty();
        for (char c : tail) digits = digits && c >= '0' && c <= '9';
        CHECK_MESSAGE(!digits, o.name);
    }
}

TEST_CASE("text generated names skip every user name, also in loops and after rebinding") {
    auto p = parse(
        "relu = [1]\nrelu_2 = [2]\nx = relu(relu(relu))\n"
        "repeat 2 { relu_1 = relu(x); x = relu(relu_1) }\nrelu_3 = x\n");
    REQUIRE(p->ok);
    std::vector<std::string> names;
    for (const Node& n : p->g.nodes)
        if (n.op == OpKind::Relu) names.emplace_back(n.display());
    CHECK(names == std::vector<std::string>{"relu_4", "x", "relu_1", "x#2"});
    auto q = parse("x = [1]\ny = relu(x)\nz = relu(relu(y))\n");
    REQUIRE(q->ok);
    CHECK(q->g.nodes[2].name == "relu");
    CHECK(q->g.nodes[3].name == "z");
}

TEST_CASE("text generated names skip only the user names they would equal") {
    // add_01 and add_0 are not a form generated names take, so they take
    // nothing away; add_2 and add_3 do; and a name of one op (mul_1) does not
    // touch another op's suffixes.
    auto p = parse(
        "add_01 = [1]\nadd_0 = [2]\nadd_3 = [3]\nadd_2 = [4]\nmul_1 = [5]\n"
        "y = add_01 + add_0 + add_3 + add_2 + add_01 + mul_1 * mul_1\n");
    REQUIRE(p->ok);
    std::vector<std::string> names;
    for (const Node& n : p->g.nodes)
        if (n.op == OpKind::Add || n.op == OpKind::Mul) names.push_back(n.name);
    CHECK(names == std::vector<std::string>{"add", "add_1", "add_4", "add_5", "mul", "y"});
}

TEST_CASE("text many names: lookups, rebinding and loop scopes at scale") {
    // A program large enough to grow every table several times, with loops
    // that carry some names and keep others local.
    std::string src = "x0 = [1]\n";
    const int n = 20000;
    for (int i = 1; i < n; ++i) {
        src += numbered("x", i) + numbered(" = x", i - 1) + " + 1\n";
        if (i % 1000 == 0)
            src += numbered("repeat 2 { x", i) + numbered(" = x", i) + numbered(" * 2; t", i) +
                   numbered(" = x", i) + " }\n";
    }
    src += numbered("x", n / 2 + 1) + " = [5]\n";  // rebinding: x10001#2
    auto p = parse(src);
    REQUIRE(p->ok);
    CHECK(bound(*p, numbered("x", n / 2 + 1)).display() == numbered("x", n / 2 + 1) + "#2");
    CHECK(bound(*p, numbered("x", 1000)).op == OpKind::LoopParam);
    CHECK(p->g.bindings.count(numbered("t", 1000)) == 0);  // local to its body
    CHECK(p->g.bindings.size() == static_cast<size_t>(n));
    CHECK(p->g.repeats.size() == static_cast<size_t>(n / 1000 - 1));
    for (const Repeat& r : p->g.repeats) {
        REQUIRE(r.carries.size() == 1);
        CHECK(p->g.node(r.carries[0].param).name == r.carries[0].name);
    }
    CHECK(first_error(src + numbered("y = t", 1000) + "\n").find("is local to the repeat body") !=
          std::string::npos);
}
