// The shape arithmetic of the shape ops (slice, split, expand, tile, pad,
// squeeze, unsqueeze, flatten, gather), with ONNX's semantics: one source for
// validation (engine/check/infer_shape.cpp, which words the errors) and the
// kernels' plans (engine/kernels/common/layout_plan.h).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/dtype.h"

namespace graphrun {

// Why an op's attributes do not fit its input: the attribute to point at and
// the message (without the node's name).
struct LayoutError {
    const char* attr = nullptr;
    std::string message;
};

// One output axis of a slice: the input index of its first element, the step
// between elements (negative: backwards) and their count.
struct AxisSlice {
    int64_t start = 0, step = 1, count = 0;
};

// ONNX Slice: starts/ends/steps per entry of axes (default 0..n-1; negative
// counts from the end), start and end counted from the end when negative and
// clamped to the axis ([0, d] for steps > 0, [-1, d-1] for steps < 0).
// Axes not named are kept whole. steps default to 1; 0 is an error.
bool slice_axes(const Shape& in, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                const std::optional<std::vector<int64_t>>& axes, const std::optional<std::vector<int64_t>>& steps,
                std::vector<AxisSlice>& out, LayoutError& err);

// split: part `index` of the input cut along `axis`, by sizes (summing to the
// axis's length) or into `parts` equal parts (the length must divide).
bool split_axes(const Shape& in, int64_t axis, const std::optional<std::vector<int64_t>>& sizes,
                std::optional<int64_t> parts, int64_t index, std::vector<AxisSlice>& out, LayoutError& err);

// ONNX Expand: the input and `target` broadcast together (NumPy's rules).
bool expand_shape(const Shape& in, const std::vector<int64_t>& target, Shape& out, LayoutError& err);

// tile: repeats, one per axis (non-negative).
bool tile_shape(const Shape& in, const std::vector<int64_t>& repeats, Shape& out, LayoutError& err);

// pad: `pads` is ONNX's [b_1, ..., b_n, e_1, ..., e_n] for the axes (default:
// all); each axis grows by b (before) and e (after), negative entries crop.
// begin gets b per input axis (0 for axes not named), out the result shape.
enum class PadMode : uint8_t { Constant, Reflect, Edge };
std::optional<PadMode> pad_mode(const std::string& name);
bool pad_shape(const Shape& in, const std::vector<int64_t>& pads, const std::optional<std::vector<int64_t>>& axes,
               PadMode mode, std::vector<int64_t>& begin, Shape& out, LayoutError& err);
// The input index an output index i of a padded axis reads (in = the input's
// length, b = the pad before): -1 for the constant.
inline int64_t pad_source(int64_t i, int64_t b, int64_t in, PadMode mode) {
    int64_t j = i - b;
    if (j >= 0 && j < in) return j;
    if (mode == PadMode::Constant) return -1;
    if (mode == PadMode::Edge || in == 1) return j < 0 ? 0 : in - 1;
    const int64_t period = 2 * (in - 1);  // reflect, as numpy.pad: again and again for wide pads
    j %= period;
    if (j < 0) j += period;
    return j < in ? j : period - j;
}

// squeeze (axes: default every axis of length 1), unsqueeze (axes index the
// output), flatten (to 2-D at axis, 0..rank).
bool squeeze_shape(const Shape& in, const std::optional<std::vector<int64_t>>& axes, Shape& out, LayoutError& err);
bool unsqueeze_shape(const Shape& in, const std::vector<int64_t>& axes, Shape& out, LayoutError& err);
bool flatten_shape(const Shape& in, int64_t axis, Shape& out, LayoutError& err);

// gather: x's axis replaced by the indices' shape.
bool gather_shape(const Shape& x, const Shape& indices, int64_t axis, Shape& out, LayoutError& err);

}  // namespace graphrun
