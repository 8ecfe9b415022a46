// The conv area's window geometry (conv_geometry.h), ONNX's formulas:
//   effective kernel  e = (k - 1) * dilation + 1
//   explicit pads     out = floor((in + pb + pe - e) / stride) + 1   (ceil with ceil_mode, the
//                     last window dropped when it would start in the end padding, as PyTorch does)
//   SAME_UPPER/LOWER  out = ceil(in / stride), total pad = max(0, (out - 1) * stride + e - in),
//                     the odd one at the end (UPPER) or the beginning (LOWER)
//   VALID             no pads
//   conv_transpose    out = stride * (in - 1) + output_padding + e - pb - pe; with output_shape
//                     (or SAME_*: out = in * stride) the pads follow from the output.
#include "engine/ir/conv_geometry.h"

#include <algorithm>
#include <string_view>
#include <vector>

namespace graphrun {

namespace {

// Strides, dilations, pads and kernel extents above this are refused, so that
// the window arithmetic (products of two of them) stays far from overflow.
constexpr int64_t kMaxWindowValue = int64_t{1} << 20;

std::string list_text(const std::vector<int64_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + "]";
}

std::string shape_text(const Shape& s) {
    return list_text(std::vector<int64_t>(s.begin(), s.end()));
}

std::optional<std::vector<int64_t>> ints_of(const Node& n, std::string_view name) {
    const NamedAttr* a = n.find_attr(name);
    if (!a) return std::nullopt;
    auto as_int = [](const Attr& e) { return e.is_int ? e.i : static_cast<int64_t>(e.f); };
    if (a->value.kind == Attr::Kind::Number) return std::vector<int64_t>{as_int(a->value)};
    std::vector<int64_t> v;
    for (const Attr& e : a->value.list) v.push_back(as_int(e));
    return v;
}

int64_t int_of(const Node& n, std::string_view name, int64_t def) {
    const NamedAttr* a = n.find_attr(name);
    if (!a || a->value.kind != Attr::Kind::Number) return def;
    return a->value.is_int ? a->value.i : static_cast<int64_t>(a->value.f);
}

bool bool_of(const Node& n, std::string_view name, bool def) {
    const NamedAttr* a = n.find_attr(name);
    return a && a->value.kind == Attr::Kind::Bool ? a->value.b : def;
}

class Resolver {
  public:
    Resolver(const Node& n, WindowProblem* problem) : n_(n), problem_(problem) {}

    bool fail(const char* attr, int input, std::string message) {
        if (problem_) *problem_ = WindowProblem{attr, input, std::move(message)};
        return false;
    }

    // A per-axis attribute: absent -> def; one entry -> every axis; else exactly
    // `count` entries, each >= min. Written into out[2 - count ..] (a 1-D op's
    // entry goes to the width).
    bool per_axis(const char* name, int count, int64_t def, int64_t min, int64_t out[2]) {
        auto v = ints_of(n_, name);
        for (int i = 0; i < count; ++i) out[2 - count + i] = def;
        if (!v) return true;
        if (v->size() != 1 && v->size() != static_cast<size_t>(count))
            return fail(name, 0,
                        std::string(name) + " " + list_text(*v) + " has " +
                            std::to_string(v->size()) + " entries; " + op_name(n_.op) + " of a " +
                            std::to_string(count) + "-D input takes " + std::to_string(count));
        for (int i = 0; i < count; ++i) {
            const int64_t x = (*v)[v->size() == 1 ? 0 : static_cast<size_t>(i)];
            if (x < min)
                return fail(name, 0,
                            std::string(name) + " " + list_text(*v) + " has " + std::to_string(x) +
                                "; each must be at least " + std::to_string(min));
            if (x > kMaxWindowValue)
                return fail(name, 0,
                            std::string(name) + " " + list_text(*v) + " has " + std::to_string(x) +
                                "; at most " + std::to_string(kMaxWindowValue) + " is supported");
            out[2 - count + i] = x;
        }
        return true;
    }

