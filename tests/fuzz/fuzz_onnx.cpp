// libFuzzer target for the ONNX reader (engine/frontend/onnx_reader.h): any
// bytes either read into a graph that then validates, or give an error;
// never a crash, an abort, a hang, a leak or an allocation beyond what the
// bytes justify (a declared shape is checked before anything is allocated).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/base/diagnostics.h"
#include "engine/check/validate.h"
#include "engine/frontend/onnx_reader.h"
#include "engine/ir/graph.h"

using namespace graphrun;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view bytes(reinterpret_cast<const char*>(data), size);
    Graph g;
    Diagnostics diag("fuzz.onnx", {});
    const bool ok = parse_onnx(bytes, g, diag);
    if (!ok && !diag.has_errors()) __builtin_trap();  // a refusal always says why
    // Folded values and initializers pass the validator's checks like any literal.
    if (ok) validate(g, diag);
    return 0;
}
