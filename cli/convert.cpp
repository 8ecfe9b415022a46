// `graphrun convert`: the graph in the other form, on stdout or into -o FILE,
// with large host constants (ONNX initializers) in a side .npz beside it.
#include <CLI/CLI.hpp>
#include <ostream>

#include "cli/app.h"
#include "cli/commands.h"
#include "engine/api/convert.h"
#include "engine/api/load.h"
#include "engine/api/output_paths.h"
#include "engine/api/prepare.h"

namespace graphrun::cli {

void add_convert_file_options(CLI::App* cmd, ConvertOptions& opts) {
    cmd->add_option("-o,--output", opts.output,
                    "write the script to FILE instead of stdout; constants over --inline-limit go to "
                    "FILE's name with .npz beside it (model.graph -> model.npz), which the script references")
        ->type_name("FILE");
    cmd->add_option("--inline-limit", opts.inline_limit,
                    "constants (ONNX initializers) of more elements than N go to the side file")
        ->type_name("N")
        ->default_str(std::to_string(kDefaultInlineLimit))
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 62));
}

int convert_command(const std::string& file, const ConvertOptions& opts, const ShapeBindings& shapes, std::ostream& out,
                    std::ostream& err) {
    auto lg = load_graph(file, {}, shapes);
    lg->diag.print(err);
    if (auto e = load_error(*lg)) return exit_code(*e);
    const ReadFiles reads = files_read(*lg, "the file being converted", nullptr, nullptr);
    ConvertOptions with_reads = opts;
    with_reads.reads = &reads;
    ConvertResult r = convert_graph(lg->graph, with_reads);
    if (!r.ok) {
        err << "graphrun: " << lg->display << ": error: " << r.error << "\n";
        return r.usage ? kExitUsage : kExitRuntime;
    }
    if (r.replaced_side_file)
        err << "graphrun: " << lg->display << ": replaced the side file " << r.side_file << " (now "
            << r.external << (r.external == 1 ? " constant" : " constants") << " for " << opts.output << ")\n";
    out << r.script;
    return kExitOk;
}

}  // namespace graphrun::cli
