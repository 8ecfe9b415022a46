// GatherElements (issue 27 item 6), composed of graphrun ops: one gather from
// the flattened data at linear positions
//
//   lin = idx' * stride(axis) + offset,  idx' = idx < 0 ? idx + len : idx
//
// where `offset` (a constant of the indices' shape) is the sum over the other
// axes of coordinate * stride. An index outside [-len, len) would land on
// another element of the flat data, a wrong answer: such an entry is sent to
// position numel(data), one past the end, so the gather stops the run with
// its entry named (exit 1) instead.
#include <cstring>
#include <string>
#include <vector>

#include "engine/frontend/onnx_importer.h"

namespace graphrun::onnx_import {

namespace {

constexpr int64_t kMaxOffsetElements = int64_t{1} << 24;  // the offset constant: at most 128 MiB

void gather_elements(Importer& im, const onnx::NodeProto& n) {
    auto ins = im.nodes_of(n, 2);
    if (!ins || ins->size() < 2) return im.fail(n, "needs data and indices");
    const std::optional<Shape> ds = im.static_shape(n.input(0)), is = im.static_shape(n.input(1));
    if (!ds || !is) return im.fail(n, "needs its data and indices of static shape");
    const auto rank = static_cast<int64_t>(ds->size());
    if (rank == 0 || static_cast<int64_t>(is->size()) != rank)
        return im.fail(n, "its indices " + shape_string(*is) + " must have the rank of its data " + shape_string(*ds) +
                              " (at least 1)");
    int64_t axis = attr_int(n, "axis", 0);
    if (axis < -rank || axis >= rank)
        return im.fail(n, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    if (axis < 0) axis += rank;
    for (int64_t d = 0; d < rank; ++d)
        if (d != axis && (*is)[static_cast<size_t>(d)] > (*ds)[static_cast<size_t>(d)])
            return im.fail(n, "its indices " + shape_string(*is) + " are longer than its data " + shape_string(*ds) +
                                  " on axis " + std::to_string(d));
    const std::optional<int64_t> count = checked_numel(*is), data_count = checked_numel(*ds);
    if (!count || !data_count || *count > kMaxOffsetElements)
        return im.fail(n, "its indices " + shape_string(*is) + " hold more than 2^24 elements");
    std::vector<int64_t> stride(static_cast<size_t>(rank), 1);
    for (int64_t d = rank - 1; d > 0; --d)
        stride[static_cast<size_t>(d - 1)] = stride[static_cast<size_t>(d)] * (*ds)[static_cast<size_t>(d)];
    HostValue offset;
    offset.dtype = DType::I64;
    offset.shape = *is;
    offset.bytes.resize(static_cast<size_t>(*count) * 8);
    std::vector<int64_t> coord(static_cast<size_t>(rank), 0);
    for (int64_t i = 0; i < *count; ++i) {
        int64_t o = 0;
        for (int64_t d = 0; d < rank; ++d)
            if (d != axis) o += coord[static_cast<size_t>(d)] * stride[static_cast<size_t>(d)];
        std::memcpy(&offset.bytes[static_cast<size_t>(i) * 8], &o, 8);
        for (int64_t d = rank - 1; d >= 0; --d) {  // the next row-major coordinate
            if (++coord[static_cast<size_t>(d)] < (*is)[static_cast<size_t>(d)]) break;
            coord[static_cast<size_t>(d)] = 0;
        }
    }
    const int64_t len = (*ds)[static_cast<size_t>(axis)];
    auto i64 = [&](int64_t v) { return im.scalar(static_cast<double>(v), DType::I64); };
    NodeId idx = im.add("cast", {(*ins)[1]}, {im.named("dtype", Attr::ident("i64"))});
    idx = im.add("where", {im.add("less", {idx, i64(0)}), im.add("add", {idx, i64(len)}), idx});
    const NodeId bad = im.add("logical_or", {im.add("less", {idx, i64(0)}), im.add("greater_equal", {idx, i64(len)})});
    const NodeId lin = im.add("add", {im.add("mul", {idx, i64(stride[static_cast<size_t>(axis)])}),
                                      im.const_node(std::move(offset), im.node_loc())});
    const NodeId at = im.add("where", {bad, i64(*data_count), lin});
    const NodeId flat = im.add("reshape", {(*ins)[0]}, {im.named("shape", int_list(Shape{*data_count}))});
    im.bind(n.output(0), im.add("gather", {flat, at}, {im.named("axis", Attr::integer(0))}));
}

}  // namespace

void add_elements_onnx_ops(OnnxOpTable& t) { t["GatherElements"] = {"gather", gather_elements}; }

}  // namespace graphrun::onnx_import
