// The norm area's ONNX op mappings (onnx_ops.h): LayerNormalization (opset
// 17), BatchNormalization (inference mode, opsets 6-15) and Gemm, each onto
// its graphrun op (layer_norm, batch_norm, gemm).
#include <charconv>
#include <string>
#include <vector>

#include "engine/frontend/onnx_importer.h"

namespace graphrun::onnx_import {

namespace {

// An ONNX float attribute as the number a script shows: for an f32 op the
// shortest decimal that gives the same float (1e-05, not 9.99999974737875e-06;
// the kernels round it to f32 again), for an f64 op the float's exact value.
Attr float_attr(float f, DType t) {
    if (t != DType::F32) return Attr::number(static_cast<double>(f));
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, f);
    double d = static_cast<double>(f);
    if (ec == std::errc()) std::from_chars(buf, end, d);
    return Attr::number(d);
}

DType dtype_or_f32(Importer& im, const std::string& name) {
    const Value* v = im.value(name);
    return v && v->dtype ? *v->dtype : DType::F32;
}

// Input i of n as a node of dtype t (a cast where ONNX allows another float type).
std::optional<NodeId> input_as(Importer& im, const onnx::NodeProto& n, int i, DType t) {
    auto id = im.node_of(n.input(i));
    if (!id) return std::nullopt;
    if (dtype_or_f32(im, n.input(i)) == t) return id;
    return im.add(OpKind::Cast, {*id}, {im.named("dtype", Attr::ident(dtype_name(t)))});
}

bool has_output(const onnx::NodeProto& n, int i) {
    return i < n.output_size() && !n.output(i).empty();
}

// LayerNormalization: Y = (X - mean) / sqrt(var + epsilon) * Scale + B over
// the dimensions from axis on. The optional outputs Mean and InvStdDev (kept
// dimensions, stash_type's dtype) are built from reductions when asked for.
void layer_norm(Importer& im, const onnx::NodeProto& n) {
    if (n.input_size() < 2) return im.fail(n, "it needs X and Scale");
    const DType t = dtype_or_f32(im, n.input(0));
    std::vector<NodeId> ins;
    for (int i = 0; i < n.input_size() && i < 3; ++i) {
        if (n.input(i).empty()) continue;  // no B
        auto id = im.node_of(n.input(i));
        if (!id) return;
        ins.push_back(*id);
    }
    const int64_t axis = attr_int(n, "axis", -1);
    const float eps = attr_float(n, "epsilon", 1e-5f);
    std::vector<NamedAttr> attrs;
    if (axis != -1) attrs.push_back(im.named("axis", Attr::integer(axis)));
    if (eps != 1e-5f) attrs.push_back(im.named("epsilon", float_attr(eps, t)));
    im.bind(n.output(0), im.add(OpKind::LayerNorm, ins, std::move(attrs)));
    if (!has_output(n, 1) && !has_output(n, 2)) return;

    auto shape = im.static_shape(n.input(0));
    if (!shape) return im.fail(n, "its Mean/InvStdDev outputs need a static input shape");
    const auto r = static_cast<int64_t>(shape->size());
    const int64_t k = axis < 0 ? axis + r : axis;
    if (k < 0 || k >= r) return im.fail(n, "axis " + std::to_string(axis) + " is out of range for rank " +
                                               std::to_string(r));
    std::vector<int64_t> axes;
    for (int64_t d = k; d < r; ++d) axes.push_back(d);
    auto reduce_mean = [&](NodeId v) {
        return im.add(OpKind::ReduceMean, {v},
                      {im.named("axes", int_list(axes)), im.named("keepdims", Attr::boolean(true))});
    };
    // stash_type 1 (the default): float32 statistics; otherwise X's type.
    const DType u = attr_int(n, "stash_type", 1) == 1 ? DType::F32 : t;
    auto as_u = [&](NodeId v) {
        return u == t ? v : im.add(OpKind::Cast, {v}, {im.named("dtype", Attr::ident(dtype_name(u)))});
    };
    const NodeId mean = reduce_mean(ins[0]);
    if (has_output(n, 1)) im.bind(n.output(1), as_u(mean));
    if (!has_output(n, 2)) return;
    const NodeId dev = im.add(OpKind::Sub, {ins[0], mean});
    const NodeId var = reduce_mean(im.add(OpKind::Square, {dev}));
    const NodeId inv = im.add(OpKind::Rsqrt, {im.add(OpKind::Add, {var, im.scalar(eps, t)})});
    im.bind(n.output(2), as_u(inv));
}

// BatchNormalization in inference mode: Y = (X - mean) / sqrt(var + epsilon)
// * scale + B, per channel (axis 1).
void batch_norm(Importer& im, const onnx::NodeProto& n) {
    if (attr_int(n, "training_mode", 0) != 0)
        return im.fail(n, "training_mode=1 is not supported: graphrun runs BatchNormalization in inference mode "
                          "(with the given mean and var)");
    if (attr_int(n, "spatial", 1) == 0)
        return im.fail(n, "spatial=0 (statistics per activation) is not supported");
    if (attr_int(n, "is_test", 1) == 0 && im.opset() < 7)
        return im.fail(n, "is_test=0 (training) is not supported: graphrun runs BatchNormalization in inference "
                          "mode");
    for (int i = 1; i < n.output_size(); ++i)
        if (!n.output(i).empty())
            return im.fail(n, "its output " + std::to_string(i) + " ('" + n.output(i) +
                                  "', a training statistic) is not supported; only Y is");
    if (n.input_size() != 5) return im.fail(n, "it needs X, scale, B, mean and var");
    const DType t = dtype_or_f32(im, n.input(0));
    std::vector<NodeId> ins;
    for (int i = 0; i < 5; ++i) {
        auto id = input_as(im, n, i, t);
        if (!id) return;
        ins.push_back(*id);
    }
    const float eps = attr_float(n, "epsilon", 1e-5f);
    std::vector<NamedAttr> attrs;
    if (eps != 1e-5f) attrs.push_back(im.named("epsilon", float_attr(eps, t)));
    im.bind(n.output(0), im.add(OpKind::BatchNorm, ins, std::move(attrs)));
}

// Gemm: Y = alpha * A' @ B' + beta * C, C optional (opset 11) and broadcast.
void gemm(Importer& im, const onnx::NodeProto& n) {
    if (n.input_size() < 2) return im.fail(n, "it needs A and B");
    const DType t = dtype_or_f32(im, n.input(0));
    std::vector<NodeId> ins;
    for (int i = 0; i < n.input_size() && i < 3; ++i) {
        if (n.input(i).empty()) continue;  // no C
        auto id = im.node_of(n.input(i));
        if (!id) return;
        ins.push_back(*id);
    }
    std::vector<NamedAttr> attrs;
    const float alpha = attr_float(n, "alpha", 1.0f), beta = attr_float(n, "beta", 1.0f);
    if (alpha != 1.0f) attrs.push_back(im.named("alpha", float_attr(alpha, t)));
    if (beta != 1.0f && ins.size() == 3) attrs.push_back(im.named("beta", float_attr(beta, t)));
    if (attr_int(n, "transA", 0)) attrs.push_back(im.named("transpose_a", Attr::boolean(true)));
    if (attr_int(n, "transB", 0)) attrs.push_back(im.named("transpose_b", Attr::boolean(true)));
    im.bind(n.output(0), im.add(OpKind::Gemm, ins, std::move(attrs)));
}

}  // namespace

void add_norm_onnx_ops(OnnxOpTable& t) {
    t["LayerNormalization"] = {"layer_norm", layer_norm};
    t["BatchNormalization"] = {"batch_norm", batch_norm};
    t["Gemm"] = {"gemm", gemm};  // replaces the core's matmul + mul + add
}

}  // namespace graphrun::onnx_import
