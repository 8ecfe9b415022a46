// More ONNX ops composed of graphrun ops that already run on the CPU and the
// GPU (onnx_ops.h), the second batch: GroupNormalization, LRN, Mod, OneHot,
// CumSum, Einsum (the forms exporters write). ONNX semantics and attribute
// defaults; tests/onnx_ops_more2_test.py checks each against NumPy in float64.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "engine/frontend/onnx_importer.h"

namespace graphrun::onnx_import {

namespace {

constexpr int64_t kMaxConstElements = int64_t{1} << 24;  // a constant made here (OneHot's range)

// A static shape whose element count wraps int64 (a hostile model's) is refused here, so that
// the products below cannot overflow.
bool uncountable(Importer& im, const onnx::NodeProto& n, const std::optional<Shape>& s) {
    std::string why;
    if (!s || onnx_fold::element_count(*s, why)) return false;
    im.fail(n, "an input's " + why);
    return true;
}

NodeId reshape_to(Importer& im, NodeId x, const Shape& s) {
    return im.add("reshape", {x}, {im.named("shape", int_list(s))});
}

NodeId cast_to(Importer& im, NodeId x, DType t) {
    return im.add("cast", {x}, {im.named("dtype", Attr::ident(dtype_name(t)))});
}

int64_t product(const Shape& s, size_t from, size_t to) {
    int64_t p = 1;
    for (size_t i = from; i < to; ++i) p *= s[i];
    return p;
}

// ---- GroupNormalization (18; 21) ----
// x [N, C, D...] in num_groups groups of C/G channels, each normalized over
// its channels and spatial axes; then scale and bias, per group at opsets 18
// to 20 (shape [G]), per channel from 21 (shape [C]).
void group_norm(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 3);
    if (!ins || ins->size() < 3) return im.fail(n, "needs its input, scale and bias");
    const std::optional<Shape> s = im.static_shape(n.input(0));
    if (uncountable(im, n, s)) return;
    if (!s || s->size() < 2) return im.fail(n, "needs an input of static shape (N, C, D1, ...)");
    const DType t = dtype_of_value(im, n.input(0));
    if (!is_float(t)) return im.fail(n, "its input must be f32 or f64");
    const int64_t G = attr_int(n, "num_groups", 0);
    const int64_t N = (*s)[0], C = (*s)[1];
    if (!find_attr(n, "num_groups")) return im.fail(n, "its num_groups attribute is missing");
    if (G <= 0 || C % G != 0)
        return im.fail(n, "num_groups " + std::to_string(G) + " does not divide its " +
                              std::to_string(C) + " channels");
    const int64_t group_len = C / G * product(*s, 2, s->size());
    if (group_len == 0) return im.fail(n, "its groups are empty (no elements to normalize)");
    const bool per_channel = im.model_opset() >= 21;
    const int64_t want = per_channel ? C : G;
    for (int i = 1; i <= 2; ++i) {
        const std::optional<Shape> ps = im.static_shape(n.input(i));
        if (uncountable(im, n, ps)) return;
        if (!ps || *ps != Shape{want})
            return im.fail(n, std::string(i == 1 ? "its scale" : "its bias") +
                                  " must have shape [" + std::to_string(want) + "] (" +
                                  (per_channel ? "one per channel at opset 21"
                                               : "one per group before opset 21") +
                                  ")");
    }
    const NodeId r = reshape_to(im, (*ins)[0], {N, G, group_len});
    auto mean_of = [&](NodeId v) {
        return im.add("reduce_mean", {v},
                      {im.named("axes", int_list({2})), im.named("keepdims", Attr::boolean(true))});
    };
    const NodeId d = im.add("sub", {r, mean_of(r)});
    const NodeId var = mean_of(im.add("square", {d}));
    const NodeId inv =
        im.add("rsqrt", {im.add("add", {var, im.scalar(attr_float(n, "epsilon", 1e-5f), t)})});
    NodeId y = im.add("mul", {d, inv});
    if (!per_channel) {
        y = im.add("add", {im.add("mul", {y, reshape_to(im, (*ins)[1], {G, 1})}),
                           reshape_to(im, (*ins)[2], {G, 1})});
        return im.bind(n.output(0), reshape_to(im, y, *s));
    }
    Shape per_c{C};
    per_c.resize(s->size() - 1, 1);  // [C, 1, ...]
    y = reshape_to(im, y, *s);
    y = im.add("add", {im.add("mul", {y, reshape_to(im, (*ins)[1], per_c)}),
                       reshape_to(im, (*ins)[2], per_c)});
    im.bind(n.output(0), y);
}

// ---- LRN ----
// y = x / (bias + alpha / size * sum of x^2 over the channels c - floor((size-1)/2)
// .. c + ceil((size-1)/2))^beta: the window sum is an avg_pool over [N, 1, C, D]
// counting the zero padding, times the window's length.
void lrn(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    const std::optional<Shape> s = im.static_shape(n.input(0));
    if (uncountable(im, n, s)) return;
    if (!s || s->size() < 2) return im.fail(n, "needs an input of static shape (N, C, D1, ...)");
    const DType t = dtype_of_value(im, n.input(0));
    if (!is_float(t)) return im.fail(n, "its input must be f32 or f64");
    if (!find_attr(n, "size")) return im.fail(n, "its size attribute is missing");
    const int64_t size = attr_int(n, "size", 0);
    if (size < 1) return im.fail(n, "size must be at least 1, not " + std::to_string(size));
    const double alpha = attr_float(n, "alpha", 1e-4f), beta = attr_float(n, "beta", 0.75f),
                 bias = attr_float(n, "bias", 1.0f);
    const int64_t N = (*s)[0], C = (*s)[1], D = product(*s, 2, s->size());
    if (N * C * D == 0) return im.bind(n.output(0), im.add("identity", *ins));
    // A window reaching past every channel sums them all: clamped, so that any size is fine.
    const int64_t before = std::min((size - 1) / 2, C - 1),
                  after = std::min(size - 1 - (size - 1) / 2, C - 1);
    const int64_t k = before + after + 1;
    const NodeId sq = reshape_to(im, im.add("square", *ins), {N, 1, C, D});
    const NodeId avg = im.add("avg_pool", {sq},
                              {im.named("kernel_shape", int_list({k, 1})),
                               im.named("pads", int_list({before, 0, after, 0})),
                               im.named("count_include_pad", Attr::boolean(true))});
    const double coef = alpha * static_cast<double>(k) / static_cast<double>(size);
    const NodeId base = im.add(
        "add", {im.add("mul", {reshape_to(im, avg, *s), im.scalar(coef, t)}), im.scalar(bias, t)});
    // base^beta; the common betas (0.75 is the default and AlexNet's and GoogLeNet's) through
    // sqrt, which costs a fraction of pow.
    NodeId scaled;
    if (beta == 0.75) {
        const NodeId r = im.add("sqrt", {base});
        scaled = im.add("mul", {r, im.add("sqrt", {r})});
    } else if (beta == 0.5) {
        scaled = im.add("sqrt", {base});
    } else if (beta == 1.0) {
        scaled = base;
    } else {
        scaled = im.add("pow", {base, im.scalar(beta, t)});
    }
    im.bind(n.output(0), im.add("div", {(*ins)[0], scaled}));
}

// ---- Mod ----
// fmod = 1: C's fmod, the sign of the dividend; fmod = 0: the sign of the
// divisor (NumPy's mod). Integers: a - b * (a / b) with graphrun's truncating
// division (exact; a zero divisor is graphrun's integer division by zero, a
// runtime error naming the node). Floats: a - b * trunc(a / b), f32 computed
// in f64 (exact while |a / b| < 2^29), with a quotient rounded up to the next
// integer corrected.
void mod(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 2);
    if (!ins || ins->size() < 2) return im.fail(n, "needs its two inputs");
    const DType t = dtype_of_value(im, n.input(0));
    if (dtype_of_value(im, n.input(1)) != t)
        return im.fail(n, "its two inputs must have the same dtype");
    const bool fmod = attr_int(n, "fmod", 0) != 0;
    NodeId a = (*ins)[0], b = (*ins)[1];
    const DType w = is_float(t) ? DType::F64 : t;  // the working dtype
    if (t == DType::F32) a = cast_to(im, a, w), b = cast_to(im, b, w);
    NodeId r;
    if (!is_float(t)) {
        if (t == DType::Bool) return im.fail(n, "its inputs must be numbers, not bool");
        r = im.add("sub", {a, im.add("mul", {b, im.add("div", {a, b})})});
    } else {
        const NodeId q = im.add("div", {a, b});
        const NodeId tq = im.add("where", {im.add("less", {q, im.scalar(0, w)}),
                                           im.add("ceil", {q}), im.add("floor", {q})});
        r = im.add("sub", {a, im.add("mul", {b, tq})});
        // The quotient rounded up to the next integer leaves r of the wrong sign: one |b| back.
        const NodeId wrong =
            im.add("logical_and", {im.add("not_equal", {r, im.scalar(0, w)}),
                                   im.add("not_equal", {im.add("less", {r, im.scalar(0, w)}),
                                                        im.add("less", {a, im.scalar(0, w)})})});
        r = im.add(
            "where",
            {wrong, im.add("add", {r, im.add("mul", {im.add("abs", {b}), im.add("sign", {a})})}),
             r});
        // fmod(a, ±inf) = a for a finite a (b * trunc(a / b) is 0 * inf there).
        const NodeId inf_b = im.add("equal", {im.add("abs", {b}), im.scalar(INFINITY, w)});
        const NodeId finite_a = im.add("less", {im.add("abs", {a}), im.scalar(INFINITY, w)});
        r = im.add("where", {im.add("logical_and", {inf_b, finite_a}), a, r});
    }
    if (!fmod) {  // to the divisor's sign: r + b where r is not 0 and the signs differ
        const NodeId zero = im.scalar(0, w);
        const NodeId need =
            im.add("logical_and",
                   {im.add("not_equal", {r, zero}),
                    im.add("not_equal", {im.add("less", {r, zero}), im.add("less", {b, zero})})});
        r = im.add("where", {need, im.add("add", {r, b}), r});
    }
    if (t == DType::F32) r = cast_to(im, r, t);
    im.bind(n.output(0), r);
}