    // pads: [begin..., end...] (ONNX's order), or one value for every side.
    bool pads(WindowGeometry& g, bool& given) {
        auto v = ints_of(n_, "pads");
        given = false;
        if (!v) return true;
        const auto s = static_cast<size_t>(g.spatial);
        if (v->size() != 1 && v->size() != 2 * s)
            return fail("pads", 0,
                        "pads " + list_text(*v) + " has " + std::to_string(v->size()) +
                            " entries; a " + std::to_string(s) + "-D input takes " +
                            std::to_string(2 * s) +
                            " (the beginnings of the axes, then their ends)");
        for (size_t i = 0; i < 2 * s; ++i) {
            const int64_t x = (*v)[v->size() == 1 ? 0 : i];
            if (x < 0)
                return fail("pads", 0,
                            "pads " + list_text(*v) + " has " + std::to_string(x) +
                                "; pads must not be negative");
            if (x > kMaxWindowValue)
                return fail("pads", 0,
                            "pads " + list_text(*v) + " has " + std::to_string(x) + "; at most " +
                                std::to_string(kMaxWindowValue) + " is supported");
            given |= x != 0;
            int64_t* side = i < s ? g.pad_begin : g.pad_end;
            side[2 - s + i % s] = x;
        }
        return true;
    }

    enum class AutoPad { NotSet, SameUpper, SameLower, Valid };
    bool auto_pad(AutoPad& ap) {
        const NamedAttr* a = n_.find_attr("auto_pad");
        ap = AutoPad::NotSet;
        if (!a) return true;
        const std::string& s = a->value.s;
        if (s == "NOTSET")
            ap = AutoPad::NotSet;
        else if (s == "SAME_UPPER")
            ap = AutoPad::SameUpper;
        else if (s == "SAME_LOWER")
            ap = AutoPad::SameLower;
        else if (s == "VALID")
            ap = AutoPad::Valid;
        else
            return fail(
                "auto_pad", 0,
                "auto_pad must be \"NOTSET\", \"SAME_UPPER\", \"SAME_LOWER\" or \"VALID\", got \"" +
                    s + "\"");
        return true;
    }

