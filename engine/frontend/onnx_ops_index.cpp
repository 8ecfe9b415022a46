// TopK, ScatterElements and ScatterND (issue 27 item 6) on graphrun's index ops
// (engine/kernels/cpu/index_ops.cpp): top_k once per output (values, indices),
// scatter_elements and scatter_nd as they are. ScatterND on constants is still
// folded at load (onnx_fold.cpp); these run what depends on the data. TopK's K
// is a constant, or fed at run time where the output's shape is static (then
// checked against it when the graph runs).
#include <string>
#include <vector>

#include "engine/frontend/onnx_importer.h"

namespace graphrun::onnx_import {

namespace {

void top_k(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    int64_t k = 0;
    const int64_t axis = attr_int(n, "axis", -1);
    if (im.opset() < 10) {
        k = attr_int(n, "k", -1);
    } else if (n.input_size() > 1 && !n.input(1).empty() && !im.folded(n.input(1))) {
        // K fed at run time: k from the output's static shape, and K an
        // input that top_k checks against it when the graph runs.
        auto out = im.static_shape(n.output(0));
        if (!out)
            return im.fail(n, "its K input '" + n.input(1) +
                                  "' is not a constant, and the shape of its output '" + n.output(0) + "' is not static");
        const auto rank = static_cast<int64_t>(out->size());
        if (axis < -rank || axis >= rank) return im.fail(n, "its axis " + std::to_string(axis) + " is out of range");
        k = (*out)[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
        auto kin = im.nodes_of(n, 2);
        if (!kin) return;
        ins->push_back((*kin)[1]);
    } else {
        const HostValue* hv = im.const_input(n, 1, "K");
        if (!hv) return;
        const std::vector<int64_t> v = onnx_fold::ints(*hv);
        if (v.size() != 1) return im.fail(n, "its K must hold one value, not " + std::to_string(v.size()));
        k = v[0];
    }
    std::vector<NamedAttr> common{im.named("k", Attr::integer(k)),
                                  im.named("axis", Attr::integer(axis))};
    if (attr_int(n, "largest", 1) == 0) common.push_back(im.named("largest", Attr::boolean(false)));
    for (int i = 0; i < n.output_size() && i < 2; ++i) {
        if (n.output(i).empty()) continue;
        std::vector<NamedAttr> attrs = common;
        if (i == 1) attrs.push_back(im.named("indices", Attr::boolean(true)));
        im.bind(n.output(i), im.add(OpKind::TopK, *ins, std::move(attrs)));
    }
}

void scatter(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 3);
    if (!ins) return;
    if (ins->size() != 3) return im.fail(n, "it needs its data, indices and updates");
    const bool nd = n.op_type() == "ScatterND";
    std::vector<NamedAttr> attrs;
    if (!nd) attrs.push_back(im.named("axis", Attr::integer(attr_int(n, "axis", 0))));
    if (const auto* a = find_attr(n, "reduction"); a && !a->s().empty() && a->s() != "none")
        attrs.push_back(im.named("reduction", Attr::string(a->s())));
    im.bind(n.output(0), im.add(nd ? OpKind::ScatterND : OpKind::ScatterElements, *ins, std::move(attrs)));
}

}  // namespace

void add_index_onnx_ops(OnnxOpTable& t) {
    t["TopK"] = {"top_k", top_k};
    t["ScatterElements"] = {"scatter_elements", scatter};
    t["Scatter"] = {"scatter_elements", scatter};  // opset 9-10, deprecated: ScatterElements by another name
    t["ScatterND"] = {"scatter_nd", scatter};
}

}  // namespace graphrun::onnx_import
