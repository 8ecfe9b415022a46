// The window geometry of the conv area's ops (conv, conv_transpose, max_pool,
// avg_pool, global_avg_pool, global_max_pool) with ONNX's semantics: the
// input's, kernel's and output's spatial extent, the strides, dilations and
// pads, with auto_pad, ceil_mode and output_shape resolved. One function that
// validation (the output shape and every error), the CPU kernels and the GPU
// kernels all call, so that they cannot disagree.
//
// A 1-D op (NCW) is described as a 2-D one (NCHW) of height 1: index 0 is the
// height, index 1 the width, and a 1-D op has in[0] = kernel[0] = out[0] = 1,
// stride and dilation 1 and no padding in height.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "engine/ir/dtype.h"
#include "engine/ir/graph.h"

namespace graphrun {

struct WindowGeometry {
    int spatial = 2;      // the op's spatial rank: 1 (NCW) or 2 (NCHW); global pools: any
    bool global = false;  // global_*_pool: in[1] is every spatial element, out all 1
    int64_t batch = 0;
    int64_t channels = 0;      // of the input
    int64_t out_channels = 0;  // of the output (pools: = channels)
    int64_t group = 1;
    int64_t in[2] = {1, 1}, kernel[2] = {1, 1}, out[2] = {1, 1};
    int64_t stride[2] = {1, 1}, dilation[2] = {1, 1}, pad_begin[2] = {0, 0}, pad_end[2] = {0, 0};
    bool ceil_mode = false;          // max_pool, avg_pool (already applied to `out`)
    bool count_include_pad = false;  // avg_pool

    int64_t in_plane() const { return in[0] * in[1]; }
    int64_t out_plane() const { return out[0] * out[1]; }
    int64_t kernel_plane() const { return kernel[0] * kernel[1]; }
    bool no_padding() const { return !pad_begin[0] && !pad_begin[1] && !pad_end[0] && !pad_end[1]; }
};

// What is wrong with a conv-area node, for validation to report: `attr` the
// attribute the message is about (nullptr: the input `input` instead).
struct WindowProblem {
    const char* attr = nullptr;
    int input = 0;
    std::string message;
};

// The geometry of node n (one of the conv area's ops) for input shape x and,
// for conv and conv_transpose, weight shape *w. nullopt with *problem set
// when the shapes or attributes do not make a valid window (a validated node
// never gets nullopt).
std::optional<WindowGeometry> window_geometry(const Node& n, const Shape& x, const Shape* w,
                                              WindowProblem* problem);

// The output shape of a geometry: N, C_out, then out[] (one or two entries).
Shape window_output_shape(const WindowGeometry& g);

inline bool is_conv_area_op(OpKind k) {
    return k >= OpKind::Conv && k <= OpKind::GlobalMaxPool;
}

}  // namespace graphrun
