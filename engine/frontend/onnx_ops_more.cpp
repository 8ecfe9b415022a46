// ONNX ops that converted models use, each composed of graphrun ops that
// already run on the CPU and the GPU (onnx_ops.h): PRelu, HardSigmoid,
// HardSwish, Mish, ReduceL1/L2/SumSquare/LogSum/LogSumExp, CastLike,
// DepthToSpace, SpaceToDepth, InstanceNormalization, Trilu, Hardmax.
// ONNX semantics and attribute defaults; a composition keeps the op's
// values within the op's tolerance (tests/onnx_ops_more_test.py checks each
// against NumPy in float64).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "engine/frontend/onnx_importer.h"

namespace graphrun::onnx_import {

namespace {

// PRelu(x, slope) = x where x >= 0, else slope * x (slope broadcast to x).
void prelu(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 2);
    if (!ins || ins->size() < 2) return im.fail(n, "needs its input and its slope");
    const DType t = dtype_of_value(im, n.input(0));
    const NodeId x = (*ins)[0];
    const NodeId negative = im.add("less", {x, im.scalar(0, t)});
    im.bind(n.output(0), im.add("where", {negative, im.add("mul", {x, (*ins)[1]}), x}));
}

// alpha * x + beta clipped to [0, 1].
NodeId hard_sigmoid_of(Importer& im, NodeId x, DType t, double alpha, double beta) {
    const NodeId lin = im.add("add", {im.add("mul", {x, im.scalar(alpha, t)}), im.scalar(beta, t)});
    return im.add("minimum", {im.add("maximum", {lin, im.scalar(0, t)}), im.scalar(1, t)});
}

void hard_sigmoid(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    const DType t = dtype_of_value(im, n.input(0));
    im.bind(n.output(0), hard_sigmoid_of(im, (*ins)[0], t, attr_float(n, "alpha", 0.2f), attr_float(n, "beta", 0.5f)));
}

// HardSwish(x) = x * HardSigmoid(x) with alpha 1/6, beta 0.5.
void hard_swish(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    const DType t = dtype_of_value(im, n.input(0));
    const NodeId x = (*ins)[0];
    im.bind(n.output(0), im.add("mul", {x, hard_sigmoid_of(im, x, t, 1.0 / 6.0, 0.5)}));
}

// Mish(x) = x * tanh(softplus(x)).
void mish(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    const NodeId x = (*ins)[0];
    im.bind(n.output(0), im.add("mul", {x, im.add("tanh", {im.add("softplus", {x})})}));
}

// The axes of a reduction (attribute; ReduceSum's input from opset 13 is
// handled by reduce()), as a graphrun attribute list (empty: every axis).
std::vector<NamedAttr> reduce_attrs(Importer& im, const onnx::NodeProto& n, bool keepdims) {
    std::vector<NamedAttr> attrs;
    if (auto axes = attr_ints(n, "axes"); axes && !axes->empty()) attrs.push_back(im.named("axes", int_list(*axes)));
    attrs.push_back(im.named("keepdims", Attr::boolean(keepdims)));
    return attrs;
}

void reduce_composed(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    const NodeId x = (*ins)[0];
    const bool keep = attr_int(n, "keepdims", 1) != 0;
    const std::string& op = n.op_type();
    if (op == "ReduceL1") return im.bind(n.output(0), im.add("reduce_sum", {im.add("abs", {x})}, reduce_attrs(im, n, keep)));
    if (op == "ReduceSumSquare")
        return im.bind(n.output(0), im.add("reduce_sum", {im.add("square", {x})}, reduce_attrs(im, n, keep)));
    if (op == "ReduceL2")
        return im.bind(n.output(0),
                       im.add("sqrt", {im.add("reduce_sum", {im.add("square", {x})}, reduce_attrs(im, n, keep))}));
    if (op == "ReduceLogSum")
        return im.bind(n.output(0), im.add("log", {im.add("reduce_sum", {x}, reduce_attrs(im, n, keep))}));
    // ReduceLogSumExp, shifted by the maximum so that exp does not overflow:
    // log(sum(exp(x - m))) + m.
    const NodeId m = im.add("reduce_max", {x}, reduce_attrs(im, n, true));
    const NodeId s = im.add("reduce_sum", {im.add("exp", {im.add("sub", {x, m})})}, reduce_attrs(im, n, keep));
    const NodeId m_out = keep ? m : im.add("reduce_max", {x}, reduce_attrs(im, n, false));
    im.bind(n.output(0), im.add("add", {im.add("log", {s}), m_out}));
}

// CastLike(x, like): x cast to like's dtype.
void cast_like(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    const Value* like = n.input_size() > 1 ? im.value(n.input(1)) : nullptr;
    if (!like || !like->dtype) return im.fail(n, "the dtype of its second input is not known");
    im.bind(n.output(0), im.add("cast", *ins, {im.named("dtype", Attr::ident(dtype_name(*like->dtype)))}));
}

// DepthToSpace / SpaceToDepth: a reshape, a transpose and a reshape on NCHW.
void depth_space(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    const std::optional<Shape> s = im.static_shape(n.input(0));
    if (!s || s->size() != 4) return im.fail(n, "needs a 4-D input (N, C, H, W) of static shape");
    const int64_t b = attr_int(n, "blocksize", 0);
    if (b <= 0 || b > (int64_t{1} << 20)) return im.fail(n, "blocksize must be at least 1, not " + std::to_string(b));
    const int64_t N = (*s)[0], C = (*s)[1], H = (*s)[2], W = (*s)[3];
    Shape first, last;
    std::vector<int64_t> perm;
    if (n.op_type() == "DepthToSpace") {
        if (C % (b * b) != 0)
            return im.fail(n, "its " + std::to_string(C) + " channels are not a multiple of blocksize^2 = " +
                                  std::to_string(b * b));
        const auto* m = find_attr(n, "mode");
        const std::string mode = m ? m->s() : "DCR";
        if (mode == "DCR") {
            first = {N, b, b, C / (b * b), H, W};
            perm = {0, 3, 4, 1, 5, 2};
        } else if (mode == "CRD") {
            first = {N, C / (b * b), b, b, H, W};
            perm = {0, 1, 4, 2, 5, 3};
        } else {
            return im.fail(n, "mode must be DCR or CRD, not '" + mode + "'");
        }
        last = {N, C / (b * b), H * b, W * b};
    } else {
        if (H % b != 0 || W % b != 0)
            return im.fail(n, "its height " + std::to_string(H) + " and width " + std::to_string(W) +
                                  " are not multiples of blocksize " + std::to_string(b));
        first = {N, C, H / b, b, W / b, b};
        perm = {0, 3, 5, 1, 2, 4};
        last = {N, C * b * b, H / b, W / b};
    }
    const NodeId r = im.add("reshape", {(*ins)[0]}, {im.named("shape", int_list(first))});
    const NodeId t = im.add("transpose", {r}, {im.named("perm", int_list(perm))});
    im.bind(n.output(0), im.add("reshape", {t}, {im.named("shape", int_list(last))}));
}

// InstanceNormalization(x, scale[C], B[C]): each (n, c) normalized over its
// spatial axes, then scale[c] * . + B[c].
void instance_norm(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 3);
    if (!ins || ins->size() < 3) return im.fail(n, "needs its input, scale and B");
    const std::optional<Shape> s = im.static_shape(n.input(0));
    if (!s || s->size() < 3) return im.fail(n, "needs an input of static shape (N, C, D1, ...)");
    const DType t = dtype_of_value(im, n.input(0));
    std::vector<int64_t> axes;
    for (size_t a = 2; a < s->size(); ++a) axes.push_back(static_cast<int64_t>(a));
    auto mean_of = [&](NodeId v) {
        return im.add("reduce_mean", {v}, {im.named("axes", int_list(axes)), im.named("keepdims", Attr::boolean(true))});
    };
    const NodeId x = (*ins)[0];
    const NodeId d = im.add("sub", {x, mean_of(x)});
    const NodeId var = mean_of(im.add("square", {d}));
    const NodeId inv = im.add("rsqrt", {im.add("add", {var, im.scalar(attr_float(n, "epsilon", 1e-5f), t)})});
    Shape per_channel{(*s)[1]};
    per_channel.resize(s->size() - 1, 1);  // [C, 1, ...]: broadcast over N and the spatial axes
    auto channel = [&](NodeId v) { return im.add("reshape", {v}, {im.named("shape", int_list(per_channel))}); };
    const NodeId y = im.add("mul", {im.add("mul", {d, inv}), channel((*ins)[1])});
    im.bind(n.output(0), im.add("add", {y, channel((*ins)[2])}));
}

