// The conv area's ONNX op mappings (onnx_ops.h): Conv, ConvTranspose,
// MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool onto conv,
// conv_transpose, max_pool, avg_pool, global_avg_pool and global_max_pool,
// whose attributes keep ONNX's names and meaning (pads in ONNX's order:
// the beginnings of the axes, then their ends). Validation checks the values
// (engine/ir/conv_geometry.h); here only what graphrun lacks is refused.
#include <string>
#include <vector>

#include "engine/frontend/onnx_importer.h"

namespace graphrun::onnx_import {

namespace {

// Whether the input has a static shape of rank 3 or 4 (1-D or 2-D windows; global pools: any);
// false after fail().
bool spatial_rank_ok(Importer& im, const onnx::NodeProto& n, bool global) {
    auto shape = im.static_shape(n.input(0));
    if (!shape) {
        im.fail(n, "the shape of its input '" + n.input(0) + "' is not static");
        return false;
    }
    if (!global && shape->size() != 3 && shape->size() != 4) {
        im.fail(n, "its input has rank " + std::to_string(shape->size()) +
                       "; graphrun runs 1-D and 2-D windows (inputs of rank 3 or 4), not " +
                       std::to_string(static_cast<int64_t>(shape->size()) - 2) + "-D ones");
        return false;
    }
    return true;
}

// The window attributes ONNX and graphrun share, copied when present.
void copy_window_attrs(Importer& im, const onnx::NodeProto& n, std::vector<NamedAttr>& attrs,
                       std::initializer_list<const char*> lists) {
    for (const char* name : lists)
        if (auto v = attr_ints(n, name)) attrs.push_back(im.named(name, int_list(*v)));
    if (const auto* a = find_attr(n, "auto_pad"); a && !a->s().empty() && a->s() != "NOTSET")
        attrs.push_back(im.named("auto_pad", Attr::string(a->s())));
}

// kernel_shape, when a Conv/ConvTranspose gives it, must be the weight's.
bool kernel_matches_weight(Importer& im, const onnx::NodeProto& n) {
    auto ks = attr_ints(n, "kernel_shape");
    auto w = n.input_size() > 1 ? im.static_shape(n.input(1)) : std::nullopt;
    if (!ks || !w || w->size() < 2) return true;
    std::vector<int64_t> spatial(w->begin() + 2, w->end());
    if (*ks == spatial) return true;
    std::string a, b;
    for (int64_t v : *ks) a += (a.empty() ? "" : ",") + std::to_string(v);
    for (int64_t v : spatial) b += (b.empty() ? "" : ",") + std::to_string(v);
    im.fail(n, "kernel_shape [" + a + "] differs from the weight's kernel [" + b + "]");
    return false;
}

void conv(Importer& im, const onnx::NodeProto& n) {
    if (n.input_size() < 2) return im.fail(n, "it needs an input and a weight");
    if (!spatial_rank_ok(im, n, false) || !kernel_matches_weight(im, n)) return;
    auto ins = im.nodes_of(n, 3);
    if (!ins) return;
    const bool transpose = n.op_type() == "ConvTranspose";
    std::vector<NamedAttr> attrs;
    if (transpose)
        copy_window_attrs(im, n, attrs,
                          {"strides", "pads", "dilations", "output_padding", "output_shape"});
    else
        copy_window_attrs(im, n, attrs, {"strides", "pads", "dilations"});
    if (const int64_t group = attr_int(n, "group", 1); group != 1)
        attrs.push_back(im.named("group", Attr::integer(group)));
    im.bind(n.output(0), im.add(transpose ? "conv_transpose" : "conv", *ins, std::move(attrs)));
}

void pool(Importer& im, const onnx::NodeProto& n) {
    const std::string& op = n.op_type();
    const bool global = op == "GlobalAveragePool" || op == "GlobalMaxPool";
    if (!spatial_rank_ok(im, n, global)) return;
    if (n.output_size() > 1 && !n.output(1).empty())
        return im.fail(
            n, "its Indices output (the argmax of each window) is not supported; only Y is");
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    if (global) {
        im.bind(n.output(0),
                im.add(op == "GlobalAveragePool" ? "global_avg_pool" : "global_max_pool", *ins));
        return;
    }
    const bool is_max = op == "MaxPool";
    std::vector<NamedAttr> attrs;
    if (is_max)
        copy_window_attrs(im, n, attrs, {"kernel_shape", "strides", "pads", "dilations"});
    else
        copy_window_attrs(im, n, attrs, {"kernel_shape", "strides", "pads"});
    if (attr_int(n, "ceil_mode", 0)) attrs.push_back(im.named("ceil_mode", Attr::boolean(true)));
    if (!is_max && attr_int(n, "count_include_pad", 0))
        attrs.push_back(im.named("count_include_pad", Attr::boolean(true)));
    if (!is_max && find_attr(n, "dilations")) {
        auto d = attr_ints(n, "dilations");
        for (int64_t v : d ? *d : std::vector<int64_t>{})
            if (v != 1)
                return im.fail(n, "AveragePool with dilations other than 1 is not supported");
    }
    im.bind(n.output(0), im.add(is_max ? "max_pool" : "avg_pool", *ins, std::move(attrs)));
}

}  // namespace

void add_conv_onnx_ops(OnnxOpTable& t) {
    t["Conv"] = {"conv", conv};
    t["ConvTranspose"] = {"conv_transpose", conv};
    t["MaxPool"] = {"max_pool", pool};
    t["AveragePool"] = {"avg_pool", pool};
    t["GlobalAveragePool"] = {"global_avg_pool", pool};
    t["GlobalMaxPool"] = {"global_max_pool", pool};
}

}  // namespace graphrun::onnx_import
