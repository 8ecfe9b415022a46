// `graphrun convert`: the graph in the other form, on stdout.
#include <ostream>

#include "cli/app.h"
#include "cli/commands.h"
#include "engine/frontend/json_writer.h"
#include "engine/api/load.h"
#include "engine/frontend/text_writer.h"

namespace graphrun::cli {

int convert_command(const std::string& file, Format to, std::ostream& out, std::ostream& err) {
    auto lg = load_graph(file);
    lg->diag.print(err);
    if (!lg->ok()) return lg->read_failed ? kExitRuntime : kExitInvalidGraph;
    out << (to == Format::Json ? write_json(lg->graph) : write_text(lg->graph));
    return kExitOk;
}

}  // namespace graphrun::cli
