// Inference for the ops that take tensors: elementwise (with NumPy
// broadcasting and weak scalar literals), matmul, transpose, reshape, cast,
// identity, concat, reductions and softmax.
#include <algorithm>

#include "engine/check/infer_context.h"
#include "engine/check/validate.h"

namespace graphrun::infer {

namespace {

// NumPy broadcasting of two shapes (right-aligned); on failure, the first
// pair of dimensions (from the right) that clash.
std::optional<Shape> broadcast(const Shape& a, const Shape& b, int64_t& da, int64_t& db) {
    const size_t r = std::max(a.size(), b.size());
    Shape out(r);
    for (size_t k = 0; k < r; ++k) {
        int64_t x = k < a.size() ? a[a.size() - 1 - k] : 1;
        int64_t y = k < b.size() ? b[b.size() - 1 - k] : 1;
        if (x != y && x != 1 && y != 1) {
            da = x;
            db = y;
            return std::nullopt;
        }
        out[r - 1 - k] = x == 1 ? y : x;
    }
    return out;
}

// `axis` in [-rank, rank), made non-negative; nullopt when out of range.
std::optional<int64_t> normalize_axis(int64_t axis, size_t rank) {
    const auto r = static_cast<int64_t>(rank);
    if (axis < -r || axis >= r) return std::nullopt;
    return axis < 0 ? axis + r : axis;
}

std::string rank_text(size_t r) {
    return "rank " + std::to_string(r);
}

// "; use cast(b, dtype=f32)": cast the integer operand to the float one's
// dtype, otherwise b to a's.
std::string cast_hint(NodeCheck& c, size_t a, size_t b) {
    DType ta = c.input(a).dtype, tb = c.input(b).dtype;
    bool cast_a = !is_float(ta) && is_float(tb);
    return "; use cast(" + c.role(cast_a ? a : b) + ", dtype=" + dtype_name(cast_a ? tb : ta) + ")";
}

bool same_dtype(NodeCheck& c, size_t ia = 0, size_t ib = 1) {
    if (c.input(ia).dtype == c.input(ib).dtype) return true;
    c.error(c.node.loc, "operands have different dtypes: " + c.operand_text(ia) + ", " +
                            c.operand_text(ib) + cast_hint(c, ia, ib));
    return false;
}

}  // namespace

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b, int64_t& da, int64_t& db) {
    return broadcast(a, b, da, db);
}

bool unify_operands(NodeCheck& c, size_t ia, size_t ib) {
    const bool weak_a = c.input(ia).weak && c.input(ia).op == OpKind::Const;
    const bool weak_b = c.input(ib).weak && c.input(ib).op == OpKind::Const;
    if (weak_a != weak_b) {
        // A bare scalar literal takes the other operand's dtype.
        const size_t w = weak_a ? ia : ib, s = weak_a ? ib : ia;
        if (!c.check_input_class(s)) return false;
        Node& lit = c.input(w);
        const DType t = c.input(s).dtype;
        std::string problem = retype_weak_literal(lit, t);  // also when it is t: 1e39 in f32
        if (!problem.empty()) {
            c.error(c.input_loc(w), c.literal_text(lit) + " cannot be " + dtype_name(t) + " (" +
                                        c.operand_text(s) + "): " + problem);
            return false;
        }
    } else if (weak_a) {
        // Two bare literals keep their own dtype, which must hold them.
        bool ok = true;
        for (size_t w : {ia, ib}) {
            Node& lit = c.input(w);
            std::string problem = retype_weak_literal(lit, lit.dtype);
            if (problem.empty()) continue;
            c.error(c.input_loc(w),
                    c.literal_text(lit) + " cannot be " + dtype_name(lit.dtype) + ": " + problem);
            ok = false;
        }
        if (!ok) return false;
    }
    bool ok = c.check_input_class(ia);
    ok = c.check_input_class(ib) && ok;
    return ok && same_dtype(c, ia, ib);
}

