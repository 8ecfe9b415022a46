// Unit tests for validate(): attributes, devices, every op's dtype and shape
// rules, const literal encoding, weak literals, loop-carried values, limits.
// Graphs are built by hand (no front end), each node on its own "line".
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/check/validate.h"

using namespace graphrun;

namespace {

Loc at(uint32_t line, uint32_t col) {
    return Loc{line, col, {}};
}

Attr I(int64_t v) {
    return Attr::integer(v);
}
Attr F(double v) {
    return Attr::number(v);
}
Attr B(bool v) {
    return Attr::boolean(v);
}
Attr W(const std::string& s) {
    return Attr::ident(s);
}
Attr S(const std::string& s) {
    return Attr::string(s);
}
Attr L(std::vector<Attr> items, Loc loc = {}) {
    return Attr::make_list(std::move(items), std::move(loc));
}
Attr Ints(std::vector<int64_t> v) {
    std::vector<Attr> items;
    for (int64_t x : v) items.push_back(I(x));
    return L(std::move(items));
}

// Builds a Graph node by node. Node k (0-based) is on line k+1: the node at
// column 1, input j at column 10+j, attribute j's name at 20+j and its value
// (where the test gave it no place) at 40+j, the device at column 60.
struct TestGraph {
    Graph g;
    Diagnostics diag;

    NodeId add(OpKind op, std::vector<NodeId> inputs,
               std::vector<std::pair<std::string, Attr>> attrs = {}, const std::string& name = "") {
        Node n;
        n.op = op;
        const auto id = static_cast<NodeId>(g.nodes.size());
        const auto line = static_cast<uint32_t>(id + 1);
        n.loc = at(line, 1);
        for (size_t j = 0; j < inputs.size(); ++j)
            n.inputs.push_back(Input{inputs[j], at(line, static_cast<uint32_t>(10 + j))});
        for (size_t j = 0; j < attrs.size(); ++j) {
            Attr v = std::move(attrs[j].second);
            if (!v.loc.known()) v.loc = at(line, static_cast<uint32_t>(40 + j));
            n.attrs.push_back(
                NamedAttr{attrs[j].first, std::move(v), at(line, static_cast<uint32_t>(20 + j))});
        }
        n.name = name.empty() ? std::string(op_name(op)) + "_" + std::to_string(id) : name;
        n.generated = name.empty();
        g.nodes.push_back(std::move(n));
        g.top.push_back(Stmt{Stmt::Kind::Node, id});
        return id;
    }
    NodeId lit(Attr value, bool weak = false) {
        NodeId id = add(OpKind::Const, {}, {{"value", std::move(value)}});
        g.node(id).weak = weak;
        return id;
    }
    NodeId tensor(OpKind op, std::vector<int64_t> shape, const char* dtype = "f32") {
        return add(op, {}, {{"shape", Ints(std::move(shape))}, {"dtype", W(dtype)}});
    }
    NodeId zeros(std::vector<int64_t> shape, const char* dtype = "f32") {
        return tensor(OpKind::Zeros, std::move(shape), dtype);
    }

    bool run() { return validate(g, diag); }
    const Node& node(NodeId id) const { return g.node(id); }
    std::string type(NodeId id) const { return type_string(g.node(id).dtype, g.node(id).shape); }
    size_t errors() const { return diag.error_count(); }
    std::string messages() const {
        std::string all;
        for (const Diagnostic& d : diag.all()) all += d.message + "\n";
        return all;
    }
    const Diagnostic& first() const { return diag.all().front(); }
    bool has(const std::string& fragment) const {
        return messages().find(fragment) != std::string::npos;
    }
};

template <typename T>
std::vector<T> values(const Node& n) {
    std::vector<T> out(n.literal.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), n.literal.data(), n.literal.size());
    return out;
}

// Validates a graph of one op applied to zeros of the given shapes; returns the result type or "".
std::string infer(OpKind op, std::vector<Shape> shapes,
                  std::vector<std::pair<std::string, Attr>> attrs = {}, const char* dtype = "f32") {
    TestGraph t;
    std::vector<NodeId> ins;
    for (Shape& s : shapes) ins.push_back(t.zeros(s, dtype));
    NodeId id = t.add(op, ins, std::move(attrs));
    if (!t.run()) return "error: " + t.messages();
    return t.type(id);
}

// The single error message of a one-op graph (or what went wrong instead).
std::string error_of(OpKind op, std::vector<Shape> shapes,
                     std::vector<std::pair<std::string, Attr>> attrs = {},
                     const char* dtype = "f32") {
    TestGraph t;
    std::vector<NodeId> ins;
    for (Shape& s : shapes) ins.push_back(t.zeros(s, dtype));
    t.add(op, ins, std::move(attrs));
    if (t.run()) return "no error";
    if (t.errors() != 1) return "several errors: " + t.messages();
    return t.first().message;
}

}  // namespace

// ---------------------------------------------------------------------------
// const literals

TEST_CASE("validate const: scalars and lists infer shape and dtype") {
    TestGraph t;
    NodeId s = t.lit(F(1.5));
    NodeId m = t.lit(L({Ints({1, 2, 3}), Ints({4, 5, 6})}));
    NodeId b = t.lit(L({B(true), B(false)}));
    NodeId e = t.lit(L({}));
    NodeId e2 = t.lit(L({L({}), L({})}));
    NodeId bs = t.lit(B(true));
    REQUIRE(t.run());
    CHECK(t.type(s) == "f32[]");
    CHECK(values<float>(t.node(s)) == std::vector<float>{1.5f});
    CHECK(t.type(m) == "f32[2,3]");
    CHECK(values<float>(t.node(m)) == std::vector<float>{1, 2, 3, 4, 5, 6});
    CHECK(t.type(b) == "bool[2]");
    CHECK(t.node(b).literal == std::vector<uint8_t>{1, 0});
    CHECK(t.type(e) == "f32[0]");
    CHECK(t.node(e).literal.empty());
    CHECK(t.type(e2) == "f32[2,0]");
    CHECK(t.type(bs) == "bool[]");
    for (NodeId id : {s, m, b, e, e2, bs}) CHECK(t.node(id).valid);
}

TEST_CASE("validate const: literal encoding per dtype") {
    TestGraph t;
    NodeId f64 = t.add(OpKind::Const, {}, {{"value", L({F(0.1), I(-2)})}, {"dtype", W("f64")}});
    NodeId i32 = t.add(OpKind::Const, {},
                       {{"value", L({I(-7), F(3.0), I(2147483647)})}, {"dtype", S("int32")}});
    NodeId i64 =
        t.add(OpKind::Const, {}, {{"value", L({I(INT64_MIN), I(INT64_MAX)})}, {"dtype", W("i64")}});
    NodeId bf = t.add(OpKind::Const, {}, {{"value", L({B(true), B(false)})}, {"dtype", W("f32")}});
    NodeId bi = t.add(OpKind::Const, {}, {{"value", B(true)}, {"dtype", W("i32")}});
    NodeId bb = t.add(OpKind::Const, {}, {{"value", L({B(false), B(true)})}, {"dtype", W("bool")}});
    NodeId nan = t.lit(L({S("nan"), S("-inf"), F(INFINITY)}));
    REQUIRE(t.run());
    CHECK(t.type(f64) == "f64[2]");
    CHECK(values<double>(t.node(f64)) == std::vector<double>{0.1, -2.0});
    CHECK(t.type(i32) == "i32[3]");
    CHECK(values<int32_t>(t.node(i32)) == std::vector<int32_t>{-7, 3, 2147483647});
    CHECK(values<int64_t>(t.node(i64)) == std::vector<int64_t>{INT64_MIN, INT64_MAX});
    CHECK(values<float>(t.node(bf)) == std::vector<float>{1, 0});
    CHECK(values<int32_t>(t.node(bi)) == std::vector<int32_t>{1});
    CHECK(t.node(bb).literal == std::vector<uint8_t>{0, 1});
    auto v = values<float>(t.node(nan));
    REQUIRE(v.size() == 3);
    CHECK(std::isnan(v[0]));
    CHECK(v[1] == -INFINITY);
    CHECK(v[2] == INFINITY);
}

