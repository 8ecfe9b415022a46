// The host-side plans of the shape ops' kernels (family Layout), shared by the
// CPU (engine/kernels/cpu/layout.cpp) and the GPU (gpu/kernels/layout.cu).
// slice, split, expand and tile are one kind of copy: every output element is
// the input element at base + sum(i_k * stride_k), with stride 0 where an
// axis repeats (expand's broadcast axes, tile's copies). gather and pad have
// plans of their own.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/ir/layout.h"
#include "engine/kernels/common/kernel_common.h"

namespace graphrun::kernels {

// The output's axes, outermost first, with their input strides (in
// elements; negative for a backward slice, 0 for a repeat); size-1 axes
// dropped and neighbours merged where one stride serves both.
struct StridedCopy {
    int64_t base = 0;  // the input offset of the first output element
    std::vector<StridedDim> dims;
};
// slice, split, expand, tile; nullopt when the node's attributes do not fit
// the input shape (validation refuses those).
std::optional<StridedCopy> strided_copy_plan(const Node& n, const Shape& in);

// gather: x as [outer, axis_len, inner] and the indices' count.
struct GatherPlan {
    int64_t outer = 1, axis_len = 0, inner = 1, count = 0;
};
std::optional<GatherPlan> gather_plan(const Node& n, const Shape& x, const Shape& indices);
// Index `value`, entry `entry` of gather's indices, is outside [-axis_len, axis_len):
// the message both devices give.
std::string gather_index_error(int64_t value, int64_t entry, int64_t axis_len);

// pad: per input axis, its length, the pad before it (negative: cropped)
// and the output's length; the mode; the constant's bytes in the node's dtype.
struct PadPlan {
    PadMode mode = PadMode::Constant;
    Shape in, out;
    std::vector<int64_t> begin;
    uint64_t constant_bits = 0;  // the constant in the dtype, in the low bytes (little-endian)
};
std::optional<PadPlan> pad_plan(const Node& n, const Shape& in);

// slice and pad in their run-time form (the vectors as inputs from 1 on,
// engine/check/infer_shape.cpp): the plan from the fed values, or why they
// do not fit the input or give the node's `shape` (a message naming the
// values, the input's and the expected shape). `v` holds slice's inputs
// 1.. (starts, ends[, axes[, steps]]) read as int64.
// `want` is the node's output shape (its attribute `shape`).
std::string slice_plan_at_run(const Shape& in, const Shape& want, const std::vector<std::vector<int64_t>>& v,
                              StridedCopy& plan);
std::string pad_plan_at_run(PadMode mode, const Shape& in, const Shape& want, const std::vector<int64_t>& pads,
                            const std::optional<std::vector<int64_t>>& axes, uint64_t constant_bits, PadPlan& plan);
// A 1-D i32 or i64 index vector in host memory, as int64.
std::vector<int64_t> index_vector(const void* data, DType t, int64_t n);

}  // namespace graphrun::kernels
