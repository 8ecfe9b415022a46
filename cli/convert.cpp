// `graphrun convert`: the graph in the other form, on stdout.
#include <ostream>

#include "cli/app.h"
#include "cli/commands.h"
#include "engine/api/convert.h"
#include "engine/api/load.h"
#include "engine/api/prepare.h"

namespace graphrun::cli {

int convert_command(const std::string& file, GraphForm to, std::ostream& out, std::ostream& err) {
    auto lg = load_graph(file);
    lg->diag.print(err);
    if (auto e = load_error(*lg)) return exit_code(*e);
    out << write_graph(lg->graph, to);
    return kExitOk;
}

}  // namespace graphrun::cli