TEST_CASE("validate const: shape attribute reshapes or fills") {
    TestGraph t;
    NodeId r =
        t.add(OpKind::Const, {}, {{"value", Ints({1, 2, 3, 4, 5, 6})}, {"shape", Ints({3, 2})}});
    NodeId f =
        t.add(OpKind::Const, {}, {{"value", I(7)}, {"shape", Ints({2, 2})}, {"dtype", W("i64")}});
    NodeId z = t.add(OpKind::Const, {}, {{"value", I(7)}, {"shape", Ints({0, 5})}});
    NodeId sc = t.add(OpKind::Const, {}, {{"value", I(7)}, {"shape", Ints({})}});
    REQUIRE(t.run());
    CHECK(t.type(r) == "f32[3,2]");
    CHECK(values<float>(t.node(r)) == std::vector<float>{1, 2, 3, 4, 5, 6});
    CHECK(t.type(f) == "i64[2,2]");
    CHECK(values<int64_t>(t.node(f)) == std::vector<int64_t>{7, 7, 7, 7});
    CHECK(t.type(z) == "f32[0,5]");
    CHECK(t.node(z).literal.empty());
    CHECK(t.type(sc) == "f32[]");
}

TEST_CASE("validate const: element count mismatch with shape") {
    TestGraph t;
    t.add(OpKind::Const, {}, {{"value", Ints({1, 2, 3, 4, 5, 6})}, {"shape", Ints({4, 2})}});
    CHECK_FALSE(t.run());
    REQUIRE(t.errors() == 1);
    CHECK(t.first().message == "const: value has 6 elements but shape [4,2] has 8");
    CHECK(t.first().loc.line == 1);
    CHECK(t.first().loc.col == 41);
    CHECK_FALSE(t.node(0).valid);
}

TEST_CASE("validate const: ragged list literal points at the row") {
    TestGraph t;
    t.lit(L({Ints({1, 2}), L({I(3), I(4), I(5)}, at(7, 9))}));
    CHECK_FALSE(t.run());
    REQUIRE(t.errors() == 1);
    CHECK(t.first().message.find(
              "ragged list literal: this row has 3 elements, the first row has 2") !=
          std::string::npos);
    CHECK(t.first().loc.line == 7);
    CHECK(t.first().loc.col == 9);

    TestGraph u;
    u.lit(L({Ints({1, 2}), I(3)}));
    u.lit(L({I(3), Ints({1, 2})}));
    CHECK_FALSE(u.run());
    CHECK(u.errors() == 2);
    CHECK(u.has(
        "ragged list literal: this element is 3, the first element at this depth is a list of 2"));
    CHECK(
        u.has("ragged list literal: this element is a list, the first element at this depth is a "
              "number"));
}

TEST_CASE("validate const: bad elements and conversions") {
    struct Case {
        Attr value;
        const char* dtype;
        const char* message;
    };
    std::vector<Case> cases = {
        {L({I(1), B(true)}), nullptr,
         "const: list literal mixes numbers and bools: this element is true, the first is 1"},
        {L({I(1), S("x")}), nullptr,
         "const: list literal elements must be numbers or true/false, got \"x\""},
        {F(2.5), "i32", "const: 2.5 cannot be i32: it is not an integer"},
        {F(NAN), "i64", "const: nan cannot be i64: integers have no nan or inf"},
        {F(-INFINITY), "i32", "const: -inf cannot be i32: integers have no nan or inf"},
        {I(3000000000), "i32",
         "const: 3000000000 cannot be i32: it is out of range (-2147483648 to 2147483647)"},
        {F(1e19), "i64", "const: 1e+19 cannot be i64: it is out of range"},
        {I(1), "bool", "const: 1 cannot be bool: use true/false"},
        {S("hello"), nullptr,
         "const: value must be a number, true/false or a list of them, got \"hello\""},
    };
    for (Case& c : cases) {
        CAPTURE(c.message);
        TestGraph t;
        std::vector<std::pair<std::string, Attr>> attrs{{"value", c.value}};
        if (c.dtype) attrs.emplace_back("dtype", W(c.dtype));
        t.add(OpKind::Const, {}, attrs);
        CHECK_FALSE(t.run());
        REQUIRE(t.errors() == 1);
        CHECK(t.first().message.find(c.message) != std::string::npos);
        CHECK_FALSE(t.node(0).valid);
    }
}

TEST_CASE("validate const: nesting and size limits") {
    Attr deep = I(1);
    for (int k = 0; k < kMaxRank + 1; ++k) deep = L({deep});
    TestGraph t;
    t.lit(deep);
    CHECK_FALSE(t.run());
    CHECK(t.has("list literal nests deeper than 32 dimensions"));

    Attr ok = I(1);
    for (int k = 0; k < kMaxRank; ++k) ok = L({ok});
    TestGraph u;
    NodeId id = u.lit(ok);
    REQUIRE(u.run());
    CHECK(u.node(id).shape == Shape(kMaxRank, 1));

    // A scalar filling a huge shape must not allocate the literal.
    TestGraph v;
    v.add(OpKind::Const, {}, {{"value", I(0)}, {"shape", Ints({1 << 20, 1 << 20})}});
    v.add(OpKind::Const, {},
          {{"value", I(0)}, {"shape", Ints({int64_t{1} << 40, int64_t{1} << 40})}});
    CHECK_FALSE(v.run());
    CHECK(v.errors() == 2);
    CHECK(v.has("makes a literal too large to hold"));
    CHECK(v.has("use fill([1048576,1048576], 0)"));
    CHECK(v.has("const: shape [1099511627776,1099511627776] has too many elements"));
}

// ---------------------------------------------------------------------------
// attributes

TEST_CASE("validate attributes: unknown, duplicate, missing") {
    TestGraph t;
    NodeId a = t.zeros({2, 2});
    t.add(OpKind::Matmul, {a, a}, {{"tranpose_a", B(true)}});
    t.add(OpKind::Softmax, {a}, {{"keepdims", B(true)}});
    t.add(OpKind::Relu, {a}, {{"axis", I(0)}});
    t.add(OpKind::Softmax, {a}, {{"axis", I(0)}, {"axis", I(1)}});
    t.add(OpKind::Reshape, {a});
    t.add(OpKind::Range, {}, {});
    CHECK_FALSE(t.run());
    REQUIRE(t.errors() == 6);
    const auto& d = t.diag.all();
    CHECK(d[0].message == "matmul: unknown attribute 'tranpose_a'; did you mean 'transpose_a'?");
    CHECK((d[0].loc.line == 2 && d[0].loc.col == 20));
    CHECK(d[1].message == "softmax: unknown attribute 'keepdims'; softmax takes axis");
    CHECK(d[2].message == "relu: unknown attribute 'axis'; relu takes no attributes");
    CHECK(d[3].message == "softmax: attribute 'axis' is given more than once");
    CHECK((d[3].loc.line == 5 && d[3].loc.col == 21));
    CHECK(d[4].message == "reshape: missing required attribute 'shape'");
    CHECK((d[4].loc.line == 6 && d[4].loc.col == 1));
    CHECK(d[5].message == "range: missing required attribute 'limit'");
}

