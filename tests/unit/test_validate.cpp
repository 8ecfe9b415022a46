// Unit tests for validate(): attributes, devices, every op's dtype and shape
// rules, const literal encoding, weak literals, loop-carried values, limits.
// Graphs are built by hand (no front end), each node on its own "line".
#include <doctest/doctest.h>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tests/unit/validate_helpers.h"

using namespace graphrun;
using namespace validate_test;

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
         "cast: unknown dtype 'flaot32'; did you mean 'float32'?; dtypes are f32, f64, i32, i64, "
         "bool, f16, bf16, i8 and u8"},
        {OpKind::Cast, "dtype", S("c64"), "cast: unknown dtype 'c64'"},
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
    NodeId a = t.zeros({2, 3}, "f32", "p");
    NodeId b = t.zeros({4, 2}, "f32", "q");
    t.add(OpKind::Matmul, {a, b}, {}, "c");
    t.add(OpKind::Matmul, {a, b});
    CHECK_FALSE(t.run());
    REQUIRE(t.errors() == 2);
    CHECK(t.diag.all()[0].message ==
          "c: matmul: inner dimensions differ: p is f32[2,3], q is f32[4,2]");
    CHECK(t.diag.all()[1].message ==
          "matmul: inner dimensions differ: p is f32[2,3], q is f32[4,2]");
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