// ---- OneHot ----
// OneHot(indices, depth, values = [off, on]; axis = -1): a new axis of depth
// values, on where it equals the index. Negative indices count from depth;
// indices outside [-depth, depth) give off everywhere; float indices are
// truncated (as ONNX Runtime casts them).
void one_hot(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 3);
    if (!ins || ins->size() < 3) return im.fail(n, "needs its indices, depth and values");
    const std::optional<Shape> s = im.static_shape(n.input(0));
    if (uncountable(im, n, s)) return;
    if (!s) return im.fail(n, "needs indices of static shape");
    const DType it = dtype_of_value(im, n.input(0));
    if (it == DType::Bool) return im.fail(n, "its indices must be numbers, not bool");
    const HostValue* dv = im.const_input(n, 1, "depth");
    if (!dv) return;
    const std::vector<double> dd = onnx_fold::doubles(*dv);
    if (dd.size() != 1) return im.fail(n, "its depth input must hold one value");
    if (!(dd[0] >= 1) || dd[0] > static_cast<double>(kMaxConstElements))
        return im.fail(n, "depth must be from 1 to 2^24, not " + std::to_string(dd[0]));
    const auto depth = static_cast<int64_t>(dd[0]);
    const std::optional<Shape> vs = im.static_shape(n.input(2));
    if (uncountable(im, n, vs)) return;
    if (!vs || onnx_fold::numel(*vs).value_or(0) != 2 || vs->size() > 1)
        return im.fail(n, "its values input must hold two values (off, on)");
    const auto rank = static_cast<int64_t>(s->size());
    int64_t axis = attr_int(n, "axis", -1);
    if (axis < -rank - 1 || axis > rank)
        return im.fail(n, "axis " + std::to_string(axis) +
                              " is out of range for an output of rank " + std::to_string(rank + 1));
    if (axis < 0) axis += rank + 1;
    NodeId idx = (*ins)[0];
    if (it != DType::I64) idx = cast_to(im, idx, DType::I64);  // floats truncate toward zero
    idx = im.add("where",
                 {im.add("less", {idx, im.scalar(0, DType::I64)}),
                  im.add("add", {idx, im.scalar(static_cast<double>(depth), DType::I64)}), idx});
    Shape with_axis = *s;
    with_axis.insert(with_axis.begin() + axis, 1);
    HostValue positions;  // 0 .. depth-1 along the new axis
    positions.dtype = DType::I64;
    positions.shape.assign(s->size() + 1, 1);
    positions.shape[static_cast<size_t>(axis)] = depth;
    positions.bytes.resize(static_cast<size_t>(depth) * 8);
    for (int64_t i = 0; i < depth; ++i)
        std::memcpy(&positions.bytes[static_cast<size_t>(i) * 8], &i, 8);
    const NodeId pos = im.const_node(std::move(positions), im.node_loc());
    const NodeId hit = im.add("equal", {reshape_to(im, idx, with_axis), pos});
    const NodeId values = reshape_to(im, (*ins)[2], {2});
    auto pick = [&](int64_t i) {
        return im.add("gather", {values, im.scalar(static_cast<double>(i), DType::I64)},
                      {im.named("axis", Attr::integer(0))});
    };
    im.bind(n.output(0), im.add("where", {hit, pick(1), pick(0)}));
}

