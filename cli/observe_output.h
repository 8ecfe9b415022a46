// `graphrun run --timeline` and `--trace`: the timeline as a table or JSON,
// and the trace file written once every file has run.
#pragma once
#include <nlohmann/json.hpp>
#include <map>
#include <ostream>
#include <string>

#include "engine/api/observe.h"
#include "engine/api/trace.h"

namespace graphrun::cli {

// "TITLE:" and the allocator figures (SPEC section 4), one row per device:
// the table `run` prints before and after teardown, and the REPL's :stats.
void print_memory_table(const std::string& title, const std::map<std::string, MemoryStats>& stats,
                        std::ostream& out);

// "timeline (...):" and one row per sampled pass end and device.
void print_timeline(const Timeline& t, int64_t iterations, std::ostream& out);
// The `timeline` array of the JSON document: one object per row.
nlohmann::ordered_json timeline_json(const Timeline& t);
// Writes the trace to `path`; says on `err` when it was capped, or why it
// could not be written (false).
bool write_trace(const TraceRecorder& trace, const std::string& path, std::ostream& err);

}  // namespace graphrun::cli