TEST_CASE("validate attributes: value types") {
    struct Case {
        OpKind op;
        std::string name;
        Attr value;
        const char* message;
    };
    std::vector<Case> cases = {
        {OpKind::Softmax, "axis", F(2.5), "softmax: axis must be an integer, got 2.5"},
        {OpKind::Softmax, "axis", B(true), "softmax: axis must be an integer, got true"},
        {OpKind::Transpose, "perm", I(1),
         "transpose: perm must be a list of integers, got 1; write [1]"},
        {OpKind::Transpose, "perm", L({I(1), F(0.5)}),
         "transpose: each entry of perm must be an integer, got 0.5"},
        {OpKind::Transpose, "perm", L({I(1), Ints({0})}),
         "each entry of perm must be an integer, got [0]"},
        {OpKind::ReduceSum, "axes", F(1.5),
         "reduce_sum: axes must be a list of integers or one integer, got 1.5"},
        {OpKind::ReduceSum, "keepdims", I(1), "reduce_sum: keepdims must be true or false, got 1"},
        {OpKind::Cast, "dtype", W("flaot32"),
         "cast: unknown dtype 'flaot32'; did you mean 'float32'?; dtypes are f32, f64, i32, i64 "
         "and bool"},
        {OpKind::Cast, "dtype", S("f16"), "cast: unknown dtype 'f16'"},
        {OpKind::Cast, "dtype", I(32), "cast: dtype must be a dtype name, got 32"},
    };
    for (Case& c : cases) {
        CAPTURE(c.message);
        TestGraph t;
        NodeId x = t.zeros({2, 2});
        std::vector<std::pair<std::string, Attr>> attrs{{c.name, c.value}};
        if (c.op == OpKind::Cast && c.name != "dtype") attrs.emplace_back("dtype", W("f32"));
        t.add(c.op, {x}, attrs);
        CHECK_FALSE(t.run());
        REQUIRE(t.errors() == 1);
        CHECK(t.first().message.find(c.message) != std::string::npos);
        CHECK(t.first().loc.line == 2);
        CHECK(t.first().loc.col >= 40);  // the value (or, for a list entry, the value's fallback)
    }
    TestGraph t;
    t.add(OpKind::Fill, {}, {{"shape", Ints({2})}, {"value", S("x")}});
    t.add(OpKind::Zeros, {}, {{"shape", I(3)}});
    CHECK_FALSE(t.run());
    CHECK(t.has("fill: value must be a number or true/false, got \"x\""));
    CHECK(t.has("zeros: shape must be a list of integers, got 3; write [3]"));

    TestGraph ok;
    NodeId x = ok.zeros({2, 3});
    NodeId r = ok.add(OpKind::ReduceSum, {x}, {{"axes", I(1)}});
    NodeId c = ok.add(OpKind::Cast, {x}, {{"dtype", S("int64")}});
    REQUIRE(ok.run());
    CHECK(ok.type(r) == "f32[2]");
    CHECK(ok.type(c) == "i64[2,3]");
}

TEST_CASE("validate messages name the node unless its name was generated") {
    TestGraph t;
    NodeId a = t.zeros({2, 3});
    NodeId b = t.zeros({4, 2});
    t.add(OpKind::Matmul, {a, b}, {}, "c");
    t.add(OpKind::Matmul, {a, b});
    CHECK_FALSE(t.run());
    REQUIRE(t.errors() == 2);
    CHECK(t.diag.all()[0].message ==
          "c: matmul: inner dimensions differ: a is f32[2,3], b is f32[4,2]");
    CHECK(t.diag.all()[1].message ==
          "matmul: inner dimensions differ: a is f32[2,3], b is f32[4,2]");
    CHECK(t.diag.all()[0].loc.line == 3);
}

// ---------------------------------------------------------------------------
// devices and arity

TEST_CASE("validate devices as written") {
    TestGraph t;
    for (const char* dev : {"cpu", "CPU:0", "gpu", "gpu:3", "cuda:1", "/GPU:0", "/device:CPU:0"}) {
        NodeId id = t.zeros({1});
        t.g.node(id).device = dev;
    }
    REQUIRE(t.run());

    TestGraph u;
    NodeId x = u.zeros({1});
    u.g.node(x).device = "tpu";
    u.g.node(x).device_loc = at(1, 60);
    NodeId y = u.zeros({1});
    u.g.node(y).device = "cpu:1";  // no place: falls back to the node
    CHECK_FALSE(u.run());
    REQUIRE(u.errors() == 2);
    CHECK(u.diag.all()[0].message.find(
              "unknown device 'tpu'; devices are cpu, cpu:0, gpu, gpu:N, cuda:N") == 0);
    CHECK((u.diag.all()[0].loc.line == 1 && u.diag.all()[0].loc.col == 60));
    CHECK(u.diag.all()[1].message.find("unknown device 'cpu:1'") == 0);
    CHECK(u.diag.all()[1].loc.line == 2);
    CHECK(u.node(x).valid);  // the node's type does not depend on its device
}

TEST_CASE("validate reports a bad with-device block once") {
    Graph g;
    Diagnostics diag;
    GraphBuilder b(g, diag);
    b.push_device("tpu:0", at(1, 13));
    NodeId x = b.add_node(OpKind::Ones, {}, {NamedAttr{"shape", Ints({2}), at(2, 5)}}, at(2, 1));
    b.assign("x", x, at(2, 1));
    NodeId y = b.add_node(OpKind::Neg, {Input{x, at(3, 6)}}, {}, at(3, 5));
    b.assign("y", y, at(3, 1));
    b.pop_device();
    b.push_device("gpu:1", at(5, 13));
    NodeId z = b.add_node(OpKind::Neg, {Input{y, at(6, 6)}}, {}, at(6, 5));
    b.assign("z", z, at(6, 1));
    b.pop_device();
    b.finish(at(7, 1));
    REQUIRE_FALSE(diag.has_errors());
    CHECK_FALSE(validate(g, diag));
    REQUIRE(diag.error_count() == 1);
    CHECK(diag.all()[0].message.find("unknown device 'tpu:0'") == 0);
    CHECK((diag.all()[0].loc.line == 1 && diag.all()[0].loc.col == 13));
}

TEST_CASE("validate arity") {
    TestGraph t;
    NodeId x = t.zeros({2});
    t.add(OpKind::Add, {x});
    t.add(OpKind::Relu, {x, x});
    t.add(OpKind::Concat, {});
    t.add(OpKind::Zeros, {x}, {{"shape", Ints({2})}});
    CHECK_FALSE(t.run());
    REQUIRE(t.errors() == 4);
    CHECK(t.diag.all()[0].message == "add: takes 2 inputs (a, b), got 1");
    CHECK(t.diag.all()[1].message == "relu: takes 1 input (x), got 2");
    CHECK(t.diag.all()[2].message == "concat: takes at least 1 input, got 0");
    CHECK(t.diag.all()[3].message == "zeros: takes no tensor inputs, got 1");
}

