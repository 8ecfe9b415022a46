// Unit tests for validate(), continued: elementwise, matmul, shape ops, reductions,
// softmax, cascades, loop-carried values (the helpers are in validate_helpers.h).
#include <doctest/doctest.h>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tests/unit/validate_helpers.h"

using namespace graphrun;
using namespace validate_test;

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
    NodeId a = t.zeros({2}, "f32", "p");
    NodeId b = t.zeros({2}, "f64", "q");
    NodeId i = t.zeros({2}, "i32", "k");
    NodeId q = t.zeros({2}, "bool", "flag");
    t.add(OpKind::Add, {a, b});
    t.add(OpKind::Sub, {i, b});
    t.add(OpKind::Mul, {a, q});
    CHECK_FALSE(t.run());
    REQUIRE(t.errors() == 3);
    const auto& d = t.diag.all();
    CHECK(d[0].message ==
          "add: operands have different dtypes: p is f32[2], q is f64[2]; use cast(q, dtype=f32)");
    CHECK(d[0].loc.line == 5);
    CHECK(d[1].message ==
          "sub: operands have different dtypes: k is i32[2], q is f64[2]; use cast(k, dtype=f64)");
    CHECK(d[2].message ==
          "mul: flag is bool[2], but mul takes f32, f64, i32 or i64; use cast(flag, dtype=f32)");
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
    NodeId i = t.zeros({3}, "i32", "k");
    NodeId half = t.lit(F(2.5), true);
    t.add(OpKind::Mul, {i, half});
    NodeId huge = t.lit(I(5000000000), true);
    t.add(OpKind::Add, {huge, i});
    NodeId q = t.zeros({3}, "bool", "flag");
    NodeId one = t.lit(I(1), true);
    t.add(OpKind::Add, {q, one});
    NodeId nonweak = t.lit(I(2));  // not weak: stays f32 and clashes
    t.add(OpKind::Add, {i, nonweak});
    CHECK_FALSE(t.run());
    REQUIRE(t.errors() == 4);
    const auto& d = t.diag.all();
    CHECK(d[0].message == "mul: the literal 2.5 cannot be i32 (k is i32[3]): it is not an integer");
    CHECK((d[0].loc.line == 3 && d[0].loc.col == 11));
    CHECK(d[1].message.find(
              "add: the literal 5000000000 cannot be i32 (k is i32[3]): it is out of range") == 0);
    CHECK((d[1].loc.line == 5 && d[1].loc.col == 10));
    CHECK(d[2].message ==
          "add: flag is bool[3], but add takes f32, f64, i32 or i64; use cast(flag, dtype=f32)");
    CHECK(d[3].message ==
          "add: operands have different dtypes: k is i32[3], the literal 2 is f32[]; use cast(k, dtype=f32)");
}

