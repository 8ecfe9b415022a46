// Unit tests for validate() of the shape ops (slice gather expand split pad
// tile squeeze unsqueeze flatten): ONNX's result shapes, and the messages for
// attributes that do not fit the input (helpers: validate_helpers.h).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/ir/layout.h"
#include "engine/ir/ops.h"
#include "tests/unit/validate_helpers.h"

using namespace graphrun;
using namespace validate_test;

namespace {
constexpr int64_t kBig = INT64_MAX;
constexpr int64_t kSmall = INT64_MIN;
}  // namespace

TEST_CASE("slice: ONNX's clamping, negative indices and steps") {
    CHECK(infer(OpKind::Slice, {{4, 5}}, {{"starts", Ints({1})}, {"ends", Ints({3})}}) == "f32[2,5]");
    CHECK(infer(OpKind::Slice, {{4, 5}}, {{"starts", Ints({0, -2})}, {"ends", Ints({kBig, kBig})}}) == "f32[4,2]");
    CHECK(infer(OpKind::Slice, {{4, 5}},
                {{"starts", Ints({-1})}, {"ends", Ints({kSmall})}, {"axes", Ints({1})}, {"steps", Ints({-2})}}) ==
          "f32[4,3]");
    CHECK(infer(OpKind::Slice, {{4, 5}}, {{"starts", Ints({3})}, {"ends", Ints({1})}}, "bool") == "bool[0,5]");
    CHECK(infer(OpKind::Slice, {{7}}, {{"starts", Ints({kBig})}, {"ends", Ints({kSmall})}, {"steps", Ints({kSmall})}}) ==
          "f32[1]");
    CHECK(infer(OpKind::Slice, {{0, 3}}, {{"starts", Ints({0})}, {"ends", Ints({5})}, {"steps", Ints({-1})}}) ==
          "f32[0,3]");
    CHECK(error_of(OpKind::Slice, {{4, 5}}, {{"starts", Ints({0})}, {"ends", Ints({1})}, {"axes", Ints({2})}}) ==
          "slice: axes [2]: axis 2 is out of range for rank 2 (the input is [4,5]) (p is f32[4,5])");
    CHECK(error_of(OpKind::Slice, {{4, 5}}, {{"starts", Ints({0, 0})}, {"ends", Ints({1, 1})}, {"axes", Ints({1, -1})}}) ==
          "slice: axes [1,-1]: axis 1 appears twice (p is f32[4,5])");
    CHECK(error_of(OpKind::Slice, {{4}}, {{"starts", Ints({0})}, {"ends", Ints({1})}, {"steps", Ints({0})}}) ==
          "slice: steps [0]: a step of 0 is not allowed (p is f32[4])");
}

TEST_CASE("slice plans: the first element and the count per axis") {
    std::vector<AxisSlice> a;
    LayoutError err;
    REQUIRE(slice_axes({10}, {-3}, {-100}, std::nullopt, std::vector<int64_t>{-3}, a, err));
    CHECK(a[0].start == 7);
    CHECK(a[0].count == 3);  // 7, 4, 1
    REQUIRE(slice_axes({10}, {2}, {9}, std::nullopt, std::vector<int64_t>{3}, a, err));
    CHECK(a[0].start == 2);
    CHECK(a[0].count == 3);  // 2, 5, 8
    CHECK(a[0].step == 3);
}

TEST_CASE("gather: i32 or i64 indices, the axis replaced by the indices' shape") {
    TestGraph t;
    NodeId x = t.zeros({4, 5, 6}, "f64", "x");
    NodeId i = t.zeros({2, 3}, "i32", "i");
    NodeId l = t.zeros({}, "i64", "l");
    NodeId f = t.zeros({2}, "f32", "f");
    NodeId g1 = t.add(OpKind::Gather, {x, i}, {{"axis", I(1)}});
    NodeId g2 = t.add(OpKind::Gather, {x, l}, {{"axis", I(-1)}});
    t.add(OpKind::Gather, {x, f});
    t.add(OpKind::Gather, {x, i}, {{"axis", I(3)}});
    CHECK_FALSE(t.run());
    CHECK(t.type(g1) == "f64[4,2,3,6]");
    CHECK(t.type(g2) == "f64[4,5]");
    const std::string m = t.messages();
    CHECK(m.find("f is f32[2], but gather's indices must be i32 or i64; use cast(f, dtype=i64)") != std::string::npos);
    CHECK(m.find("axis 3 is out of range for rank 3 [4,5,6] (x is f64[4,5,6])") != std::string::npos);
}