// ---------------------------------------------------------------------------
// creation ops

TEST_CASE("validate zeros, ones, fill") {
    TestGraph t;
    NodeId z = t.add(OpKind::Zeros, {}, {{"shape", Ints({2, 0, 3})}});
    NodeId o = t.tensor(OpKind::Ones, {4}, "bool");
    NodeId s = t.add(OpKind::Ones, {}, {{"shape", Ints({})}, {"dtype", W("int32")}});
    NodeId f = t.add(OpKind::Fill, {}, {{"shape", Ints({2})}, {"value", F(2.5)}});
    NodeId fi =
        t.add(OpKind::Fill, {}, {{"shape", Ints({2})}, {"value", I(3)}, {"dtype", W("i64")}});
    NodeId fb = t.add(OpKind::Fill, {}, {{"shape", Ints({2})}, {"value", B(true)}});
    NodeId fbf =
        t.add(OpKind::Fill, {}, {{"shape", Ints({2})}, {"value", B(true)}, {"dtype", W("f64")}});
    NodeId big = t.add(OpKind::Zeros, {}, {{"shape", Ints({1 << 20, 1 << 20})}});
    REQUIRE(t.run());
    CHECK(t.type(z) == "f32[2,0,3]");
    CHECK(t.type(o) == "bool[4]");
    CHECK(t.type(s) == "i32[]");
    CHECK(t.type(f) == "f32[2]");
    CHECK(t.type(fi) == "i64[2]");
    CHECK(t.type(fb) == "bool[2]");
    CHECK(t.type(fbf) == "f64[2]");
    CHECK(t.type(big) == "f32[1048576,1048576]");  // 2^40 elements: at the limit, never allocated
    CHECK(t.node(big).literal.empty());
}

TEST_CASE("validate creation shape errors") {
    TestGraph t;
    t.add(OpKind::Zeros, {}, {{"shape", Ints({2, -1})}});
    t.add(OpKind::Ones, {}, {{"shape", Ints({int64_t{1} << 40, int64_t{1} << 40})}});
    t.add(OpKind::Ones, {}, {{"shape", Ints({(int64_t{1} << 40) + 1})}});
    t.add(OpKind::Zeros, {}, {{"shape", Ints(std::vector<int64_t>(33, 1))}});
    t.add(OpKind::Fill, {}, {{"shape", Ints({2})}, {"value", F(2.5)}, {"dtype", W("i32")}});
    t.add(OpKind::Fill, {}, {{"shape", Ints({2})}, {"value", I(1)}, {"dtype", W("bool")}});
    CHECK_FALSE(t.run());
    REQUIRE(t.errors() == 6);
    const auto& d = t.diag.all();
    CHECK(d[0].message == "zeros: shape [2,-1] has a negative dimension -1");
    CHECK((d[0].loc.line == 1 && d[0].loc.col == 40));
    CHECK(d[1].message.find("ones: shape [1099511627776,1099511627776] has too many elements") ==
          0);
    CHECK(d[2].message.find("ones: shape [1099511627777] has too many elements") == 0);
    CHECK(d[3].message.find("has 33 dimensions; at most 32 are supported") != std::string::npos);
    CHECK(d[4].message == "fill: value 2.5 cannot be i32: it is not an integer");
    CHECK((d[4].loc.line == 5 && d[4].loc.col == 41));
    CHECK(d[5].message == "fill: value 1 cannot be bool: use true/false");
}

TEST_CASE("validate range follows numpy.arange") {
    auto range = [](std::vector<std::pair<std::string, Attr>> attrs) {
        TestGraph t;
        NodeId id = t.add(OpKind::Range, {}, std::move(attrs));
        return t.run() ? t.type(id) : "error: " + t.messages();
    };
    CHECK(range({{"limit", I(5)}}) == "f32[5]");
    CHECK(range({{"start", I(1)}, {"limit", I(10)}, {"delta", I(3)}}) == "f32[3]");
    CHECK(range({{"start", I(10)}, {"limit", I(1)}, {"delta", I(-3)}}) == "f32[3]");
    CHECK(range({{"start", I(5)}, {"limit", I(1)}}) == "f32[0]");
    CHECK(range({{"limit", F(1)}, {"delta", F(0.1)}, {"dtype", W("f64")}}) == "f64[10]");
    CHECK(range({{"limit", F(2.5)}}) == "f32[3]");
    CHECK(range({{"start", I(-3)}, {"limit", I(3)}, {"dtype", W("i32")}}) == "i32[6]");
    CHECK(range({{"start", I(INT64_MIN)},
                 {"limit", I(INT64_MAX)},
                 {"delta", I(INT64_MAX)},
                 {"dtype", W("i64")}}) == "i64[3]");
    CHECK(range({{"limit", F(3.0)}, {"dtype", W("i64")}}) == "i64[3]");

    auto error = [](std::vector<std::pair<std::string, Attr>> attrs) {
        TestGraph t;
        t.add(OpKind::Range, {}, std::move(attrs));
        return t.run() ? std::string("no error") : t.messages();
    };
    CHECK(error({{"limit", I(5)}, {"delta", I(0)}}) == "range: delta must not be 0\n");
    CHECK(error({{"limit", F(NAN)}}) == "range: limit must be finite, got nan\n");
    CHECK(error({{"limit", F(INFINITY)}}) == "range: limit must be finite, got inf\n");
    CHECK(error({{"limit", F(2.5)}, {"dtype", W("i32")}}) ==
          "range: limit 2.5 cannot be i32: it is not an integer\n");
    CHECK(error({{"limit", I(5)}, {"dtype", W("bool")}}) ==
          "range: dtype bool is not supported; range makes f32, f64, i32 or i64\n");
    CHECK(error({{"limit", F(1e300)}})
              .find("range: range(start=0, limit=1e+300, delta=1) has too many elements") == 0);
    CHECK(error({{"start", F(-1e308)}, {"limit", F(1e308)}, {"delta", F(1e-308)}})
              .find("has too many elements") != std::string::npos);
    CHECK(error({{"start", I(INT64_MIN)}, {"limit", I(INT64_MAX)}, {"dtype", W("i64")}})
              .find("too many elements") != std::string::npos);
    CHECK(error({{"limit", I(3000000000)}, {"dtype", W("i32")}})
              .find("limit 3000000000 cannot be i32") != std::string::npos);
}

