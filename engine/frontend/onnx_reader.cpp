// The ONNX front end (onnx_reader.h).
#include "engine/frontend/onnx_reader.h"

#include <string>
#include <string_view>

#include "engine/frontend/onnx_importer.h"

namespace graphrun {

bool onnx_supported() { return true; }

bool parse_onnx(std::string_view bytes, Graph& g, Diagnostics& diag, const InputLimits& limits,
                const ShapeBindings& shapes, const std::string& model_dir,
                std::vector<std::string>* external_files) {
    onnx_import::Importer importer(g, diag, limits.memory_limit, &shapes);
    importer.set_model_dir(model_dir, external_files);
    importer.run(bytes);
    return !diag.has_errors();
}

bool parse_onnx(std::string&& bytes, Graph& g, Diagnostics& diag, const InputLimits& limits,
                const ShapeBindings& shapes, const std::string& model_dir,
                std::vector<std::string>* external_files) {
    std::string owned = std::move(bytes);
    onnx_import::Importer importer(g, diag, limits.memory_limit, &shapes);
    importer.set_model_dir(model_dir, external_files);
    importer.run(owned, [&owned] { std::string().swap(owned); });
    return !diag.has_errors();
}

}  // namespace graphrun
