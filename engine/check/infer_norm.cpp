// Inference for the norm ops (README "Ops beyond SPEC section 3"), with
// ONNX's semantics: layer_norm (LayerNormalization: x normalized over its
// dimensions from `axis` on, scale and bias broadcast to those dimensions),
// batch_norm (BatchNormalization in inference mode: one scale, bias, mean and
// variance per channel, axis 1) and gemm (alpha * op(a) @ op(b) + beta * c on
// matrices, c broadcast to the result).
#include <cmath>

#include "engine/check/infer_context.h"
#include "engine/check/validate.h"

namespace graphrun::infer {

namespace {

std::string shape_text(const Shape& s) {
    return ints_text(std::vector<int64_t>(s.begin(), s.end()));
}

// Input i has x's (input 0's) dtype; reports with a cast hint otherwise.
bool same_dtype_as_x(NodeCheck& c, size_t i, const char* role) {
    const DType t = c.input(0).dtype;
    if (c.input(i).dtype == t) return true;
    c.error(c.input_loc(i), c.operand_text(i) + ", but " + c.info.name + "'s " + role +
                                " must be " + dtype_name(t) + " as " + c.operand_text(0) +
                                "; use cast(" + c.role(i) + ", dtype=" + dtype_name(t) + ")");
    return false;
}

// A number attribute (not a bool); with `non_negative`, also finite and >= 0
// (epsilon). Absent: true.
bool number_attr_ok(NodeCheck& c, const char* name, bool non_negative) {
    auto s = c.scalar_attr(name);
    if (!s) return true;
    if (s->is_bool) {
        c.error(c.attr_loc(name), std::string(name) + " must be a number, got " + scalar_text(*s));
        return false;
    }
    if (non_negative && !(std::isfinite(s->f) && s->f >= 0)) {
        c.error(c.attr_loc(name),
                std::string(name) + " must be a finite number >= 0, got " + scalar_text(*s));
        return false;
    }
    return true;
}

// Whether `s` broadcasts onto `target` without growing it (ONNX's
// unidirectional broadcasting): right-aligned, each dimension equal or 1,
// extra leading dimensions only of size 1.
bool broadcasts_onto(const Shape& s, const Shape& target) {
    for (size_t k = 0; k < s.size(); ++k) {
        const int64_t d = s[s.size() - 1 - k];
        if (k >= target.size()) {
            if (d != 1) return false;
            continue;
        }
        if (d != 1 && d != target[target.size() - 1 - k]) return false;
    }
    return true;
}

}  // namespace

bool infer_layer_norm(NodeCheck& c) {
    bool ok = c.check_input_class(0);
    for (size_t i = 1; i < c.arity(); ++i)
        ok = same_dtype_as_x(c, i, i == 1 ? "scale" : "bias") && ok;
    ok = number_attr_ok(c, "epsilon", true) && ok;
    if (!ok) return false;
    const Node& x = c.input(0);
    const auto r = static_cast<int64_t>(x.shape.size());
    if (r == 0) {
        c.error(c.input_loc(0),
                c.operand_text(0) + ", a scalar; layer_norm needs at least 1 dimension");
        return false;
    }
    const int64_t axis = c.int_attr("axis", -1);
    if (axis < -r || axis >= r) {
        c.error(c.attr_loc("axis"), "axis " + std::to_string(axis) + " is out of range for rank " +
                                        std::to_string(r) + " (" + c.operand_text(0) + ")");
        return false;
    }
    const auto k = static_cast<size_t>(axis < 0 ? axis + r : axis);
    const Shape normalized(x.shape.begin() + static_cast<std::ptrdiff_t>(k), x.shape.end());
    for (size_t i = 1; i < c.arity(); ++i) {
        if (broadcasts_onto(c.input(i).shape, normalized)) continue;
        c.error(c.input_loc(i), c.operand_text(i) + ", but layer_norm's " +
                                    (i == 1 ? "scale" : "bias") +
                                    " must broadcast to the normalized shape " +
                                    shape_text(normalized) + " (the dimensions of " +
                                    c.operand_name(0) + " from axis " + std::to_string(k) + "; " +
                                    c.operand_text(0) + ")");
        ok = false;
    }
    if (!ok) return false;
    c.node.dtype = x.dtype;
    c.node.shape = x.shape;
    return true;
}

bool infer_batch_norm(NodeCheck& c) {
    static const char* const kRoles[] = {"x", "scale", "bias", "mean", "var"};
    bool ok = c.check_input_class(0);
    for (size_t i = 1; i < c.arity(); ++i) ok = same_dtype_as_x(c, i, kRoles[i]) && ok;
    ok = number_attr_ok(c, "epsilon", true) && ok;
    if (!ok) return false;
    const Node& x = c.input(0);
    if (x.shape.empty()) {
        c.error(c.input_loc(0),
                c.operand_text(0) + ", a scalar; batch_norm needs [N, C, ...] or [N]");
        return false;
    }
    // ONNX: channels are axis 1; a 1-D input [N] has one channel.
    const int64_t channels = x.shape.size() >= 2 ? x.shape[1] : 1;
    for (size_t i = 1; i < c.arity(); ++i) {
        const Shape& s = c.input(i).shape;
        if (s.size() == 1 && s[0] == channels) continue;
        c.error(c.input_loc(i),
                c.operand_text(i) + ", but batch_norm's " + kRoles[i] + " must be " +
                    type_string(x.dtype, Shape{channels}) + ": one value per channel (" +
                    c.operand_text(0) +
                    (x.shape.size() >= 2 ? ", channels on axis 1)" : ", one channel)"));
        ok = false;
    }
    if (!ok) return false;
    c.node.dtype = x.dtype;
    c.node.shape = x.shape;
    return true;
}

bool infer_gemm(NodeCheck& c) {
    bool ok = c.check_input_class(0);
    for (size_t i = 1; i < c.arity(); ++i) ok = same_dtype_as_x(c, i, i == 1 ? "b" : "c") && ok;
    ok = number_attr_ok(c, "alpha", false) && ok;
    ok = number_attr_ok(c, "beta", false) && ok;
    if (!ok) return false;
    for (size_t i = 0; i < 2; ++i) {
        if (c.input(i).shape.size() == 2) continue;
        c.error(c.input_loc(i), c.operand_text(i) + ", but gemm's " + (i == 0 ? "a" : "b") +
                                    " must be a matrix (2 dimensions); use matmul for other ranks");
        ok = false;
    }
    if (!ok) return false;
    const bool ta = c.bool_attr("transpose_a", false), tb = c.bool_attr("transpose_b", false);
    const Shape& a = c.input(0).shape;
    const Shape& b = c.input(1).shape;
    const int64_t m = ta ? a[1] : a[0], ka = ta ? a[0] : a[1];
    const int64_t kb = tb ? b[1] : b[0], n = tb ? b[0] : b[1];
    if (ka != kb) {
        std::string flags;
        if (ta) flags += " (transpose_a=true";
        if (tb) flags += ta ? ", transpose_b=true" : " (transpose_b=true";
        if (!flags.empty()) flags += ")";
        c.error(c.node.loc, "inner dimensions differ: " + c.operand_text(0) + ", " +
                                c.operand_text(1) + flags + ": " + std::to_string(ka) + " vs " +
                                std::to_string(kb));
        return false;
    }
    Shape out{m, n};
    if (c.arity() == 3 && !broadcasts_onto(c.input(2).shape, out)) {
        c.error(c.input_loc(2), c.operand_text(2) +
                                    ", but gemm's c must broadcast to the result's shape " +
                                    shape_text(out));
        return false;
    }
    c.node.dtype = c.input(0).dtype;
    c.node.shape = std::move(out);
    return true;
}

}  // namespace graphrun::infer