TEST_CASE("validate random_uniform and random_normal") {
    TestGraph t;
    NodeId u = t.add(OpKind::RandomUniform, {},
                     {{"shape", Ints({3, 4})},
                      {"low", F(-1)},
                      {"high", I(1)},
                      {"seed", I(7)},
                      {"dtype", W("f64")}});
    NodeId n =
        t.add(OpKind::RandomNormal, {}, {{"shape", Ints({5})}, {"mean", F(2)}, {"stddev", F(0)}});
    NodeId e =
        t.add(OpKind::RandomUniform, {}, {{"shape", Ints({0})}, {"low", I(1)}, {"high", I(1)}});
    REQUIRE(t.run());
    CHECK(t.type(u) == "f64[3,4]");
    CHECK(t.type(n) == "f32[5]");
    CHECK(t.type(e) == "f32[0]");

    TestGraph bad;
    bad.add(OpKind::RandomUniform, {}, {{"shape", Ints({2})}, {"seed", I(-1)}});
    bad.add(OpKind::RandomUniform, {}, {{"shape", Ints({2})}, {"low", I(2)}, {"high", I(1)}});
    bad.add(OpKind::RandomNormal, {}, {{"shape", Ints({2})}, {"stddev", F(-0.5)}});
    bad.add(OpKind::RandomNormal, {}, {{"shape", Ints({2})}, {"mean", F(NAN)}});
    bad.add(OpKind::RandomNormal, {}, {{"shape", Ints({2})}, {"dtype", W("i32")}});
    bad.add(OpKind::RandomUniform, {}, {{"shape", Ints({2})}, {"seed", F(1.5)}});
    CHECK_FALSE(bad.run());
    REQUIRE(bad.errors() == 6);
    const auto& d = bad.diag.all();
    CHECK(d[0].message == "random_uniform: seed must be an integer >= 0, got -1");
    CHECK(d[1].message == "random_uniform: low (2) must not exceed high (1)");
    CHECK(d[2].message == "random_normal: stddev must be >= 0, got -0.5");
    CHECK(d[3].message == "random_normal: mean must be finite, got nan");
    CHECK(d[4].message ==
          "random_normal: dtype i32 is not supported; random_normal makes f32 or f64");
    CHECK(d[5].message == "random_uniform: seed must be an integer, got 1.5");
}

// ---------------------------------------------------------------------------
// elementwise

TEST_CASE("validate binary broadcasting") {
    CHECK(infer(OpKind::Add, {{2, 3}, {2, 3}}) == "f32[2,3]");
    CHECK(infer(OpKind::Sub, {{2, 3}, {3}}) == "f32[2,3]");
    CHECK(infer(OpKind::Mul, {{2, 1}, {1, 3}}) == "f32[2,3]");
    CHECK(infer(OpKind::Div, {{}, {2, 3}}) == "f32[2,3]");
    CHECK(infer(OpKind::Maximum, {{4, 1, 3}, {5, 1}}) == "f32[4,5,3]");
    CHECK(infer(OpKind::Minimum, {{0, 3}, {1, 3}}) == "f32[0,3]");
    CHECK(infer(OpKind::Pow, {{0}, {1}}) == "f32[0]");
    CHECK(infer(OpKind::Add, {{1}, {0}}) == "f32[0]");
    CHECK(infer(OpKind::Add, {{2, 3}, {2, 3}}, {}, "i32") == "i32[2,3]");
    CHECK(error_of(OpKind::Add, {{2, 3}, {4}}) ==
          "add: shapes f32[2,3] and f32[4] do not broadcast: dimension 3 vs 4");
    CHECK(error_of(OpKind::Add, {{0}, {2}}) ==
          "add: shapes f32[0] and f32[2] do not broadcast: dimension 0 vs 2");
    CHECK(error_of(OpKind::Mul, {{2, 3, 4}, {5, 1, 4}}) ==
          "mul: shapes f32[2,3,4] and f32[5,1,4] do not broadcast: dimension 2 vs 5");
}

TEST_CASE("validate binary dtypes") {
    TestGraph t;
    NodeId a = t.zeros({2}, "f32");
    NodeId b = t.zeros({2}, "f64");
    NodeId i = t.zeros({2}, "i32");
    NodeId q = t.zeros({2}, "bool");
    t.add(OpKind::Add, {a, b});
    t.add(OpKind::Sub, {i, b});
    t.add(OpKind::Mul, {a, q});
    CHECK_FALSE(t.run());
    REQUIRE(t.errors() == 3);
    const auto& d = t.diag.all();
    CHECK(d[0].message ==
          "add: operands have different dtypes: a is f32[2], b is f64[2]; use cast(b, dtype=f32)");
    CHECK(d[0].loc.line == 5);
    CHECK(d[1].message ==
          "sub: operands have different dtypes: a is i32[2], b is f64[2]; use cast(a, dtype=f64)");
    CHECK(d[2].message ==
          "mul: b is bool[2], but mul takes f32, f64, i32 or i64; use cast(b, dtype=f32)");
    CHECK((d[2].loc.line == 7 && d[2].loc.col == 11));
}

TEST_CASE("validate weak scalar literals take the other operand's dtype") {
    TestGraph t;
    NodeId i = t.zeros({3}, "i32");
    NodeId d = t.zeros({3}, "f64");
    NodeId two = t.lit(I(2), true);
    NodeId m = t.add(OpKind::Mul, {i, two});
    NodeId tenth = t.lit(F(0.1), true);
    NodeId s = t.add(OpKind::Add, {tenth, d});
    NodeId yes = t.lit(B(true), true);
    NodeId y = t.add(OpKind::Add, {d, yes});
    NodeId w1 = t.lit(F(1.5), true);
    NodeId w2 = t.lit(I(2), true);
    NodeId ww = t.add(OpKind::Pow, {w1, w2});
    NodeId big = t.lit(I(1), true);
    NodeId li = t.zeros({2}, "i64");
    NodeId l = t.add(OpKind::Sub, {big, li});
    REQUIRE(t.run());
    CHECK(t.type(m) == "i32[3]");
    CHECK(t.type(two) == "i32[]");
    CHECK(values<int32_t>(t.node(two)) == std::vector<int32_t>{2});
    CHECK(t.type(s) == "f64[3]");
    CHECK(values<double>(t.node(tenth)) == std::vector<double>{0.1});  // not rounded through f32
    CHECK(t.type(yes) == "f64[]");
    CHECK(values<double>(t.node(yes)) == std::vector<double>{1.0});
    CHECK(t.type(y) == "f64[3]");
    CHECK(t.type(ww) == "f32[]");
    CHECK(t.type(w1) == "f32[]");
    CHECK(t.type(l) == "i64[2]");
    CHECK(values<int64_t>(t.node(big)) == std::vector<int64_t>{1});
}

TEST_CASE("validate weak literal that cannot take the other dtype") {
    TestGraph t;
    NodeId i = t.zeros({3}, "i32");
    NodeId half = t.lit(F(2.5), true);
    t.add(OpKind::Mul, {i, half});
    NodeId huge = t.lit(I(5000000000), true);
    t.add(OpKind::Add, {huge, i});
    NodeId q = t.zeros({3}, "bool");
    NodeId one = t.lit(I(1), true);
    t.add(OpKind::Add, {q, one});
    NodeId nonweak = t.lit(I(2));  // not weak: stays f32 and clashes
    t.add(OpKind::Add, {i, nonweak});
    CHECK_FALSE(t.run());
    REQUIRE(t.errors() == 4);
    const auto& d = t.diag.all();
    CHECK(d[0].message == "mul: the literal 2.5 cannot be i32 (a is i32[3]): it is not an integer");
    CHECK((d[0].loc.line == 3 && d[0].loc.col == 11));
    CHECK(d[1].message.find(
              "add: the literal 5000000000 cannot be i32 (b is i32[3]): it is out of range") == 0);
    CHECK((d[1].loc.line == 5 && d[1].loc.col == 10));
    CHECK(d[2].message ==
          "add: a is bool[3], but add takes f32, f64, i32 or i64; use cast(a, dtype=f32)");
    CHECK(d[3].message ==
          "add: operands have different dtypes: a is i32[3], b is f32[]; use cast(a, dtype=f32)");
}

