// The ONNX front end: a model file (ONNX's protobuf, opsets 1 to 21; 18 to 21
// in their opset-17 form, onnx_opset.h) into the
// graph IR, through ONNX's own C++ classes, checker and shape inference
// (Debian's libonnx-dev). Built only where that library is found; elsewhere
// parse_onnx() reports that this build cannot read ONNX.
//
// What becomes what:
//   initializers, Constant nodes        const nodes holding the tensor's bytes
//   graph inputs (not initializers)     input nodes (fed with --input / --fill)
//   shape arithmetic on constants       folded here (Shape, Gather, Concat, ...)
//   each other node                     one graphrun op, or a few (Gemm)
// Every unsupported op, attribute or dtype is reported, with the names of the
// nodes, before anything runs.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/diagnostics.h"
#include "engine/base/limits.h"
#include "engine/frontend/npy.h"  // NpzEntry, ArrayLimits
#include "engine/ir/free_dims.h"
#include "engine/ir/graph.h"

namespace graphrun {

// True where this build reads ONNX files.
bool onnx_supported();

// How a model is read, beyond its bytes.
struct OnnxReadOptions {
    // Binds the free dimensions of the model's inputs (SPEC section 2): --dim
    // by name, a whole input's shape by --input-shape or its fed array; one
    // bound by neither is 1, with a warning. What the model was read with is
    // in g.free_dims. Bindings that disagree, or name what the model lacks,
    // are usage errors (diag.usage()).
    ShapeBindings shapes;
    // The model file's folder, where its external data is ("" for a model
    // with none to find: one read from standard input); the files read for
    // it are added to `external_files` (where not null).
    std::string model_dir;
    std::vector<std::string>* external_files = nullptr;
    // Fills in the dtype and shape of g's nodes from `first` on, those before
    // already filled (engine/check's validate_from, which the front end,
    // below it, cannot call): where ONNX's shape inference gives a value no
    // shape (its data propagation stops at some Reshape targets computed
    // from shapes), the importer asks graphrun's own inference of what it has
    // built. Null: ONNX's shapes alone.
    std::function<void(Graph& g, NodeId first)> infer_built;
    // Runs a scratch graph of const nodes and the ops over them on the CPU
    // with the engine's kernels (engine/api/const_eval.h, which the front
    // end, below it, cannot call): the importer folds every op whose inputs
    // are all constants this way, building its nodes into the scratch graph
    // and binding the values `wanted` come to. "" or why not: the importer
    // then builds the nodes into the model's graph, or, where a kernel failed
    // on the constants (`kernel_error`), refuses the node with the kernel's
    // message. Null: only Constant, Shape, Size, ConstantOfShape and Range
    // fold, in the front end.
    std::function<std::string(Graph& g, const std::vector<NodeId>& wanted, int64_t max_elements,
                              uint64_t max_bytes, std::vector<std::vector<uint8_t>>& values,
                              bool& kernel_error)>
        evaluate_built;
};

// Parses the model in `bytes` into `g` (which must be empty). Errors point at
// "/graph/node/K" (the K-th node of the model's graph) or the initializer or
// input they concern. Returns !diag.has_errors(). With limits.memory_limit,
// a model whose weights (initializers, Constant nodes' values) and folded
// values need more is refused before they are copied (diag.over_limit()).
bool parse_onnx(std::string_view bytes, Graph& g, Diagnostics& diag, const InputLimits& limits = {},
                const OnnxReadOptions& opts = {});
// The same, taking the file's bytes: they are freed as soon as the model is
// parsed, so that a model's weights are not held three times at once.
bool parse_onnx(std::string&& bytes, Graph& g, Diagnostics& diag, const InputLimits& limits = {},
                const OnnxReadOptions& opts = {});
// The same, reading the model from the open file `fd` (`size` bytes, from
// where it stands) as it is parsed: the file's bytes are never held whole, so
// that while a model is read only its parsed form and then its weights are.
bool parse_onnx_fd(int fd, uint64_t size, Graph& g, Diagnostics& diag, const InputLimits& limits = {},
                   const OnnxReadOptions& opts = {});

// One ONNX TensorProto file (the model zoo's test_data_set_N/input_K.pb):
// its array and its name ("" where the proto has none); nullopt with `why`.
// The declared shape is checked against the bytes it holds before anything
// is allocated (as a model's initializer), within `limits`.
std::optional<NpzEntry> parse_tensor_pb(std::string_view bytes, std::string& why, const ArrayLimits& limits = {});

}  // namespace graphrun
