// The core ONNX op mappings (onnx_ops.h): elementwise ops, matmul, reshapes,
// casts, concat, reductions, softmax, activations, clip.
#include <map>
#include <string>
#include <vector>

#include "engine/frontend/onnx_importer.h"

namespace graphrun::onnx_import {

namespace {

void elementwise(Importer& im, const onnx::NodeProto& n, const std::string& op) {
    auto ins = im.nodes_of(n, n.input_size());
    if (!ins) return;
    // Opset < 7: broadcast=1 with axis aligns B's dims at A's axis.
    if (im.opset() < 7 && ins->size() == 2 && attr_int(n, "broadcast", 0) == 1 && find_attr(n, "axis")) {
        auto sa = im.static_shape(n.input(0)), sb = im.static_shape(n.input(1));
        if (!sa || !sb) return im.fail(n, "legacy broadcasting needs static shapes");
        int64_t axis = attr_int(n, "axis", 0);
        if (axis < 0) axis += static_cast<int64_t>(sa->size());
        Shape target = *sb;
        while (static_cast<int64_t>(target.size()) + axis < static_cast<int64_t>(sa->size())) target.push_back(1);
        (*ins)[1] = im.add(OpKind::Reshape, {(*ins)[1]}, {im.named("shape", int_list(target))});
    }
    if (op == "pow" && ins->size() == 2) {
        const Value* a = im.value(n.input(0));
        const Value* b = im.value(n.input(1));
        if (a && b && a->dtype && b->dtype && *a->dtype != *b->dtype)
            (*ins)[1] = im.add(OpKind::Cast, {(*ins)[1]}, {im.named("dtype", Attr::ident(dtype_name(*a->dtype)))});
    }
    im.bind(n.output(0), im.add(op.c_str(), *ins));
}

void identity(Importer& im, const onnx::NodeProto& n) {
    if (n.op_type() == "Dropout" && n.input_size() >= 3 && !n.input(2).empty()) {
        const HostValue* training = im.const_input(n, 2, "training_mode");
        if (!training) return;
        // In training mode with a ratio of 0 (torchvision's Swin calls F.dropout(p=0.0)) nothing is
        // dropped and the scale is 1: the identity still.
        const HostValue* ratio = n.input_size() >= 2 && !n.input(1).empty() ? im.folded(n.input(1)) : nullptr;
        const bool ratio_zero = ratio && onnx_fold::doubles(*ratio).size() == 1 && onnx_fold::doubles(*ratio)[0] == 0;
        if (onnx_fold::ints(*training).at(0) != 0 && !ratio_zero)
            return im.fail(n, "training mode is not supported (only with a ratio of 0, where it drops nothing)");
    }
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    im.bind(n.output(0), im.add(OpKind::Identity, *ins));
    if (n.op_type() == "Dropout" && n.output_size() > 1 && !n.output(1).empty() && im.read_anywhere(n.output(1)))
        im.fail(n, "its mask output is not supported");
}

void variadic(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, n.input_size());
    if (!ins || ins->empty()) return;
    const std::string& op = n.op_type();
    const char* bin = op == "Max" ? "maximum" : op == "Min" ? "minimum" : "add";
    NodeId acc = (*ins)[0];
    for (size_t i = 1; i < ins->size(); ++i) acc = im.add(bin, {acc, (*ins)[i]});
    if (op == "Mean") {
        const Value* v = im.value(n.input(0));
        acc = im.add("div", {acc, im.scalar(static_cast<double>(ins->size()), v && v->dtype ? *v->dtype : DType::F32)});
    }
    if (ins->size() == 1) acc = im.add(OpKind::Identity, {acc});
    im.bind(n.output(0), acc);
}

void matmul(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 2);
    if (!ins) return;
    im.bind(n.output(0), im.add(OpKind::Matmul, *ins));
}

void transpose(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    std::vector<NamedAttr> attrs;
    const std::optional<std::vector<int64_t>> perm = attr_ints(n, "perm");
    if (perm) attrs.push_back(im.named("perm", int_list(*perm)));
    // The output's shape, where ONNX's inference had none (its data
    // propagation stops at some Reshape targets computed from shapes) and the
    // input's is known: for what reads it (a Reshape with -1 in its target).
    const std::optional<Shape> in = im.static_shape(n.input(0));
    if (in && !im.static_shape(n.output(0))) {
        const auto rank = static_cast<int64_t>(in->size());
        std::vector<int64_t> p = perm.value_or(std::vector<int64_t>{});
        if (!perm)
            for (int64_t a = rank - 1; a >= 0; --a) p.push_back(a);
        Shape out;
        std::vector<bool> seen(in->size(), false);
        for (int64_t a : p) {  // a wrong perm is left to validation, which names it
            if (static_cast<int64_t>(p.size()) != rank || a < 0 || a >= rank || seen[static_cast<size_t>(a)]) break;
            seen[static_cast<size_t>(a)] = true;
            out.push_back((*in)[static_cast<size_t>(a)]);
        }
        if (static_cast<int64_t>(out.size()) == rank) im.value_slot(n.output(0)).shape = std::move(out);
    }
    im.bind(n.output(0), im.add(OpKind::Transpose, *ins, std::move(attrs)));
}

