// The ONNX front end where this build has no ONNX library (onnx_reader.h).
#include "engine/frontend/onnx_reader.h"

namespace graphrun {

bool onnx_supported() { return false; }

bool parse_onnx(std::string_view, Graph&, Diagnostics& diag, const InputLimits&, const ShapeBindings&) {
    diag.error({}, "this graphrun was built without ONNX support (install libonnx-dev and libprotobuf-dev, "
                   "then rebuild: scripts/build.sh)");
    return false;
}

bool parse_onnx(std::string&& bytes, Graph& g, Diagnostics& diag, const InputLimits& limits,
                const ShapeBindings& shapes) {
    return parse_onnx(std::string_view(bytes), g, diag, limits, shapes);
}

}  // namespace graphrun
