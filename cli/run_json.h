// `graphrun run --format=json`: one JSON document per file on one line.
#pragma once
#include <ostream>

#include "engine/api/run.h"

namespace graphrun::cli {

// Writes the document of one file's run. The tensors' data are written
// straight to `out` as they are formatted (never held as a JSON document);
// with `no_data` each output has a `summary` instead of `data`. Figures that
// never existed, for a file that failed before its session opened, are null.
void print_run_json(const RunResult& r, const RunFileOptions& opts, bool no_data, std::ostream& out);

}  // namespace graphrun::cli
