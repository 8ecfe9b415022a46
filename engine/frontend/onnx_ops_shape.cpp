// The ONNX mappings of the shape ops (onnx_ops.h): Slice, Gather, Expand,
// Split (one graphrun split node per output, its index attribute naming the
// part), Pad, Tile, Squeeze, Unsqueeze, Flatten. The index vectors ONNX
// passes as inputs from opset 10-13 on (starts, axes, pads, repeats, shape,
// split) are taken as attributes when they are constants; those of Slice
// and Pad that are not become run-time inputs of graphrun's slice/pad, with
// the output's static shape as the attribute `shape` (checked when they
// are fed). Nodes whose inputs are all constants are folded at load before
// these run.
#include <cstring>
#include <string>
#include <vector>

#include "engine/frontend/onnx_importer.h"

namespace graphrun::onnx_import {

namespace {

// An optional constant index input (absent: nullopt, and `ok` stays true).
std::optional<std::vector<int64_t>> ints_input(Importer& im, const onnx::NodeProto& n, int i, const char* what,
                                               bool& ok) {
    if (i >= n.input_size() || n.input(i).empty()) return std::nullopt;
    const HostValue* hv = im.const_input(n, i, what);
    if (!hv) {
        ok = false;
        return std::nullopt;
    }
    return onnx_fold::ints(*hv);
}

// Whether input i is given but not known at load (a graph input fed at run
// time): the mappers that can then read what they need from the static
// shapes ONNX's inference gives do so.
bool dynamic_input(Importer& im, const onnx::NodeProto& n, int i) {
    return i < n.input_size() && !n.input(i).empty() && !im.folded(n.input(i));
}

// The static shape of the node's output k, or a failure naming it.
std::optional<Shape> output_shape(Importer& im, const onnx::NodeProto& n, int k, const char* what) {
    auto s = im.static_shape(n.output(k));
    if (!s)
        im.fail(n, std::string("its ") + what + " input '" + n.input(1) +
                       "' is not a constant, and the shape of its output '" + n.output(k) + "' is not static");
    return s;
}

// A constant i64 vector node (a run-time form's input that ONNX left out).
NodeId i64_node(Importer& im, const std::vector<int64_t>& v) {
    HostValue hv;
    hv.dtype = DType::I64;
    hv.shape = {static_cast<int64_t>(v.size())};
    hv.bytes.resize(v.size() * sizeof(int64_t));
    if (!v.empty()) std::memcpy(hv.bytes.data(), v.data(), hv.bytes.size());
    return im.const_node(hv, im.node_loc());
}

// Whether any of inputs first..last is given and not known at load.
bool any_dynamic(Importer& im, const onnx::NodeProto& n, int first, int last) {
    for (int i = first; i <= last; ++i)
        if (dynamic_input(im, n, i)) return true;
    return false;
}

// slice(x, starts, ends[, axes[, steps]]) with the vectors fed at run time.
void slice_at_run(Importer& im, const onnx::NodeProto& n) {
    auto out = output_shape(im, n, 0, "starts/ends/axes/steps");
    if (!out) return;
    std::vector<NodeId> ins;
    for (int i = 0; i < 3; ++i) {
        auto id = im.node_of(n.input(i));
        if (!id) return;
        ins.push_back(*id);
    }
    const bool has_axes = n.input_size() > 3 && !n.input(3).empty();
    const bool has_steps = n.input_size() > 4 && !n.input(4).empty();
    if (has_axes) {
        auto id = im.node_of(n.input(3));
        if (!id) return;
        ins.push_back(*id);
    } else if (has_steps) {  // axes left out: 0..len(starts)-1
        auto len = im.static_shape(n.input(1));
        if (!len || len->size() != 1) return im.fail(n, "the length of its starts input is not static");
        std::vector<int64_t> axes;
        for (int64_t k = 0; k < (*len)[0]; ++k) axes.push_back(k);
        ins.push_back(i64_node(im, axes));
    }
    if (has_steps) {
        auto id = im.node_of(n.input(4));
        if (!id) return;
        ins.push_back(*id);
    }
    im.bind(n.output(0), im.add(OpKind::Slice, std::move(ins), {im.named("shape", int_list(*out))}));
}

void slice(Importer& im, const onnx::NodeProto& n) {
    if (im.opset() >= 10 && n.input_size() >= 3 && any_dynamic(im, n, 1, 4)) return slice_at_run(im, n);
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    std::optional<std::vector<int64_t>> starts, ends, axes, steps;
    if (im.opset() < 10) {
        starts = attr_ints(n, "starts");
        ends = attr_ints(n, "ends");
        axes = attr_ints(n, "axes");
    } else {
        bool ok = true;
        starts = ints_input(im, n, 1, "starts", ok);
        ends = ints_input(im, n, 2, "ends", ok);
        axes = ints_input(im, n, 3, "axes", ok);
        steps = ints_input(im, n, 4, "steps", ok);
        if (!ok) return;
    }
    if (!starts || !ends) return im.fail(n, "it needs starts and ends");
    std::vector<NamedAttr> attrs{im.named("starts", int_list(*starts)), im.named("ends", int_list(*ends))};
    if (axes) attrs.push_back(im.named("axes", int_list(*axes)));
    if (steps) attrs.push_back(im.named("steps", int_list(*steps)));
    im.bind(n.output(0), im.add(OpKind::Slice, *ins, std::move(attrs)));
}

void gather(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 2);
    if (!ins || ins->size() != 2) return;
    im.bind(n.output(0), im.add(OpKind::Gather, *ins, {im.named("axis", Attr::integer(attr_int(n, "axis", 0)))}));
}

void expand(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    std::vector<int64_t> target;
    if (dynamic_input(im, n, 1)) {  // the output's shape is x broadcast with the target: expand to it
        auto out = output_shape(im, n, 0, "shape");
        if (!out) return;
        target = *out;
    } else {
        const HostValue* shape = im.const_input(n, 1, "shape");
        if (!shape) return;
        target = onnx_fold::ints(*shape);
    }
    im.bind(n.output(0), im.add(OpKind::Expand, *ins, {im.named("shape", int_list(target))}));
}

void tile(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    std::vector<int64_t> reps;
    if (dynamic_input(im, n, 1)) {  // repeats = output / input, axis by axis
        auto out = output_shape(im, n, 0, "repeats");
        auto in = im.static_shape(n.input(0));
        if (!out) return;
        if (!in || in->size() != out->size()) return im.fail(n, "the shape of its input is not static");
        for (size_t k = 0; k < in->size(); ++k) reps.push_back((*in)[k] == 0 ? 1 : (*out)[k] / (*in)[k]);
    } else {
        const HostValue* repeats = im.const_input(n, 1, "repeats");
        if (!repeats) return;
        reps = onnx_fold::ints(*repeats);
    }
    im.bind(n.output(0), im.add(OpKind::Tile, *ins, {im.named("repeats", int_list(reps))}));
}

// Squeeze and Unsqueeze: axes an attribute before opset 13, an input from it on.
void squeeze(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    const bool un = n.op_type() == "Unsqueeze";
    std::optional<std::vector<int64_t>> axes;
    if (im.opset() < 13) {
        axes = attr_ints(n, "axes");
    } else if (dynamic_input(im, n, 1)) {  // a reshape to the output's static shape does the same
        auto out = output_shape(im, n, 0, "axes");
        if (!out) return;
        im.bind(n.output(0), im.add(OpKind::Reshape, *ins, {im.named("shape", int_list(*out))}));
        return;
    } else {
        bool ok = true;
        axes = ints_input(im, n, 1, "axes", ok);
        if (!ok) return;
    }
    std::vector<NamedAttr> attrs;
    if (axes) attrs.push_back(im.named("axes", int_list(*axes)));
    else if (un) return im.fail(n, "it needs axes");
    im.bind(n.output(0), im.add(un ? OpKind::Unsqueeze : OpKind::Squeeze, *ins, std::move(attrs)));
}

void flatten(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    im.bind(n.output(0), im.add(OpKind::Flatten, *ins, {im.named("axis", Attr::integer(attr_int(n, "axis", 1)))}));
}

// Split: one graphrun split node per output (index = the output's position),
// by the sizes (an attribute before opset 13, an input from it on) or into as
// many equal parts as there are outputs.
void split(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    std::optional<std::vector<int64_t>> sizes;
    if (im.opset() < 13) {
        sizes = attr_ints(n, "split");
        bool ok = true;
        if (!sizes && n.input_size() > 1) sizes = ints_input(im, n, 1, "split", ok);  // opset 2..10 allowed an input
        if (!ok) return;
    } else if (dynamic_input(im, n, 1)) {  // the sizes are the outputs' lengths along the axis
        auto in = im.static_shape(n.input(0));
        if (!in) return im.fail(n, "the shape of its input is not static");
        int64_t axis = attr_int(n, "axis", 0);
        if (axis < 0) axis += static_cast<int64_t>(in->size());
        sizes.emplace();
        for (int k = 0; k < n.output_size(); ++k) {
            auto out = output_shape(im, n, k, "split");
            if (!out) return;
            if (axis < 0 || axis >= static_cast<int64_t>(out->size())) return im.fail(n, "its axis is out of range");
            sizes->push_back((*out)[static_cast<size_t>(axis)]);
        }
    } else {
        bool ok = true;
        sizes = ints_input(im, n, 1, "split", ok);
        if (!ok) return;
    }
    if (sizes && static_cast<int>(sizes->size()) != n.output_size())
        return im.fail(n, "split has " + std::to_string(sizes->size()) + " sizes for " +
                              std::to_string(n.output_size()) + " outputs");
    const int64_t axis = attr_int(n, "axis", 0);
    for (int i = 0; i < n.output_size(); ++i) {
        if (n.output(i).empty()) continue;
        std::vector<NamedAttr> attrs{im.named("index", Attr::integer(i)), im.named("axis", Attr::integer(axis))};
        if (sizes)
            attrs.push_back(im.named("sizes", int_list(*sizes)));
        else
            attrs.push_back(im.named("parts", Attr::integer(n.output_size())));
        im.bind(n.output(i), im.add(OpKind::Split, *ins, std::move(attrs)));
    }
}

// pad(x, pads[, constant[, axes]]) with pads, the constant or axes fed at
// run time (a left-out constant: a zero of x's dtype, when axes follow).
void pad_at_run(Importer& im, const onnx::NodeProto& n, const std::string& mode, DType t) {
    auto out = output_shape(im, n, 0, "pads/constant_value/axes");
    if (!out) return;
    std::vector<NodeId> ins;
    for (int i = 0; i < 2; ++i) {
        auto id = im.node_of(n.input(i));
        if (!id) return;
        ins.push_back(*id);
    }
    const bool has_value = mode == "constant" && n.input_size() > 2 && !n.input(2).empty();
    const bool has_axes = n.input_size() > 3 && !n.input(3).empty();
    if (has_value) {
        auto id = im.node_of(n.input(2));
        if (!id) return;
        ins.push_back(*id);
    } else if (has_axes) {
        ins.push_back(im.scalar(0, t));
    }
    if (has_axes) {
        auto id = im.node_of(n.input(3));
        if (!id) return;
        ins.push_back(*id);
    }
    std::vector<NamedAttr> attrs{im.named("shape", int_list(*out))};
    if (mode != "constant") attrs.push_back(im.named("mode", Attr::string(mode)));
    im.bind(n.output(0), im.add(OpKind::Pad, std::move(ins), std::move(attrs)));
}

// Pad: pads and the value attributes before opset 11, inputs from it on.
void pad(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    std::string mode = "constant";
    if (const auto* a = find_attr(n, "mode")) mode = a->s();
    if (mode != "constant" && mode != "reflect" && mode != "edge")
        return im.fail(n, "mode \"" + mode + "\" is not supported (constant, reflect and edge are)");
    std::optional<std::vector<int64_t>> pads, axes;
    std::optional<Attr> value;
    const Value* x = im.value(n.input(0));
    const DType t = x && x->dtype ? *x->dtype : DType::F32;
    if (im.opset() >= 11 && n.input_size() >= 2 && any_dynamic(im, n, 1, 3)) return pad_at_run(im, n, mode, t);
    if (im.opset() < 11) {
        pads = attr_ints(n, im.opset() < 2 ? "paddings" : "pads");
        if (const auto* a = find_attr(n, "value")) value = Attr::number(a->f());
    } else {
        bool ok = true;
        pads = ints_input(im, n, 1, "pads", ok);
        axes = ints_input(im, n, 3, "axes", ok);
        if (!ok) return;
        if (n.input_size() > 2 && !n.input(2).empty()) {
            const HostValue* hv = im.const_input(n, 2, "constant_value");
            if (!hv) return;
            if (t == DType::Bool) value = Attr::boolean(onnx_fold::ints(*hv).at(0) != 0);
            else if (is_float(t)) value = Attr::number(onnx_fold::doubles(*hv).at(0));
            else value = Attr::integer(onnx_fold::ints(*hv).at(0));
        }
    }
    if (!pads) return im.fail(n, "it needs pads");
    std::vector<NamedAttr> attrs{im.named("pads", int_list(*pads))};
    if (mode != "constant") attrs.push_back(im.named("mode", Attr::string(mode)));
    else if (value) attrs.push_back(im.named("constant_value", *value));
    if (axes) attrs.push_back(im.named("axes", int_list(*axes)));
    im.bind(n.output(0), im.add(OpKind::Pad, *ins, std::move(attrs)));
}

// A scalar of `t` as a creation op's number attribute (fill's value, range's bounds).
Attr number_attr(const HostValue& v, DType t) {
    if (t == DType::Bool) return Attr::boolean(onnx_fold::ints(v).at(0) != 0);
    if (is_float(t)) return Attr::number(onnx_fold::doubles(v).at(0));
    return Attr::integer(onnx_fold::ints(v).at(0));
}

// ConstantOfShape: a fill of its (constant) shape with its value's dtype and
// value (f32 0 by default). Folded at load by the engine's kernels where it
// is small enough; a bigger one fills at run time, counted like any value.
void constant_of_shape(Importer& im, const onnx::NodeProto& n) {
    const HostValue* s = im.const_input(n, 0, "shape");
    if (!s) return;
    if (!is_int(s->dtype) || s->shape.size() != 1)
        return im.fail(n, "its shape input must be a 1-D integer tensor, got " + type_string(s->dtype, s->shape));
    const Shape shape = onnx_fold::ints(*s);
    for (int64_t d : shape)
        if (d < 0) return im.fail(n, "its shape " + shape_string(shape) + " has a negative dimension");
    std::string why;
    if (!onnx_fold::element_count(shape, why)) return im.fail(n, why);
    HostValue value = onnx_fold::scalar(0, DType::F32);
    if (const auto* a = find_attr(n, "value")) {
        auto v = tensor_value(a->t(), why);
        if (!v) return im.fail(n, why);
        if (v->bytes.size() != dtype_size(v->dtype))
            return im.fail(n, "its value has " + std::to_string(v->bytes.size() / dtype_size(v->dtype)) +
                                  " elements where it needs 1");
        value = std::move(*v);
    }
    im.bind(n.output(0), im.add(OpKind::Fill, {},
                                {im.named("shape", int_list(shape)), im.named("value", number_attr(value, value.dtype)),
                                 im.named("dtype", Attr::ident(dtype_name(value.dtype)))}));
}

// Range: numpy.arange of its three (constant) scalars, in their dtype; the
// element count is checked by graphrun's inference (range's).
void range(Importer& im, const onnx::NodeProto& n) {
    const char* names[3] = {"start", "limit", "delta"};
    const HostValue* v[3];
    for (int i = 0; i < 3; ++i) {
        v[i] = im.const_input(n, i, names[i]);
        if (!v[i]) {
            if (i >= n.input_size() || n.input(i).empty()) im.fail(n, std::string("it has no ") + names[i] + " input");
            return;  // else const_input said why
        }
        if (v[i]->bytes.size() != dtype_size(v[i]->dtype))
            return im.fail(n, std::string("its ") + names[i] + " must hold one element, got " +
                                  type_string(v[i]->dtype, v[i]->shape));
    }
    const DType t = v[0]->dtype;
    if (v[1]->dtype != t || v[2]->dtype != t)
        return im.fail(n, "its start, limit and delta must have one dtype, got " + std::string(dtype_name(t)) + ", " +
                              dtype_name(v[1]->dtype) + " and " + dtype_name(v[2]->dtype));
    im.bind(n.output(0), im.add(OpKind::Range, {},
                                {im.named("start", number_attr(*v[0], t)), im.named("limit", number_attr(*v[1], t)),
                                 im.named("delta", number_attr(*v[2], t)), im.named("dtype", Attr::ident(dtype_name(t)))}));
}

}  // namespace

void add_shape_onnx_ops(OnnxOpTable& t) {
    t["ConstantOfShape"] = {"fill", constant_of_shape};
    t["Range"] = {"range", range};
    t["Slice"] = {"slice", slice};
    t["Gather"] = {"gather", gather};
    t["Expand"] = {"expand", expand};
    t["Tile"] = {"tile", tile};
    t["Squeeze"] = {"squeeze", squeeze};
    t["Unsqueeze"] = {"unsqueeze", squeeze};
    t["Flatten"] = {"flatten", flatten};
    t["Split"] = {"split", split};
    t["Pad"] = {"pad", pad};
    t["Size"] = {nullptr, {}};  // folded at load from the static shape (onnx_fold.cpp), as Shape
}

}  // namespace graphrun::onnx_import