TEST_CASE("validate unary dtype classes") {
    CHECK(infer(OpKind::Relu, {{2, 3}}, {}, "i32") == "i32[2,3]");
    CHECK(infer(OpKind::Abs, {{0}}, {}, "i64") == "i64[0]");
    CHECK(infer(OpKind::Exp, {{2}}, {}, "f64") == "f64[2]");
    CHECK(infer(OpKind::Sigmoid, {{}}) == "f32[]");
    CHECK(error_of(OpKind::Exp, {{3}}, {}, "i32") ==
          "exp: x is i32[3], but exp takes f32 or f64; use cast(x, dtype=f32)");
    CHECK(error_of(OpKind::Log, {{3}}, {}, "i64") ==
          "log: x is i64[3], but log takes f32 or f64; use cast(x, dtype=f64)");
    CHECK(error_of(OpKind::Neg, {{3}}, {}, "bool") ==
          "neg: x is bool[3], but neg takes f32, f64, i32 or i64; use cast(x, dtype=f32)");
    CHECK(error_of(OpKind::Sqrt, {{3}}, {}, "bool") ==
          "sqrt: x is bool[3], but sqrt takes f32 or f64; use cast(x, dtype=f32)");
}

// ---------------------------------------------------------------------------
// matmul

TEST_CASE("validate matmul shapes follow numpy.matmul") {
    CHECK(infer(OpKind::Matmul, {{2, 3}, {3, 4}}) == "f32[2,4]");
    CHECK(infer(OpKind::Matmul, {{3}, {3, 4}}) == "f32[4]");
    CHECK(infer(OpKind::Matmul, {{2, 3}, {3}}) == "f32[2]");
    CHECK(infer(OpKind::Matmul, {{3}, {3}}) == "f32[]");
    CHECK(infer(OpKind::Matmul, {{5, 2, 3}, {3, 4}}) == "f32[5,2,4]");
    CHECK(infer(OpKind::Matmul, {{2, 1, 2, 3}, {5, 3, 4}}) == "f32[2,5,2,4]");
    CHECK(infer(OpKind::Matmul, {{3}, {7, 3, 4}}) == "f32[7,4]");
    CHECK(infer(OpKind::Matmul, {{7, 2, 3}, {3}}) == "f32[7,2]");
    CHECK(infer(OpKind::Matmul, {{0, 3}, {3, 0}}) == "f32[0,0]");
    CHECK(infer(OpKind::Matmul, {{2, 0}, {0, 4}}) == "f32[2,4]");
    CHECK(infer(OpKind::Matmul, {{3, 2}, {3, 4}}, {{"transpose_a", B(true)}}) == "f32[2,4]");
    CHECK(infer(OpKind::Matmul, {{2, 3}, {4, 3}}, {{"transpose_b", B(true)}}) == "f32[2,4]");
    CHECK(infer(OpKind::Matmul, {{5, 3, 2}, {5, 4, 3}},
                {{"transpose_a", B(true)}, {"transpose_b", B(true)}}) == "f32[5,2,4]");
    CHECK(infer(OpKind::Matmul, {{2, 3}, {3, 4}}, {}, "f64") == "f64[2,4]");
}

TEST_CASE("validate matmul errors") {
    CHECK(error_of(OpKind::Matmul, {{2, 3}, {4, 2}}) ==
          "matmul: inner dimensions differ: a is f32[2,3], b is f32[4,2]");
    CHECK(error_of(OpKind::Matmul, {{3}, {4}}) ==
          "matmul: inner dimensions differ: a is f32[3], b is f32[4]");
    CHECK(error_of(OpKind::Matmul, {{2, 3}, {2, 3}}, {{"transpose_b", B(false)}}) ==
          "matmul: inner dimensions differ: a is f32[2,3], b is f32[2,3]");
    CHECK(error_of(OpKind::Matmul, {{2, 3}, {3, 4}}, {{"transpose_b", B(true)}}) ==
          "matmul: inner dimensions differ: a is f32[2,3], b is f32[3,4] (transpose_b=true)");
    CHECK(error_of(OpKind::Matmul, {{2, 2, 3}, {5, 3, 4}}) ==
          "matmul: batch dimensions do not broadcast: a is f32[2,2,3], b is f32[5,3,4]: dimension "
          "2 vs 5");
    CHECK(error_of(OpKind::Matmul, {{}, {3}}) ==
          "matmul: a is f32[], a scalar; matmul needs operands with at least 1 dimension");
    CHECK(error_of(OpKind::Matmul, {{3}, {3}}, {{"transpose_a", B(true)}}) ==
          "matmul: transpose_a=true needs a to have at least 2 dimensions, but a is f32[3]");
    CHECK(error_of(OpKind::Matmul, {{2, 2}, {2, 2}}, {}, "i32") ==
          "several errors: matmul: a is i32[2,2], but matmul takes f32 or f64; use cast(a, "
          "dtype=f32)\n"
          "matmul: b is i32[2,2], but matmul takes f32 or f64; use cast(b, dtype=f32)\n");

    TestGraph t;
    NodeId a = t.zeros({2, 2}, "f32");
    NodeId b = t.zeros({2, 2}, "f64");
    t.add(OpKind::Matmul, {a, b}, {{"transpose_a", B(true)}});
    CHECK_FALSE(t.run());
    CHECK(t.messages() ==
          "matmul: operands have different dtypes: a is f32[2,2], b is f64[2,2]; use cast(b, "
          "dtype=f32)\n");

    TestGraph u;
    NodeId v = u.zeros({3});
    u.add(OpKind::Matmul, {v, v}, {{"transpose_b", B(true)}});
    CHECK_FALSE(u.run());
    CHECK((u.first().loc.line == 2 && u.first().loc.col == 40));
}

// ---------------------------------------------------------------------------
// transpose, reshape, cast, identity, concat

TEST_CASE("validate transpose") {
    CHECK(infer(OpKind::Transpose, {{2, 3, 4}}) == "f32[4,3,2]");
    CHECK(infer(OpKind::Transpose, {{2, 3, 4}}, {{"perm", Ints({0, 2, 1})}}) == "f32[2,4,3]");
    CHECK(infer(OpKind::Transpose, {{2, 3, 4}}, {{"perm", Ints({-1, 0, -2})}}) == "f32[4,2,3]");
    CHECK(infer(OpKind::Transpose, {{}}) == "f32[]");
    CHECK(infer(OpKind::Transpose, {{2, 3}}, {}, "bool") == "bool[3,2]");
    CHECK(error_of(OpKind::Transpose, {{2, 3}}, {{"perm", Ints({0, 1, 2})}}) ==
          "transpose: perm [0,1,2] has 3 entries, but x is f32[2,3] (rank 2)");
    CHECK(error_of(OpKind::Transpose, {{2, 3}}, {{"perm", Ints({0, -2})}}) ==
          "transpose: perm [0,-2] is not a permutation of 0..1: axis 0 appears twice (x is "
          "f32[2,3])");
    CHECK(error_of(OpKind::Transpose, {{2, 3}}, {{"perm", Ints({0, 2})}}) ==
          "transpose: perm [0,2]: entry 2 is out of range for rank 2 (x is f32[2,3])");
    CHECK(error_of(OpKind::Transpose, {{2, 3}}, {{"perm", Ints({-3, 0})}}) ==
          "transpose: perm [-3,0]: entry -3 is out of range for rank 2 (x is f32[2,3])");
}

