// Preparing a graph file to run: load (file or standard input), validate,
// apply --fetch, place, fuse (engine/plan/fuse.h), compile the plan, and refuse a static peak over the
// memory limit. `graphrun check` stops here; `graphrun run` goes on to run.h.
//
// Diagnostics are printed to `err` as they are found, in the order found; the
// returned Error repeats the failure's message in one line for reports.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "engine/api/error.h"
#include "engine/api/feeds.h"
#include "engine/api/load.h"
#include "engine/check/placement.h"  // PlacementOptions
#include "engine/ir/graph.h"
#include "engine/plan/plan.h"

namespace graphrun {

struct PrepareOptions {
    PlacementOptions placement;
    std::vector<std::string> fetch;  // names to fetch instead of the graph's outputs
    // Values for an ONNX model's free input dimensions (--dim, --input-shape,
    // the --input arrays' shapes: feed_shapes()); checked when it is read.
    ShapeBindings shapes;
    // Fuse conv / matmul / gemm chains into one node each once placed
    // (engine/plan/fuse.h); --no-fuse turns it off. Off for eager mode and
    // the live session, whose bound names each hold their own value.
    bool fuse = true;
    // Refuse a plan whose static peak on a device is over its memory limit
    // (the CPU's always; a GPU's when memory_limit is set, and otherwise once
    // the session has opened it and knows its free memory).
    bool refuse_over_limit = true;
    uint64_t memory_limit = 0;  // per device; 0: the default (90% of available memory on the CPU)
    // The CPU threads the run will use (0: all cores): the pre-pack pass packs
    // the weights for them (engine/plan/prepack.h).
    int threads = 0;
    // Run the pre-pack pass (with fusion, and without a memory_limit): off
    // only for tests that read a fused constant's values.
    bool prepack = true;
    // The devices placement may use; null: what the CUDA plugin offers (device_availability()).
    const DeviceAvailability* devices = nullptr;
    // Called once the file is parsed, before validation (load.h's OnParsed).
    OnParsed on_parsed;
};

// A loaded, placed and planned graph.
struct Prepared {
    std::unique_ptr<LoadedGraph> loaded;  // the graph, its source and diagnostics
    std::optional<Plan> plan;             // set once compiled
    uint64_t cpu_memory_limit = 0;        // the limit the static peak was checked against (0: not checked)

    Graph& graph() { return loaded->graph; }
    const Graph& graph() const { return loaded->graph; }
};

struct PrepareResult {
    std::string file;   // for messages ("<stdin>" for "-")
    Prepared prepared;  // complete when there is no error; otherwise up to the failed step
    std::optional<Error> error;
    bool ok() const { return !error; }
};

// All of it: load, validate, fetch, place, fuse, plan, static-peak refusal.
PrepareResult prepare(const std::string& path, const PrepareOptions& opts, std::ostream& err);
// The same for a graph already loaded (load_graph_source: tests, fuzzing);
// its diagnostics are printed here, as prepare() prints them.
PrepareResult prepare(std::unique_ptr<LoadedGraph> lg, const PrepareOptions& opts, std::ostream& err);

// The two halves of prepare(), for a caller that works between them (check
// renders its listing while the plan compiles): load, validate, fetch, place, fuse ...
PrepareResult load_and_place(const std::string& path, const PrepareOptions& opts, std::ostream& err);
PrepareResult load_and_place(std::unique_ptr<LoadedGraph> lg, const PrepareOptions& opts, std::ostream& err);
// ... and plan, with the static-peak refusal. Sets p.plan on success.
std::optional<Error> plan_prepared(Prepared& p, const PrepareOptions& opts, std::ostream& err);

// Adds the shapes of the arrays `feeds` gives (feed_shapes) to opts.shapes, read
// within the CPU's memory limit: for an ONNX model, whose free dimensions they bind.
void add_feed_shapes(PrepareOptions& opts, const FeedOptions& feeds);

// The error a load ended in (diagnostics printed or not), or nullopt when the
// graph loaded and validated.
std::optional<Error> load_error(const LoadedGraph& lg);

// Replaces the graph's outputs by --fetch names; ErrorKind::Usage for an unknown name.
std::optional<Error> apply_fetch(Graph& g, const std::vector<std::string>& fetch);

// The message for a static peak over a device's limit (also printed by run_prepared
// for a GPU whose limit is known once it is open).
// `weights`: how much of `bytes` is the device's weights (0: none).
std::string over_limit_message(const std::string& device, uint64_t bytes, uint64_t limit, uint64_t weights = 0);
// A device's static peak plus its weights (Plan::weights): what one pass
// holds at most under safepoint, the limit's measure.
uint64_t peak_with_weights(const Plan& plan, const std::string& device);

}  // namespace graphrun
