// ONNX's quantization ops (issue 27), composed of graphrun ops over the 8-bit
// storage types (engine/plan/storage_types.h):
//
//   DequantizeLinear  y = (x - zp) * scale            (x - zp exact: f32 for 8-bit x, i32 for i32)
//   QuantizeLinear    y = saturate(round_half_even(x / scale) + zp)
//   MatMulInteger     y = (A - a_zp) @ (B - b_zp)                  -> i32
//   ConvInteger       y = conv(x - x_zp, w - w_zp)                 -> i32
//   QLinearMatMul     y = quantize((A - a_zp) @ (B - b_zp) * (a_scale * b_scale / y_scale), y_zp)
//   QLinearConv       y = quantize((conv(x - x_zp, w - w_zp) + bias) * (x_scale * w_scale / y_scale), y_zp)
//
// The integer products are summed in f64, which holds every sum of up to 2^37
// products of 8-bit values exactly, so MatMulInteger and ConvInteger are
// exact (graphrun's matmul and conv are float ops). Where the constant weights
// bound every partial sum below 2^24 (the largest |x - x_zp| times the largest
// sum of |w - w_zp| over one output), f32 holds them exactly too, in any
// order of summation: the product then runs in f32, on the fast kernels
// (oneDNN's conv, sgemm), with the same values. The requantization
// multiplier is computed in f32 and applied to the f32 accumulator, as ONNX
// Runtime's reference kernels do. Scales and zero points are scalars or, where
// ONNX allows, 1-D per-axis tensors (per output channel for weights).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "engine/frontend/onnx_importer.h"