TEST_CASE("validate reshape") {
    CHECK(infer(OpKind::Reshape, {{2, 3}}, {{"shape", Ints({3, 2})}}) == "f32[3,2]");
    CHECK(infer(OpKind::Reshape, {{2, 3}}, {{"shape", Ints({-1})}}) == "f32[6]");
    CHECK(infer(OpKind::Reshape, {{2, 3, 4}}, {{"shape", Ints({4, -1})}}) == "f32[4,6]");
    CHECK(infer(OpKind::Reshape, {{1}}, {{"shape", Ints({})}}) == "f32[]");
    CHECK(infer(OpKind::Reshape, {{0, 3}}, {{"shape", Ints({3, 0, 5})}}) == "f32[3,0,5]");
    CHECK(infer(OpKind::Reshape, {{0, 3}}, {{"shape", Ints({-1, 3})}}) == "f32[0,3]");
    CHECK(infer(OpKind::Reshape, {{2, 3}}, {{"shape", Ints({6})}}, "i64") == "i64[6]");
    CHECK(error_of(OpKind::Reshape, {{2, 3}}, {{"shape", Ints({4, 2})}}) ==
          "reshape: cannot reshape f32[2,3] (6 elements) to [4,2] (8 elements)");
    CHECK(error_of(OpKind::Reshape, {{2, 3}}, {{"shape", Ints({4, -1})}}) ==
          "reshape: cannot reshape f32[2,3] (6 elements) to [4,-1]: 6 is not a multiple of 4");
    CHECK(error_of(OpKind::Reshape, {{2, 3}}, {{"shape", Ints({-1, -1})}}) ==
          "reshape: shape [-1,-1] has more than one -1");
    CHECK(error_of(OpKind::Reshape, {{2, 3}}, {{"shape", Ints({-2, -3})}}) ==
          "reshape: shape [-2,-3] has a negative entry -2; only one -1 (inferred) is allowed");
    CHECK(error_of(OpKind::Reshape, {{0, 3}}, {{"shape", Ints({0, -1})}}) ==
          "reshape: cannot reshape f32[0,3] (0 elements) to [0,-1]: the -1 cannot be inferred when "
          "the other "
          "entries multiply to 0");
    CHECK(error_of(OpKind::Reshape, {{2, 3}},
                   {{"shape", Ints({int64_t{1} << 40, int64_t{1} << 40})}}) ==
          "reshape: cannot reshape f32[2,3] (6 elements) to [1099511627776,1099511627776]: too "
          "many elements");
    CHECK(error_of(OpKind::Reshape, {{1}}, {{"shape", Ints(std::vector<int64_t>(33, 1))}})
              .find("has 33 dimensions; at most 32 are supported") != std::string::npos);
}

TEST_CASE("validate cast and identity") {
    CHECK(infer(OpKind::Cast, {{2, 3}}, {{"dtype", W("bool")}}) == "bool[2,3]");
    CHECK(infer(OpKind::Cast, {{2}}, {{"dtype", W("f32")}}, "bool") == "f32[2]");
    CHECK(infer(OpKind::Identity, {{0, 2}}, {}, "i64") == "i64[0,2]");
    CHECK(error_of(OpKind::Cast, {{2}}) == "cast: missing required attribute 'dtype'");
}

TEST_CASE("validate concat") {
    CHECK(infer(OpKind::Concat, {{2, 3}, {4, 3}}) == "f32[6,3]");
    CHECK(infer(OpKind::Concat, {{2, 3}, {2, 1}, {2, 0}}, {{"axis", I(1)}}) == "f32[2,4]");
    CHECK(infer(OpKind::Concat, {{2, 3}, {2, 5}}, {{"axis", I(-1)}}) == "f32[2,8]");
    CHECK(infer(OpKind::Concat, {{7}}) == "f32[7]");
    CHECK(infer(OpKind::Concat, {{2}, {3}}, {}, "bool") == "bool[5]");
    CHECK(error_of(OpKind::Concat, {{2, 3}, {2, 4}}) ==
          "concat: x2 is f32[2,4], but x1 is f32[2,3]: dimension 1 differs (4 vs 3); only axis 0 "
          "may differ");
    CHECK(error_of(OpKind::Concat, {{2, 3}, {3}}) ==
          "concat: x2 is f32[3], but x1 is f32[2,3]: ranks differ (1 vs 2)");
    CHECK(error_of(OpKind::Concat, {{}, {}}) ==
          "several errors: concat: x1 is f32[], a scalar; concat needs inputs with at least 1 "
          "dimension\n"
          "concat: x2 is f32[], a scalar; concat needs inputs with at least 1 dimension\n");
    CHECK(error_of(OpKind::Concat, {{2, 3}, {2, 3}}, {{"axis", I(2)}}) ==
          "concat: axis 2 is out of range for rank 2 (x1 is f32[2,3])");
    CHECK(error_of(OpKind::Concat, {{2, 3}, {2, 3}}, {{"axis", I(-3)}}) ==
          "concat: axis -3 is out of range for rank 2 (x1 is f32[2,3])");

    TestGraph t;
    NodeId a = t.zeros({2}, "f32");
    NodeId b = t.zeros({2}, "i32");
    t.add(OpKind::Concat, {a, a, b});
    CHECK_FALSE(t.run());
    CHECK(t.messages() ==
          "concat: x3 is i32[2], but x1 is f32[2]; all inputs need the same dtype: use cast(x3, "
          "dtype=f32)\n");
    CHECK((t.first().loc.line == 3 && t.first().loc.col == 12));

    TestGraph u;  // dims near int64's limit, with another dim 0: the sum overflows
    NodeId h = u.zeros({0, INT64_MAX});
    u.add(OpKind::Concat, {h, h}, {{"axis", I(1)}});
    CHECK_FALSE(u.run());
    CHECK(u.has("too many elements"));
}

// ---------------------------------------------------------------------------
// reductions and softmax

TEST_CASE("validate reductions") {
    CHECK(infer(OpKind::ReduceSum, {{2, 3}}) == "f32[]");
    CHECK(infer(OpKind::ReduceSum, {{2, 3}}, {{"keepdims", B(true)}}) == "f32[1,1]");
    CHECK(infer(OpKind::ReduceSum, {{2, 3, 4}}, {{"axes", Ints({-1})}, {"keepdims", B(true)}}) ==
          "f32[2,3,1]");
    CHECK(infer(OpKind::ReduceMax, {{2, 3, 4}}, {{"axes", Ints({0, 2})}}) == "f32[3]");
    CHECK(infer(OpKind::ReduceMean, {{2, 3}}, {{"axes", I(-2)}}) == "f32[3]");
    CHECK(infer(OpKind::ReduceSum, {{2, 3}}, {{"axes", Ints({})}}) == "f32[2,3]");
    CHECK(infer(OpKind::ReduceSum, {{}}) == "f32[]");
    CHECK(infer(OpKind::ReduceSum, {{0, 3}}, {{"axes", Ints({0})}}) == "f32[3]");
    CHECK(infer(OpKind::ReduceMax, {{0, 3}}, {{"axes", Ints({1})}}) == "f32[0]");
    CHECK(infer(OpKind::ReduceSum, {{2, 3}}, {}, "i32") == "i32[]");
    CHECK(error_of(OpKind::ReduceSum, {{2, 3}}, {{"axes", Ints({2})}}) ==
          "reduce_sum: axes [2]: axis 2 is out of range for rank 2 (x is f32[2,3])");
    CHECK(error_of(OpKind::ReduceSum, {{2, 3}}, {{"axes", Ints({1, -1})}}) ==
          "reduce_sum: axes [1,-1] names axis 1 twice");
    CHECK(error_of(OpKind::ReduceMax, {{0, 3}}, {{"axes", Ints({0})}}) ==
          "reduce_max: x is f32[0,3]: axis 0 is empty, and reduce_max of an empty dimension has no "
          "identity");
    CHECK(error_of(OpKind::ReduceMax, {{3, 0}})
              .find("reduce_max of an empty dimension has no identity") != std::string::npos);
    CHECK(error_of(OpKind::ReduceMean, {{2}}, {}, "i32") ==
          "reduce_mean: x is i32[2], but reduce_mean takes f32 or f64; use cast(x, dtype=f32)");
    CHECK(error_of(OpKind::ReduceSum, {{2}}, {}, "bool") ==
          "reduce_sum: x is bool[2], but reduce_sum takes f32, f64, i32 or i64; use cast(x, "
          "dtype=f32)");
}

