// ONNX Resize (opsets 10 to 18's attributes) and Upsample (opsets 7 to 9),
// composed of graphrun ops (onnx_ops.h): only the last two axes may change
// size (an image's H and W, or a sequence's last axis); each is resized by
// a constant made when the model is read:
//   nearest          gather with the source index of every output position
//   linear, cubic    matmul with the interpolation matrix (out x in), whose
//                    rows hold the taps' weights as ONNX's reference computes
//                    them (edge positions clamped, or with exclude_outside
//                    dropped and the rest renormalized)
// so that segmentation heads (torchvision's FCN, DeepLabv3, LR-ASPP upsample
// bilinearly) run on the CPU and the GPU with no new kernel.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "engine/frontend/onnx_importer.h"

namespace graphrun::onnx_import {

namespace {

struct ResizeMode {
    std::string mode = "nearest";                  // nearest | linear | cubic
    std::string coords = "half_pixel";             // coordinate_transformation_mode
    std::string nearest = "round_prefer_floor";    // nearest_mode
    double cubic_a = -0.75;
    bool exclude_outside = false;
    bool from_scales = false;  // the output's size came from scales (not sizes)
};

// The position in the input of output position x (ONNX's coordinate
// transformation). align_corners divides by the resized length less one: with
// scales given, in * scale unrounded, as ONNX's reference takes it.
double source_position(const ResizeMode& m, int64_t x, int64_t in, int64_t out, double scale) {
    const auto xd = static_cast<double>(x);
    if (m.coords == "align_corners") {
        const double resized = m.from_scales ? static_cast<double>(in) * scale : static_cast<double>(out);
        return out == 1 || resized == 1 ? 0 : xd * static_cast<double>(in - 1) / (resized - 1);
    }
    if (m.coords == "asymmetric") return xd / scale;
    if (m.coords == "pytorch_half_pixel") return out > 1 ? (xd + 0.5) / scale - 0.5 : 0;
    return (xd + 0.5) / scale - 0.5;  // half_pixel
}

int64_t nearest_index(const ResizeMode& m, double p) {
    double r;
    if (m.nearest == "floor") r = std::floor(p);
    else if (m.nearest == "ceil") r = std::ceil(p);
    else if (m.nearest == "round_prefer_ceil") r = std::floor(p + 0.5);
    else r = (p - std::floor(p) == 0.5) ? std::floor(p) : std::round(p);  // round_prefer_floor
    return static_cast<int64_t>(r);
}

double cubic_weight(double d, double a) {
    d = std::fabs(d);
    if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
    if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
    return 0;
}

// The matrix [out, in] of one axis' interpolation weights, as doubles.
std::vector<double> weights(const ResizeMode& m, int64_t in, int64_t out, double scale) {
    std::vector<double> w(static_cast<size_t>(out * in), 0.0);
    for (int64_t x = 0; x < out; ++x) {
        const double p = source_position(m, x, in, out, scale);
        double* row = &w[static_cast<size_t>(x * in)];
        const auto x0 = static_cast<int64_t>(std::floor(p));
        const double f = p - static_cast<double>(x0);
        std::vector<std::pair<int64_t, double>> taps;
        if (m.mode == "linear") {
            taps = {{x0, 1 - f}, {x0 + 1, f}};
        } else {
            for (int64_t k = -1; k <= 2; ++k) taps.emplace_back(x0 + k, cubic_weight(f - static_cast<double>(k), m.cubic_a));
        }
        double kept = 0;
        for (auto& [i, wt] : taps) {
            if (m.exclude_outside && (i < 0 || i >= in)) {
                wt = 0;
                continue;
            }
            kept += wt;
        }
        for (const auto& [i, wt] : taps) {
            if (wt == 0) continue;
            const int64_t at = std::clamp<int64_t>(i, 0, in - 1);  // edge positions repeat (ONNX's padding)
            row[at] += m.exclude_outside && kept != 0 ? wt / kept : wt;
        }
    }
    return w;
}

HostValue matrix_value(const std::vector<double>& w, Shape shape, DType t) {
    HostValue v;
    v.dtype = t;
    v.shape = std::move(shape);
    v.bytes.resize(w.size() * dtype_size(t));
    for (size_t i = 0; i < w.size(); ++i) {
        if (t == DType::F32) {
            const auto f = static_cast<float>(w[i]);
            std::memcpy(&v.bytes[i * 4], &f, 4);
        } else {
            std::memcpy(&v.bytes[i * 8], &w[i], 8);
        }
    }
    return v;
}

void resize(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    const std::optional<Shape> in_shape = im.static_shape(n.input(0));
    if (!in_shape || in_shape->empty()) return im.fail(n, "needs an input of static shape");
    const size_t rank = in_shape->size();
    const bool upsample = n.op_type() == "Upsample";
    ResizeMode m;
    if (const auto* a = find_attr(n, "mode")) m.mode = a->s();
    // Upsample and Resize-10 place positions as asymmetric does and take the floor for nearest.
    if (upsample || im.opset() < 11) {
        m.coords = "asymmetric";
        m.nearest = "floor";
    }
    if (const auto* a = find_attr(n, "coordinate_transformation_mode")) m.coords = a->s();
    if (const auto* a = find_attr(n, "nearest_mode")) m.nearest = a->s();
    m.cubic_a = attr_float(n, "cubic_coeff_a", -0.75f);
    m.exclude_outside = attr_int(n, "exclude_outside", 0) != 0;
    if (m.mode == "bilinear") m.mode = "linear";  // Upsample-7's name
    if (m.mode != "nearest" && m.mode != "linear" && m.mode != "cubic")
        return im.fail(n, "mode '" + m.mode + "' is not nearest, linear or cubic");
    if (m.coords != "half_pixel" && m.coords != "pytorch_half_pixel" && m.coords != "align_corners" &&
        m.coords != "asymmetric")
        return im.fail(n, "coordinate_transformation_mode '" + m.coords + "' is not supported (half_pixel, "
                          "pytorch_half_pixel, align_corners and asymmetric are)");
    if (m.nearest != "round_prefer_floor" && m.nearest != "round_prefer_ceil" && m.nearest != "floor" &&
        m.nearest != "ceil")
        return im.fail(n, "nearest_mode '" + m.nearest + "' is not one ONNX defines");
    if (attr_int(n, "antialias", 0) != 0) return im.fail(n, "antialias=1 is not supported");
    if (find_attr(n, "axes")) return im.fail(n, "the axes attribute (opset 18) is not supported");
    if (const auto* a = find_attr(n, "keep_aspect_ratio_policy"); a && a->s() != "stretch")
        return im.fail(n, "keep_aspect_ratio_policy '" + a->s() + "' is not supported (stretch is)");
    // The output's size and each axis' scale: from sizes, or from scales.
    std::vector<double> scale(rank, 1.0);
    Shape out = *in_shape;
    const int sizes_at = upsample ? -1 : 3, scales_at = upsample ? 1 : (im.opset() >= 11 ? 2 : 1);
    const HostValue* sizes = sizes_at > 0 && n.input_size() > sizes_at && !n.input(sizes_at).empty()
                                 ? im.const_input(n, sizes_at, "sizes")
                                 : nullptr;
    if (sizes_at > 0 && n.input_size() > sizes_at && !n.input(sizes_at).empty() && !sizes) return;
    if (sizes) {
        const std::vector<int64_t> s = onnx_fold::ints(*sizes);
        if (s.size() != rank) return im.fail(n, "its sizes have " + std::to_string(s.size()) + " values for rank " + std::to_string(rank));
        for (size_t i = 0; i < rank; ++i) {
            if (s[i] < 1) return im.fail(n, "its sizes " + shape_string(s) + " are not all at least 1");
            out[i] = s[i];
            scale[i] = static_cast<double>(s[i]) / static_cast<double>((*in_shape)[i]);
        }
    } else {
        m.from_scales = true;
        std::vector<double> sc;
        if (upsample && im.opset() < 9) {
            const auto* a = find_attr(n, "scales");
            if (!a) return im.fail(n, "has no scales");
            sc.assign(a->floats().begin(), a->floats().end());
        } else {
            const HostValue* hv = im.const_input(n, scales_at, "scales");
            if (!hv) {  // absent (const_input said nothing), or not a constant (it said so)
                if (n.input_size() <= scales_at || n.input(scales_at).empty()) im.fail(n, "has neither scales nor sizes");
                return;
            }
            sc = onnx_fold::doubles(*hv);
        }
        if (sc.size() != rank) return im.fail(n, "its scales have " + std::to_string(sc.size()) + " values for rank " + std::to_string(rank));
        for (size_t i = 0; i < rank; ++i) {
            if (!(sc[i] > 0) || !std::isfinite(sc[i])) return im.fail(n, "its scales are not all positive and finite");
            const double o = std::floor(static_cast<double>((*in_shape)[i]) * static_cast<float>(sc[i]));
            if (o < 1 || o > static_cast<double>(int64_t{1} << 32)) return im.fail(n, "its output would have a dimension of " + std::to_string(o));
            out[i] = static_cast<int64_t>(o);
            scale[i] = static_cast<float>(sc[i]);
        }
    }
    for (size_t i = 0; i + 2 < rank; ++i)
        if (out[i] != (*in_shape)[i])
            return im.fail(n, "resizes axis " + std::to_string(i) + " (" + shape_string(*in_shape) + " to " +
                                  shape_string(out) + "); graphrun resizes only the last two axes");
    const Value* xv = im.value(n.input(0));
    const DType t = xv && xv->dtype ? *xv->dtype : DType::F32;
    if (m.mode != "nearest" && !is_float(t)) return im.fail(n, m.mode + " resizing needs a float input");
    NodeId y = (*ins)[0];
    for (size_t axis = rank < 2 ? rank - 1 : rank - 2; axis < rank; ++axis) {
        const int64_t in = (*in_shape)[axis], o = out[axis];
        if (in == o && scale[axis] == 1.0) continue;  // this axis keeps its positions
        // What is made here is bounded before it is allocated: a hostile scale may ask for anything.
        if (o > (int64_t{1} << 24))
            return im.fail(n, "its output axis " + std::to_string(axis) + " would have " + std::to_string(o) +
                                  " positions; at most 2^24 are resized");
        if (in > (int64_t{1} << 24) / std::max<int64_t>(o, 1) && m.mode != "nearest")
            return im.fail(n, "its interpolation matrix (" + std::to_string(o) + " x " + std::to_string(in) +
                                  ") would pass 2^24 elements");
        if (m.mode == "nearest") {
            HostValue idx;
            idx.dtype = DType::I64;
            idx.shape = {o};
            idx.bytes.resize(static_cast<size_t>(o) * 8);
            for (int64_t x = 0; x < o; ++x) {
                const int64_t i = std::clamp<int64_t>(nearest_index(m, source_position(m, x, in, o, scale[axis])), 0, in - 1);
                std::memcpy(&idx.bytes[static_cast<size_t>(x) * 8], &i, 8);
            }
            const NodeId ix = im.const_node(std::move(idx), im.node_loc());
            y = im.add("gather", {y, ix}, {im.named("axis", Attr::integer(static_cast<int64_t>(axis)))});
            continue;
        }
        const std::vector<double> w = weights(m, in, o, scale[axis]);
        if (axis == rank - 1) {  // y @ W^T: W^T is [in, out]
            std::vector<double> wt(w.size());
            for (int64_t r = 0; r < o; ++r)
                for (int64_t c = 0; c < in; ++c) wt[static_cast<size_t>(c * o + r)] = w[static_cast<size_t>(r * in + c)];
            const NodeId mat = im.const_node(matrix_value(wt, {in, o}, t), im.node_loc());
            y = im.add("matmul", {y, mat});
        } else {  // W @ y, broadcast over the leading axes
            const NodeId mat = im.const_node(matrix_value(w, {o, in}, t), im.node_loc());
            y = im.add("matmul", {mat, y});
        }
    }
    if (y == (*ins)[0]) y = im.add(OpKind::Identity, {y});
    im.bind(n.output(0), y);
}

}  // namespace

void add_resize_onnx_ops(OnnxOpTable& t) {
    t["Resize"] = {"gather", resize};
    t["Upsample"] = {"gather", resize};
}

}  // namespace graphrun::onnx_import