// Reshape, Flatten, Squeeze, Unsqueeze and Expand (to a shape of the same
// element count): a reshape to the output's static shape, as ONNX's shape
// inference or the folded shape input gives it.
void reshape_like(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    // The target is checked whenever it can be told (a count that differs from
    // the input's, or wraps, is refused here), then the static shape taken.
    std::string why;
    std::optional<Shape> target = onnx_fold::reshape_target(
        n, im.static_shape(n.input(0)), n.input_size() > 1 ? im.folded(n.input(1)) : nullptr, im.opset(), why);
    if (!why.empty()) return im.fail(n, why);
    std::optional<Shape> out = target ? target : im.static_shape(n.output(0));
    if (!out) return im.fail(n, "the shape of its output '" + n.output(0) + "' is not static");
    im.value_slot(n.output(0)).shape = out;  // for what reads it, where ONNX's inference had none
    auto in = im.static_shape(n.input(0));
    if (n.op_type() == "Expand") {
        if (!in) return im.fail(n, "the shape of its input is not static");
        // Expand broadcasts: multiply by ones of the target shape.
        const Value* v = im.value(n.input(0));
        const DType t = v && v->dtype ? *v->dtype : DType::F32;
        const std::optional<int64_t> in_count = onnx_fold::numel(*in), out_count = onnx_fold::numel(*out);
        if (!in_count || !out_count) return im.fail(n, "its input " + shape_string(*in) + " or output " +
                                                           shape_string(*out) + " has too many elements");
        if (*in_count == *out_count) {
            im.bind(n.output(0), im.add(OpKind::Reshape, *ins, {im.named("shape", int_list(*out))}));
            return;
        }
        if (t == DType::Bool) return im.fail(n, "expanding a bool tensor is not supported");
        std::vector<NamedAttr> attrs{im.named("shape", int_list(*out)), im.named("dtype", Attr::ident(dtype_name(t)))};
        NodeId ones = im.add(OpKind::Ones, {}, std::move(attrs));
        im.bind(n.output(0), im.add("mul", {(*ins)[0], ones}));
        return;
    }
    im.bind(n.output(0), im.add(OpKind::Reshape, *ins, {im.named("shape", int_list(*out))}));
}

void cast(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    auto to = dtype_of(static_cast<int32_t>(attr_int(n, "to", 0)));
    if (!to) return im.fail(n, "cast to " + onnx_type_name(static_cast<int32_t>(attr_int(n, "to", 0))) +
                                " is not supported (f32, f64, i32, i64, bool are)");
    im.bind(n.output(0), im.add(OpKind::Cast, *ins, {im.named("dtype", Attr::ident(dtype_name(*to)))}));
}

void concat(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, n.input_size());
    if (!ins) return;
    // Concat-1 and -3 defaulted axis to 1; from opset 4 it is required.
    const int64_t axis = attr_int(n, "axis", im.opset() < 4 ? 1 : 0);
    im.bind(n.output(0), im.add(OpKind::Concat, *ins, {im.named("axis", Attr::integer(axis))}));
}

void reduce(Importer& im, const onnx::NodeProto& n) {
    static const std::map<std::string, std::string> ops{{"ReduceSum", "reduce_sum"},   {"ReduceMax", "reduce_max"},
                                                        {"ReduceMean", "reduce_mean"}, {"ReduceMin", "reduce_min"},
                                                        {"ReduceProd", "reduce_prod"}};
    auto it = ops.find(n.op_type());
    if (it == ops.end() || !im.have_op(it->second)) return im.fail(n, "this reduction is not supported");
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    std::optional<std::vector<int64_t>> axes = attr_ints(n, "axes");
    const bool axes_input = n.op_type() == "ReduceSum" && im.opset() >= 13;
    if (axes_input && n.input_size() > 1 && !n.input(1).empty()) {
        const HostValue* hv = im.const_input(n, 1, "axes");
        if (!hv) return;
        axes = onnx_fold::ints(*hv);
    }
    std::vector<NamedAttr> attrs;
    if (axes && !axes->empty()) attrs.push_back(im.named("axes", int_list(*axes)));
    else if (axes_input && attr_int(n, "noop_with_empty_axes", 0)) {
        im.bind(n.output(0), im.add(OpKind::Identity, *ins));
        return;
    }
    attrs.push_back(im.named("keepdims", Attr::boolean(attr_int(n, "keepdims", 1) != 0)));
    im.bind(n.output(0), im.add(it->second.c_str(), *ins, std::move(attrs)));
}

