// An ONNX model's external data (tensors whose bytes are in a file beside the
// model, as every model over 2 GB keeps them): read into the tensor before
// ONNX's checker sees it, under ONNX Runtime's rule for where it may be.
// Internal to engine/frontend; built only with the ONNX library.
#pragma once
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace graphrun::onnx_external {

// The bytes an external tensor declares (its element count times its
// element size), or "" problems in its external_data entries: a missing or
// empty `location`, an `offset` or `length` that is not a whole number, a
// `length` that is not the declared size. `bytes` is set when it is "".
std::string entry_problem(const onnx::TensorProto& t, uint64_t& bytes);

// Reads tensor t's external data into its raw_data and marks it as held in
// the model. `dir` is the model's folder ("" where it has none: a model read
// from standard input). The location is relative to `dir`: an absolute path,
// a `..` component, or a link that leads out of `dir` is refused, as is a
// file that is not a regular file or one shorter than offset + length.
// Returns "" or what is wrong, with the values involved; `file` is set to the
// file's resolved path once it is known to be inside `dir`.
std::string read_into(onnx::TensorProto& t, const std::string& dir, std::string& file);
// The same, but the bytes go to `out` and the tensor is left with an empty
// raw_data: a large weight is then held once, not in the model and again in
// the graph. For initializers, whose values the importer takes from `out`.
std::string read_apart(onnx::TensorProto& t, const std::string& dir, std::string& file, std::vector<uint8_t>& out);

}  // namespace graphrun::onnx_external
