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

// slice and pad with their index vectors as run-time inputs (from input 1
// on): each a 1-D i32/i64 tensor (pad's input 2, the constant, a scalar of
// x's dtype), none of the attributes they replace, and the output's shape
// the attribute `shape`, which the kernel checks the fed values against.
bool run_time_form(NodeCheck& c, std::initializer_list<const char*> replaced, size_t value_input) {
    bool ok = true;
    for (const char* a : replaced)
        if (c.attr(a)) {
            c.error(c.attr_loc(a), std::string(a) + " is given both as an attribute and, with the run-time inputs, "
                                                    "as an input; give one");
            ok = false;
        }
    for (size_t i = 1; i < c.arity(); ++i) {
        const Node& v = c.input(i);
        if (i == value_input) {
            if (v.dtype != c.input(0).dtype || v.shape.size() > 1 || (v.shape.size() == 1 && v.shape[0] != 1)) {
                c.error(c.input_loc(i), c.operand_text(i) + ", but the constant must be one " +
                                            dtype_name(c.input(0).dtype) + " value (" + c.operand_text(0) + ")");
                ok = false;
            }
        } else if ((v.dtype != DType::I32 && v.dtype != DType::I64) || v.shape.size() != 1) {
            c.error(c.input_loc(i), c.operand_text(i) + ", but the index vectors must be 1-D i32 or i64");
            ok = false;
        }
    }
    auto shape = c.ints_attr("shape");
    if (!shape) {
        c.error(c.node.loc, "with its vectors as run-time inputs it needs shape=[...], the output's shape");
        return false;
    }
    if (!ok) return false;
    if (shape->size() != c.input(0).shape.size()) {
        c.error(c.attr_loc("shape"), "shape " + ints_text(*shape) + " must have the input's rank " +
                                         std::to_string(c.input(0).shape.size()) + " (" + c.operand_text(0) + ")");
        return false;
    }
    for (int64_t d : *shape)
        if (d < 0) {
            c.error(c.attr_loc("shape"), "shape " + ints_text(*shape) + " has a negative entry");
            return false;
        }
    if (!c.check_result_size(*shape)) return false;
    return done(c, *shape);
}

}  // namespace

bool infer_slice(NodeCheck& c) {
    if (!c.check_input_class(0)) return false;
    if (c.arity() > 1) {
        if (c.arity() < 3) {
            c.error(c.node.loc, "with run-time inputs it takes slice(x, starts, ends[, axes[, steps]])");
            return false;
        }
        return run_time_form(c, {"starts", "ends", "axes", "steps"}, 0);
    }
    if (c.attr("shape")) {
        c.error(c.attr_loc("shape"), "shape is for the run-time form (slice(x, starts, ends, ...)) only");
        return false;
    }
    if (!c.attr("starts") || !c.attr("ends")) {
        c.error(c.node.loc, "it needs starts=[...] and ends=[...] (or them as inputs)");
        return false;
    }
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

bool check_index_operand(NodeCheck& c, size_t k) {
    Node& idx = c.input(k);
    // Indices written in place (`gather(x, [0, 2])`) are integers: the
    // literal, f32 by default, becomes i64 (as a weak literal takes its
    // operand's dtype), or says why it cannot.
    if (is_float(idx.dtype) && idx.op == OpKind::Const && idx.generated && idx.find_attr("value") &&
        !idx.find_attr("dtype")) {
        const std::string problem = retype_weak_literal(idx, DType::I64);
        if (!problem.empty()) {
            c.error(c.input_loc(k), c.operand_name(k) + " cannot be " + c.info.name + "'s indices: " + problem);
            return false;
        }
    }
    if (idx.dtype != DType::I32 && idx.dtype != DType::I64) {
        c.error(c.input_loc(k), c.operand_text(k) + ", but " + c.info.name + "'s indices must be i32 or i64; use cast(" +
                                    c.role(k) + ", dtype=i64)");
        return false;
    }
    return true;
}

bool infer_gather(NodeCheck& c) {
    if (!c.check_input_class(0)) return false;
    if (!check_index_operand(c, 1)) return false;
    const Node& idx = c.input(1);
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
    if (c.arity() > 1) {
        // (the constant input is ignored by reflect and edge, as ONNX's)
        return run_time_form(c, {"pads", "constant_value", "axes"}, 2);
    }
    if (c.attr("shape")) {
        c.error(c.attr_loc("shape"), "shape is for the run-time form (pad(x, pads, ...)) only");
        return false;
    }
    if (!c.attr("pads")) {
        c.error(c.node.loc, "it needs pads=[...] (or them as an input)");
        return false;
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
