// Inference for the index ops (README "Ops beyond SPEC section 3"), with
// ONNX's semantics: top_k (TopK: the k largest or smallest along an axis, as
// values or as i64 indices) and the scatters (ScatterElements, ScatterND: a
// copy of the data with updates written, or reduced, at run-time indices),
// and gather_elements (GatherElements: data read at run-time indices along an axis).
#include "engine/check/infer_context.h"
#include "engine/check/validate.h"

namespace graphrun::infer {

namespace {

bool axis_in_range(NodeCheck& c, int64_t axis, int64_t rank, size_t operand) {
    if (axis >= -rank && axis < rank) return true;
    c.error(c.attr("axis") ? c.attr_loc("axis") : c.node.loc,
            "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank) + " (" +
                c.operand_text(operand) + ")");
    return false;
}

}  // namespace

bool infer_top_k(NodeCheck& c) {
    if (!c.check_input_class(0)) return false;
    const Node& x = c.input(0);
    const auto rank = static_cast<int64_t>(x.shape.size());
    if (rank == 0) {
        c.error(c.input_loc(0), c.operand_text(0) + ", a scalar; top_k needs at least 1 dimension");
        return false;
    }
    const int64_t axis = c.int_attr("axis", -1);
    if (!axis_in_range(c, axis, rank, 0)) return false;
    const auto a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    const int64_t k = c.int_attr("k", 0);
    if (k < 0 || k > x.shape[a]) {
        c.error(c.attr_loc("k"), "k=" + std::to_string(k) + " must be between 0 and the length of axis " +
                                     std::to_string(a) + ", " + std::to_string(x.shape[a]) + " (" +
                                     c.operand_text(0) + ")");
        return false;
    }
    const bool indices = c.bool_attr("indices", false);
    if (c.arity() > 1) {
        // top_k(x, K, k=): K fed at run time (ONNX TopK whose K is not a
        // constant), one integer that must equal k, the value the output's
        // shape was built for; the kernel checks it.
        if (!check_index_operand(c, 1)) return false;
        const Node& kin = c.input(1);
        if (kin.shape.size() > 1 || (kin.shape.size() == 1 && kin.shape[0] != 1)) {
            c.error(c.input_loc(1), c.operand_text(1) + ", but top_k's K input holds one value ([] or [1])");
            return false;
        }
    }
    Shape out = x.shape;
    out[a] = k;
    c.node.dtype = indices ? DType::I64 : x.dtype;
    c.node.shape = std::move(out);
    return true;
}

bool infer_scatter(NodeCheck& c) {
    const bool nd = c.node.op == OpKind::ScatterND;
    if (!c.check_input_class(0)) return false;
    if (!check_index_operand(c, 1)) return false;
    if (!unify_operands(c, 0, 2)) return false;
    const Node& data = c.input(0);
    const Node& idx = c.input(1);
    const Node& upd = c.input(2);
    if (const NamedAttr* r = c.attr("reduction")) {
        const std::string& s = r->value.s;
        if (s != "none" && s != "add" && s != "mul" && s != "max" && s != "min") {
            c.error(c.attr_loc("reduction"),
                    "reduction must be \"none\", \"add\", \"mul\", \"max\" or \"min\", got \"" + s + "\"");
            return false;
        }
        if (s != "none" && data.dtype == DType::Bool) {
            c.error(c.attr_loc("reduction"), "reduction \"" + s + "\" needs numbers, but " + c.operand_text(0));
            return false;
        }
    }
    const auto rank = static_cast<int64_t>(data.shape.size());
    if (!nd) {
        // ScatterElements: indices and updates of one shape, of data's rank,
        // no longer than data on the axes other than `axis`.
        if (rank == 0) {
            c.error(c.input_loc(0), c.operand_text(0) + ", a scalar; scatter_elements needs at least 1 dimension");
            return false;
        }
        const int64_t axis = c.int_attr("axis", 0);
        if (!axis_in_range(c, axis, rank, 0)) return false;
        const int64_t a = axis < 0 ? axis + rank : axis;
        if (idx.shape != upd.shape || static_cast<int64_t>(idx.shape.size()) != rank) {
            c.error(c.input_loc(2), "its indices (" + c.operand_text(1) + ") and updates (" + c.operand_text(2) +
                                        ") must have one shape, of the rank of its data (" + c.operand_text(0) +
                                        ")");
            return false;
        }
        for (int64_t d = 0; d < rank; ++d)
            if (d != a && idx.shape[static_cast<size_t>(d)] > data.shape[static_cast<size_t>(d)]) {
                c.error(c.input_loc(1), c.operand_text(1) + " is longer than the data (" + c.operand_text(0) +
                                            ") on axis " + std::to_string(d) + ", which is not the scatter's axis " +
                                            std::to_string(a));
                return false;
            }
    } else {
        // ScatterND: indices [..., m] address slices data[i_0, ..., i_m-1, :, ...];
        // updates are indices.shape[:-1] + data.shape[m:].
        if (idx.shape.empty()) {
            c.error(c.input_loc(1), c.operand_text(1) + ", a scalar; scatter_nd's indices need at least 1 "
                                                        "dimension (the last one indexes the data)");
            return false;
        }
        const int64_t m = idx.shape.back();
        if (m > rank) {
            c.error(c.input_loc(1), c.operand_text(1) + ": its last dimension, " + std::to_string(m) +
                                        ", is more than the rank of the data (" + c.operand_text(0) + ")");
            return false;
        }
        Shape want(idx.shape.begin(), idx.shape.end() - 1);
        want.insert(want.end(), data.shape.begin() + m, data.shape.end());
        if (upd.shape != want) {
            c.error(c.input_loc(2), c.operand_text(2) + ", but scatter_nd's updates for indices " +
                                        shape_string(idx.shape) + " into data " + shape_string(data.shape) +
                                        " must be " + shape_string(want));
            return false;
        }
    }
    c.node.dtype = data.dtype;
    c.node.shape = data.shape;
    return true;
}

// gather_elements(data, indices, axis=0): indices of data's rank, no longer
// than data on the other axes (PyTorch's gather; ONNX's GatherElements);
// the result has the indices' shape and the data's dtype.
bool infer_gather_elements(NodeCheck& c) {
    if (!c.check_input_class(0)) return false;
    if (!check_index_operand(c, 1)) return false;
    const Node& data = c.input(0);
    const Node& idx = c.input(1);
    const auto rank = static_cast<int64_t>(data.shape.size());
    if (rank == 0) {
        c.error(c.input_loc(0), c.operand_text(0) + ", a scalar; gather_elements needs at least 1 dimension");
        return false;
    }
    const int64_t axis = c.int_attr("axis", 0);
    if (!axis_in_range(c, axis, rank, 0)) return false;
    const int64_t a = axis < 0 ? axis + rank : axis;
    if (static_cast<int64_t>(idx.shape.size()) != rank) {
        c.error(c.input_loc(1), c.operand_text(1) + ", but gather_elements' indices must have the rank of its data (" +
                                    c.operand_text(0) + ")");
        return false;
    }
    for (int64_t d = 0; d < rank; ++d)
        if (d != a && idx.shape[static_cast<size_t>(d)] > data.shape[static_cast<size_t>(d)]) {
            c.error(c.input_loc(1), c.operand_text(1) + " is longer than the data (" + c.operand_text(0) +
                                        ") on axis " + std::to_string(d) + ", which is not the gather's axis " +
                                        std::to_string(a));
            return false;
        }
    c.node.dtype = data.dtype;
    c.node.shape = idx.shape;
    return true;
}

}  // namespace graphrun::infer