// Trilu(x, k = 0; upper = 1): the upper (or lower) triangle of the last two
// axes from diagonal k, the rest 0. The mask is a constant made here.
void trilu(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    const std::optional<Shape> s = im.static_shape(n.input(0));
    if (!s || s->size() < 2) return im.fail(n, "needs an input of at least 2 dimensions and static shape");
    int64_t k = 0;
    if (n.input_size() > 1 && !n.input(1).empty()) {
        const HostValue* hv = im.const_input(n, 1, "k");
        if (!hv) return;
        const std::vector<int64_t> v = onnx_fold::ints(*hv);
        if (v.size() != 1) return im.fail(n, "its k input must hold one value");
        k = v[0];
    }
    const bool upper = attr_int(n, "upper", 1) != 0;
    const int64_t rows = (*s)[s->size() - 2], cols = (*s)[s->size() - 1];
    if (rows > (int64_t{1} << 24) / std::max<int64_t>(cols, 1))
        return im.fail(n, "its last two axes (" + std::to_string(rows) + " x " + std::to_string(cols) +
                              ") are too large for its mask (at most 2^24 elements)");
    HostValue mask;
    mask.dtype = DType::Bool;
    mask.shape = {rows, cols};
    mask.bytes.resize(static_cast<size_t>(rows * cols));
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
            // k may be any int64: compared with j - i (both under 2^24), never added to i.
            const bool kept = upper ? j - i >= k : j - i <= k;
            mask.bytes[static_cast<size_t>(i * cols + j)] = kept;
        }
    const DType t = dtype_of_value(im, n.input(0));
    const NodeId m = im.const_node(std::move(mask), im.node_loc());
    im.bind(n.output(0), im.add("where", {m, (*ins)[0], im.scalar(0, t)}));
}

