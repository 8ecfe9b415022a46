// Reading ONNX values for the front end: tensor protos and attributes as
// host values, with every shape a file declares checked (rank, no wrapped
// product, engine/base/limits.h) before anything is allocated for it; and
// the nodes that make values from no data at load: Constant (its attribute)
// and Shape and Size (from static shapes). Every op whose inputs are all
// constants is folded by the engine's own CPU kernels
// (the importer's try_fold_built, engine/api/const_eval.h): one evaluator.
// The loops here run over bytes that are really there and poll
// graphrun::interrupted().
#pragma once
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/dtype.h"

namespace graphrun::onnx_fold {

// Folding is for shape arithmetic and small constants: a bigger computation
// on constants is left to the graph (it runs where the graph runs, counted).
// The bound holds for every value a fold reads or makes (a quantized weight's
// DequantizeLinear: up to kMaxFoldTotalBytes).
constexpr int64_t kMaxFoldElements = int64_t{1} << 20;
// What the folds of one model may create in all (bytes): the values live on
// the host, outside any allocator, like a filled literal (limits.h).
constexpr uint64_t kMaxFoldTotalBytes = uint64_t{1} << 27;

// A tensor known before anything runs: dense, row-major, little-endian;
// bytes.size() is always the element count of `shape` times the dtype's size.
struct HostValue {
    DType dtype = DType::F32;
    Shape shape;
    std::vector<uint8_t> bytes;
};

// ONNX's element types graphrun has (f32, f64, i32, i64, bool).
std::optional<DType> dtype_of(int32_t onnx_type);
std::string onnx_type_name(int32_t onnx_type);
// A tensor proto's values (raw_data or the typed fields); nullopt with `why`.
std::optional<HostValue> tensor_value(const onnx::TensorProto& t, std::string& why);
// What is wrong with a tensor proto of any element type whose declared shape
// is not what its data holds ("" when nothing): checked before ONNX's own
// shape inference reads it, which trusts the declared size.
std::string tensor_size_problem(const onnx::TensorProto& t);

// The bytes a tensor proto's values take in memory once read: its declared
// element count times its element type's size (0 for strings and a declared
// shape that is wrong: refused where it is read; external data counts as
// declared). Known before anything is copied.
uint64_t tensor_bytes(const onnx::TensorProto& t);

// The element count of a shape a file declares, or nullopt with `why` when it
// has more than kMaxRank dimensions, a negative one, or more than kMaxElements
// elements (a product that would wrap included).
std::optional<int64_t> element_count(const Shape& s, std::string& why);
// The same without the reason.
std::optional<int64_t> numel(const Shape& s);

// A node's attribute, or its value with a default.
const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const char* name);
int64_t attr_int(const onnx::NodeProto& n, const char* name, int64_t dflt);
float attr_float(const onnx::NodeProto& n, const char* name, float dflt);
std::optional<std::vector<int64_t>> attr_ints(const onnx::NodeProto& n, const char* name);
HostValue scalar(double x, DType t);
// The values as integers / doubles (any dtype).
std::vector<int64_t> ints(const HostValue& v);
std::vector<double> doubles(const HostValue& v);

// The value of Constant, Shape or Size `n` (`in_shape`: input 0's static
// shape, for Shape and Size). Returns its outputs; nullopt with `why` empty
// for another op, nullopt with `why` set when the node is wrong.
std::optional<std::vector<HostValue>> evaluate(const onnx::NodeProto& n, const std::optional<Shape>& in_shape,
                                               std::string& why);

// The output shape of Reshape/Flatten/Squeeze/Unsqueeze given the input's
// static shape and (Reshape, and Squeeze/Unsqueeze from opset 13) the
// constant second input; nullopt when it cannot be told, nullopt with `why`
// set when the node is wrong (a target whose element count differs from the
// input's, a duplicate or out-of-range axis, too many dimensions).
std::optional<Shape> reshape_target(const onnx::NodeProto& n, const std::optional<Shape>& in,
                                    const HostValue* second, int64_t opset, std::string& why);

}  // namespace graphrun::onnx_fold