TEST_CASE("validate unary dtype classes") {
    CHECK(infer(OpKind::Relu, {{2, 3}}, {}, "i32") == "i32[2,3]");
    CHECK(infer(OpKind::Abs, {{0}}, {}, "i64") == "i64[0]");
    CHECK(infer(OpKind::Exp, {{2}}, {}, "f64") == "f64[2]");
    CHECK(infer(OpKind::Sigmoid, {{}}) == "f32[]");
    CHECK(error_of(OpKind::Exp, {{3}}, {}, "i32") ==
          "exp: p is i32[3], but exp takes f32 or f64; use cast(p, dtype=f32)");
    CHECK(error_of(OpKind::Log, {{3}}, {}, "i64") ==
          "log: p is i64[3], but log takes f32 or f64; use cast(p, dtype=f64)");
    CHECK(error_of(OpKind::Neg, {{3}}, {}, "bool") ==
          "neg: p is bool[3], but neg takes f32, f64, i32 or i64; use cast(p, dtype=f32)");
    CHECK(error_of(OpKind::Sqrt, {{3}}, {}, "bool") ==
          "sqrt: p is bool[3], but sqrt takes f32 or f64; use cast(p, dtype=f32)");
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
          "matmul: inner dimensions differ: p is f32[2,3], q is f32[4,2]");
    CHECK(error_of(OpKind::Matmul, {{3}, {4}}) ==
          "matmul: inner dimensions differ: p is f32[3], q is f32[4]");
    CHECK(error_of(OpKind::Matmul, {{2, 3}, {2, 3}}, {{"transpose_b", B(false)}}) ==
          "matmul: inner dimensions differ: p is f32[2,3], q is f32[2,3]");
    CHECK(error_of(OpKind::Matmul, {{2, 3}, {3, 4}}, {{"transpose_b", B(true)}}) ==
          "matmul: inner dimensions differ: p is f32[2,3], q is f32[3,4] (transpose_b=true)");
    CHECK(error_of(OpKind::Matmul, {{2, 2, 3}, {5, 3, 4}}) ==
          "matmul: batch dimensions do not broadcast: p is f32[2,2,3], q is f32[5,3,4]: dimension "
          "2 vs 5");
    CHECK(error_of(OpKind::Matmul, {{}, {3}}) ==
          "matmul: p is f32[], a scalar; matmul needs operands with at least 1 dimension");
    CHECK(error_of(OpKind::Matmul, {{3}, {3}}, {{"transpose_a", B(true)}}) ==
          "matmul: transpose_a=true needs p to have at least 2 dimensions, but p is f32[3]");
    CHECK(error_of(OpKind::Matmul, {{2, 2}, {2, 2}}, {}, "i32") ==
          "several errors: matmul: p is i32[2,2], but matmul takes f32 or f64; use cast(p, "
          "dtype=f32)\n"
          "matmul: q is i32[2,2], but matmul takes f32 or f64; use cast(q, dtype=f32)\n");

    TestGraph t;
    NodeId a = t.zeros({2, 2}, "f32", "p");
    NodeId b = t.zeros({2, 2}, "f64", "q");
    t.add(OpKind::Matmul, {a, b}, {{"transpose_a", B(true)}});
    CHECK_FALSE(t.run());
    CHECK(t.messages() ==
          "matmul: operands have different dtypes: p is f32[2,2], q is f64[2,2]; use cast(q, "
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
          "transpose: perm [0,1,2] has 3 entries, but p is f32[2,3] (rank 2)");
    CHECK(error_of(OpKind::Transpose, {{2, 3}}, {{"perm", Ints({0, -2})}}) ==
          "transpose: perm [0,-2] is not a permutation of 0..1: axis 0 appears twice (p is "
          "f32[2,3])");
    CHECK(error_of(OpKind::Transpose, {{2, 3}}, {{"perm", Ints({0, 2})}}) ==
          "transpose: perm [0,2]: entry 2 is out of range for rank 2 (p is f32[2,3])");
    CHECK(error_of(OpKind::Transpose, {{2, 3}}, {{"perm", Ints({-3, 0})}}) ==
          "transpose: perm [-3,0]: entry -3 is out of range for rank 2 (p is f32[2,3])");
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
          "concat: q is f32[2,4], but p is f32[2,3]: dimension 1 differs (4 vs 3); only axis 0 "
          "may differ");
    CHECK(error_of(OpKind::Concat, {{2, 3}, {3}}) ==
          "concat: q is f32[3], but p is f32[2,3]: ranks differ (1 vs 2)");
    CHECK(error_of(OpKind::Concat, {{}, {}}) ==
          "several errors: concat: p is f32[], a scalar; concat needs inputs with at least 1 "
          "dimension\n"
          "concat: q is f32[], a scalar; concat needs inputs with at least 1 dimension\n");
    CHECK(error_of(OpKind::Concat, {{2, 3}, {2, 3}}, {{"axis", I(2)}}) ==
          "concat: axis 2 is out of range for rank 2 (p is f32[2,3])");
    CHECK(error_of(OpKind::Concat, {{2, 3}, {2, 3}}, {{"axis", I(-3)}}) ==
          "concat: axis -3 is out of range for rank 2 (p is f32[2,3])");

    TestGraph t;
    NodeId a = t.zeros({2}, "f32", "p");
    NodeId b = t.zeros({2}, "i32", "q");
    t.add(OpKind::Concat, {a, a, b});
    CHECK_FALSE(t.run());
    CHECK(t.messages() ==
          "concat: q is i32[2], but p is f32[2]; all inputs need the same dtype: use cast(q, "
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
          "reduce_sum: axes [2]: axis 2 is out of range for rank 2 (p is f32[2,3])");
    CHECK(error_of(OpKind::ReduceSum, {{2, 3}}, {{"axes", Ints({1, -1})}}) ==
          "reduce_sum: axes [1,-1] names axis 1 twice");
    CHECK(error_of(OpKind::ReduceMax, {{0, 3}}, {{"axes", Ints({0})}}) ==
          "reduce_max: p is f32[0,3]: axis 0 is empty, and reduce_max of an empty dimension has no "
          "identity");
    CHECK(error_of(OpKind::ReduceMax, {{3, 0}})
              .find("reduce_max of an empty dimension has no identity") != std::string::npos);
    CHECK(error_of(OpKind::ReduceMean, {{2}}, {}, "i32") ==
          "reduce_mean: p is i32[2], but reduce_mean takes f32 or f64; use cast(p, dtype=f32)");
    CHECK(error_of(OpKind::ReduceSum, {{2}}, {}, "bool") ==
          "reduce_sum: p is bool[2], but reduce_sum takes f32, f64, i32 or i64; use cast(p, "
          "dtype=f32)");
}

