// Loading a graph file.
#include "engine/api/load.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sys/stat.h>

#include "engine/api/const_eval.h"
#include "engine/base/interrupt.h"
#include "engine/frontend/const_files.h"
#include "engine/frontend/json_reader.h"
#include "engine/frontend/npy.h"
#include "engine/frontend/onnx_reader.h"
#include "engine/frontend/text_parser.h"
#include "engine/check/validate.h"

namespace graphrun {

bool looks_like_json(const std::string& path, const std::string& source) {
    if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0) return true;
    for (char c : source) {
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
        return c == '{';
    }
    return false;
}

bool looks_like_onnx(const std::string& path) {
    return path.size() >= 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
}

namespace {

// The largest value fold_constant_nodes makes (bytes): scales, biases, small
// masks; a bigger computation on constants stays in the graph.
constexpr uint64_t kFoldedNodeBytes = uint64_t{1} << 16;

// A signal asked graphrun to stop: says so (once) and stops the load there.
// The front ends and validation poll the same flag and stop early.
bool stop_requested(LoadedGraph& lg) {
    const int sig = interrupted();
    if (sig == 0) return false;
    lg.diag.error({}, "interrupted by " + signal_name(sig) + " while loading; nothing ran");
    return true;
}

// The folder of a model file, where its external data is; "" for standard input.
std::string model_dir(const std::string& path) {
    if (path == "-") return "";
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

// --dim and --input-shape bind an ONNX model's free dimensions: a text or
// JSON graph has none (its shapes are written out), so naming one is a usage error.
void refuse_bindings(LoadedGraph& lg, const ShapeBindings& shapes) {
    for (const DimBinding& d : shapes.dims)
        lg.diag.usage_error({}, d.from + ": only an ONNX model has free dimensions to bind; " + lg.display +
                                    " is a " + (lg.json ? "JSON graph" : "text script") +
                                    ", whose shapes are written in it");
    for (const GivenShape& s : shapes.shapes)
        if (s.must_exist)
            lg.diag.usage_error({}, s.from + ": only an ONNX model has free dimensions to bind; " + lg.display +
                                        " is a " + (lg.json ? "JSON graph" : "text script") +
                                        ", whose input shapes are written in it");
}

void parse_and_validate(LoadedGraph& lg, const InputLimits& limits = {},
                        const std::vector<PredeclaredName>& predeclared = {}, std::string_view bare_name = {},
                        uint32_t first_line = 1, const ShapeBindings& shapes = {},
                        const OnParsed& on_parsed = {}, FILE* onnx_file = nullptr, uint64_t onnx_size = 0) {
    // A binary model has no lines to show under a message.
    lg.diag = Diagnostics(lg.display, lg.onnx ? std::string_view() : std::string_view(lg.source));
    lg.diag.set_first_line(first_line);
    lg.graph.file = lg.display;
    lg.graph.from_json = lg.json;
    lg.graph.from_onnx = lg.onnx;
    // A model's bytes go to its reader, which frees them once parsed.
    if (!lg.onnx) refuse_bindings(lg, shapes);
    OnnxReadOptions onnx;
    if (lg.onnx) {
        onnx.shapes = shapes;
        onnx.model_dir = model_dir(lg.path);
        onnx.external_files = &lg.side_files;
        // graphrun's own shape inference, for the values ONNX's leaves without a shape.
        onnx.infer_built = [](Graph& g, NodeId first) {
            Diagnostics scratch;  // what is wrong is reported once, by validate() below
            validate_from(g, scratch, first);
        };
        onnx.evaluate_built = evaluate_constant_graph;
    }
    // A model file is read as it is parsed (onnx_file), never held whole.
    bool parsed = onnx_file ? parse_onnx_fd(fileno(onnx_file), onnx_size, lg.graph, lg.diag, limits, onnx)
                  : lg.onnx ? parse_onnx(std::move(lg.source), lg.graph, lg.diag, limits, onnx)
                  : lg.json ? parse_json(lg.source, lg.graph, lg.diag, limits)
                            : parse_text(lg.source, lg.graph, lg.diag, limits, predeclared, bare_name, first_line);
    // Validation also runs after parse errors, on what did parse, so that one
    // run reports every independent error; nodes built from failed
    // expressions are skipped without cascading.
    (void)parsed;
    if (stop_requested(lg)) return;
    // Constants held in a side file (const(file=, key=)), relative to the script.
    if (!lg.onnx) resolve_const_files(lg.graph, lg.diag, lg.path, limits.memory_limit, &lg.side_files);
    if (stop_requested(lg)) return;
    if (on_parsed) on_parsed(lg);
    validate(lg.graph, lg.diag);
    // An ONNX node's mapping may compute from constants alone (a QLinearConv's
    // requantization scale): once, here, by the CPU kernels (const_eval.h).
    if (lg.onnx && !lg.diag.has_errors()) fold_constant_nodes(lg.graph, kFoldedNodeBytes);
    stop_requested(lg);
}

}  // namespace

std::unique_ptr<LoadedGraph> load_graph_source(const std::string& display, std::string source, bool json,
                                               const InputLimits& limits) {
    auto lg = std::make_unique<LoadedGraph>();
    lg->path = display;
    lg->display = display;
    lg->source = std::move(source);
    lg->json = json;
    parse_and_validate(*lg, limits);
    return lg;
}

std::unique_ptr<LoadedGraph> load_statements(const std::string& display, std::string source,
                                             const std::vector<PredeclaredName>& names,
                                             std::string_view bare_expression_name, uint32_t first_line,
                                             const InputLimits& limits) {
    auto lg = std::make_unique<LoadedGraph>();
    lg->path = display;
    lg->display = display;
    lg->source = std::move(source);
    parse_and_validate(*lg, limits, names, bare_expression_name, first_line);
    return lg;
}

std::unique_ptr<LoadedGraph> load_graph(const std::string& path, const InputLimits& limits,
                                        const ShapeBindings& shapes, const OnParsed& on_parsed) {
    auto lg = std::make_unique<LoadedGraph>();
    lg->path = path;
    lg->display = path == "-" ? "<stdin>" : path;
    lg->diag = Diagnostics(lg->display, {});
    FILE* f = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
    if (!f) {
        lg->read_failed = true;
        lg->diag.error({}, std::string("cannot read the file: ") + std::strerror(errno));
        return lg;
    }
    // A regular file is measured first, so that one over the limit is refused
    // without reading it; pipes and terminals are counted as they are read.
    // A model's weights are as large as its file: one larger than the memory
    // limit cannot be read within it.
    const bool onnx = looks_like_onnx(path);
    const uint64_t cap = onnx && limits.memory_limit ? std::min(kMaxFileBytes, limits.memory_limit) : kMaxFileBytes;
    struct stat st {};
    bool too_big = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > cap;
    if (onnx && !too_big && S_ISREG(st.st_mode)) {
        // A model file is parsed as it is read (parse_onnx_fd): its bytes are
        // never held beside the parsed model (ResNet-18: 47 MB less at the peak).
        lg->onnx = true;
        parse_and_validate(*lg, limits, {}, {}, 1, shapes, on_parsed, f, static_cast<uint64_t>(st.st_size));
        std::fclose(f);
        return lg;
    }
    if (!too_big && S_ISREG(st.st_mode) && st.st_size > 0) lg->source.reserve(static_cast<size_t>(st.st_size));
    char buf[65536];
    size_t n;
    while (!too_big && !interrupted() && (n = std::fread(buf, 1, sizeof buf, f)) > 0) {
        if (lg->source.size() + n > cap) {
            too_big = true;
            break;
        }
        lg->source.append(buf, n);
    }
    bool failed = std::ferror(f) != 0;
    int err = errno;
    if (f != stdin) std::fclose(f);
    if (stop_requested(*lg)) {  // also a read from a pipe or terminal that a signal cut short
        std::string().swap(lg->source);
        return lg;
    }
    if (too_big || failed) {
        lg->read_failed = true;
        std::string().swap(lg->source);
        std::string msg = std::string("cannot read the file: ") + std::strerror(err);
        if (too_big && cap < kMaxFileBytes)
            msg = (S_ISREG(st.st_mode) ? "the model is " + size_text(static_cast<uint64_t>(st.st_size)) + ", more than"
                                       : std::string("the model is larger than")) +
                  " the memory limit of " + size_text(cap) +
                  ": a model is held in memory while it is read, and its weights while it runs; " +
                  (S_ISREG(st.st_mode) ? "refused before reading it" : "reading stopped there");
        else if (too_big)
            msg = "the file is larger than the limit of " + std::to_string(kMaxFileBytes >> 20) + " MiB";
        lg->diag.error({}, msg);
        return lg;
    }
    lg->onnx = onnx;
    lg->json = !lg->onnx && looks_like_json(path, lg->source);
    parse_and_validate(*lg, limits, {}, {}, 1, shapes, on_parsed);
    return lg;
}

}  // namespace graphrun