// ---- CumSum ----
// CumSum(x, axis; exclusive = 0, reverse = 0) by doubling (Hillis and
// Steele): ceil(log2 L) steps of x + x shifted by 1, 2, 4, ... along the
// axis. Exact on integers (wrapping like the running sum); on floats each sum
// is added in another order than a running sum's, within log2(L) roundings.
void cum_sum(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 1);
    if (!ins) return;
    const std::optional<Shape> s = im.static_shape(n.input(0));
    if (uncountable(im, n, s)) return;
    if (!s || s->empty())
        return im.fail(n, "needs an input of at least 1 dimension and static shape");
    const DType t = dtype_of_value(im, n.input(0));
    if (t == DType::Bool) return im.fail(n, "its input must be numbers, not bool");
    const HostValue* av = im.const_input(n, 1, "axis");
    if (n.input_size() < 2 || n.input(1).empty()) return im.fail(n, "needs its axis input");
    if (!av) return;
    const std::vector<int64_t> ax = onnx_fold::ints(*av);
    if (ax.size() != 1 || av->dtype == DType::F32 || av->dtype == DType::F64)
        return im.fail(n, "its axis input must be one integer");
    const auto rank = static_cast<int64_t>(s->size());
    int64_t axis = ax[0];
    if (axis < -rank || axis >= rank)
        return im.fail(n, "axis " + std::to_string(axis) + " is out of range for rank " +
                              std::to_string(rank));
    if (axis < 0) axis += rank;
    const bool reverse = attr_int(n, "reverse", 0) != 0,
               exclusive = attr_int(n, "exclusive", 0) != 0;
    const int64_t L = (*s)[static_cast<size_t>(axis)];
    NodeId x = (*ins)[0];
    if (L == 0 || onnx_fold::numel(*s).value_or(0) == 0)
        return im.bind(n.output(0), im.add("identity", {x}));
    // x shifted by k along the axis (towards the end, or the start when reversed), zeros filling
    // in.
    auto shifted = [&](NodeId v, int64_t k) {
        const NodeId part =
            reverse
                ? im.add("slice", {v},
                         {im.named("starts", int_list({k})), im.named("ends", int_list({L})),
                          im.named("axes", int_list({axis}))})
                : im.add("slice", {v},
                         {im.named("starts", int_list({0})), im.named("ends", int_list({L - k})),
                          im.named("axes", int_list({axis}))});
        std::vector<int64_t> pads(2 * s->size(), 0);
        pads[static_cast<size_t>(axis) + (reverse ? s->size() : 0)] = k;
        return im.add("pad", {part}, {im.named("pads", int_list(pads))});
    };
    if (exclusive) {
        if (L == 1)
            return im.bind(n.output(0), im.add("zeros", {},
                                               {im.named("shape", int_list(*s)),
                                                im.named("dtype", Attr::ident(dtype_name(t)))}));
        x = shifted(x, 1);
    }
    for (int64_t k = 1; k<L; k = k> L / 2 ? L : k * 2) x = im.add("add", {x, shifted(x, k)});
    if (L == 1) x = im.add("identity", {x});
    im.bind(n.output(0), x);
}

