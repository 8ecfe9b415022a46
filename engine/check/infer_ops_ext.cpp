// Inference for the ops beyond SPEC section 3 (README "Ops beyond SPEC
// section 3"), with ONNX's semantics: comparisons and logical ops (bool
// results, NumPy broadcasting), where (three-way broadcasting), the unary
// ops with attributes (clip, leaky_relu, elu, selu, gelu) and the arg
// reductions (argmax, argmin: i64 results).
#include "engine/check/infer_context.h"
#include "engine/check/validate.h"

namespace graphrun::infer {

namespace {

bool broadcast_into(NodeCheck& c, const Shape& a, const Shape& b, DType ta, DType tb, Shape& out) {
    int64_t da = 0, db = 0;
    auto shape = broadcast_shapes(a, b, da, db);
    if (!shape) {
        c.error(c.node.loc, "shapes " + type_string(ta, a) + " and " + type_string(tb, b) +
                                " do not broadcast: dimension " + std::to_string(da) + " vs " +
                                std::to_string(db));
        return false;
    }
    out = std::move(*shape);
    return true;
}

// A number attribute as the op's dtype `t`; reports when it cannot be one.
bool attr_fits(NodeCheck& c, std::string_view name, DType t) {
    auto s = c.scalar_attr(name);
    if (!s) return true;
    if (s->is_bool) {
        c.error(c.attr_loc(name), std::string(name) + " must be a number, got " + scalar_text(*s));
        return false;
    }
    std::string problem = conversion_problem(*s, t);
    if (problem.empty()) return true;
    c.error(c.attr_loc(name), std::string(name) + "=" + scalar_text(*s) + " cannot be " +
                                  dtype_name(t) + " (" + c.operand_text(0) + "): " + problem);
    return false;
}

}  // namespace

bool infer_logic(NodeCheck& c) {
    const OpKind op = c.node.op;
    if (op == OpKind::LogicalNot) {
        if (!c.check_input_class(0)) return false;
        c.node.dtype = DType::Bool;
        c.node.shape = c.input(0).shape;
        return true;
    }
    if (!unify_operands(c, 0, 1)) return false;
    const Node& a = c.input(0);
    const Node& b = c.input(1);
    Shape out;
    if (a.shape == b.shape)
        out = a.shape;
    else if (!broadcast_into(c, a.shape, b.shape, a.dtype, b.dtype, out))
        return false;
    c.node.dtype = DType::Bool;
    c.node.shape = std::move(out);
    return true;
}

bool infer_where(NodeCheck& c) {
    bool ok = true;
    Node& cond = c.input(0);
    if (cond.weak && cond.op == OpKind::Const && cond.dtype == DType::Bool) {
        // a bare true/false: its own dtype is bool already
    } else if (cond.dtype != DType::Bool) {
        c.error(c.input_loc(0), c.operand_text(0) + ", but where's condition must be bool; use " +
                                    "not_equal(" + c.role(0) + ", 0) or cast(" + c.role(0) +
                                    ", dtype=bool)");
        ok = false;
    }
    if (!unify_operands(c, 1, 2) || !ok) return false;
    const Node& x = c.input(1);
    const Node& y = c.input(2);
    Shape xy, out;
    if (!broadcast_into(c, x.shape, y.shape, x.dtype, y.dtype, xy)) return false;
    if (!broadcast_into(c, cond.shape, xy, cond.dtype, x.dtype, out)) return false;
    c.node.dtype = x.dtype;
    c.node.shape = std::move(out);
    return true;
}

bool infer_activation(NodeCheck& c) {
    if (!c.check_input_class(0)) return false;
    const DType t = c.input(0).dtype;
    bool ok = true;
    switch (c.node.op) {
        case OpKind::Clip:
            ok = attr_fits(c, "min", t);
            ok = attr_fits(c, "max", t) && ok;
            break;
        case OpKind::LeakyRelu:
        case OpKind::Elu:
            ok = attr_fits(c, "alpha", t);
            break;
        case OpKind::Selu:
            ok = attr_fits(c, "alpha", t);
            ok = attr_fits(c, "gamma", t) && ok;
            break;
        case OpKind::Gelu:
            if (const NamedAttr* a = c.attr("approximate");
                a && a->value.s != "none" && a->value.s != "tanh") {
                c.error(c.attr_loc("approximate"), "approximate must be \"none\" or \"tanh\", got \"" +
                                                       a->value.s + "\"");
                ok = false;
            }
            break;
        default:
            break;
    }
    if (!ok) return false;
    c.node.dtype = t;
    c.node.shape = c.input(0).shape;
    return true;
}

bool infer_arg_reduce(NodeCheck& c) {
    if (!c.check_input_class(0)) return false;
    const Node& x = c.input(0);
    const auto r = static_cast<int64_t>(x.shape.size());
    if (r == 0) {
        c.error(c.input_loc(0), c.operand_text(0) + ", a scalar; " + std::string(c.info.name) +
                                    " needs at least 1 dimension");
        return false;
    }
    const int64_t axis = c.int_attr("axis", 0);
    if (axis < -r || axis >= r) {
        c.error(c.attr_loc("axis"), "axis " + std::to_string(axis) + " is out of range for rank " +
                                        std::to_string(r) + " (" + c.operand_text(0) + ")");
        return false;
    }
    const auto k = static_cast<size_t>(axis < 0 ? axis + r : axis);
    if (x.shape[k] == 0) {
        c.error(c.attr("axis") ? c.attr_loc("axis") : c.input_loc(0),
                c.operand_text(0) + ": axis " + std::to_string(k) + " is empty, and " +
                    c.info.name + " of an empty axis has no index");
        return false;
    }
    Shape out = x.shape;
    if (c.bool_attr("keepdims", true))
        out[k] = 1;
    else
        out.erase(out.begin() + static_cast<std::ptrdiff_t>(k));
    c.node.dtype = DType::I64;
    c.node.shape = std::move(out);
    return true;
}

}  // namespace graphrun::infer
