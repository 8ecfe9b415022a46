// Inference for the creation ops (const, zeros, ones, fill, range,
// random_uniform, random_normal) and the encoding of const literals.
#include <algorithm>
#include <cmath>

#include "engine/check/infer_context.h"
#include "engine/check/validate.h"

namespace graphrun::infer {

namespace {

const Loc& known_or(const Loc& a, const Loc& b) {
    return a.known() ? a : b;
}

// Reads a const `value` (scalar or nested list) into its shape and its scalars
// in row-major order, reporting the first ragged row, mixed kinds or non-scalar.
class LiteralReader {
  public:
    LiteralReader(NodeCheck& c, const Loc& value_loc) : c_(c), value_loc_(value_loc) {}

    bool read(const Attr& v, Shape& shape, std::vector<Scalar>& out) {
        const Attr* cur = &v;
        while (cur->kind == Attr::Kind::List) {
            if (static_cast<int>(shape.size()) == kMaxRank) {
                c_.error(where(*cur), "list literal nests deeper than " + std::to_string(kMaxRank) +
                                          " dimensions");
                return false;
            }
            shape.push_back(static_cast<int64_t>(cur->list.size()));
            if (cur->list.empty()) break;
            cur = &cur->list[0];
        }
        // Room for the elements a regular literal of this shape has (bounded:
        // a ragged one may have far fewer).
        size_t expect = 1;
        for (int64_t d : shape) expect = std::min<size_t>(expect * static_cast<size_t>(std::max<int64_t>(d, 1)), 4096);
        out.reserve(expect);
        shape_ = &shape;
        out_ = &out;
        return walk(v, 0);
    }

  private:
    const Loc& where(const Attr& a) const { return known_or(a.loc, value_loc_); }

    bool walk(const Attr& a, size_t depth) {
        const Shape& shape = *shape_;
        if (depth < shape.size()) {
            if (a.kind != Attr::Kind::List) {
                c_.error(where(a), "ragged list literal: this element is " + attr_text(a) +
                                       ", the first element at this depth is a list of " +
                                       std::to_string(shape[depth]));
                return false;
            }
            if (static_cast<int64_t>(a.list.size()) != shape[depth]) {
                c_.error(where(a),
                         "ragged list literal: this row has " + std::to_string(a.list.size()) +
                             " elements, the first row has " + std::to_string(shape[depth]));
                return false;
            }
            for (const Attr& e : a.list)
                if (!walk(e, depth + 1)) return false;
            return true;
        }
        if (a.kind == Attr::Kind::List) {
            c_.error(where(a),
                     "ragged list literal: this element is a list, the first element at "
                     "this depth is a number");
            return false;
        }
        auto s = to_scalar(a);
        if (!s) {
            c_.error(where(a),
                     "list literal elements must be numbers or true/false, got " + attr_text(a));
            return false;
        }
        if (!out_->empty() && out_->front().is_bool != s->is_bool) {
            c_.error(where(a), "list literal mixes numbers and bools: this element is " +
                                   scalar_text(*s) + ", the first is " +
                                   scalar_text(out_->front()));
            return false;
        }
        if (static_cast<int64_t>(out_->size()) >= kMaxElements) {
            c_.error(where(a), "list literal has too many elements");
            return false;
        }
        out_->push_back(*s);
        return true;
    }

