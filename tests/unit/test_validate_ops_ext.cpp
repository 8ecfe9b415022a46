// Unit tests for validate() of the ops beyond SPEC section 3 (README "Ops
// beyond SPEC section 3"): result shapes and dtypes, and the messages for bad
// operands and attributes (the helpers are in validate_helpers.h).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/ir/ops.h"
#include "tests/unit/validate_helpers.h"

using namespace graphrun;
using namespace validate_test;

TEST_CASE("ops beyond SPEC: the table names them as ONNX does, in both formats") {
    for (const char* name : {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
                             "logical_and", "logical_or", "logical_xor", "logical_not", "where", "floor",
                             "ceil", "round", "erf", "reciprocal", "softplus", "sign", "clip", "leaky_relu",
                             "elu", "selu", "gelu", "reduce_min", "reduce_prod", "argmax", "argmin",
                             "log_softmax"}) {
        CAPTURE(name);
        auto k = find_op(name);
        REQUIRE(k.has_value());
        CHECK(std::string(op_name(*k)) == name);
        CHECK(op_info(*k).gpu);
    }
    CHECK(fixed_result_dtype(OpKind::Less) == DType::Bool);
    CHECK(fixed_result_dtype(OpKind::LogicalNot) == DType::Bool);
    CHECK(fixed_result_dtype(OpKind::Argmin) == DType::I64);
    CHECK_FALSE(fixed_result_dtype(OpKind::Where).has_value());
    // The GPU runs a comparison of any numbers: its node is always bool.
    CHECK(gpu_runs(OpKind::Equal, DType::Bool));
    CHECK_FALSE(gpu_runs(OpKind::Equal, DType::F32));
    CHECK(gpu_runs(OpKind::Where, DType::Bool));
    CHECK(gpu_runs(OpKind::Argmax, DType::I64));
    CHECK_FALSE(gpu_runs(OpKind::Clip, DType::Bool));
}

TEST_CASE("comparisons: broadcasting like add, bool results") {
    CHECK(infer(OpKind::Equal, {{2, 3}, {2, 3}}) == "bool[2,3]");
    CHECK(infer(OpKind::Less, {{2, 1}, {1, 3}}) == "bool[2,3]");
    CHECK(infer(OpKind::GreaterEqual, {{}, {4}}, {}, "i64") == "bool[4]");
    CHECK(infer(OpKind::NotEqual, {{0, 3}, {3}}, {}, "f64") == "bool[0,3]");
    CHECK(error_of(OpKind::Greater, {{2, 3}, {4}}) ==
          "greater: shapes f32[2,3] and f32[4] do not broadcast: dimension 3 vs 4");
    CHECK(infer(OpKind::Equal, {{2, 1}, {3}}, {}, "bool") == "bool[2,3]");  // as ONNX Equal
    CHECK(infer(OpKind::NotEqual, {{2}, {2}}, {}, "bool") == "bool[2]");
    // bool operands are not ordered numbers (ONNX's Less takes none either).
    CHECK(error_of(OpKind::Less, {{2}, {2}}, {}, "bool") ==
          "several errors: less: p is bool[2], but less takes f32, f64, i32 or i64; use cast(p, dtype=f32)\n"
          "less: q is bool[2], but less takes f32, f64, i32 or i64; use cast(q, dtype=f32)\n");

    TestGraph t;
    NodeId a = t.zeros({3}, "f32", "a");
    NodeId d = t.zeros({3}, "f64", "d");
    NodeId i = t.zeros({3}, "i32", "i");
    NodeId lit = t.lit(F(0.5), true);
    NodeId ok = t.add(OpKind::LessEqual, {a, lit});  // the literal becomes f32
    NodeId ilit = t.lit(I(2), true);
    NodeId ok2 = t.add(OpKind::Equal, {ilit, i});
    t.add(OpKind::Equal, {a, d});
    NodeId frac = t.lit(F(2.5), true);
    t.add(OpKind::Less, {i, frac});
    CHECK_FALSE(t.run());
    CHECK(t.type(ok) == "bool[3]");
    CHECK(t.type(ok2) == "bool[3]");
    REQUIRE(t.errors() == 2);
    CHECK(t.diag.all()[0].message ==
          "equal: operands have different dtypes: a is f32[3], d is f64[3]; use cast(d, dtype=f32)");
    CHECK(t.has("the literal 2.5 cannot be i32 (i is i32[3])"));
}