namespace graphrun::onnx_import {

namespace {

bool present(const onnx::NodeProto& n, int i) { return i < n.input_size() && !n.input(i).empty(); }

// Input i's node (present: checked by the caller), or nullopt after the importer's error.
std::optional<NodeId> input(Importer& im, const onnx::NodeProto& n, int i) { return im.node_of(n.input(i)); }

NodeId cast_to(Importer& im, NodeId x, DType t) {
    return im.add("cast", {x}, {im.named("dtype", Attr::ident(dtype_name(t)))});
}

// Input i's node (`x`) in type t: cast where its ONNX type is another (a cast
// to its own type would copy it on every pass).
NodeId input_as(Importer& im, const onnx::NodeProto& n, int i, NodeId x, DType t) {
    const Value* v = im.value(n.input(i));
    return v && v->dtype && *v->dtype == t ? x : cast_to(im, x, t);
}

// A scale or zero point shaped to broadcast along `axis` of a value of rank
// `rank`: a scalar (or one element) as it is, a 1-D tensor reshaped to
// [1, .., len, .., 1]. nullopt (after fail) when its shape is neither.
std::optional<NodeId> along_axis(Importer& im, const onnx::NodeProto& n, int input, NodeId v, int64_t axis,
                                 size_t rank, const char* what) {
    const std::optional<Shape> s = im.static_shape(n.input(input));
    if (!s) {
        im.fail(n, std::string("the shape of its ") + what + " '" + n.input(input) + "' is not static");
        return std::nullopt;
    }
    if (s->empty() || (s->size() == 1 && (*s)[0] == 1)) return v;
    if (s->size() != 1) {
        im.fail(n, std::string("its ") + what + " has shape " + shape_string(*s) +
                       "; a scale or zero point is a scalar or 1-D (per axis)");
        return std::nullopt;
    }
    if (axis < 0) axis += static_cast<int64_t>(rank);
    if (axis < 0 || axis >= static_cast<int64_t>(rank)) {
        im.fail(n, "axis is out of range for an input of rank " + std::to_string(rank));
        return std::nullopt;
    }
    Shape to(rank, 1);
    to[static_cast<size_t>(axis)] = (*s)[0];
    return im.add("reshape", {v}, {im.named("shape", int_list(to))});
}

size_t rank_of(Importer& im, const onnx::NodeProto& n, int input) {
    const std::optional<Shape> s = im.static_shape(n.input(input));
    return s ? s->size() : 0;
}

// x - zp in `t`, the compute type of a sum of products (exact for 8-bit values).
std::optional<NodeId> centered(Importer& im, const onnx::NodeProto& n, NodeId x, int zp_input, int64_t axis,
                               size_t rank, const char* what, DType t) {
    const NodeId xd = cast_to(im, x, t);
    if (!present(n, zp_input)) return xd;
    auto zp = input(im, n, zp_input);
    if (!zp) return std::nullopt;
    auto z = along_axis(im, n, zp_input, cast_to(im, *zp, t), axis, rank, what);
    if (!z) return std::nullopt;
    return im.add("sub", {xd, *z});
}

// Element i of an 8-bit constant.
double eight_bit_at(const HostValue& v, size_t i) {
    return v.dtype == DType::I8 ? static_cast<double>(static_cast<int8_t>(v.bytes[i])) : static_cast<double>(v.bytes[i]);
}

// The largest |v - zp| over every value of input `v_input` (8-bit) and its
// zero point (input `zp_input`: a constant, or absent); nullopt when the zero
// point is not a constant.
std::optional<double> centered_range(Importer& im, const onnx::NodeProto& n, int v_input, int zp_input) {
    const bool s8 = dtype_of_value(im, n.input(v_input)) == DType::I8;
    const double lo = s8 ? -128 : 0, hi = s8 ? 127 : 255;
    if (!present(n, zp_input)) return std::max(-lo, hi);
    const HostValue* zp = im.folded(n.input(zp_input));
    if (!zp || (zp->dtype != DType::I8 && zp->dtype != DType::U8)) return std::nullopt;
    double m = 0;
    for (size_t i = 0; i < zp->bytes.size(); ++i)
        m = std::max({m, std::abs(lo - eight_bit_at(*zp, i)), std::abs(hi - eight_bit_at(*zp, i))});
    return m;
}

// The largest sum of |w - w_zp| over the `k` elements that one output reads
// of the constant weights `w_input` (8-bit), output o reading elements
// base(o) + j * step, j < k, with zero point zp(o) (per output where the
// zero point has `outputs` elements); nullopt when w or its zero point is not
// a constant.
template <class Base>
std::optional<double> weight_l1(Importer& im, const onnx::NodeProto& n, int w_input, int zp_input, int64_t outputs,
                                int64_t k, int64_t step, const Base& base) {
    const HostValue* w = im.folded(n.input(w_input));
    if (!w || (w->dtype != DType::I8 && w->dtype != DType::U8) ||
        static_cast<int64_t>(w->bytes.size()) != outputs * k)
        return std::nullopt;
    const HostValue* zp = present(n, zp_input) ? im.folded(n.input(zp_input)) : nullptr;
    if (present(n, zp_input) &&
        (!zp || (zp->dtype != DType::I8 && zp->dtype != DType::U8) ||
         (zp->bytes.size() != 1 && static_cast<int64_t>(zp->bytes.size()) != outputs)))
        return std::nullopt;
    double most = 0;
    for (int64_t o = 0; o < outputs; ++o) {
        const double z = zp ? eight_bit_at(*zp, zp->bytes.size() == 1 ? 0 : static_cast<size_t>(o)) : 0;
        double sum = 0;
        for (int64_t j = 0; j < k; ++j) sum += std::abs(eight_bit_at(*w, static_cast<size_t>(base(o) + j * step)) - z);
        most = std::max(most, sum);
    }
    return most;
}

// w - w_zp in `t` as a constant, where w and its zero point are constants
// (the output axis `axis`, for a per-output zero point): placed once with the
// weights instead of cast and centered on every pass. nullopt otherwise.
std::optional<NodeId> centered_weights(Importer& im, const onnx::NodeProto& n, int w_input, int zp_input,
                                       int64_t axis, DType t) {
    const HostValue* w = im.folded(n.input(w_input));
    if (!w || (w->dtype != DType::I8 && w->dtype != DType::U8) || w->shape.empty()) return std::nullopt;
    const HostValue* zp = present(n, zp_input) ? im.folded(n.input(zp_input)) : nullptr;
    if (present(n, zp_input) && (!zp || (zp->dtype != DType::I8 && zp->dtype != DType::U8))) return std::nullopt;
    const size_t count = w->bytes.size();
    if (axis < 0) axis += static_cast<int64_t>(w->shape.size());
    if (axis < 0 || axis >= static_cast<int64_t>(w->shape.size())) return std::nullopt;
    // Element i's index along the axis: (i / inner) % len.
    int64_t inner = 1;
    for (size_t d = static_cast<size_t>(axis) + 1; d < w->shape.size(); ++d) inner *= w->shape[d];
    const int64_t len = w->shape[static_cast<size_t>(axis)];
    if (zp && zp->bytes.size() != 1 && static_cast<int64_t>(zp->bytes.size()) != len) return std::nullopt;
    HostValue c;
    c.dtype = t;
    c.shape = w->shape;
    c.bytes.resize(count * dtype_size(t));
    for (size_t i = 0; i < count; ++i) {
        const size_t zi = !zp || zp->bytes.size() == 1 ? 0 : static_cast<size_t>((static_cast<int64_t>(i) / inner) % len);
        const double v = eight_bit_at(*w, i) - (zp ? eight_bit_at(*zp, zi) : 0);
        if (t == DType::F32) {
            const auto f = static_cast<float>(v);
            std::memcpy(c.bytes.data() + i * 4, &f, 4);
        } else {
            std::memcpy(c.bytes.data() + i * 8, &v, 8);
        }
    }
    return im.const_node(std::move(c), im.node_loc());
}

// Integers f32 holds exactly: those below 2^24 in magnitude.
constexpr double kExactInF32 = 16777216.0;

// f32 where it holds every partial sum of the products exactly (`bound`, the
// largest there can be, below 2^24), else f64.
DType sum_type(std::optional<double> range, std::optional<double> l1, double& bound) {
    bound = range && l1 ? *range * *l1 : kExactInF32;
    return bound < kExactInF32 ? DType::F32 : DType::F64;
}

// round_half_even(acc) + zp, saturated to zp's type and cast to it; acc in f32.
// The cast saturates (toward zero, NaN -> 0), which on these integers is the
// clip to the 8-bit range the definition has: no clip pass of its own.
NodeId requantize(Importer& im, NodeId acc, std::optional<NodeId> zp_f32, DType out) {
    NodeId q = im.add("round", {acc});
    if (zp_f32) q = im.add("add", {q, *zp_f32});
    return cast_to(im, q, out);
}

bool eight_bit(Importer& im, const onnx::NodeProto& n, int input, const char* what) {
    const DType t = dtype_of_value(im, n.input(input));
    if (t == DType::I8 || t == DType::U8) return true;
    im.fail(n, std::string("its ") + what + " is " + dtype_name(t) + "; graphrun quantizes to i8 and u8 only");
    return false;
}

void dequantize_linear(Importer& im, const onnx::NodeProto& n) {
    if (!present(n, 0) || !present(n, 1)) return im.fail(n, "needs x and x_scale");
    auto x = input(im, n, 0), s = input(im, n, 1);
    if (!x || !s) return;
    const DType xt = dtype_of_value(im, n.input(0)), st = dtype_of_value(im, n.input(1));
    if (xt != DType::I8 && xt != DType::U8 && xt != DType::I32)
        return im.fail(n, std::string("its input is ") + dtype_name(xt) + "; graphrun dequantizes i8, u8 and i32");
    const size_t rank = rank_of(im, n, 0);
    const int64_t axis = attr_int(n, "axis", 1);
    // (x - zp), exact: in f32 for 8-bit x (at most 255 in magnitude), in i32
    // for i32 x (then to f32); then times the scale.
    const DType dt = xt == DType::I32 ? DType::I32 : DType::F32;
    NodeId d = cast_to(im, *x, dt);
    if (present(n, 2)) {
        auto zp = input(im, n, 2);
        if (!zp) return;
        auto z = along_axis(im, n, 2, cast_to(im, *zp, dt), axis, rank, "zero point");
        if (!z) return;
        d = im.add("sub", {d, *z});
    }
    auto scale = along_axis(im, n, 1, input_as(im, n, 1, *s, DType::F32), axis, rank, "scale");
    if (!scale) return;
    NodeId y = im.add("mul", {dt == DType::F32 ? d : cast_to(im, d, DType::F32), *scale});
    if (st != DType::F32) y = cast_to(im, y, st);
    im.bind(n.output(0), y);
}

void quantize_linear(Importer& im, const onnx::NodeProto& n) {
    if (!present(n, 0) || !present(n, 1)) return im.fail(n, "needs x and y_scale");
    auto xin = input(im, n, 0), s = input(im, n, 1);
    if (!xin || !s) return;
    const DType out = present(n, 2) ? dtype_of_value(im, n.input(2)) : DType::U8;
    if (present(n, 2) && !eight_bit(im, n, 2, "zero point")) return;
    const size_t rank = rank_of(im, n, 0);
    const int64_t axis = attr_int(n, "axis", 1);
    auto scale = along_axis(im, n, 1, input_as(im, n, 1, *s, DType::F32), axis, rank, "scale");
    if (!scale) return;
    const NodeId x = input_as(im, n, 0, *xin, DType::F32);
    std::optional<NodeId> zp;
    if (present(n, 2)) {
        auto zin = input(im, n, 2);
        if (!zin) return;
        zp = along_axis(im, n, 2, cast_to(im, *zin, DType::F32), axis, rank, "zero point");
        if (!zp) return;
    }
    im.bind(n.output(0), requantize(im, im.add("div", {x, *scale}), zp, out));
}

// An integer product's sum and the type it is in (f32 or f64).
struct Sum {
    NodeId id;
    DType type;
    double bound = 0;  // f32: the largest |sum| there can be (below 2^24)
};

// (A - a_zp) @ (B - b_zp), exact (sum_type): a_zp per row of A (axis -2), b_zp per column of B (axis -1).
std::optional<Sum> integer_matmul(Importer& im, const onnx::NodeProto& n, int a, int a_zp, int b, int b_zp) {
    if (!eight_bit(im, n, a, "A") || !eight_bit(im, n, b, "B")) return std::nullopt;
    // B as the weights: each output column j of each matrix reads B[.., k, j]
    // over k. Bounded before the weights become a node.
    DType t = DType::F64;
    double bound = kExactInF32;
    if (const std::optional<Shape> sb = im.static_shape(n.input(b)); sb && sb->size() >= 2) {
        const int64_t kk = (*sb)[sb->size() - 2], cols = (*sb)[sb->size() - 1];
        const int64_t matrices = onnx_fold::numel(*sb).value_or(0) / std::max<int64_t>(1, kk * cols);
        auto l1 = cols > 0 ? weight_l1(im, n, b, b_zp, matrices * cols, kk, cols, [&](int64_t o) {
            return (o / cols) * kk * cols + o % cols;
        }) : std::optional<double>(0.0);
        // A per-column zero point has `cols` elements: weight_l1 takes output o's as element o.
        if (present(n, b_zp) && matrices > 1) l1.reset();
        t = sum_type(centered_range(im, n, a, a_zp), l1, bound);
    }
    const size_t ra = rank_of(im, n, a), rb = rank_of(im, n, b);
    if (ra < 2 || rb < 2) {
        im.fail(n, "graphrun runs its matmul on inputs of rank 2 or more (static shapes)");
        return std::nullopt;
    }
    std::optional<NodeId> cb = centered_weights(im, n, b, b_zp, -1, t);
    auto ia = input(im, n, a);
    if (!ia) return std::nullopt;
    auto ca = centered(im, n, *ia, a_zp, -2, ra, "a_zero_point", t);
    if (!ca) return std::nullopt;
    if (!cb) {
        auto ib = input(im, n, b);
        if (!ib) return std::nullopt;
        cb = centered(im, n, *ib, b_zp, -1, rb, "b_zero_point", t);
        if (!cb) return std::nullopt;
    }
    return Sum{im.add("matmul", {*ca, *cb}), t, bound};
}

void matmul_integer(Importer& im, const onnx::NodeProto& n) {
    if (n.input_size() < 2) return im.fail(n, "needs A and B");
    auto acc = integer_matmul(im, n, 0, 2, 1, 3);
    if (acc) im.bind(n.output(0), cast_to(im, acc->id, DType::I32));
}

// x_scale * w_scale / y_scale in f32, shaped for the accumulator.
std::optional<NodeId> multiplier(Importer& im, const onnx::NodeProto& n, int s1, int64_t axis1, int s2,
                                 int64_t axis2, int sy, size_t rank) {
    auto i1 = input(im, n, s1), i2 = input(im, n, s2), iy = input(im, n, sy);
    if (!i1 || !i2 || !iy) return std::nullopt;
    auto a = along_axis(im, n, s1, input_as(im, n, s1, *i1, DType::F32), axis1, rank, "scale");
    auto b = along_axis(im, n, s2, input_as(im, n, s2, *i2, DType::F32), axis2, rank, "scale");
    if (!a || !b) return std::nullopt;
    const std::optional<Shape> ys = im.static_shape(n.input(sy));
    if (!ys || !(ys->empty() || (ys->size() == 1 && (*ys)[0] == 1))) {
        im.fail(n, "its y_scale must be a scalar");
        return std::nullopt;
    }
    return im.add("div", {im.add("mul", {*a, *b}), input_as(im, n, sy, *iy, DType::F32)});
}

void qlinear_matmul(Importer& im, const onnx::NodeProto& n) {
    if (n.input_size() < 8) return im.fail(n, "needs 8 inputs (a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point)");
    if (!eight_bit(im, n, 7, "y_zero_point")) return;
    auto acc = integer_matmul(im, n, 0, 2, 3, 5);
    if (!acc) return;
    const size_t rank = std::max(rank_of(im, n, 0), rank_of(im, n, 3));
    auto m = multiplier(im, n, 1, -2, 4, -1, 6, rank);
    if (!m) return;
    auto yzp = input(im, n, 7);
    if (!yzp) return;
    const NodeId sum = acc->type == DType::F32 ? acc->id : cast_to(im, acc->id, DType::F32);
    const NodeId scaled = im.add("mul", {sum, *m});
    im.bind(n.output(0), requantize(im, scaled, cast_to(im, *yzp, DType::F32), dtype_of_value(im, n.input(7))));
}

// conv(x - x_zp, w - w_zp), exact (sum_type), with the Conv's window attributes.
std::optional<Sum> integer_conv(Importer& im, const onnx::NodeProto& n, int x, int x_zp, int w, int w_zp) {
    if (!eight_bit(im, n, x, "x") || !eight_bit(im, n, w, "w")) return std::nullopt;
    // Each output channel o reads the w[o, ...] block. Bounded before the
    // weights become a node, which takes their values from the importer.
    DType t = DType::F64;
    double bound = kExactInF32;
    if (const std::optional<Shape> sw = im.static_shape(n.input(w)); sw && !sw->empty() && (*sw)[0] > 0) {
        const int64_t outs = (*sw)[0], k = onnx_fold::numel(*sw).value_or(0) / outs;
        t = sum_type(centered_range(im, n, x, x_zp), weight_l1(im, n, w, w_zp, outs, k, 1, [&](int64_t o) { return o * k; }), bound);
    }
    const size_t rx = rank_of(im, n, x), rw = rank_of(im, n, w);
    if ((rx != 3 && rx != 4) || rw != rx) {
        im.fail(n, "graphrun runs 1-D and 2-D convolutions (inputs of rank 3 or 4, static shapes)");
        return std::nullopt;
    }
    std::optional<NodeId> cw = centered_weights(im, n, w, w_zp, 0, t);
    auto ix = input(im, n, x);
    if (!ix) return std::nullopt;
    auto cx = centered(im, n, *ix, x_zp, 1, rx, "x_zero_point", t);
    if (!cx) return std::nullopt;
    if (!cw) {
        auto iw = input(im, n, w);
        if (!iw) return std::nullopt;
        cw = centered(im, n, *iw, w_zp, 0, rw, "w_zero_point", t);
        if (!cw) return std::nullopt;
    }
    std::vector<NamedAttr> attrs;
    for (const char* name : {"strides", "pads", "dilations"})
        if (auto v = attr_ints(n, name)) attrs.push_back(im.named(name, int_list(*v)));
    if (const auto* a = find_attr(n, "auto_pad"); a && !a->s().empty() && a->s() != "NOTSET")
        attrs.push_back(im.named("auto_pad", Attr::string(a->s())));
    if (const int64_t group = attr_int(n, "group", 1); group != 1)
        attrs.push_back(im.named("group", Attr::integer(group)));
    return Sum{im.add("conv", {*cx, *cw}, std::move(attrs)), t, bound};
}

void conv_integer(Importer& im, const onnx::NodeProto& n) {
    if (n.input_size() < 2) return im.fail(n, "needs x and w");
    auto acc = integer_conv(im, n, 0, 2, 1, 3);
    if (acc) im.bind(n.output(0), cast_to(im, acc->id, DType::I32));
}

void qlinear_conv(Importer& im, const onnx::NodeProto& n) {
    if (n.input_size() < 8) return im.fail(n, "needs at least 8 inputs (x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point)");
    if (!eight_bit(im, n, 7, "y_zero_point")) return;
    auto acc = integer_conv(im, n, 0, 2, 3, 5);
    if (!acc) return;
    const size_t rank = rank_of(im, n, 0);
    NodeId sum = acc->id;
    DType sum_t = acc->type;
    if (present(n, 8)) {  // the i32 bias, one per output channel, added exactly
        if (dtype_of_value(im, n.input(8)) != DType::I32) return im.fail(n, "its bias must be i32");
        // In f32 where the sum with the largest bias stays below 2^24 (a
        // constant bias), else in f64.
        if (sum_t == DType::F32) {
            const HostValue* hb = im.folded(n.input(8));
            double most = kExactInF32;
            if (hb && hb->dtype == DType::I32) {
                most = 0;
                for (size_t i = 0; i + 4 <= hb->bytes.size(); i += 4) {
                    int32_t v;
                    std::memcpy(&v, hb->bytes.data() + i, 4);
                    most = std::max(most, std::abs(static_cast<double>(v)));
                }
            }
            if (acc->bound + most >= kExactInF32) {
                sum = cast_to(im, sum, DType::F64);
                sum_t = DType::F64;
            }
        }
        auto ib = input(im, n, 8);
        if (!ib) return;
        auto b = along_axis(im, n, 8, cast_to(im, *ib, sum_t), 1, rank, "bias");
        if (!b) return;
        sum = im.add("add", {sum, *b});
    }
    auto m = multiplier(im, n, 1, 1, 4, 1, 6, rank);
    if (!m) return;
    auto yzp = input(im, n, 7);
    if (!yzp) return;
    const NodeId scaled = im.add("mul", {sum_t == DType::F32 ? sum : cast_to(im, sum, DType::F32), *m});
    im.bind(n.output(0), requantize(im, scaled, cast_to(im, *yzp, DType::F32), dtype_of_value(im, n.input(7))));
}

}  // namespace

void add_quant_onnx_ops(OnnxOpTable& t) {
    t["DequantizeLinear"] = {"mul", dequantize_linear};
    t["QuantizeLinear"] = {"round", quantize_linear};
    t["MatMulInteger"] = {"matmul", matmul_integer};
    t["QLinearMatMul"] = {"matmul", qlinear_matmul};
    t["ConvInteger"] = {"conv", conv_integer};
    t["QLinearConv"] = {"conv", qlinear_conv};
}

}  // namespace graphrun::onnx_import