TEST_CASE("validate softmax") {
    CHECK(infer(OpKind::Softmax, {{2, 3}}) == "f32[2,3]");
    CHECK(infer(OpKind::Softmax, {{2, 3}}, {{"axis", I(0)}}, "f64") == "f64[2,3]");
    CHECK(infer(OpKind::Softmax, {{2, 3}}, {{"axis", I(-2)}}) == "f32[2,3]");
    CHECK(error_of(OpKind::Softmax, {{}}) ==
          "softmax: p is f32[], a scalar; softmax needs at least 1 dimension");
    CHECK(error_of(OpKind::Softmax, {{2, 3}}, {{"axis", I(2)}}) ==
          "softmax: axis 2 is out of range for rank 2 (p is f32[2,3])");
    CHECK(error_of(OpKind::Softmax, {{2}}, {}, "i64") ==
          "softmax: p is i64[2], but softmax takes f32 or f64; use cast(p, dtype=f64)");
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

TEST_CASE("validate f32 literals out of range are errors, as i32 ones are") {
    TestGraph t;
    NodeId big = t.lit(F(1e39));  // f32 by default
    NodeId list = t.lit(L({F(1), F(-1e39)}));
    NodeId fits = t.lit(F(3.4028234e38));
    NodeId f64 = t.add(OpKind::Const, {}, {{"value", F(1e39)}, {"dtype", W("f64")}});
    (void)big, (void)list, (void)fits, (void)f64;
    CHECK_FALSE(t.run());
    REQUIRE(t.errors() == 2);
    const auto& d = t.diag.all();
    CHECK(d[0].message == "const: 1e+39 cannot be f32: it is out of range (-3.4028235e38 to 3.4028235e38)");
    CHECK((d[0].loc.line == 1 && d[0].loc.col == 40));
    CHECK(d[1].message == "const: -1e+39 cannot be f32: it is out of range (-3.4028235e38 to 3.4028235e38)");

    // A weak literal takes the other operand's dtype first: f64 holds 1e39, f32 does not.
    TestGraph w;
    NodeId x64 = w.zeros({2}, "f64", "d");
    NodeId m = w.add(OpKind::Mul, {x64, w.lit(F(1e39), true)});
    NodeId x32 = w.zeros({2}, "f32", "x");
    w.add(OpKind::Mul, {x32, w.lit(F(1e39), true)});
    w.add(OpKind::Mul, {w.lit(F(-1e39), true), w.lit(I(2), true)});
    CHECK_FALSE(w.run());
    CHECK(w.type(m) == "f64[2]");
    CHECK(w.messages() ==
          "mul: the literal 1e+39 cannot be f32 (x is f32[2]): it is out of range (-3.4028235e38 to "
          "3.4028235e38)\n"
          "mul: the literal -1e+39 cannot be f32: it is out of range (-3.4028235e38 to 3.4028235e38)\n");
}

TEST_CASE("validate messages name operands as the user wrote them") {
    TestGraph t;
    NodeId p = t.zeros({2}, "i32", "p");
    NodeId q = t.zeros({2}, "f32", "q");
    t.add(OpKind::Add, {p, q}, {}, "r");
    NodeId lit = t.lit(L({F(1.5), F(2)}));  // a list written in place
    t.add(OpKind::Sub, {p, lit});
    NodeId relu = t.add(OpKind::Relu, {q});  // a generated name, as `check` lists it
    t.add(OpKind::Matmul, {relu, t.zeros({3}, "f32", "w")});
    CHECK_FALSE(t.run());
    CHECK(t.messages() ==
          "r: add: operands have different dtypes: p is i32[2], q is f32[2]; use cast(p, dtype=f32)\n"
          "sub: operands have different dtypes: p is i32[2], the literal [1.5, 2] is f32[2]; use cast(p, "
          "dtype=f32)\n"
          "matmul: inner dimensions differ: relu_5 is f32[2], w is f32[3]\n");
}