TEST_CASE("validate softmax") {
    CHECK(infer(OpKind::Softmax, {{2, 3}}) == "f32[2,3]");
    CHECK(infer(OpKind::Softmax, {{2, 3}}, {{"axis", I(0)}}, "f64") == "f64[2,3]");
    CHECK(infer(OpKind::Softmax, {{2, 3}}, {{"axis", I(-2)}}) == "f32[2,3]");
    CHECK(error_of(OpKind::Softmax, {{}}) ==
          "softmax: x is f32[], a scalar; softmax needs at least 1 dimension");
    CHECK(error_of(OpKind::Softmax, {{2, 3}}, {{"axis", I(2)}}) ==
          "softmax: axis 2 is out of range for rank 2 (x is f32[2,3])");
    CHECK(error_of(OpKind::Softmax, {{2}}, {}, "i64") ==
          "softmax: x is i64[2], but softmax takes f32 or f64; use cast(x, dtype=f64)");
}

// ---------------------------------------------------------------------------
// cascades, loops, limits

TEST_CASE("validate does not cascade after an invalid input") {
    TestGraph t;
    NodeId a = t.zeros({2, 3});
    NodeId b = t.zeros({4});
    NodeId bad = t.add(OpKind::Add, {a, b});
    NodeId r = t.add(OpKind::Relu, {bad});
    NodeId m = t.add(OpKind::Matmul, {r, a});
    NodeId inv = t.add(OpKind::Invalid, {});
    NodeId after = t.add(OpKind::Exp, {inv});
    NodeId typo = t.add(OpKind::Softmax, {inv}, {{"axs", I(0)}});  // independent: still reported
    NodeId fine = t.add(OpKind::Neg, {a});
    CHECK_FALSE(t.run());
    REQUIRE(t.errors() == 2);
    CHECK(t.diag.all()[0].message.find("do not broadcast") != std::string::npos);
    CHECK(t.diag.all()[1].message == "softmax: unknown attribute 'axs'; did you mean 'axis'?");
    for (NodeId id : {bad, r, m, inv, after, typo}) CHECK_FALSE(t.node(id).valid);
    CHECK(t.node(fine).valid);
    CHECK(t.type(fine) == "f32[2,3]");
}

TEST_CASE("validate reports independent errors in one run") {
    TestGraph t;
    NodeId a = t.zeros({2, 3});
    t.add(OpKind::Exp, {a}, {{"dtype", W("f32")}});
    t.add(OpKind::Reshape, {a}, {{"shape", Ints({5})}});
    NodeId i = t.zeros({2}, "i32");
    t.add(OpKind::Sqrt, {i});
    CHECK_FALSE(t.run());
    CHECK(t.errors() == 3);
}

namespace {
// x = ones([512]); repeat 3 { x = <body(x)> }; y = neg(x)
struct LoopGraph {
    Graph g;
    Diagnostics diag;
    NodeId init = kNoNode, update = kNoNode, after = kNoNode, param = kNoNode;

    explicit LoopGraph(std::vector<int64_t> reshape_to) {
        GraphBuilder b(g, diag);
        init = b.add_node(OpKind::Ones, {}, {NamedAttr{"shape", Ints({512}), at(1, 10)}}, at(1, 5));
        b.assign("x", init, at(1, 1));
        b.begin_repeat(3, at(2, 1));
        auto x = b.lookup("x", at(3, 20));
        REQUIRE(x);
        NodeId r = b.add_node(OpKind::Reshape, {Input{*x, at(3, 20)}},
                              {NamedAttr{"shape", Ints(reshape_to), at(3, 25)}}, at(3, 12));
        update = b.assign("x", r, at(3, 5));
        b.end_repeat();
        auto xo = b.lookup("x", at(5, 9));
        REQUIRE(xo);
        param = *xo;
        after = b.add_node(OpKind::Neg, {Input{*xo, at(5, 9)}}, {}, at(5, 5));
        b.assign("y", after, at(5, 1));
        b.finish(at(6, 1));
        REQUIRE_FALSE(diag.has_errors());
    }
};
}  // namespace

TEST_CASE("validate loop-carried values keep their type") {
    LoopGraph ok({512});
    CHECK(validate(ok.g, ok.diag));
    CHECK(ok.g.node(ok.param).op == OpKind::LoopParam);
    CHECK(type_string(ok.g.node(ok.param).dtype, ok.g.node(ok.param).shape) == "f32[512]");
    CHECK(ok.g.node(ok.after).valid);

    LoopGraph bad({512, 1});
    CHECK_FALSE(validate(bad.g, bad.diag));
    REQUIRE(bad.diag.error_count() == 1);
    const Diagnostic& d = bad.diag.all()[0];
    CHECK(d.message ==
          "loop-carried 'x' changes type in the repeat body: it enters as f32[512] and leaves as "
          "f32[512,1]");
    CHECK((d.loc.line == 3 && d.loc.col == 12));
}

TEST_CASE("validate loop parameter follows an invalid initial value silently") {
    LoopGraph t({512});
    t.g.node(t.init).attrs[0].value = Ints({-1});
    CHECK_FALSE(validate(t.g, t.diag));
    REQUIRE(t.diag.error_count() == 1);
    CHECK(t.diag.all()[0].message.find("negative dimension") != std::string::npos);
    CHECK_FALSE(t.g.node(t.param).valid);
    CHECK_FALSE(t.g.node(t.after).valid);
}

TEST_CASE("validate result element counts are checked without allocating") {
    TestGraph t;
    NodeId col = t.zeros({int64_t{1} << 30, 1});
    NodeId row = t.zeros({1, int64_t{1} << 30});
    t.add(OpKind::Add, {col, row});
    NodeId huge = t.zeros({int64_t{1} << 40, 0});
    NodeId huge2 = t.zeros({0, int64_t{1} << 40});
    t.add(OpKind::Matmul, {huge2, huge});  // [0,2^40] @ [2^40,0] -> [0,0]: fine
    NodeId h3 = t.zeros({int64_t{1} << 40, 0});
    NodeId h4 = t.zeros({0, int64_t{1} << 40});
    t.add(OpKind::Matmul, {h3, h4}, {}, "m");  // -> [2^40, 2^40]
    CHECK_FALSE(t.run());
    REQUIRE(t.errors() == 2);
    CHECK(t.diag.all()[0].message.find(
              "add: result f32[1073741824,1073741824] has too many elements") == 0);
    CHECK(t.diag.all()[1].message.find(
              "m: matmul: result f32[1099511627776,1099511627776] has too many elements") == 0);
}
