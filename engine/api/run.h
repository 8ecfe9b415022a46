// Running a prepared graph in one fresh session: the outputs, the statistics
// before and after teardown, and the process's and the GPU driver's own
// figures at the same moments. Every path ends with the session torn down.
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "engine/api/bench.h"  // BenchOptions, BenchResult
#include "engine/api/error.h"
#include "engine/api/feeds.h"
#include "engine/api/observe.h"  // Timeline, SeriesPoint
#include "engine/api/output_paths.h"
#include "engine/api/prepare.h"
#include "engine/runtime/allocator.h"  // MemoryStats
#include "engine/runtime/session.h"    // CleanupStrategy, HostTensor, OpProfile

namespace graphrun {
class TraceRecorder;  // trace.h
}

namespace graphrun {

// How a graph runs: as one planned program (graph mode: whole-program
// liveness, section 4), or statement by statement in a live session with no
// plan deciding when a value dies (eager mode, section 8).
enum class ExecMode { Graph, Eager };
const char* exec_mode_name(ExecMode m);

struct RunFileOptions {
    PrepareOptions prepare;  // prepare.memory_limit also caps each GPU (0: its free memory)
    ExecMode mode = ExecMode::Graph;
    CleanupStrategy cleanup = CleanupStrategy::Background;
    int64_t iterations = 1;
    int threads = 0;  // CPU worker threads; 0: all cores
    bool allow_tf32 = false;
    bool reset_device = false;
    bool profile = false;
    bool check_leaks = false;  // ErrorKind::Leak if an allocator reports memory after teardown
    // Set asynchronously (a signal handler) to a signal's number to stop the
    // run at the next node boundary. Optional.
    const std::atomic<int>* interrupt = nullptr;
    FeedOptions feeds;        // the values of the graph's inputs (--input, --fill)
    OutputFileOptions files;  // --output, --save, --expected-output
    // Updated at pass and repeat-pass boundaries for a progress display. Optional.
    RunProgress* progress = nullptr;
    // Watching the run (observe.h, trace.h); none costs anything per node when off.
    size_t timeline_rows = 0;      // --timeline: memory at pass ends, at most about this many rows (0: none)
    size_t series_points = 0;      // compare: in_use after executed nodes, at most about this many points (0: none)
    TraceRecorder* trace = nullptr;  // --trace: the run becomes one process of this trace
    // Files written besides --output and --save (--trace): checked with them,
    // before the run, against the files it reads (output_paths.h).
    std::vector<OutputPath> other_outputs;
    // Where given, every file the run reads and its --output and --save files
    // are added (for a file written after all runs).
    FilesSeen* seen = nullptr;
    // --bench, --warmup, --profile=nodes (bench.h): `iterations` counts the
    // warm-up passes too.
    BenchOptions bench;
};

// A GPU's used memory as the driver reports it (NVML), at three moments.
struct DriverFigures {
    std::optional<uint64_t> before_session, before_teardown, after_teardown;
    std::string why;  // when NVML cannot say
};

struct RunResult {
    std::string file;  // for messages ("<stdin>" for "-")
    std::vector<HostTensor> outputs;
    std::map<std::string, MemoryStats> before, after;  // per device, before and after teardown
    uint64_t rss_session = 0, rss_before = 0, rss_after = 0;  // process resident bytes
    std::map<std::string, DriverFigures> gpu_system;          // per GPU the plan uses
    bool ran = false;  // a session was opened (the figures above are set)
    std::vector<OpProfile> profile;
    double run_ms = 0, teardown_ms = 0;
    Timeline timeline;                // RunFileOptions::timeline_rows
    std::vector<SeriesPoint> series;  // RunFileOptions::series_points
    uint64_t executed_nodes = 0;      // counted when series_points is set
    std::optional<Error> error;
    // --expected-output: one check per expected value, in the order given
    // (empty when none was given or the run failed before comparing).
    std::vector<ExpectedCheck> expected;
    BenchResult bench;  // RunFileOptions::bench (recorded: a session opened)
};

// prepare() and run_prepared().
RunResult run_file(const std::string& path, const RunFileOptions& opts, std::ostream& err);
// Runs a prepared graph (its plan compiled) in a fresh session and closes it.
// `feeds`: one value per input node (read_feeds); opts.feeds is not read here.
RunResult run_prepared(const Prepared& p, const InputValues& feeds, const RunFileOptions& opts, std::ostream& err);

// The refusal of a plan whose static peak on an open GPU is over that GPU's
// limit (less the workspace it holds for the session), or "" (`opened`,
// `limits`: the session's stats() and limits() once the plan is loaded).
std::string gpu_over_limit(const Plan& plan, const std::map<std::string, MemoryStats>& opened,
                           const std::map<std::string, uint64_t>& limits);

// `e` with its place rendered against the graph's source: its one diagnostic
// (file:line:col, the source line and a caret), as every diagnostic is
// formatted. Prints nothing.
Error describe(Error e, const LoadedGraph& lg);

// What the allocators still report after teardown ("" when nothing).
std::string leak_report(const std::map<std::string, MemoryStats>& after);

// Stops the BLAS library's worker threads, for commands that compute nothing.
void stop_compute_workers();

}  // namespace graphrun