void arg_reduce(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    std::vector<NamedAttr> attrs{im.named("axis", Attr::integer(attr_int(n, "axis", 0))),
                                 im.named("keepdims", Attr::boolean(attr_int(n, "keepdims", 1) != 0))};
    if (attr_int(n, "select_last_index", 0)) attrs.push_back(im.named("select_last_index", Attr::boolean(true)));
    im.bind(n.output(0), im.add(n.op_type() == "ArgMax" ? "argmax" : "argmin", *ins, std::move(attrs)));
}

// Softmax/LogSoftmax: from opset 13 along one axis (default -1); before,
// over the input coerced to 2-D at `axis` (default 1).
void softmax(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    const char* op = n.op_type() == "Softmax" ? "softmax" : "log_softmax";
    if (!im.have_op(op)) return im.fail(n, "not supported by this build");
    if (im.opset() >= 13) {
        im.bind(n.output(0), im.add(op, *ins, {im.named("axis", Attr::integer(attr_int(n, "axis", -1)))}));
        return;
    }
    auto shape = im.static_shape(n.input(0));
    if (!shape) return im.fail(n, "the shape of its input is not static");
    const auto rank = static_cast<int64_t>(shape->size());
    int64_t axis = attr_int(n, "axis", 1);
    if (axis < 0) axis += rank;
    if (axis == rank - 1 || rank == 0) {
        im.bind(n.output(0), im.add(op, *ins, {im.named("axis", Attr::integer(-1))}));
        return;
    }
    std::string why;
    if (!onnx_fold::element_count(*shape, why)) return im.fail(n, "its input: " + why);
    int64_t outer = 1, inner = 1;  // each at most the (checked) element count
    for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : inner) *= (*shape)[static_cast<size_t>(d)];
    NodeId flat = im.add(OpKind::Reshape, *ins, {im.named("shape", int_list({outer, inner}))});
    NodeId s = im.add(op, {flat}, {im.named("axis", Attr::integer(-1))});
    im.bind(n.output(0), im.add(OpKind::Reshape, {s}, {im.named("shape", int_list(*shape))}));
}

void activation(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    const std::string& op = n.op_type();
    std::vector<NamedAttr> attrs;
    if (op == "LeakyRelu") {
        attrs.push_back(im.named("alpha", Attr::number(attr_float(n, "alpha", 0.01f))));
        im.bind(n.output(0), im.add("leaky_relu", *ins, std::move(attrs)));
    } else if (op == "Elu") {
        attrs.push_back(im.named("alpha", Attr::number(attr_float(n, "alpha", 1.0f))));
        im.bind(n.output(0), im.add("elu", *ins, std::move(attrs)));
    } else {
        attrs.push_back(im.named("alpha", Attr::number(attr_float(n, "alpha", 1.67326319217681884765625f))));
        attrs.push_back(im.named("gamma", Attr::number(attr_float(n, "gamma", 1.05070102214813232421875f))));
        im.bind(n.output(0), im.add("selu", *ins, std::move(attrs)));
    }
}

// Gelu (opset 20): approximate "none" (erf) or "tanh", as graphrun's gelu.
void gelu(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    std::string approximate = "none";
    if (const auto* a = find_attr(n, "approximate")) approximate = a->s();
    if (approximate != "none" && approximate != "tanh")
        return im.fail(n, "approximate must be \"none\" or \"tanh\", not \"" + approximate + "\"");
    std::vector<NamedAttr> attrs;
    attrs.push_back(im.named("approximate", Attr::string(approximate)));
    im.bind(n.output(0), im.add("gelu", *ins, std::move(attrs)));
}

void clip(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    std::vector<NamedAttr> attrs;
    if (im.opset() < 11) {
        if (const auto* a = find_attr(n, "min")) attrs.push_back(im.named("min", Attr::number(a->f())));
        if (const auto* a = find_attr(n, "max")) attrs.push_back(im.named("max", Attr::number(a->f())));
    } else {
        // Constant bounds are clip's attributes; a bound fed at run time is
        // maximum(x, min) then minimum(.., max), the same values.
        const char* names[] = {"min", "max"};
        NodeId y = (*ins)[0];
        bool fed = false;
        for (int i = 1; i <= 2; ++i) {
            if (i >= n.input_size() || n.input(i).empty()) continue;
            if (const HostValue* hv = im.folded(n.input(i))) {
                attrs.push_back(im.named(names[i - 1], Attr::number(onnx_fold::doubles(*hv).at(0))));
                continue;
            }
            auto bound = im.nodes_of(n, i + 1);
            if (!bound) return;
            fed = true;
            y = im.add(i == 1 ? "maximum" : "minimum", {y, bound->back()});
        }
        if (fed && attrs.empty()) return im.bind(n.output(0), y);
        (*ins)[0] = y;
    }
    im.bind(n.output(0), im.add("clip", *ins, std::move(attrs)));
}
}  // namespace

