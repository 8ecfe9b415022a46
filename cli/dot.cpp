// `graphrun dot`: the placed graph as Graphviz DOT on stdout.
#include <ostream>

#include "cli/app.h"
#include "cli/commands.h"
#include "engine/api/dot.h"

namespace graphrun::cli {

int dot_command(const CheckOptions& opts, std::ostream& out, std::ostream& err) {
    PrepareOptions engine = opts.engine;
    engine.refuse_over_limit = false;  // drawing a graph refuses nothing
    PrepareResult pr = prepare(opts.file, engine, err);
    if (pr.error) return exit_code(*pr.error);
    write_dot(pr.prepared, out);
    return kExitOk;
}

}  // namespace graphrun::cli
