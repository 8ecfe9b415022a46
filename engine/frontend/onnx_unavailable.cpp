// The ONNX front end where this build has no ONNX library (onnx_reader.h).
#include "engine/frontend/onnx_reader.h"

namespace graphrun {

bool onnx_supported() { return false; }

bool parse_onnx(std::string_view, Graph&, Diagnostics& diag, const InputLimits&, const OnnxReadOptions&) {
    diag.error({}, "this graphrun was built without ONNX support (install libonnx-dev and libprotobuf-dev, "
                   "then rebuild: scripts/build.sh)");
    return false;
}

bool parse_onnx(std::string&& bytes, Graph& g, Diagnostics& diag, const InputLimits& limits,
                const OnnxReadOptions& opts) {
    return parse_onnx(std::string_view(bytes), g, diag, limits, opts);
}

bool parse_onnx_fd(int, uint64_t, Graph& g, Diagnostics& diag, const InputLimits& limits, const OnnxReadOptions& opts) {
    return parse_onnx(std::string_view(), g, diag, limits, opts);
}

std::optional<NpzEntry> parse_tensor_pb(std::string_view, std::string& why, const ArrayLimits&) {
    why = "this graphrun was built without ONNX support, which reads .pb tensor files (install libonnx-dev and "
          "libprotobuf-dev, then rebuild: scripts/build.sh)";
    return std::nullopt;
}

}  // namespace graphrun
