// GatherElements, NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
// (issue 27 item 6). GatherElements is graphrun's gather_elements (an index
// outside [-len, len) stops the run naming its entry); the losses are
// composed of graphrun ops around it.
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "engine/frontend/onnx_importer.h"

namespace graphrun::onnx_import {

namespace {

// data gathered along `axis` at `idx` (integer, of shape `is`, the rank of
// data's `ds`): GatherElements. nullopt after im.fail.
std::optional<NodeId> gather_along(Importer& im, const onnx::NodeProto& n, NodeId data, const Shape& ds, NodeId idx,
                                   const Shape& is, int64_t axis) {
    const auto rank = static_cast<int64_t>(ds.size());
    if (rank == 0 || static_cast<int64_t>(is.size()) != rank) {
        im.fail(n, "its indices " + shape_string(is) + " must have the rank of its data " + shape_string(ds) +
                       " (at least 1)");
        return std::nullopt;
    }
    if (axis < -rank || axis >= rank) {
        im.fail(n, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
        return std::nullopt;
    }
    if (axis < 0) axis += rank;
    for (int64_t d = 0; d < rank; ++d)
        if (d != axis && is[static_cast<size_t>(d)] > ds[static_cast<size_t>(d)]) {
            im.fail(n, "its indices " + shape_string(is) + " are longer than its data " + shape_string(ds) +
                           " on axis " + std::to_string(d));
            return std::nullopt;
        }
    return im.add("gather_elements", {data, idx}, {im.named("axis", Attr::integer(axis))});
}

void gather_elements(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 2);
    if (!ins || ins->size() < 2) return im.fail(n, "needs data and indices");
    const std::optional<Shape> ds = im.static_shape(n.input(0)), is = im.static_shape(n.input(1));
    if (!ds || !is) return im.fail(n, "needs its data and indices of static shape");
    if (auto y = gather_along(im, n, (*ins)[0], *ds, (*ins)[1], *is, attr_int(n, "axis", 0))) im.bind(n.output(0), *y);
}

// NegativeLogLikelihoodLoss(input [N, C, d...], target [N, d...][, weight [C]]):
// loss = -input[n, target, d...] * weight[target], 0 where target is
// ignore_index; reduction none, sum, or mean (the sum over the summed weights
// of the targets not ignored), as ONNX's function body defines it. A target
// outside [0, C) that is not ignore_index stops the run (exit 1).
std::optional<NodeId> nll_of(Importer& im, const onnx::NodeProto& n, NodeId input, const Shape& in_shape, DType t,
                             NodeId target, int weight_input) {
    const std::optional<Shape> ts = im.static_shape(n.input(1));
    if (!ts) {
        im.fail(n, "needs its target of static shape");
        return std::nullopt;
    }
    if (in_shape.size() < 2 || ts->size() + 1 != in_shape.size()) {
        im.fail(n, "its input " + shape_string(in_shape) + " must be (N, C, d...) and its target " + shape_string(*ts) +
                       " (N, d...)");
        return std::nullopt;
    }
    const int64_t classes = in_shape[1];
    const auto* red = find_attr(n, "reduction");
    const std::string reduction = red ? red->s() : "mean";
    if (reduction != "mean" && reduction != "sum" && reduction != "none") {
        im.fail(n, "reduction must be none, sum or mean, not '" + reduction + "'");
        return std::nullopt;
    }
    auto i64 = [&](int64_t v) { return im.scalar(static_cast<double>(v), DType::I64); };
    NodeId k = im.add("cast", {target}, {im.named("dtype", Attr::ident("i64"))});
    std::optional<NodeId> keep;  // the targets not ignored
    if (const auto* ii = find_attr(n, "ignore_index")) {
        keep = im.add("not_equal", {k, i64(ii->i())});
        k = im.add("where", {*keep, k, i64(0)});
    }
    k = im.add("where", {im.add("less", {k, i64(0)}), i64(classes), k});  // not an index from the end: out of range
    Shape picked_shape = *ts;
    picked_shape.insert(picked_shape.begin() + 1, 1);
    auto picked = gather_along(im, n, input, in_shape,
                               im.add("reshape", {k}, {im.named("shape", int_list(picked_shape))}), picked_shape, 1);
    if (!picked) return std::nullopt;
    NodeId loss = im.add("neg", {im.add("reshape", {*picked}, {im.named("shape", int_list(*ts))})});
    std::optional<NodeId> w;
    if (weight_input < n.input_size() && !n.input(weight_input).empty()) {
        auto wn = im.node_of(n.input(weight_input));
        if (!wn) return std::nullopt;
        w = im.add("gather", {*wn, k}, {im.named("axis", Attr::integer(0))});
    }
    if (keep) {
        const NodeId kept = im.add("cast", {*keep}, {im.named("dtype", Attr::ident(dtype_name(t)))});
        w = w ? im.add("mul", {*w, kept}) : kept;
    }
    if (w) loss = im.add("mul", {loss, *w});
    auto total = [&](NodeId x) { return im.add("reduce_sum", {x}, {im.named("keepdims", Attr::boolean(false))}); };
    if (reduction == "none") return loss;
    if (reduction == "sum") return total(loss);
    if (!w) return im.add("reduce_mean", {loss}, {im.named("keepdims", Attr::boolean(false))});
    return im.add("div", {total(loss), total(*w)});
}

void nll_loss(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 2);
    if (!ins || ins->size() < 2) return im.fail(n, "needs input and target");
    const std::optional<Shape> s = im.static_shape(n.input(0));
    if (!s) return im.fail(n, "needs its input of static shape");
    if (auto y = nll_of(im, n, (*ins)[0], *s, dtype_of_value(im, n.input(0)), (*ins)[1], 2)) im.bind(n.output(0), *y);
}

// SoftmaxCrossEntropyLoss: log_softmax over the classes (axis 1), then the
// NLL above; the optional second output is the log_softmax.
void softmax_cross_entropy(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 2);
    if (!ins || ins->size() < 2) return im.fail(n, "needs scores and labels");
    const std::optional<Shape> s = im.static_shape(n.input(0));
    if (!s || s->size() < 2) return im.fail(n, "needs its scores (N, C, d...) of static shape");
    const NodeId log_prob = im.add("log_softmax", {(*ins)[0]}, {im.named("axis", Attr::integer(1))});
    auto y = nll_of(im, n, log_prob, *s, dtype_of_value(im, n.input(0)), (*ins)[1], 2);
    if (!y) return;
    im.bind(n.output(0), *y);
    if (n.output_size() > 1 && !n.output(1).empty()) im.bind(n.output(1), log_prob);
}

}  // namespace

void add_elements_onnx_ops(OnnxOpTable& t) {
    t["GatherElements"] = {"gather_elements", gather_elements};
    t["NegativeLogLikelihoodLoss"] = {"gather", nll_loss};
    t["SoftmaxCrossEntropyLoss"] = {"log_softmax", softmax_cross_entropy};
}

}  // namespace graphrun::onnx_import