void add_core_onnx_ops(OnnxOpTable& t) {
    // ONNX op -> graphrun op of the same meaning (broadcasting like NumPy).
    static const std::map<std::string, std::string> elementwise_ops{
        {"Add", "add"}, {"Sub", "sub"}, {"Mul", "mul"}, {"Div", "div"}, {"Pow", "pow"},
        {"Neg", "neg"}, {"Abs", "abs"}, {"Relu", "relu"}, {"Exp", "exp"}, {"Log", "log"},
        {"Sqrt", "sqrt"}, {"Tanh", "tanh"}, {"Sigmoid", "sigmoid"}, {"Sin", "sin"}, {"Cos", "cos"},
        {"Equal", "equal"}, {"Less", "less"}, {"LessOrEqual", "less_equal"}, {"Greater", "greater"},
        {"GreaterOrEqual", "greater_equal"}, {"And", "logical_and"}, {"Or", "logical_or"},
        {"Xor", "logical_xor"}, {"Not", "logical_not"}, {"Where", "where"}, {"Floor", "floor"},
        {"Ceil", "ceil"}, {"Round", "round"}, {"Erf", "erf"}, {"Reciprocal", "reciprocal"},
        {"Sign", "sign"}, {"Softplus", "softplus"}};
    for (const auto& [onnx_op, op] : elementwise_ops) {
        const std::string g = op;
        t[onnx_op] = {op.c_str(), [g](Importer& im, const onnx::NodeProto& n) { elementwise(im, n, g); }};
    }
    auto set = [&](const char* name, const char* needs, void (*fn)(Importer&, const onnx::NodeProto&)) {
        t[name] = {needs, fn};
    };
    for (const char* op : {"Identity", "Dropout"}) set(op, nullptr, identity);
    for (const char* op : {"Max", "Min", "Sum", "Mean"}) set(op, nullptr, variadic);
    set("MatMul", nullptr, matmul);
    set("Transpose", nullptr, transpose);
    for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Expand"}) set(op, nullptr, reshape_like);
    set("Cast", nullptr, cast);
    set("Concat", nullptr, concat);
    for (const char* op : {"ReduceSum", "ReduceMax", "ReduceMean"}) set(op, nullptr, reduce);
    set("ReduceMin", "reduce_min", reduce);
    set("ReduceProd", "reduce_prod", reduce);
    set("ArgMax", "argmax", arg_reduce);
    set("ArgMin", "argmin", arg_reduce);
    set("Softmax", nullptr, softmax);
    set("LogSoftmax", "log_softmax", softmax);
    set("LeakyRelu", "leaky_relu", activation);
    set("Elu", "elu", activation);
    set("Selu", "selu", activation);
    set("Clip", "clip", clip);
    set("Gelu", "gelu", gelu);  // opset 20
    // If whose condition folds: the branch it takes, imported in its place.
    set("If", nullptr, [](Importer& im, const onnx::NodeProto& n) { im.import_if(n); });
    // Loop whose trip count folds: unrolled.
    set("Loop", nullptr, [](Importer& im, const onnx::NodeProto& n) { im.import_loop(n); });
    // Made at load only (a Constant's value, Shape from the static shape);
    // later files give the others a mapping (onnx_ops_shape.cpp, ...).
    for (const char* op : {"Constant", "Shape", "Gather", "Slice", "ConstantOfShape", "Range", "Mod"})
        t[op] = {nullptr, {}};
}

const OnnxOpTable& onnx_op_table() {
    static const OnnxOpTable table = [] {
        OnnxOpTable t;
        add_core_onnx_ops(t);
        add_shape_onnx_ops(t);
        add_norm_onnx_ops(t);
        add_more_onnx_ops(t);
        add_more2_onnx_ops(t);
        add_quant_onnx_ops(t);
        add_elements_onnx_ops(t);
        add_index_onnx_ops(t);
        add_rnn_onnx_ops(t);
        add_resize_onnx_ops(t);
        add_conv_onnx_ops(t);
        return t;
    }();
    return table;
}

}  // namespace graphrun::onnx_import