    std::optional<WindowGeometry> resolve(const Shape& x, const Shape* w) {
        const OpKind op = n_.op;
        WindowGeometry g;
        const auto rank = static_cast<int>(x.size());
        const bool global = op == OpKind::GlobalAvgPool || op == OpKind::GlobalMaxPool;
        if (rank < 3 || (!global && rank > 4)) {
            fail(nullptr, 0,
                 std::string(op_name(op)) + " needs an input of rank " +
                     (global ? "3 or more (N, C, spatial...)" : "3 (N, C, W) or 4 (N, C, H, W)") +
                     ", got " + shape_text(x) + " (rank " + std::to_string(rank) + ")");
            return std::nullopt;
        }
        g.spatial = rank - 2;
        g.batch = x[0];
        g.channels = x[1];
        g.out_channels = x[1];
        if (global) {
            g.global = true;
            g.in[1] = 1;
            for (int i = 2; i < rank; ++i) g.in[1] *= x[static_cast<size_t>(i)];
            g.kernel[1] = g.in[1];
            return g;
        }
        const int s = g.spatial;
        for (int i = 0; i < s; ++i) g.in[2 - s + i] = x[static_cast<size_t>(2 + i)];
        if (op == OpKind::Conv || op == OpKind::ConvTranspose) {
            if (!weights(g, x, *w)) return std::nullopt;
        } else {
            if (!per_axis("kernel_shape", s, 1, 1, g.kernel)) return std::nullopt;
            if (n_.find_attr("kernel_shape") == nullptr) {
                fail("kernel_shape", 0, std::string(op_name(op)) + " needs kernel_shape");
                return std::nullopt;
            }
            g.ceil_mode = bool_of(n_, "ceil_mode", false);
            g.count_include_pad = bool_of(n_, "count_include_pad", false);
        }
        if (!per_axis("strides", s, 1, 1, g.stride) || !per_axis("dilations", s, 1, 1, g.dilation))
            return std::nullopt;
        bool pads_given = false;
        AutoPad ap;
        if (!pads(g, pads_given) || !auto_pad(ap)) return std::nullopt;
        if (ap != AutoPad::NotSet && pads_given) {
            fail("pads", 0, "pads and auto_pad cannot both be given (auto_pad computes the pads)");
            return std::nullopt;
        }
        if (op == OpKind::ConvTranspose) return transposed(g, ap) ? std::optional(g) : std::nullopt;
        for (int a = 2 - s; a < 2; ++a) {
            const int64_t e = (g.kernel[a] - 1) * g.dilation[a] + 1;
            if (ap == AutoPad::SameUpper || ap == AutoPad::SameLower) {
                g.out[a] = (g.in[a] + g.stride[a] - 1) / g.stride[a];
                int64_t total = (g.out[a] - 1) * g.stride[a] + e - g.in[a];
                if (total < 0) total = 0;
                const int64_t small = total / 2;
                g.pad_begin[a] = ap == AutoPad::SameUpper ? small : total - small;
                g.pad_end[a] = total - g.pad_begin[a];
                continue;
            }
            if (ap == AutoPad::Valid) g.pad_begin[a] = g.pad_end[a] = 0;
            const int64_t span = g.in[a] + g.pad_begin[a] + g.pad_end[a] - e;
            if (span < 0) {
                const char* axis = a == 0 ? "height" : "width";
                fail(nullptr, 0,
                     std::string("the ") + (s == 2 ? axis : "width") + " of the window (" +
                         std::to_string(e) + ": kernel " + std::to_string(g.kernel[a]) +
                         ", dilation " + std::to_string(g.dilation[a]) +
                         ") is larger than the padded input's (" +
                         std::to_string(g.in[a] + g.pad_begin[a] + g.pad_end[a]) + ": " +
                         shape_text(x) + " with pads " + std::to_string(g.pad_begin[a]) + "+" +
                         std::to_string(g.pad_end[a]) + ")");
                return std::nullopt;
            }
            g.out[a] = span / g.stride[a] + 1;
            if (g.ceil_mode && span % g.stride[a] != 0) {
                g.out[a] += 1;
                // The last window must start inside the input or its beginning padding.
                if ((g.out[a] - 1) * g.stride[a] >= g.in[a] + g.pad_begin[a]) g.out[a] -= 1;
            }
        }
        return g;
    }

  private:
    bool weights(WindowGeometry& g, const Shape& x, const Shape& w) {
        const OpKind op = n_.op;
        if (w.size() != x.size())
            return fail(nullptr, 1,
                        "the weight " + shape_text(w) + " must have the input's rank " +
                            std::to_string(x.size()) + " (" +
                            (op == OpKind::Conv ? "M, C/group" : "C, M/group") +
                            ", kernel...); the input is " + shape_text(x));
        g.group = int_of(n_, "group", 1);
        if (g.group < 1)
            return fail("group", 0, "group " + std::to_string(g.group) + " must be at least 1");
        if (g.channels % g.group != 0)
            return fail("group", 0,
                        "the input's " + std::to_string(g.channels) + " channels (" +
                            shape_text(x) + ") do not divide into group " +
                            std::to_string(g.group));
        const int s = g.spatial;
        for (int i = 0; i < s; ++i) {
            g.kernel[2 - s + i] = w[static_cast<size_t>(2 + i)];
            if (g.kernel[2 - s + i] < 1)
                return fail(nullptr, 1, "the weight " + shape_text(w) + " has an empty kernel");
        }
        if (op == OpKind::Conv) {
            if (w[1] * g.group != g.channels)
                return fail(nullptr, 1,
                            "the weight " + shape_text(w) + " takes " + std::to_string(w[1]) +
                                " channels per group, but the input " + shape_text(x) + " has " +
                                std::to_string(g.channels) + " in " + std::to_string(g.group) +
                                (g.group == 1 ? " group" : " groups"));
            if (w[0] % g.group != 0)
                return fail(nullptr, 1,
                            "the weight's " + std::to_string(w[0]) + " output channels (" +
                                shape_text(w) + ") do not divide into group " +
                                std::to_string(g.group));
            g.out_channels = w[0];
        } else {
            if (w[0] != g.channels)
                return fail(nullptr, 1,
                            "the weight " + shape_text(w) + " is for " + std::to_string(w[0]) +
                                " input channels, but the input " + shape_text(x) + " has " +
                                std::to_string(g.channels));
            g.out_channels = w[1] * g.group;
        }
        return true;
    }

