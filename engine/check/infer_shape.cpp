// Inference for the shape ops (README "Ops beyond SPEC section 3"), with
// ONNX's semantics: slice, gather, expand, split, pad, tile, squeeze,
// unsqueeze, flatten. The arithmetic is engine/ir/layout.h's, shared with the
// kernels' plans; this file words the errors with the node and its input.
#include "engine/check/infer_context.h"
#include "engine/check/validate.h"
#include "engine/ir/layout.h"

namespace graphrun::infer {

namespace {

// Reports a layout error at its attribute (or the node), naming the input.
bool report(NodeCheck& c, const LayoutError& err) {
    const Loc& loc = err.attr && c.attr(err.attr) ? c.attr_loc(err.attr) : c.node.loc;
    c.error(loc, err.message + " (" + c.operand_text(0) + ")");
    return false;
}

bool done(NodeCheck& c, Shape out) {
    c.node.dtype = c.input(0).dtype;
    c.node.shape = std::move(out);
    return true;
}

}  // namespace

bool infer_slice(NodeCheck& c) {
    if (!c.check_input_class(0)) return false;
    auto starts = c.ints_attr("starts");
    auto ends = c.ints_attr("ends");
    if (!starts || !ends) return false;
    std::vector<AxisSlice> axes;
    LayoutError err;
    if (!slice_axes(c.input(0).shape, *starts, *ends, c.ints_attr("axes"), c.ints_attr("steps"), axes, err))
        return report(c, err);
    Shape out;
    for (const AxisSlice& a : axes) out.push_back(a.count);
    return done(c, std::move(out));
}

bool infer_split(NodeCheck& c) {
    if (!c.check_input_class(0)) return false;
    std::optional<int64_t> parts;
    if (c.attr("parts")) parts = c.int_attr("parts", 1);
    std::vector<AxisSlice> axes;
    LayoutError err;
    if (!split_axes(c.input(0).shape, c.int_attr("axis", 0), c.ints_attr("sizes"), parts, c.int_attr("index", 0), axes,
                    err))
        return report(c, err);
    Shape out;
    for (const AxisSlice& a : axes) out.push_back(a.count);
    return done(c, std::move(out));
}

bool infer_gather(NodeCheck& c) {
    if (!c.check_input_class(0)) return false;
    Node& idx = c.input(1);
    // Indices written in place (`gather(x, [0, 2])`) are integers: the
    // literal, f32 by default, becomes i64 (as a weak literal takes its
    // operand's dtype), or says why it cannot.
    if (is_float(idx.dtype) && idx.op == OpKind::Const && idx.generated && idx.find_attr("value") &&
        !idx.find_attr("dtype")) {
        const std::string problem = retype_weak_literal(idx, DType::I64);
        if (!problem.empty()) {
            c.error(c.input_loc(1), c.operand_name(1) + " cannot be gather's indices: " + problem);
            return false;
        }
    }
    if (idx.dtype != DType::I32 && idx.dtype != DType::I64) {
        c.error(c.input_loc(1), c.operand_text(1) + ", but gather's indices must be i32 or i64; use cast(" +
                                    c.role(1) + ", dtype=i64)");
        return false;
    }
    Shape out;
    LayoutError err;
    if (!gather_shape(c.input(0).shape, idx.shape, c.int_attr("axis", 0), out, err)) return report(c, err);
    return done(c, std::move(out));
}

bool infer_expand(NodeCheck& c) {
    if (!c.check_input_class(0)) return false;
    auto target = c.ints_attr("shape");
    if (!target) return false;
    Shape out;
    LayoutError err;
    if (!expand_shape(c.input(0).shape, *target, out, err)) return report(c, err);
    return done(c, std::move(out));
}

bool infer_tile(NodeCheck& c) {
    if (!c.check_input_class(0)) return false;
    auto repeats = c.ints_attr("repeats");
    if (!repeats) return false;
    Shape out;
    LayoutError err;
    if (!tile_shape(c.input(0).shape, *repeats, out, err)) return report(c, err);
    return done(c, std::move(out));
}

bool infer_pad(NodeCheck& c) {
    if (!c.check_input_class(0)) return false;
    const DType t = c.input(0).dtype;
    PadMode mode = PadMode::Constant;
    if (const NamedAttr* a = c.attr("mode")) {
        auto m = pad_mode(a->value.s);
        if (!m) {
            c.error(c.attr_loc("mode"), "mode must be \"constant\", \"reflect\" or \"edge\", got \"" + a->value.s + "\"");
            return false;
        }
        mode = *m;
    }
    if (auto v = c.scalar_attr("constant_value")) {
        if (mode != PadMode::Constant) {
            c.error(c.attr_loc("constant_value"), "constant_value is for mode \"constant\" only");
            return false;
        }
        std::string problem = v->is_bool ? (t == DType::Bool ? "" : "it is a bool") : conversion_problem(*v, t);
        if (!problem.empty()) {
            c.error(c.attr_loc("constant_value"), "constant_value=" + scalar_text(*v) + " cannot be " +
                                                      dtype_name(t) + " (" + c.operand_text(0) + "): " + problem);
            return false;
        }
    }
    auto pads = c.ints_attr("pads");
    if (!pads) return false;
    std::vector<int64_t> begin;
    Shape out;
    LayoutError err;
    if (!pad_shape(c.input(0).shape, *pads, c.ints_attr("axes"), mode, begin, out, err)) return report(c, err);
    return done(c, std::move(out));
}

bool infer_squeeze(NodeCheck& c) {
    if (!c.check_input_class(0)) return false;
    Shape out;
    LayoutError err;
    if (!squeeze_shape(c.input(0).shape, c.ints_attr("axes"), out, err)) return report(c, err);
    return done(c, std::move(out));
}

bool infer_unsqueeze(NodeCheck& c) {
    if (!c.check_input_class(0)) return false;
    auto axes = c.ints_attr("axes");
    if (!axes) return false;
    Shape out;
    LayoutError err;
    if (!unsqueeze_shape(c.input(0).shape, *axes, out, err)) return report(c, err);
    return done(c, std::move(out));
}

bool infer_flatten(NodeCheck& c) {
    if (!c.check_input_class(0)) return false;
    Shape out;
    LayoutError err;
    if (!flatten_shape(c.input(0).shape, c.int_attr("axis", 1), out, err)) return report(c, err);
    return done(c, std::move(out));
}

}  // namespace graphrun::infer