// ---- Einsum ----
// One or two operands, each index at most once per operand, the sizes of an
// index equal wherever it appears; "..." for the same leading axes. Two
// operands map to a batched matmul: the indices in both and in the output
// are its batch, those in both and not in the output the contracted axis,
// the others kept (summed first where they are in one operand only).
struct EinsumTerm {
    std::vector<int> labels;  // 0..51 the letters, 100 + i the i-th axis under "..."
};

// The equation's input terms and output (implicit: the letters met once,
// sorted, after "..."), or "" and `why` set.
bool parse_einsum(const std::string& eq, const std::vector<Shape>& shapes,
                  std::vector<EinsumTerm>& ins, EinsumTerm& out, std::string& why) {
    std::string e;
    for (char c : eq)
        if (c != ' ') e += c;
    const size_t arrow = e.find("->");
    const std::string lhs = e.substr(0, arrow);
    std::vector<std::string> parts;
    for (size_t start = 0;;) {
        const size_t comma = lhs.find(',', start);
        parts.push_back(
            lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    if (parts.size() != shapes.size()) {
        why = "it has " + std::to_string(parts.size()) + " terms for " +
              std::to_string(shapes.size()) + " inputs";
        return false;
    }
    int ellipsis_rank = 0;
    auto letter = [](char c) {
        return c >= 'a' && c <= 'z' ? c - 'a' : c >= 'A' && c <= 'Z' ? 26 + (c - 'A') : -1;
    };
    // One term's labels, with `dots` axes under "..." (-1: count them from `rank`).
    auto term = [&](const std::string& p, int64_t rank, EinsumTerm& out_term, bool is_output) {
        int letters = 0;
        bool dots = false;
        for (size_t i = 0; i < p.size(); ++i) {
            if (p.compare(i, 3, "...") == 0) {
                if (dots) return false;
                dots = true;
                i += 2;
            } else if (letter(p[i]) >= 0) {
                ++letters;
            } else {
                return false;
            }
        }
        int under = 0;
        if (dots) {
            under = is_output ? ellipsis_rank : static_cast<int>(rank) - letters;
            if (under < 0) return false;
        } else if (!is_output && rank != letters) {
            return false;
        }
        if (!is_output) ellipsis_rank = std::max(ellipsis_rank, under);
        for (size_t i = 0; i < p.size(); ++i) {
            if (p.compare(i, 3, "...") == 0) {
                // Right-aligned, as broadcasting aligns them.
                for (int k = 0; k < under; ++k) out_term.labels.push_back(100 + k);
                i += 2;
            } else {
                out_term.labels.push_back(letter(p[i]));
            }
        }
        return true;
    };
    ins.assign(parts.size(), {});
    for (size_t i = 0; i < parts.size(); ++i)
        if (!term(parts[i], static_cast<int64_t>(shapes[i].size()), ins[i], false)) {
            why = "its term '" + parts[i] + "' does not match input " + std::to_string(i) +
                  " of rank " + std::to_string(shapes[i].size());
            return false;
        }
    // "..." axes right-aligned: an operand with fewer of them takes the last ones.
    for (auto& in : ins) {
        int under = 0;
        for (int l : in.labels) under += l >= 100;
        for (int& l : in.labels)
            if (l >= 100) l += ellipsis_rank - under;
    }
    if (arrow != std::string::npos) {
        if (!term(e.substr(arrow + 2), 0, out, true)) {
            why = "its output term '" + e.substr(arrow + 2) + "' is not valid";
            return false;
        }
    } else {
        std::map<int, int> count;
        for (const auto& in : ins)
            for (int l : in.labels) ++count[l];
        for (int k = 0; k < ellipsis_rank; ++k) out.labels.push_back(100 + k);
        for (auto [l, c] : count)
            if (l < 100 && c == 1) out.labels.push_back(l);
    }
    return true;
}

void einsum(Importer& im, const onnx::NodeProto& n) {
    const auto* eq_attr = find_attr(n, "equation");
    const std::string eq = eq_attr ? eq_attr->s() : "";
    auto refuse = [&](const std::string& why) { im.fail(n, "equation '" + eq + "': " + why); };
    if (!eq_attr) return im.fail(n, "its equation attribute is missing");
    if (n.input_size() < 1 || n.input_size() > 2)
        return refuse("only one or two operands are supported");
    auto ins = im.nodes_of(n, n.input_size());
    if (!ins) return;
    std::vector<Shape> shapes;
    const DType t = dtype_of_value(im, n.input(0));
    for (int i = 0; i < n.input_size(); ++i) {
        const std::optional<Shape> s = im.static_shape(n.input(i));
        if (uncountable(im, n, s)) return;
        if (!s) return im.fail(n, "needs inputs of static shape");
        if (dtype_of_value(im, n.input(i)) != t)
            return im.fail(n, "its inputs must have the same dtype");
        shapes.push_back(*s);
    }
    if (!is_float(t))
        return refuse("its inputs must be f32 or f64 (graphrun's matmul takes floats)");
    std::vector<EinsumTerm> terms;
    EinsumTerm out;
    std::string why;
    if (!parse_einsum(eq, shapes, terms, out, why)) return refuse(why);
    std::map<int, int64_t> size;  // each label's length
    std::map<int, int> uses;      // how many operands have it
    for (size_t i = 0; i < terms.size(); ++i) {
        const auto& ls = terms[i].labels;
        for (size_t a = 0; a < ls.size(); ++a) {
            if (std::count(ls.begin(), ls.end(), ls[a]) > 1)
                return refuse("an index repeated in one operand (a diagonal) is not supported");
            const int64_t len = shapes[i][a];
            auto [it, fresh] = size.emplace(ls[a], len);
            if (!fresh && it->second != len)
                return refuse("an index has lengths " + std::to_string(it->second) + " and " +
                              std::to_string(len) + " (broadcasting is not supported)");
            ++uses[ls[a]];
        }
    }
    for (int l : out.labels) {
        if (!size.count(l)) return refuse("its output has an index no input has");
        if (std::count(out.labels.begin(), out.labels.end(), l) > 1)
            return refuse("its output repeats an index");
    }
    auto in_out = [&](int l) {
        return std::find(out.labels.begin(), out.labels.end(), l) != out.labels.end();
    };
    // Sums the labels of operand i that are in no other operand and not in the output.
    auto sum_alone = [&](size_t i) {
        std::vector<int64_t> axes;
        std::vector<int> kept;
        for (size_t a = 0; a < terms[i].labels.size(); ++a) {
            const int l = terms[i].labels[a];
            if (uses[l] == 1 && !in_out(l))
                axes.push_back(static_cast<int64_t>(a));
            else
                kept.push_back(l);
        }
        if (axes.empty()) return;
        (*ins)[i] =
            im.add("reduce_sum", {(*ins)[i]},
                   {im.named("axes", int_list(axes)), im.named("keepdims", Attr::boolean(false))});
        terms[i].labels = kept;
    };
    auto permute = [&](NodeId v, const std::vector<int>& from, const std::vector<int>& to) {
        std::vector<int64_t> perm;
        for (int l : to) perm.push_back(std::find(from.begin(), from.end(), l) - from.begin());
        bool same = true;
        for (size_t i = 0; i < perm.size(); ++i) same = same && perm[i] == static_cast<int64_t>(i);
        return same ? v : im.add("transpose", {v}, {im.named("perm", int_list(perm))});
    };
    auto dims = [&](const std::vector<int>& ls) {
        Shape d;
        for (int l : ls) d.push_back(size[l]);
        return d;
    };
    for (size_t i = 0; i < terms.size(); ++i) sum_alone(i);
    if (terms.size() == 1) {
        NodeId y = permute((*ins)[0], terms[0].labels, out.labels);
        if (y == (*ins)[0]) y = im.add("identity", {y});
        return im.bind(n.output(0), y);
    }
    const auto& la = terms[0].labels;
    const auto& lb = terms[1].labels;
    auto has = [](const std::vector<int>& v, int l) {
        return std::find(v.begin(), v.end(), l) != v.end();
    };
    std::vector<int> batch, contracted, keep_a, keep_b;
    for (int l : out.labels) {
        if (has(la, l) && has(lb, l))
            batch.push_back(l);
        else if (has(la, l))
            keep_a.push_back(l);
        else
            keep_b.push_back(l);
    }
    for (int l : la)
        if (has(lb, l) && !in_out(l)) contracted.push_back(l);
    auto cat = [](std::vector<int> a, const std::vector<int>& b, const std::vector<int>& c) {
        a.insert(a.end(), b.begin(), b.end());
        a.insert(a.end(), c.begin(), c.end());
        return a;
    };
    const Shape bs = dims(batch);
    const int64_t B = product(bs, 0, bs.size()), M = product(dims(keep_a), 0, keep_a.size()),
                  K = product(dims(contracted), 0, contracted.size()),
                  Nn = product(dims(keep_b), 0, keep_b.size());
    // An operand already laid out with its contracted axes first (a) or last (b) is read
    // through matmul's transpose flags rather than copied by a transpose (attention's
    // "bhqd,bhkd->bhqk").
    const bool ta = la != cat(batch, keep_a, contracted) && la == cat(batch, contracted, keep_a);
    const bool tb = lb != cat(batch, contracted, keep_b) && lb == cat(batch, keep_b, contracted);
    const NodeId a =
        ta ? reshape_to(im, (*ins)[0], {B, K, M})
           : reshape_to(im, permute((*ins)[0], la, cat(batch, keep_a, contracted)), {B, M, K});
    const NodeId b =
        tb ? reshape_to(im, (*ins)[1], {B, Nn, K})
           : reshape_to(im, permute((*ins)[1], lb, cat(batch, contracted, keep_b)), {B, K, Nn});
    std::vector<NamedAttr> flags;
    if (ta) flags.push_back(im.named("transpose_a", Attr::boolean(true)));
    if (tb) flags.push_back(im.named("transpose_b", Attr::boolean(true)));
    const std::vector<int> got = cat(batch, keep_a, keep_b);
    if (std::string why; !onnx_fold::element_count(dims(got), why))
        return refuse("its output's " + why);
    const NodeId y = reshape_to(im, im.add("matmul", {a, b}, std::move(flags)), dims(got));
    im.bind(n.output(0), permute(y, got, out.labels));
}

}  // namespace

void add_more2_onnx_ops(OnnxOpTable& t) {
    t["GroupNormalization"] = {"rsqrt", group_norm};
    t["LRN"] = {"avg_pool", lrn};
    t["Mod"] = {"where", mod};
    t["OneHot"] = {"where", one_hot};
    t["CumSum"] = {"pad", cum_sum};
    t["Einsum"] = {"matmul", einsum};
}

}  // namespace graphrun::onnx_import
