// The shape ops' kernel plans (layout_plan.h).
#include "engine/kernels/common/layout_plan.h"

#include <cstring>

namespace graphrun::kernels {

namespace {

// Drops size-1 axes and merges an axis into the one outside it where the
// outer stride is the inner's times its size (contiguous runs, or repeats
// of repeats).
std::vector<StridedDim> simplify(const std::vector<StridedDim>& dims) {
    std::vector<StridedDim> out;
    for (const StridedDim& d : dims) {
        if (d.size == 1) continue;
        out.push_back(d);
    }
    std::vector<StridedDim> merged;
    for (const StridedDim& d : out) {
        if (!merged.empty() && merged.back().stride == d.stride * d.size) {
            merged.back().size *= d.size;
            merged.back().stride = d.stride;
        } else {
            merged.push_back(d);
        }
    }
    return merged;
}

std::vector<int64_t> strides_of(const Shape& s) {
    std::vector<int64_t> st(s.size(), 1);
    for (size_t k = s.size(); k > 1; --k) st[k - 2] = st[k - 1] * s[k - 1];
    return st;
}

}  // namespace

std::optional<StridedCopy> strided_copy_plan(const Node& n, const Shape& in) {
    const std::vector<int64_t> st = strides_of(in);
    StridedCopy plan;
    std::vector<StridedDim> dims;
    LayoutError err;
    if (n.op == OpKind::Slice || n.op == OpKind::Split) {
        std::vector<AxisSlice> axes;
        bool ok = false;
        if (n.op == OpKind::Slice) {
            auto starts = ints_attr(n, "starts"), ends = ints_attr(n, "ends");
            ok = starts && ends && slice_axes(in, *starts, *ends, ints_attr(n, "axes"), ints_attr(n, "steps"), axes, err);
        } else {
            std::optional<int64_t> parts;
            if (n.find_attr("parts")) parts = int_attr(n, "parts", 1);
            ok = split_axes(in, int_attr(n, "axis", 0), ints_attr(n, "sizes"), parts, int_attr(n, "index", 0), axes,
                            err);
        }
        if (!ok) return std::nullopt;
        for (size_t k = 0; k < axes.size(); ++k) {
            plan.base += axes[k].start * st[k];
            dims.push_back({axes[k].count, axes[k].step * st[k]});
        }
    } else if (n.op == OpKind::Expand) {
        auto target = ints_attr(n, "shape");
        Shape out;
        if (!target || !expand_shape(in, *target, out, err)) return std::nullopt;
        const size_t lead = out.size() - in.size();
        for (size_t k = 0; k < out.size(); ++k) {
            const bool from_in = k >= lead && in[k - lead] == out[k];
            dims.push_back({out[k], from_in ? st[k - lead] : 0});
        }
    } else if (n.op == OpKind::Tile) {
        auto repeats = ints_attr(n, "repeats");
        Shape out;
        if (!repeats || !tile_shape(in, *repeats, out, err)) return std::nullopt;
        // output axis k viewed as [repeats_k, in_k]: the copies, then the input's axis
        for (size_t k = 0; k < in.size(); ++k) {
            dims.push_back({(*repeats)[k], 0});
            dims.push_back({in[k], st[k]});
        }
    } else {
        return std::nullopt;
    }
    for (const StridedDim& d : dims)
        if (d.size == 0) {
            plan.dims = {{0, 1}};
            plan.base = 0;
            return plan;
        }
    plan.dims = simplify(dims);
    return plan;
}

std::optional<GatherPlan> gather_plan(const Node& n, const Shape& x, const Shape& indices) {
    Shape out;
    LayoutError err;
    const int64_t axis_given = int_attr(n, "axis", 0);
    if (!gather_shape(x, indices, axis_given, out, err)) return std::nullopt;
    const auto axis = static_cast<size_t>(normalize_axis(axis_given, x.size()));
    GatherPlan p;
    for (size_t k = 0; k < x.size(); ++k) {
        if (k < axis) p.outer *= x[k];
        if (k > axis) p.inner *= x[k];
    }
    p.axis_len = x[axis];
    p.count = numel_of(indices);
    return p;
}

std::optional<PadPlan> pad_plan(const Node& n, const Shape& in) {
    PadPlan p;
    if (const NamedAttr* a = n.find_attr("mode")) {
        auto m = pad_mode(a->value.s);
        if (!m) return std::nullopt;
        p.mode = *m;
    }
    auto pads = ints_attr(n, "pads");
    LayoutError err;
    if (!pads || !pad_shape(in, *pads, ints_attr(n, "axes"), p.mode, p.begin, p.out, err)) return std::nullopt;
    p.in = in;
    const double v = scalar_attr(n, "constant_value").value_or(ScalarAttr{}).as_double();
    auto put = [&p](auto x) { std::memcpy(&p.constant_bits, &x, sizeof x); };
    switch (n.dtype) {
        case DType::F32: put(static_cast<float>(v)); break;
        case DType::F64: put(v); break;
        case DType::I32: put(static_cast<int32_t>(scalar_attr(n, "constant_value").value_or(ScalarAttr{}).as_int())); break;
        case DType::I64: put(scalar_attr(n, "constant_value").value_or(ScalarAttr{}).as_int()); break;
        case DType::Bool: put(static_cast<uint8_t>(v != 0 ? 1 : 0)); break;
    }
    return p;
}

}  // namespace graphrun::kernels
