// What feeds.cpp and outputs.cpp share: reading the arrays an option names.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "engine/api/feeds.h"

namespace graphrun::detail {

// "f32[2,3]"
std::string array_type(const NpyArray& a);
// The arrays of a @FILE source: one for NAME=@FILE.npy or NAME=@FILE.npz
// (member NAME, or the only member), every member for @FILE.npz. The file is
// read and parsed under `limits` (read_array_file, parse_npz); running out of
// host memory anyway is an error, not an abort.
// Also ONNX tensor files: NAME=@FILE.pb (or @FILE.pb, by the tensor's
// name), and @DIR, a folder of input_K.pb (output_K.pb for
// --expected-output) as the model zoo's test_data_set_N holds them; a tensor
// with no name there is the K-th of `order` (the graph's inputs or outputs).
bool read_arrays(const ArraySource& s, std::vector<NpzEntry>& out, std::string& error, const ArrayLimits& limits = {},
                 const std::vector<std::string>* order = nullptr);
// An inline JSON value (a number or nested list) as an array of t.
std::optional<NpyArray> inline_array(const ArraySource& s, DType t, std::string& error);
// The shape of an inline JSON value; false where it is not a number or a
// regular nested list (inline_array says why).
bool inline_shape(const ArraySource& s, Shape& shape);
// "--input=y=@a.npy: m.graph has no input 'y'; did you mean 'x'?"
std::string unknown_name_message(const ArraySource& s, const std::string& name, const std::string& what,
                                 const std::vector<std::string>& names, const std::string& display);

}  // namespace graphrun::detail