TEST_CASE("logical ops take bool only") {
    CHECK(infer(OpKind::LogicalAnd, {{2, 1}, {3}}, {}, "bool") == "bool[2,3]");
    CHECK(infer(OpKind::LogicalXor, {{}, {}}, {}, "bool") == "bool[]");
    CHECK(infer(OpKind::LogicalNot, {{4, 0}}, {}, "bool") == "bool[4,0]");
    CHECK(error_of(OpKind::LogicalOr, {{2}, {2}}, {}, "i32") ==
          "several errors: logical_or: p is i32[2], but logical_or takes bool; use cast(p, dtype=bool)\n"
          "logical_or: q is i32[2], but logical_or takes bool; use cast(q, dtype=bool)\n");
    CHECK(error_of(OpKind::LogicalNot, {{2}}, {}, "f32") ==
          "logical_not: p is f32[2], but logical_not takes bool; use cast(p, dtype=bool)");
}

TEST_CASE("where: bool condition, three-way broadcasting, x and y of one dtype") {
    TestGraph t;
    NodeId c = t.zeros({3, 1}, "bool", "c");
    NodeId x = t.zeros({1, 4}, "i64", "x");
    NodeId y = t.zeros({4}, "i64", "y");
    NodeId w = t.add(OpKind::Where, {c, x, y});
    NodeId s = t.zeros({}, "bool", "s");
    NodeId two = t.lit(I(2), true);
    NodeId w2 = t.add(OpKind::Where, {s, y, two});  // the literal takes y's dtype
    NodeId b1 = t.zeros({2}, "bool", "b1");
    NodeId w3 = t.add(OpKind::Where, {c, b1, b1});
    REQUIRE(t.run());
    CHECK(t.type(w) == "i64[3,4]");
    CHECK(t.type(w2) == "i64[4]");
    CHECK(t.type(w3) == "bool[3,2]");

    TestGraph e;
    NodeId f = e.zeros({3}, "f32", "f");
    NodeId g = e.zeros({3}, "f64", "g");
    NodeId c2 = e.zeros({2}, "bool", "c2");
    e.add(OpKind::Where, {f, f, f});
    e.add(OpKind::Where, {c2, f, g});
    e.add(OpKind::Where, {c2, f, f});
    CHECK_FALSE(e.run());
    REQUIRE(e.errors() == 3);
    CHECK(e.diag.all()[0].message ==
          "where: f is f32[3], but where's condition must be bool; use not_equal(f, 0) or cast(f, dtype=bool)");
    CHECK(e.diag.all()[1].message ==
          "where: operands have different dtypes: f is f32[3], g is f64[3]; use cast(g, dtype=f32)");
    CHECK(e.diag.all()[2].message ==
          "where: shapes bool[2] and f32[3] do not broadcast: dimension 2 vs 3");
}

TEST_CASE("unary ops beyond SPEC: dtypes and attributes") {
    for (OpKind k : {OpKind::Floor, OpKind::Ceil, OpKind::Round, OpKind::Erf, OpKind::Reciprocal,
                     OpKind::Softplus, OpKind::LeakyRelu, OpKind::Elu, OpKind::Selu, OpKind::Gelu}) {
        CAPTURE(op_name(k));
        CHECK(infer(k, {{2, 3}}, {}, "f64") == "f64[2,3]");
        CHECK(error_of(k, {{2}}, {}, "i32") == std::string(op_name(k)) + ": p is i32[2], but " + op_name(k) +
                                                   " takes f32 or f64; use cast(p, dtype=f32)");
    }
    CHECK(infer(OpKind::Sign, {{5}}, {}, "i32") == "i32[5]");
    CHECK(infer(OpKind::Clip, {{5}}, {{"min", I(-3)}, {"max", I(7)}}, "i64") == "i64[5]");
    CHECK(infer(OpKind::Clip, {{5}}, {{"max", F(0.5)}}) == "f32[5]");
    CHECK(infer(OpKind::Clip, {{5}}) == "f32[5]");
    // min > max is allowed, as in ONNX (every element becomes max).
    CHECK(infer(OpKind::Clip, {{5}}, {{"min", I(3)}, {"max", I(1)}}) == "f32[5]");
    CHECK(error_of(OpKind::Clip, {{5}}, {}, "bool") ==
          "clip: p is bool[5], but clip takes f32, f64, i32 or i64; use cast(p, dtype=f32)");
    CHECK(error_of(OpKind::Clip, {{5}}, {{"min", F(0.5)}}, "i32").find(
              "clip: min=0.5 cannot be i32 (p is i32[5]): ") == 0);
    CHECK(error_of(OpKind::Clip, {{5}}, {{"max", B(true)}}) == "clip: max must be a number, got true");
    CHECK(error_of(OpKind::LeakyRelu, {{5}}, {{"alpha", F(1e300)}}).find("leaky_relu: alpha=1e+300 cannot be f32") == 0);
    CHECK(infer(OpKind::Selu, {{2}}, {{"alpha", F(1.5)}, {"gamma", F(2)}}) == "f32[2]");
    CHECK(infer(OpKind::Gelu, {{2}}, {{"approximate", S("tanh")}}) == "f32[2]");
    CHECK(infer(OpKind::Gelu, {{2}}, {{"approximate", W("none")}}) == "f32[2]");
    CHECK(error_of(OpKind::Gelu, {{2}}, {{"approximate", S("fast")}}) ==
          "gelu: approximate must be \"none\" or \"tanh\", got \"fast\"");
    CHECK(error_of(OpKind::Gelu, {{2}}, {{"approximate", I(1)}}) ==
          "gelu: approximate must be a word (a name or a string), got 1");
    CHECK(error_of(OpKind::Elu, {{2}}, {{"beta", F(1)}}) == "elu: unknown attribute 'beta'; elu takes alpha");
}