bool infer_binary(NodeCheck& c) {
    if (!unify_operands(c, 0, 1)) return false;
    const Node& a = c.input(0);
    const Node& b = c.input(1);
    if (a.shape == b.shape) {
        c.node.dtype = a.dtype;
        c.node.shape = a.shape;
        return true;
    }
    int64_t da = 0, db = 0;
    auto shape = broadcast(a.shape, b.shape, da, db);
    if (!shape) {
        c.error(c.node.loc, "shapes " + type_string(a.dtype, a.shape) + " and " +
                                type_string(b.dtype, b.shape) + " do not broadcast: dimension " +
                                std::to_string(da) + " vs " + std::to_string(db));
        return false;
    }
    c.node.dtype = a.dtype;
    c.node.shape = std::move(*shape);
    return true;
}

bool infer_unary(NodeCheck& c) {
    if (!c.check_input_class(0)) return false;
    c.node.dtype = c.input(0).dtype;
    c.node.shape = c.input(0).shape;
    return true;
}

bool infer_matmul(NodeCheck& c) {
    bool ok = c.check_input_class(0);
    ok = c.check_input_class(1) && ok;
    if (!ok || !same_dtype(c)) return false;
    const Node& a = c.input(0);
    const Node& b = c.input(1);
    const bool ta = c.bool_attr("transpose_a", false), tb = c.bool_attr("transpose_b", false);
    for (size_t i = 0; i < 2; ++i) {
        if (!c.input(i).shape.empty()) continue;
        c.error(c.input_loc(i),
                c.operand_text(i) + ", a scalar; matmul needs operands with at least 1 dimension");
        ok = false;
    }
    if (!ok) return false;
    for (size_t i = 0; i < 2; ++i) {
        const char* name = i == 0 ? "transpose_a" : "transpose_b";
        if (!(i == 0 ? ta : tb) || c.input(i).shape.size() >= 2) continue;
        c.error(c.attr_loc(name), std::string(name).append("=true needs ") + c.operand_name(i) +
                                      " to have at least 2 dimensions, but " + c.operand_text(i));
        ok = false;
    }
    if (!ok) return false;

    // numpy.matmul: a 1-D a is a row [1,k], a 1-D b a column [k,1]; the added dim is dropped after.
    Shape sa = a.shape, sb = b.shape;
    if (sa.size() == 1) sa.insert(sa.begin(), 1);
    if (sb.size() == 1) sb.push_back(1);
    if (ta) std::swap(sa[sa.size() - 1], sa[sa.size() - 2]);
    if (tb) std::swap(sb[sb.size() - 1], sb[sb.size() - 2]);
    // Built only for a message: the operands' text costs a few allocations per node.
    auto both = [&c] { return c.operand_text(0) + ", " + c.operand_text(1); };
    std::string flags;
    if (ta) flags += " (transpose_a=true";
    if (tb) flags += ta ? ", transpose_b=true" : " (transpose_b=true";
    if (!flags.empty()) flags += ")";
    if (sa.back() != sb[sb.size() - 2]) {
        c.error(c.node.loc, "inner dimensions differ: " + both() + flags);
        return false;
    }
    int64_t da = 0, db = 0;
    auto batch =
        broadcast(Shape(sa.begin(), sa.end() - 2), Shape(sb.begin(), sb.end() - 2), da, db);
    if (!batch) {
        c.error(c.node.loc, "batch dimensions do not broadcast: " + both() + ": dimension " +
                                std::to_string(da) + " vs " + std::to_string(db));
        return false;
    }
    Shape out = *batch;
    if (a.shape.size() >= 2) out.push_back(sa[sa.size() - 2]);
    if (b.shape.size() >= 2) out.push_back(sb.back());
    c.node.dtype = a.dtype;
    c.node.shape = std::move(out);
    return true;
}

