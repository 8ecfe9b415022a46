// Unit tests for validate() of the norm ops (layer_norm, batch_norm, gemm):
// result types, the broadcasting their parameters may use, and the messages
// for bad operands and attributes (validate_helpers.h).
#include <doctest/doctest.h>

#include <string>

#include "engine/ir/ops.h"
#include "tests/unit/validate_helpers.h"

using namespace graphrun;
using namespace validate_test;

TEST_CASE("norm ops: in the table, float only, on the GPU") {
    for (const char* name : {"layer_norm", "batch_norm", "gemm"}) {
        CAPTURE(name);
        auto k = find_op(name);
        REQUIRE(k.has_value());
        CHECK(op_info(*k).gpu);
        CHECK(gpu_runs(*k, DType::F64));
        CHECK_FALSE(gpu_runs(*k, DType::I32));
    }
    CHECK(op_info(OpKind::Gemm).family == OpFamily::Matmul);
    CHECK(op_info(OpKind::LayerNorm).family == OpFamily::Norm);
}

TEST_CASE("layer_norm: x's type; scale and bias broadcast to the dimensions from axis") {
    CHECK(infer(OpKind::LayerNorm, {{2, 3, 4}, {4}}) == "f32[2,3,4]");
    CHECK(infer(OpKind::LayerNorm, {{2, 3, 4}, {3, 4}, {4}}, {{"axis", I(1)}}, "f64") == "f64[2,3,4]");
    CHECK(infer(OpKind::LayerNorm, {{2, 3, 4}, {1, 4}, {3, 1}}, {{"axis", I(-2)}}) == "f32[2,3,4]");
    CHECK(infer(OpKind::LayerNorm, {{2, 3, 4}, {}, {1, 1, 1}}, {{"axis", I(0)}}) == "f32[2,3,4]");
    CHECK(error_of(OpKind::LayerNorm, {{2, 3, 4}, {3, 4}}) ==
          "layer_norm: q is f32[3,4], but layer_norm's scale must broadcast to the normalized "
          "shape [4] (the dimensions of p from axis 2; p is f32[2,3,4])");
    CHECK(error_of(OpKind::LayerNorm, {{2, 3}, {3}}, {{"axis", I(-3)}}) ==
          "layer_norm: axis -3 is out of range for rank 2 (p is f32[2,3])");
    CHECK(error_of(OpKind::LayerNorm, {{2, 3}, {3}}, {{"epsilon", F(NAN)}}) ==
          "layer_norm: epsilon must be a finite number >= 0, got nan");
    CHECK(error_of(OpKind::LayerNorm, {{2, 3}, {3}}, {}, "i32") ==
          "layer_norm: p is i32[2,3], but layer_norm takes f32 or f64; use cast(p, dtype=f32)");
}

TEST_CASE("batch_norm: one parameter per channel, axis 1") {
    CHECK(infer(OpKind::BatchNorm, {{2, 3, 4, 5}, {3}, {3}, {3}, {3}}) == "f32[2,3,4,5]");
    CHECK(infer(OpKind::BatchNorm, {{7}, {1}, {1}, {1}, {1}}) == "f32[7]");  // one channel
    CHECK(error_of(OpKind::BatchNorm, {{2, 3}, {3}, {3}, {1, 3}, {3}}) ==
          "batch_norm: s is f32[1,3], but batch_norm's mean must be f32[3]: one value per "
          "channel (p is f32[2,3], channels on axis 1)");
}

TEST_CASE("gemm: matrices, transposes, c broadcast to the result") {
    CHECK(infer(OpKind::Gemm, {{2, 3}, {3, 4}}) == "f32[2,4]");
    CHECK(infer(OpKind::Gemm, {{3, 2}, {4, 3}, {4}},
                {{"transpose_a", B(true)}, {"transpose_b", B(true)}, {"alpha", F(0.5)}}) == "f32[2,4]");
    CHECK(infer(OpKind::Gemm, {{2, 3}, {3, 4}, {2, 1}}, {{"beta", F(0)}}) == "f32[2,4]");
    CHECK(infer(OpKind::Gemm, {{2, 3}, {3, 4}, {}}) == "f32[2,4]");
    CHECK(error_of(OpKind::Gemm, {{2, 3}, {4, 3}}) ==
          "gemm: inner dimensions differ: p is f32[2,3], q is f32[4,3]: 3 vs 4");
    CHECK(error_of(OpKind::Gemm, {{2, 3}, {3, 4}, {3, 4}}) ==
          "gemm: r is f32[3,4], but gemm's c must broadcast to the result's shape [2,4]");
    CHECK(error_of(OpKind::Gemm, {{2, 3, 1}, {3, 4}}) ==
          "gemm: p is f32[2,3,1], but gemm's a must be a matrix (2 dimensions); use matmul for other "
          "ranks");
}