    bool transposed(WindowGeometry& g, AutoPad ap) {
        const int s = g.spatial;
        int64_t out_pad[2] = {0, 0};
        if (!per_axis("output_padding", s, 0, 0, out_pad)) return false;
        std::optional<std::vector<int64_t>> shape = ints_of(n_, "output_shape");
        if (shape && shape->size() == static_cast<size_t>(s + 2))
            shape->erase(shape->begin(), shape->begin() + 2);
        if (shape && shape->size() != static_cast<size_t>(s))
            return fail("output_shape", 0,
                        "output_shape " + list_text(*shape) + " must have " + std::to_string(s) +
                            " entries (the output's spatial extent)");
        for (int a = 2 - s; a < 2; ++a) {
            const int64_t e = (g.kernel[a] - 1) * g.dilation[a] + 1;
            if (out_pad[a] >= g.stride[a] && out_pad[a] >= g.dilation[a])
                return fail("output_padding", 0,
                            "output_padding " + std::to_string(out_pad[a]) +
                                " must be less than the stride (" + std::to_string(g.stride[a]) +
                                ") or the dilation (" + std::to_string(g.dilation[a]) + ")");
            const int64_t full = g.stride[a] * (g.in[a] - 1) + out_pad[a] + e;
            if (shape || ap == AutoPad::SameUpper || ap == AutoPad::SameLower) {
                const int64_t want =
                    shape ? (*shape)[static_cast<size_t>(a - (2 - s))] : g.in[a] * g.stride[a];
                // An output beyond the full one is extended at the end (as output_padding would).
                const int64_t total = std::max<int64_t>(0, full - want);
                if (want < 1 || want > kMaxWindowValue)
                    return fail(shape ? "output_shape" : "auto_pad", 0,
                                "an output extent of " + std::to_string(want) +
                                    " is not possible (at least 1, at most " +
                                    std::to_string(kMaxWindowValue) + ")");
                const int64_t small = total / 2;
                g.pad_begin[a] = ap == AutoPad::SameUpper ? small : total - small;
                g.pad_end[a] = total - g.pad_begin[a];
                g.out[a] = want;
                continue;
            }
            if (ap == AutoPad::Valid) g.pad_begin[a] = g.pad_end[a] = 0;
            g.out[a] = full - g.pad_begin[a] - g.pad_end[a];
            if (g.out[a] < 1)
                return fail("pads", 0,
                            "the pads (" + std::to_string(g.pad_begin[a]) + "+" +
                                std::to_string(g.pad_end[a]) + ") leave no output of the full " +
                                std::to_string(full));
        }
        // The output padding goes to the end of the output (inside pad_end's budget).
        for (int a = 0; a < 2; ++a) g.pad_end[a] -= out_pad[a];
        return true;
    }

    const Node& n_;
    WindowProblem* problem_;
};

}  // namespace

std::optional<WindowGeometry> window_geometry(const Node& n, const Shape& x, const Shape* w,
                                              WindowProblem* problem) {
    if (!is_conv_area_op(n.op)) return std::nullopt;
    if ((n.op == OpKind::Conv || n.op == OpKind::ConvTranspose) && !w) return std::nullopt;
    return Resolver(n, problem).resolve(x, w);
}

Shape window_output_shape(const WindowGeometry& g) {
    Shape s{g.batch, g.out_channels};
    if (g.global) {
        for (int i = 0; i < g.spatial; ++i) s.push_back(1);
        return s;
    }
    for (int i = 2 - g.spatial; i < 2; ++i) s.push_back(g.out[i]);
    return s;
}

}  // namespace graphrun