bool infer_transpose(NodeCheck& c) {
    const Node& x = c.input(0);
    const size_t r = x.shape.size();
    std::vector<int64_t> perm;
    if (auto given = c.ints_attr("perm")) {
        perm = *given;
    } else {
        for (size_t k = r; k > 0; --k) perm.push_back(static_cast<int64_t>(k - 1));
    }
    const std::string what = "perm " + ints_text(perm);
    auto of_x = [&c] { return " (" + c.operand_text(0) + ")"; };
    if (perm.size() != r) {
        c.error(c.attr_loc("perm"), what + " has " + std::to_string(perm.size()) +
                                        " entries, but " + c.operand_text(0) + " (" + rank_text(r) +
                                        ")");
        return false;
    }
    std::vector<bool> used(r, false);
    Shape out(r);
    for (size_t k = 0; k < r; ++k) {
        auto p = normalize_axis(perm[k], r);
        if (!p) {
            c.error(c.attr_loc("perm"), what + ": entry " + std::to_string(perm[k]) +
                                            " is out of range for " + rank_text(r) + of_x());
            return false;
        }
        if (used[static_cast<size_t>(*p)]) {
            c.error(c.attr_loc("perm"), what + " is not a permutation of 0.." +
                                            std::to_string(r - 1) + ": axis " + std::to_string(*p) +
                                            " appears twice" + of_x());
            return false;
        }
        used[static_cast<size_t>(*p)] = true;
        out[k] = x.shape[static_cast<size_t>(*p)];
    }
    c.node.dtype = x.dtype;
    c.node.shape = std::move(out);
    return true;
}

bool infer_reshape(NodeCheck& c) {
    const Node& x = c.input(0);
    auto target = c.ints_attr("shape");
    if (!target) return false;
    const Loc& loc = c.attr_loc("shape");
    const std::string to = ints_text(*target);
    const int64_t have = *checked_numel(x.shape);
    const std::string from =
        type_string(x.dtype, x.shape) + " (" + std::to_string(have) + " elements)";
    int inferred = -1, count = 0;
    Shape known;
    for (size_t k = 0; k < target->size(); ++k) {
        int64_t d = (*target)[k];
        if (d == -1) {
            inferred = static_cast<int>(k);
            ++count;
            continue;
        }
        if (d < 0) {
            c.error(loc, "shape " + to + " has a negative entry " + std::to_string(d) +
                             "; only one -1 (inferred) is allowed");
            return false;
        }
        known.push_back(d);
    }
    if (count > 1) {
        c.error(loc, "shape " + to + " has more than one -1");
        return false;
    }
    if (static_cast<int>(target->size()) > kMaxRank) {
        c.error(loc, "shape " + to + " has " + std::to_string(target->size()) +
                         " dimensions; at most " + std::to_string(kMaxRank) + " are supported");
        return false;
    }
    auto product = checked_numel(known);
    if (!product) {
        c.error(loc, "cannot reshape " + from + " to " + to + ": too many elements");
        return false;
    }
    Shape out = *target;
    if (inferred >= 0) {
        if (*product == 0) {
            c.error(loc, "cannot reshape " + from + " to " + to +
                             ": the -1 cannot be inferred when the other entries multiply to 0");
            return false;
        }
        if (have % *product != 0) {
            c.error(loc, "cannot reshape " + from + " to " + to + ": " + std::to_string(have) +
                             " is not a multiple of " + std::to_string(*product));
            return false;
        }
        out[static_cast<size_t>(inferred)] = have / *product;
    } else if (*product != have) {
        c.error(loc, "cannot reshape " + from + " to " + to + " (" + std::to_string(*product) +
                         " elements)");
        return false;
    }
    c.node.dtype = x.dtype;
    c.node.shape = std::move(out);
    return true;
}

bool infer_cast_identity(NodeCheck& c) {
    c.node.shape = c.input(0).shape;
    c.node.dtype =
        c.node.op == OpKind::Cast ? c.dtype_attr().value_or(DType::F32) : c.input(0).dtype;
    return true;
}