// Hardmax (opset 13 on: along one axis, default -1): 1 at the first maximum, 0 elsewhere.
void hardmax(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    if (im.opset() < 13) return im.fail(n, "before opset 13 (its input coerced to 2-D) is not supported");
    const std::optional<Shape> s = im.static_shape(n.input(0));
    if (!s || s->empty()) return im.fail(n, "needs an input of at least 1 dimension and static shape");
    const auto rank = static_cast<int64_t>(s->size());
    int64_t axis = attr_int(n, "axis", -1);
    if (axis < -rank || axis >= rank)
        return im.fail(n, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    if (axis < 0) axis += rank;
    const int64_t len = (*s)[static_cast<size_t>(axis)];
    if (len > (int64_t{1} << 24)) return im.fail(n, "its axis is longer than 2^24");
    const NodeId arg = im.add("argmax", *ins, {im.named("axis", Attr::integer(axis)), im.named("keepdims", Attr::boolean(true))});
    HostValue positions;  // 0 .. len-1 along the axis, 1 elsewhere
    positions.dtype = DType::I64;
    positions.shape.assign(s->size(), 1);
    positions.shape[static_cast<size_t>(axis)] = len;
    positions.bytes.resize(static_cast<size_t>(len) * 8);
    for (int64_t i = 0; i < len; ++i) std::memcpy(&positions.bytes[static_cast<size_t>(i) * 8], &i, 8);
    const NodeId pos = im.const_node(std::move(positions), im.node_loc());
    const DType t = dtype_of_value(im, n.input(0));
    im.bind(n.output(0), im.add("cast", {im.add("equal", {arg, pos})}, {im.named("dtype", Attr::ident(dtype_name(t)))}));
}

}  // namespace

void add_more_onnx_ops(OnnxOpTable& t) {
    t["PRelu"] = {"where", prelu};
    t["HardSigmoid"] = {"minimum", hard_sigmoid};
    t["HardSwish"] = {"minimum", hard_swish};
    t["Mish"] = {"softplus", mish};
    for (const char* op : {"ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"})
        t[op] = {"reduce_sum", reduce_composed};
    t["CastLike"] = {"cast", cast_like};
    t["DepthToSpace"] = {"transpose", depth_space};
    t["SpaceToDepth"] = {"transpose", depth_space};
    t["InstanceNormalization"] = {"rsqrt", instance_norm};
    t["Trilu"] = {"where", trilu};
    t["Hardmax"] = {"argmax", hardmax};
}

}  // namespace graphrun::onnx_import
