// The ONNX op table: which ONNX ops the importer maps onto graphrun nodes, and
// how. Each area of ops adds its entries in its own file (onnx_ops*.cpp) through
// an add_*_onnx_ops function that onnx_op_table() calls; an entry added later
// replaces an earlier one of the same name. Built only with the ONNX library.
#pragma once
#include <functional>
#include <map>
#include <string>

namespace onnx {
class NodeProto;
}

namespace graphrun::onnx_import {

class Importer;

struct OnnxOp {
    // The graphrun op this mapping needs in the build (nullptr: none). Without
    // it the ONNX op is listed as unsupported before anything runs.
    const char* needs = nullptr;
    // Builds the node's graphrun nodes and binds its outputs (Importer::bind),
    // or reports why not (Importer::fail). Empty: the op is only ever folded at
    // load (its inputs must be constants: Shape, ConstantOfShape, Range).
    std::function<void(Importer&, const onnx::NodeProto&)> build;
};

using OnnxOpTable = std::map<std::string, OnnxOp>;

// Every ONNX op the importer supports (domain ai.onnx).
const OnnxOpTable& onnx_op_table();

// The areas' entries.
void add_core_onnx_ops(OnnxOpTable& t);  // onnx_ops.cpp: elementwise, matmul/gemm, shapes, reductions
void add_shape_onnx_ops(OnnxOpTable& t);  // onnx_ops_shape.cpp: slice gather expand split pad tile squeeze ...
void add_norm_onnx_ops(OnnxOpTable& t);  // onnx_ops_norm.cpp: LayerNormalization, BatchNormalization, Gemm
void add_conv_onnx_ops(OnnxOpTable& t);  // onnx_ops_conv.cpp: Conv, ConvTranspose, the pools
void add_resize_onnx_ops(OnnxOpTable& t);  // onnx_ops_resize.cpp: Resize, Upsample
void add_more_onnx_ops(OnnxOpTable& t);  // onnx_ops_more.cpp: PRelu, HardSwish, Mish, ReduceL2, DepthToSpace, ...
void add_more2_onnx_ops(OnnxOpTable& t);  // onnx_ops_more2.cpp: GroupNormalization, LRN, Mod, OneHot, CumSum, Einsum
void add_quant_onnx_ops(OnnxOpTable& t);  // onnx_ops_quant.cpp: QuantizeLinear, DequantizeLinear, MatMulInteger, QLinearConv, ...
void add_elements_onnx_ops(OnnxOpTable& t);  // onnx_ops_elements.cpp: GatherElements, the two losses
void add_index_onnx_ops(OnnxOpTable& t);  // onnx_ops_index.cpp: TopK, ScatterElements, ScatterND
void add_rnn_onnx_ops(OnnxOpTable& t);  // onnx_ops_rnn.cpp: RNN, GRU, LSTM (unrolled)

}  // namespace graphrun::onnx_import