TEST_CASE("expand and tile") {
    CHECK(infer(OpKind::Expand, {{3, 1}}, {{"shape", Ints({2, 1, 4})}}) == "f32[2,3,4]");
    CHECK(infer(OpKind::Expand, {{1}}, {{"shape", Ints({0})}}, "i32") == "i32[0]");
    CHECK(error_of(OpKind::Expand, {{3}}, {{"shape", Ints({4})}}) ==
          "expand: cannot expand [3] to [4]: dimension 3 vs 4 (a dimension broadcasts only from 1) (p is f32[3])");
    CHECK(infer(OpKind::Tile, {{2, 3}}, {{"repeats", Ints({2, 0})}}) == "f32[4,0]");
    CHECK(error_of(OpKind::Tile, {{2, 3}}, {{"repeats", Ints({2, -1})}}) ==
          "tile: repeats [2,-1] has a negative entry -1 (p is f32[2,3])");
}

TEST_CASE("pad: ONNX's pads layout, crops, modes and the constant") {
    CHECK(infer(OpKind::Pad, {{4, 5}}, {{"pads", Ints({1, 2, 3, 4})}}) == "f32[8,11]");
    CHECK(infer(OpKind::Pad, {{4, 5}}, {{"pads", Ints({-1, 0, 0, -2})}, {"mode", S("reflect")}}) == "f32[3,3]");
    CHECK(infer(OpKind::Pad, {{4, 5}}, {{"pads", Ints({2, 2})}, {"axes", Ints({-1})}}) == "f32[4,9]");
    CHECK(error_of(OpKind::Pad, {{0, 5}}, {{"pads", Ints({1, 0, 0, 0})}, {"mode", S("edge")}}) ==
          "pad: edge padding of axis 0 of [0,5], which is empty: there is no element to repeat (p is f32[0,5])");
    CHECK(error_of(OpKind::Pad, {{4}}, {{"pads", Ints({-3, -2})}}) ==
          "pad: pads [-3,-2] crop more than axis 0 of [4] holds (4) (p is f32[4])");
    CHECK(error_of(OpKind::Pad, {{4}}, {{"pads", Ints({1, 1})}, {"constant_value", F(2.5)}}, "i64") ==
          "pad: constant_value=2.5 cannot be i64 (p is i64[4]): it is not an integer");
    CHECK(pad_source(-1, 0, 3, PadMode::Reflect) == 1);
    CHECK(pad_source(5, 0, 3, PadMode::Reflect) == 1);  // numpy.pad: reflections repeat
    CHECK(pad_source(-2, 0, 3, PadMode::Edge) == 0);
    CHECK(pad_source(3, 0, 3, PadMode::Constant) == -1);
}

TEST_CASE("split: by sizes or equal parts, one part per node") {
    CHECK(infer(OpKind::Split, {{6, 5}}, {{"axis", I(1)}, {"sizes", Ints({2, 3})}, {"index", I(1)}}) == "f32[6,3]");
    CHECK(infer(OpKind::Split, {{6, 5}}, {{"parts", I(3)}, {"index", I(2)}}) == "f32[2,5]");
    CHECK(error_of(OpKind::Split, {{6}}, {{"parts", I(4)}, {"index", I(0)}}) ==
          "split: axis 0 of [6] (6) does not split into 4 equal parts; give sizes=[...] instead (p is f32[6])");
    CHECK(error_of(OpKind::Split, {{6}}, {{"parts", I(2)}, {"index", I(2)}}) ==
          "split: index 2 is out of range for 2 parts (0..1) (p is f32[6])");
    CHECK(error_of(OpKind::Split, {{6}}, {{"index", I(0)}}) == "split: split needs sizes=[...] or parts=N (p is f32[6])");
}

TEST_CASE("squeeze, unsqueeze, flatten: reshapes (alias ops)") {
    for (OpKind k : {OpKind::Squeeze, OpKind::Unsqueeze, OpKind::Flatten}) CHECK(is_alias_op(k));
    CHECK(infer(OpKind::Squeeze, {{1, 3, 1}}) == "f32[3]");
    CHECK(infer(OpKind::Squeeze, {{1, 3, 1}}, {{"axes", Ints({-1})}}) == "f32[1,3]");
    CHECK(error_of(OpKind::Squeeze, {{1, 3}}, {{"axes", Ints({1})}}) ==
          "squeeze: axes [1]: axis 1 of [1,3] has length 3, not 1 (p is f32[1,3])");
    CHECK(infer(OpKind::Unsqueeze, {{3, 4}}, {{"axes", Ints({0, -1})}}) == "f32[1,3,4,1]");
    CHECK(infer(OpKind::Unsqueeze, {{}}, {{"axes", I(0)}}) == "f32[1]");
    CHECK(infer(OpKind::Flatten, {{2, 3, 4}}) == "f32[2,12]");
    CHECK(infer(OpKind::Flatten, {{2, 3, 4}}, {{"axis", I(0)}}) == "f32[1,24]");
    CHECK(infer(OpKind::Flatten, {{2, 3, 4}}, {{"axis", I(-1)}}) == "f32[6,4]");
    CHECK(infer(OpKind::Flatten, {{2, 3, 4}}, {{"axis", I(3)}}) == "f32[24,1]");
}