TEST_CASE("reduce_min and reduce_prod: like reduce_max and reduce_sum") {
    CHECK(infer(OpKind::ReduceMin, {{2, 3, 4}}, {{"axes", Ints({1})}}) == "f32[2,4]");
    CHECK(infer(OpKind::ReduceProd, {{2, 3, 4}}, {{"axes", Ints({0, -1})}, {"keepdims", B(true)}}, "i32") ==
          "i32[1,3,1]");
    CHECK(infer(OpKind::ReduceProd, {{0, 3}}, {{"axes", Ints({0})}}) == "f32[3]");  // the empty product
    CHECK(error_of(OpKind::ReduceMin, {{0, 3}}, {{"axes", Ints({0})}}) ==
          "reduce_min: p is f32[0,3]: axis 0 is empty, and reduce_min of an empty dimension has no identity");
    CHECK(error_of(OpKind::ReduceProd, {{2, 3}}, {{"axes", Ints({2})}}) ==
          "reduce_prod: axes [2]: axis 2 is out of range for rank 2 (p is f32[2,3])");
    CHECK(error_of(OpKind::ReduceMin, {{2}}, {}, "bool") ==
          "reduce_min: p is bool[2], but reduce_min takes f32, f64, i32 or i64; use cast(p, dtype=f32)");
}

TEST_CASE("argmax and argmin: one axis, i64 results, ONNX defaults") {
    CHECK(infer(OpKind::Argmax, {{2, 3, 4}}) == "i64[1,3,4]");  // axis 0, keepdims
    CHECK(infer(OpKind::Argmin, {{2, 3, 4}}, {{"axis", I(-1)}, {"keepdims", B(false)}}) == "i64[2,3]");
    CHECK(infer(OpKind::Argmax, {{5}}, {{"keepdims", B(false)}}, "i32") == "i64[]");
    CHECK(infer(OpKind::Argmax, {{2, 3}}, {{"axis", I(1)}, {"select_last_index", B(true)}}) == "i64[2,1]");
    CHECK(error_of(OpKind::Argmax, {{2, 3}}, {{"axis", I(2)}}) ==
          "argmax: axis 2 is out of range for rank 2 (p is f32[2,3])");
    CHECK(error_of(OpKind::Argmin, {{}}) == "argmin: p is f32[], a scalar; argmin needs at least 1 dimension");
    CHECK(error_of(OpKind::Argmax, {{3, 0}}, {{"axis", I(1)}}) ==
          "argmax: p is f32[3,0]: axis 1 is empty, and argmax of an empty axis has no index");
    CHECK(error_of(OpKind::Argmax, {{3}}, {}, "bool") ==
          "argmax: p is bool[3], but argmax takes f32, f64, i32 or i64; use cast(p, dtype=f32)");
    CHECK(error_of(OpKind::Argmax, {{3}}, {{"axes", Ints({0})}}) ==
          "argmax: unknown attribute 'axes'; did you mean 'axis'?");
}

TEST_CASE("log_softmax: like softmax") {
    CHECK(infer(OpKind::LogSoftmax, {{2, 3}}) == "f32[2,3]");
    CHECK(infer(OpKind::LogSoftmax, {{2, 3}}, {{"axis", I(0)}}, "f64") == "f64[2,3]");
    CHECK(error_of(OpKind::LogSoftmax, {{2, 3}}, {{"axis", I(-3)}}) ==
          "log_softmax: axis -3 is out of range for rank 2 (p is f32[2,3])");
    CHECK(error_of(OpKind::LogSoftmax, {{}}) ==
          "log_softmax: p is f32[], a scalar; log_softmax needs at least 1 dimension");
    CHECK(error_of(OpKind::LogSoftmax, {{2}}, {}, "i32") ==
          "log_softmax: p is i32[2], but log_softmax takes f32 or f64; use cast(p, dtype=f32)");
}
