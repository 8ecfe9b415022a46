// A live session (SPEC section 8): statements run as they are read, in one
// session that stays open between them, as TensorFlow's EagerSession runs
// operations. `graphrun repl` and `graphrun run --mode=eager` are built on it.
//
// Each call to execute() parses one piece of text (one or more complete
// statements) against the names already bound, validates and places it, and
// runs it statement by statement: a statement's temporaries become
// unreferenced when it ends, rebinding a name unreferences its old value, and
// the session's cleanup strategy decides when unreferenced values go back
// (section 4). Nothing is printed here: every call returns what happened, and
// an error comes back with its place and diagnostics, leaving the session and
// every bound name as they were before the call.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/api/error.h"
#include "engine/api/feeds.h"
#include "engine/check/placement.h"    // PlacementOptions
#include "engine/runtime/allocator.h"  // MemoryStats
#include "engine/runtime/session_options.h"  // CleanupStrategy, HostTensor

namespace graphrun {

struct LiveOptions {
    CleanupStrategy cleanup = CleanupStrategy::Background;
    PlacementOptions placement;  // --device, --soft-placement, --log-placement
    uint64_t memory_limit = 0;   // per device; 0: the defaults of section 4
    int threads = 0;             // CPU worker threads; 0: all cores
    bool allow_tf32 = false;
};

// A bound name, as `:vars` lists it.
struct LiveVar {
    std::string name;
    DType dtype = DType::F32;
    Shape shape;
    std::string device;
    uint64_t bytes = 0;  // of its buffer (64-byte rounded, as the statistics count it)
    // Names that share one buffer (`y = x` makes y an alias of x) have the
    // same number here: their bytes are held once.
    uint64_t buffer = 0;
};

struct StatementResult {
    // The failure, with its place (Error::diagnostics holds each message in
    // full, with the source line and caret). The session and every name are
    // as they were before the call.
    std::optional<Error> error;
    // Warnings (placement fallbacks and the like), each formatted in full.
    std::vector<std::string> warnings;
    // The names the text bound at its top level, in the order first bound.
    std::vector<std::string> bound;
    // The text was a bare expression or name (`x`, `x @ y`): its value, to print.
    std::optional<HostTensor> shown;
    uint64_t statements = 0;  // statements executed (repeat passes multiplied out)
    double ms = 0;            // from the first dispatch to the end of the last statement
};

// What `:reset` / `del` released.
struct ReleaseReport {
    uint64_t names = 0;   // names unbound
    uint64_t buffers = 0; // buffers that became unreferenced (aliases share one)
    uint64_t bytes = 0;   // their bytes
};

// The memory after each executed top-level statement, for `:timeline`
// (at most about 200 rows, sampled evenly; the last statement always).
struct LiveTimelineRow {
    uint64_t statement = 0;  // from 1, over the session's life
    std::string text;        // the statement's first line, cut to 60 bytes
    std::map<std::string, MemoryStats> memory;
};

// The session's figures at teardown: before and after (section 4's tables).
struct TeardownReport {
    std::map<std::string, MemoryStats> before, after;
    uint64_t rss_before = 0, rss_after = 0;  // process resident bytes
    double teardown_ms = 0;
};

class LiveSession {
public:
    explicit LiveSession(LiveOptions opts);
    ~LiveSession();  // closes
    LiveSession(const LiveSession&) = delete;
    LiveSession& operator=(const LiveSession&) = delete;

    // Runs `text` (complete statements; text format). `display` names it in
    // messages ("<stdin>", "<repl>"); its lines are numbered from `first_line`.
    // `del NAME, ...` unbinds names. A text whose last statement is a bare
    // expression (`x`, `x @ y`) binds its value to `_`, as Python's REPL
    // does, and returns it in `shown`.
    StatementResult execute(std::string_view text, const std::string& display = "<repl>", uint32_t first_line = 1);
    // True when `text` cannot be complete yet: an open `{`, `(` or `[`, or a
    // line ending in an operator or a comma (the REPL reads another line).
    static bool needs_more(std::string_view text);

    // Runs a graph or model file (.graph, .json, .onnx) in this session:
    // its inputs fed by `feeds`, statement by statement as execute() does,
    // and its outputs bound as names (replacing names already bound).
    // `shapes`: an ONNX model's free dimensions (the --input arrays bind them too).
    StatementResult load(const std::string& path, const FeedOptions& feeds, const ShapeBindings& shapes = {});
    // Writes the named values into one .npz file (atomically; never a file
    // the session read).
    std::optional<Error> save(const std::vector<std::string>& names, const std::string& file);

    std::vector<LiveVar> vars() const;  // sorted by name
    // A bound name's value copied to the host; nullopt, and `error` says why:
    // Usage for an unknown name, Runtime for a copy from its device that failed.
    std::optional<HostTensor> value(std::string_view name, Error* error = nullptr) const;
    std::optional<ReleaseReport> del(std::string_view name);  // nullopt: no such name
    ReleaseReport reset();  // unbinds every name (Keras' clear_session)

    std::map<std::string, MemoryStats> stats() const;  // per device opened (cpu always)
    std::vector<LiveTimelineRow> timeline() const;
    // Teardown: every value released, the reclaimer joined, caches returned;
    // the figures before and after. The session then starts afresh (no
    // names, zero statistics) with the same options.
    TeardownReport close();
    void set_cleanup(CleanupStrategy s);  // takes effect at once (what is pending is released)
    CleanupStrategy cleanup() const;
    const LiveOptions& options() const;

    // For completion: the op names, the bound names, in sorted order.
    static std::vector<std::string> op_names();
    std::vector<std::string> names() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace graphrun