    NodeCheck& c_;
    const Loc& value_loc_;
    Shape* shape_ = nullptr;
    std::vector<Scalar>* out_ = nullptr;
};

// The literal of `numel` elements: the scalars in order, or one scalar repeated.
std::vector<uint8_t> encode_literal(const std::vector<Scalar>& elems, int64_t numel, DType t) {
    std::vector<uint8_t> bytes;
    const size_t size = dtype_size(t);
    if (elems.size() == 1 && numel != 1) {
        std::vector<uint8_t> one;
        encode_scalar(elems[0], t, one);
        bytes.reserve(static_cast<size_t>(numel) * size);
        for (int64_t k = 0; k < numel; ++k) bytes.insert(bytes.end(), one.begin(), one.end());
        return bytes;
    }
    bytes.reserve(elems.size() * size);
    for (const Scalar& s : elems) encode_scalar(s, t, bytes);
    return bytes;
}

void collect_scalars(const Attr& v, std::vector<Scalar>& out) {
    if (v.kind == Attr::Kind::List) {
        for (const Attr& e : v.list) collect_scalars(e, out);
    } else if (auto s = to_scalar(v)) {
        out.push_back(*s);
    }
}

double as_double(const Scalar& s) {
    return s.is_bool ? (s.b ? 1 : 0) : s.f;
}

int64_t as_int(const Scalar& s) {
    if (s.is_bool) return s.b ? 1 : 0;
    return s.is_int ? s.i : static_cast<int64_t>(s.f);
}

}  // namespace

// A const whose bytes the front end read (an ONNX initializer).
bool infer_host_literal(NodeCheck& c) {
    auto shape = c.creation_shape("shape");
    auto t = c.dtype_attr();
    if (!shape || !t) return false;
    const uint64_t want = static_cast<uint64_t>(*checked_numel(*shape)) * dtype_size(*t);
    if (c.node.literal.size() != want) {
        c.error(c.node.loc, "the constant has " + std::to_string(c.node.literal.size()) + " bytes where " +
                                dtype_name(*t) + shape_string(*shape) + " needs " + std::to_string(want));
        return false;
    }
    c.node.dtype = *t;
    c.node.shape = std::move(*shape);
    return true;
}

bool infer_const(NodeCheck& c) {
    if (c.node.host_literal) return infer_host_literal(c);
    const NamedAttr* va = c.attr("value");
    if (!va) return false;
    Shape shape;
    std::vector<Scalar> elems;
    LiteralReader reader(c, c.attr_loc("value"));
    if (!reader.read(va->value, shape, elems)) return false;

    DType t = DType::F32;
    if (auto explicit_dtype = c.dtype_attr())
        t = *explicit_dtype;
    else if (!elems.empty() && elems.front().is_bool)
        t = DType::Bool;
    c.node.dtype = t;

    if (c.attr("shape")) {
        auto s = c.creation_shape("shape");
        if (!s) return false;
        int64_t want = *checked_numel(*s);
        if (shape.empty()) {
            if (want > kMaxFilledLiteralElements) {
                c.error(
                    c.attr_loc("shape"),
                    "filling shape " + shape_string(*s) + " (" + std::to_string(want) +
                        " elements) from one value makes a literal too large to hold (at most " +
                        std::to_string(kMaxFilledLiteralElements) + "); use fill(" +
                        shape_string(*s) + ", " + scalar_text(elems[0]) + ")");
                return false;
            }
        } else if (want != static_cast<int64_t>(elems.size())) {
            c.error(c.attr_loc("shape"), "value has " + std::to_string(elems.size()) +
                                             " elements but shape " + shape_string(*s) + " has " +
                                             std::to_string(want));
            return false;
        }
        shape = *s;
    }
    // A weak literal takes its dtype from the other operand (f64 holds 1e39):
    // the binary op checks it once that dtype is known.
    const bool dtype_from_operand = c.node.weak && !c.attr("dtype");
    for (const Scalar& e : elems) {
        std::string problem = conversion_problem(e, t);
        if (problem.empty() || dtype_from_operand) continue;
        c.error(known_or(e.src->loc, c.attr_loc("value")),
                scalar_text(e) + " cannot be " + dtype_name(t) + ": " + problem);
        return false;
    }
    c.node.literal = encode_literal(elems, *checked_numel(shape), t);
    c.node.shape = std::move(shape);
    return true;
}

std::string retype_weak_literal(Node& weak, DType t) {
    const NamedAttr* va = weak.find_attr("value");
    if (!va) return "it has no value";
    if (weak.dtype == t) {
        // Already encoded in t by its const check, which left only the range
        // to this one: a bare number is one scalar, checked without a copy.
        if (auto s = to_scalar(va->value)) return conversion_problem(*s, t);
    }
    std::vector<Scalar> elems;
    collect_scalars(va->value, elems);
    for (const Scalar& e : elems) {
        std::string problem = conversion_problem(e, t);
        if (!problem.empty()) return problem;
    }
    weak.dtype = t;
    weak.literal = encode_literal(elems, checked_numel(weak.shape).value_or(0), t);
    return "";
}

bool infer_zeros_ones(NodeCheck& c) {
    auto shape = c.creation_shape("shape");
    auto dtype = c.creation_dtype(DType::F32);
    if (!shape || !dtype) return false;
    c.node.shape = *shape;
    c.node.dtype = *dtype;
    return true;
}

bool infer_fill(NodeCheck& c) {
    auto shape = c.creation_shape("shape");
    auto value = c.scalar_attr("value");
    if (!value) return false;
    // Like const, a bool value makes a bool tensor unless dtype says otherwise.
    auto dtype = c.creation_dtype(value->is_bool ? DType::Bool : DType::F32);
    if (!shape || !dtype) return false;
    std::string problem = conversion_problem(*value, *dtype);
    if (!problem.empty()) {
        c.error(c.attr_loc("value"), "value " + scalar_text(*value) + " cannot be " +
                                         dtype_name(*dtype) + ": " + problem);
        return false;
    }
    c.node.shape = *shape;
    c.node.dtype = *dtype;
    return true;
}

bool infer_range(NodeCheck& c) {
    auto dtype = c.creation_dtype(DType::F32);
    Scalar zero, one;
    zero.is_int = one.is_int = true;
    one.i = 1;
    one.f = 1;
    struct Arg {
        const char* name;
        Scalar value;
    };
    Arg args[3] = {{"start", c.scalar_attr("start").value_or(zero)},
                   {"limit", c.scalar_attr("limit").value_or(zero)},
                   {"delta", c.scalar_attr("delta").value_or(one)}};
    if (!c.attr("limit")) return false;  // required: reported
    bool ok = dtype.has_value();
    for (const Arg& a : args) {
        if (!std::isfinite(as_double(a.value))) {
            c.error(c.attr_loc(a.name),
                    std::string(a.name) + " must be finite, got " + scalar_text(a.value));
            ok = false;
        } else if (dtype && is_int(*dtype)) {
            std::string problem = conversion_problem(a.value, *dtype);
            if (problem.empty()) continue;
            c.error(c.attr_loc(a.name), std::string(a.name) + " " + scalar_text(a.value) +
                                            " cannot be " + dtype_name(*dtype) + ": " + problem);
            ok = false;
        }
    }
    if (as_double(args[2].value) == 0) {
        c.error(c.attr_loc("delta"), "delta must not be 0");
        ok = false;
    }
    if (!ok) return false;

    const std::string call = "range(start=" + scalar_text(args[0].value) +
                             ", limit=" + scalar_text(args[1].value) +
                             ", delta=" + scalar_text(args[2].value) + ")";
    int64_t count = 0;
    bool too_many = false;
    if (is_int(*dtype)) {
        // Exact: numpy.arange's count, ceil((limit - start) / delta), without overflow.
        __int128 start = as_int(args[0].value), limit = as_int(args[1].value),
                 delta = as_int(args[2].value);
        __int128 span = limit - start;
        __int128 n = 0;
        if (delta > 0 && span > 0) n = (span + delta - 1) / delta;
        if (delta < 0 && span < 0) n = (-span + -delta - 1) / -delta;
        too_many = n > kMaxElements;
        count = too_many ? 0 : static_cast<int64_t>(n);
    } else {
        double q = std::ceil((as_double(args[1].value) - as_double(args[0].value)) /
                             as_double(args[2].value));
        too_many = !std::isfinite(q) || q > static_cast<double>(kMaxElements);
        count = too_many || q <= 0 ? 0 : static_cast<int64_t>(q);
    }
    if (too_many) {
        c.error(c.node.loc, call + " has too many elements (at most " +
                                std::to_string(kMaxElements) + " are allowed)");
        return false;
    }
    c.node.dtype = *dtype;
    c.node.shape = {count};
    return true;
}

bool infer_random(NodeCheck& c) {
    auto shape = c.creation_shape("shape");
    auto dtype = c.creation_dtype(DType::F32);
    bool ok = shape && dtype;
    if (c.int_attr("seed", 0) < 0) {
        c.error(c.attr_loc("seed"),
                "seed must be an integer >= 0, got " + std::to_string(c.int_attr("seed", 0)));
        ok = false;
    }
    const bool uniform = c.node.op == OpKind::RandomUniform;
    const char* lo_name = uniform ? "low" : "mean";
    const char* hi_name = uniform ? "high" : "stddev";
    double lo = 0, hi = 1;
    bool finite = true;
    for (const char* name : {lo_name, hi_name}) {
        auto s = c.scalar_attr(name);
        if (!s) continue;
        double v = as_double(*s);
        if (!std::isfinite(v)) {
            c.error(c.attr_loc(name),
                    std::string(name) + " must be finite, got " + scalar_text(*s));
            ok = finite = false;
        }
        (name == lo_name ? lo : hi) = v;
    }
    if (finite && uniform && lo > hi) {
        c.error(c.attr_loc("low"),
                "low (" + number_text(lo) + ") must not exceed high (" + number_text(hi) + ")");
        ok = false;
    }
    if (finite && !uniform && hi < 0) {
        c.error(c.attr_loc("stddev"), "stddev must be >= 0, got " + number_text(hi));
        ok = false;
    }
    if (!ok) return false;
    c.node.shape = *shape;
    c.node.dtype = *dtype;
    return true;
}

}  // namespace graphrun::infer
