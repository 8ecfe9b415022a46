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

// The plan of slice/split's per-axis cuts.
StridedCopy from_axes(const std::vector<AxisSlice>& axes, const std::vector<int64_t>& st) {
    StridedCopy plan;
    std::vector<StridedDim> dims;
    for (size_t k = 0; k < axes.size(); ++k) {
        plan.base += axes[k].start * st[k];
        dims.push_back({axes[k].count, axes[k].step * st[k]});
    }
    for (const StridedDim& d : dims)
        if (d.size == 0) return StridedCopy{0, {{0, 1}}};
    plan.dims = simplify(dims);
    return plan;
}

std::string list_text(const std::vector<int64_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + "]";
}

// "" when `got` is the node's `shape`, else the message.
std::string check_shape(const char* op, const Shape& in, const Shape& want, const Shape& got,
                        const std::string& values) {
    if (want == got) return "";
    return std::string(op) + " with " + values + " of the input " + list_text(in) + " gives " + list_text(got) +
           ", but the graph expects its output to be " + list_text(want);
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
        return from_axes(axes, st);
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
        case DType::F16:
        case DType::BF16:
        case DType::I8:
        case DType::U8: store_double(n.dtype, &p.constant_bits, 0, v); break;
    }
    return p;
}

std::string slice_plan_at_run(const Shape& in, const Shape& want, const std::vector<std::vector<int64_t>>& v,
                              StridedCopy& plan) {
    if (v.size() < 2) return "internal error: slice without starts and ends";
    std::string values = "starts " + list_text(v[0]) + ", ends " + list_text(v[1]);
    std::optional<std::vector<int64_t>> axes, steps;
    if (v.size() > 2) {
        axes = v[2];
        values += ", axes " + list_text(v[2]);
    }
    if (v.size() > 3) {
        steps = v[3];
        values += ", steps " + list_text(v[3]);
    }
    std::vector<AxisSlice> cut;
    LayoutError err;
    if (!slice_axes(in, v[0], v[1], axes, steps, cut, err))
        return "slice with " + values + ": " + err.message + " (the input is " + list_text(in) + ")";
    Shape got;
    for (const AxisSlice& a : cut) got.push_back(a.count);
    std::string problem = check_shape("slice", in, want, got, values);
    if (!problem.empty()) return problem;
    plan = from_axes(cut, strides_of(in));
    return "";
}

std::string pad_plan_at_run(PadMode mode, const Shape& in, const Shape& want, const std::vector<int64_t>& pads,
                            const std::optional<std::vector<int64_t>>& axes, uint64_t constant_bits, PadPlan& plan) {
    PadPlan p;
    p.mode = mode;
    std::string values = "pads " + list_text(pads) + (axes ? ", axes " + list_text(*axes) : "");
    LayoutError err;
    if (!pad_shape(in, pads, axes, p.mode, p.begin, p.out, err))
        return "pad with " + values + ": " + err.message + " (the input is " + list_text(in) + ")";
    std::string problem = check_shape("pad", in, want, p.out, values);
    if (!problem.empty()) return problem;
    p.in = in;
    p.constant_bits = constant_bits;
    plan = std::move(p);
    return "";
}

std::string gather_index_error(int64_t value, int64_t entry, int64_t axis_len) {
    return "index " + std::to_string(value) + " (entry " + std::to_string(entry) +
           " of the indices) is out of range for an axis of length " + std::to_string(axis_len) +
           (axis_len > 0 ? " (-" + std::to_string(axis_len) + ".." + std::to_string(axis_len - 1) + ")"
                         : "");
}

std::vector<int64_t> index_vector(const void* data, DType t, int64_t n) {
    std::vector<int64_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        v[static_cast<size_t>(i)] =
            t == DType::I32 ? static_cast<const int32_t*>(data)[i] : static_cast<const int64_t*>(data)[i];
    return v;
}

}  // namespace graphrun::kernels