bool infer_concat(NodeCheck& c) {
    const Node& first = c.input(0);
    const size_t r = first.shape.size();
    bool ok = true;
    for (size_t i = 0; i < c.arity(); ++i) {
        const Node& x = c.input(i);
        if (x.shape.empty()) {
            c.error(
                c.input_loc(i),
                c.operand_text(i) + ", a scalar; concat needs inputs with at least 1 dimension");
            ok = false;
        } else if (i > 0 && x.dtype != first.dtype) {
            c.error(c.input_loc(i), c.operand_text(i) + ", but " + c.operand_text(0) +
                                        "; all inputs need the same dtype: use cast(" + c.role(i) +
                                        ", dtype=" + dtype_name(first.dtype) + ")");
            ok = false;
        } else if (i > 0 && x.shape.size() != r) {
            c.error(c.input_loc(i), c.operand_text(i) + ", but " + c.operand_text(0) +
                                        ": ranks differ (" + std::to_string(x.shape.size()) +
                                        " vs " + std::to_string(r) + ")");
            ok = false;
        }
    }
    if (!ok) return false;
    const int64_t axis_given = c.int_attr("axis", 0);
    auto axis = normalize_axis(axis_given, r);
    if (!axis) {
        c.error(c.attr_loc("axis"), "axis " + std::to_string(axis_given) + " is out of range for " +
                                        rank_text(r) + " (" + c.operand_text(0) + ")");
        return false;
    }
    const auto ax = static_cast<size_t>(*axis);
    Shape out = first.shape;
    for (size_t i = 1; i < c.arity(); ++i) {
        const Node& x = c.input(i);
        for (size_t d = 0; d < r; ++d) {
            if (d == ax || x.shape[d] == first.shape[d]) continue;
            c.error(c.input_loc(i), c.operand_text(i) + ", but " + c.operand_text(0) +
                                        ": dimension " + std::to_string(d) + " differs (" +
                                        std::to_string(x.shape[d]) + " vs " +
                                        std::to_string(first.shape[d]) + "); only axis " +
                                        std::to_string(ax) + " may differ");
            ok = false;
            break;
        }
        if (__builtin_add_overflow(out[ax], x.shape[ax], &out[ax])) {
            c.error(c.node.loc, "result has too many elements (at most " +
                                    std::to_string(kMaxElements) + " are allowed)");
            return false;
        }
    }
    if (!ok) return false;
    c.node.dtype = first.dtype;
    c.node.shape = std::move(out);
    return true;
}

bool infer_reduce(NodeCheck& c) {
    if (!c.check_input_class(0)) return false;
    const Node& x = c.input(0);
    const size_t r = x.shape.size();
    std::vector<bool> reduced(r, false);
    if (auto axes = c.ints_attr("axes")) {
        const std::string what = "axes " + ints_text(*axes);
        for (int64_t a : *axes) {
            auto k = normalize_axis(a, r);
            if (!k) {
                c.error(c.attr_loc("axes"), what + ": axis " + std::to_string(a) +
                                                " is out of range for " + rank_text(r) + " (" +
                                                c.operand_text(0) + ")");
                return false;
            }
            if (reduced[static_cast<size_t>(*k)]) {
                c.error(c.attr_loc("axes"), what + " names axis " + std::to_string(*k) + " twice");
                return false;
            }
            reduced[static_cast<size_t>(*k)] = true;
        }
    } else {
        reduced.assign(r, true);
    }
    const bool keepdims = c.bool_attr("keepdims", false);
    Shape out;
    for (size_t k = 0; k < r; ++k) {
        if (!reduced[k]) {
            out.push_back(x.shape[k]);
            continue;
        }
        if ((c.node.op == OpKind::ReduceMax || c.node.op == OpKind::ReduceMin) && x.shape[k] == 0) {
            c.error(c.attr("axes") ? c.attr_loc("axes") : c.input_loc(0),
                    c.operand_text(0) + ": axis " + std::to_string(k) + " is empty, and " +
                        c.info.name + " of an empty dimension has no identity");
            return false;
        }
        if (keepdims) out.push_back(1);
    }
    c.node.dtype = x.dtype;
    c.node.shape = std::move(out);
    return true;
}

bool infer_softmax(NodeCheck& c) {
    if (!c.check_input_class(0)) return false;
    const Node& x = c.input(0);
    if (x.shape.empty()) {
        c.error(c.input_loc(0),
                c.operand_text(0) + ", a scalar; " + std::string(c.info.name) + " needs at least 1 dimension");
        return false;
    }
    const int64_t axis = c.int_attr("axis", -1);
    if (!normalize_axis(axis, x.shape.size())) {
        c.error(c.attr_loc("axis"), "axis " + std::to_string(axis) + " is out of range for " +
                                        rank_text(x.shape.size()) + " (" + c.operand_text(0) + ")");
        return false;
    }
    c.node.dtype = x.dtype;
    c.node.shape = x.shape;
    return true;
}

}  // namespace graphrun::infer
