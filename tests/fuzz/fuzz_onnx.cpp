// libFuzzer target for the ONNX reader (engine/frontend/onnx_reader.h): any
// bytes either read into a graph that then validates (also with free
// dimensions bound by --dim and folding by the engine's kernels, in the
// mapping and after validation as load_graph does, and as a .pb tensor
// file), or give an error;
// never a crash, an abort, a hang, a leak or an allocation beyond what the
// bytes justify (a declared shape is checked before anything is allocated).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/api/const_eval.h"
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
    // Again with its free dimensions bound (the names exporters use), as --dim binds them.
    Graph bound;
    Diagnostics diag2("fuzz.onnx", {});
    OnnxReadOptions o;
    o.shapes.dims = {{"N", 2, "--dim=N=2"}, {"batch", 3, "--dim=batch=3"}};
    o.infer_built = [](Graph& built, NodeId first) {  // graphrun's own shapes, as load_graph gives them
        Diagnostics scratch;
        validate_from(built, scratch, first);
    };
    o.evaluate_built = evaluate_constant_graph;  // folds by the engine's kernels, as load_graph folds
    if (!parse_onnx(bytes, bound, diag2, {}, o)) {
        if (!diag2.has_errors()) __builtin_trap();
    } else {
        // Then as load_graph goes on: validated, the nodes that read constants
        // only folded by the CPU kernels (const_eval.h), and the folded graph
        // still valid (a fold must not leave a node that no longer checks).
        validate(bound, diag2);
        if (!diag2.has_errors()) {
            fold_constant_nodes(bound, uint64_t{1} << 16);
            Diagnostics after("fuzz.onnx", {});
            validate(bound, after);
            if (after.has_errors()) __builtin_trap();
        }
    }
    // The same bytes as a tensor file (--input=@FILE.pb).
    std::string why;
    if (!parse_tensor_pb(bytes, why) && why.empty()) __builtin_trap();
    return 0;
}
