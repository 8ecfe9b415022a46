// graphrun as a C++ library: compile a graph once (text, JSON or ONNX), run it
// many times in a Session with arrays fed from memory, and get the outputs and
// the memory statistics back as data. Nothing here prints; every failure is a
// graphrun::Error that carries its kind, its message and its diagnostics.
//
//     graphrun::Session session({.cleanup = graphrun::Cleanup::Safepoint});
//     graphrun::Executable exe = session.compile_source("x = input([3])\ny = x * 2\n");
//     graphrun::RunResult r = session.run(exe, {{"x", graphrun::Array::of<float>({3}, {1, 2, 3})}});
//     std::vector<float> y = r.output("y").value.values<float>();   // {2, 4, 6}
//
// LiveSession runs statements one at a time in a session that stays open
// (eager mode), with names bound between calls.
//
// Installed with graphrun (`cmake --install`); use it with
// `find_package(graphrun REQUIRED)` and `target_link_libraries(app PRIVATE graphrun::graphrun)`.
// The header needs only the standard library.
#pragma once
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace graphrun {

// The public API lives in graphrun::lib and is seen as graphrun:: through the
// using-directive at the end of this file: the engine's own classes (its
// internal Session, Error, DType) keep their names in namespace graphrun, and
// the library's implementation names both without a clash (or an ODR
// violation: the symbols differ).
namespace lib {

// The library's version ("0.1.0"), the same as `graphrun --version`.
const char* version();

// ----- arrays ---------------------------------------------------------------

// F16 (IEEE half), BF16 (bfloat16), I8 and U8 are storage types: arrays of
// them hold the raw little-endian elements (F16, BF16: the 16-bit patterns).
enum class DType : uint8_t { F32, F64, I32, I64, Bool, F16, BF16, I8, U8 };
const char* dtype_name(DType t);  // "f32", "f64", "i32", "i64", "bool", "f16", "bf16", "i8", "u8"
size_t dtype_size(DType t);       // bytes per element (bool: 1)

template <class T>
constexpr DType dtype_of() {
    if constexpr (std::is_same_v<T, float>) return DType::F32;
    else if constexpr (std::is_same_v<T, double>) return DType::F64;
    else if constexpr (std::is_same_v<T, int32_t>) return DType::I32;
    else if constexpr (std::is_same_v<T, int64_t>) return DType::I64;
    else if constexpr (std::is_same_v<T, int8_t>) return DType::I8;
    else if constexpr (std::is_same_v<T, uint8_t>) return DType::U8;
    else {
        static_assert(std::is_same_v<T, bool>,
                      "graphrun arrays hold float, double, int32_t, int64_t, int8_t, uint8_t or bool");
        return DType::Bool;
    }
}

// A dense row-major array on the host: a feed, or an output copied back.
struct Array {
    DType dtype = DType::F32;
    std::vector<int64_t> shape;  // [] for a scalar
    std::vector<uint8_t> bytes;  // numel() * dtype_size(dtype), row-major (bool: one byte, 0 or 1)

    int64_t numel() const {
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        return n;
    }
    // An array of T with this shape and these values (row-major; as many as the shape holds).
    template <class T>
    static Array of(std::vector<int64_t> shape, const std::vector<T>& values) {
        Array a{dtype_of<T>(), std::move(shape), {}};
        if (static_cast<int64_t>(values.size()) != a.numel())
            throw std::invalid_argument("graphrun::Array::of: " + std::to_string(values.size()) +
                                        " values for a shape of " + std::to_string(a.numel()) + " elements");
        a.bytes.resize(values.size() * sizeof(T));
        if constexpr (std::is_same_v<T, bool>) {
            for (size_t i = 0; i < values.size(); ++i) a.bytes[i] = values[i] ? 1 : 0;
        } else if (!values.empty()) {
            std::memcpy(a.bytes.data(), values.data(), a.bytes.size());
        }
        return a;
    }
    // The values as T, which must be this array's dtype (std::invalid_argument otherwise).
    template <class T>
    std::vector<T> values() const {
        if (dtype_of<T>() != dtype)
            throw std::invalid_argument(std::string("graphrun::Array::values: the array holds ") +
                                        dtype_name(dtype) + ", not " + dtype_name(dtype_of<T>()));
        std::vector<T> out(bytes.size() / sizeof(T));
        if constexpr (std::is_same_v<T, bool>) {
            for (size_t i = 0; i < out.size(); ++i) out[i] = bytes[i] != 0;
        } else if (!out.empty()) {
            std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
        }
        return out;
    }
};

// A graph's input or output, as the compiled graph declares it.
struct TensorInfo {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    std::string device;  // where it is placed ("cpu", "gpu:0")
};

// ----- errors ---------------------------------------------------------------

enum class Severity { Error, Warning, Note };

// One message about the graph, with its place: line and column (from 1) in a
// text graph, or a JSON pointer in a JSON graph (line 0 then).
struct Diagnostic {
    Severity severity = Severity::Error;
    std::string file;          // as the graph was named ("<string>" for source text)
    uint32_t line = 0;         // 0: no line known
    uint32_t column = 0;
    std::string json_pointer;  // "/nodes/3/inputs/1"; empty for text
    std::string message;       // one line, as written
    std::string formatted;     // FILE:LINE:COL: error: MESSAGE, the source line and a caret, as graphrun prints it
};

// What kind of failure (graphrun's exit codes map from it: SPEC section 6).
enum class ErrorKind {
    Usage,         // the request names something the graph lacks: a feed, a fetch, a missing input
    InvalidGraph,  // parse, validation or planning errors (see diagnostics())
    Runtime,       // unreadable file, unusable device, out of memory, over the memory limit
    Interrupted,   // a signal stopped the run
    Leak,          // memory left after teardown
    Mismatch,      // an output differs from an expected value
};
const char* error_kind_name(ErrorKind k);  // "usage", "invalid_graph", ...

// Every failure of compile() and Session::run(). what() is the one-line message.
class Error : public std::runtime_error {
public:
    Error(ErrorKind kind, const std::string& message, std::vector<Diagnostic> diagnostics = {})
        : std::runtime_error(message), kind_(kind), diagnostics_(std::move(diagnostics)) {}
    ErrorKind kind() const noexcept { return kind_; }
    // Every error found (a parse reports every independent error, not only the
    // first), each with its place; empty when what() is all there is.
    const std::vector<Diagnostic>& diagnostics() const noexcept { return diagnostics_; }

private:
    ErrorKind kind_;
    std::vector<Diagnostic> diagnostics_;
};

// ----- compiling ------------------------------------------------------------

struct CompileOptions {
    // Where nodes that name no device run: "auto" (the first usable GPU, else
    // the CPU), "cpu", "gpu", "gpu:N"; "" means "auto". A node's own `device=`
    // or `with device` block comes first.
    std::string device;
    bool soft_placement = true;      // a node its device cannot run falls back to the CPU (a warning)
    std::vector<std::string> fetch;  // names to compute instead of the graph's outputs
    // Fuse conv / matmul / gemm chains (with batch_norm folded, bias, residual
    // add, activation) into one CPU kernel each, as `graphrun run` does; false
    // is --no-fuse.
    bool fuse = true;
    // Refuse a plan whose static peak on a device is over this many bytes
    // (0: the default, 90% of the host's available memory on the CPU).
    uint64_t memory_limit = 0;
};

class Session;

// A loaded, validated, placed and planned graph: what a graph *is*. It holds
// no feeds and does not change when it runs; copies share it, and it outlives
// every Session that ran it. Runs of one Executable take turns (a lock).
class Executable {
public:
    const std::string& name() const;             // the file, or the display name given for source text
    std::vector<TensorInfo> inputs() const;      // the graph's `input` nodes, in program order
    std::vector<TensorInfo> outputs() const;     // what a run fetches, in order
    std::vector<Diagnostic> warnings() const;    // placement fallbacks and the like
    // The static plan's peak per device: what one pass holds at most under safepoint.
    std::map<std::string, uint64_t> static_peak() const;

    struct Impl;  // engine/api/library.cpp

private:
    explicit Executable(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
    std::shared_ptr<Impl> impl_;
    friend Executable compile_file(const std::string&, const CompileOptions&);
    friend Executable compile_source(std::string_view, const CompileOptions&, const std::string&);
    friend class Session;
};

// Reads, parses, validates, places and plans a graph file (.graph, .json, .onnx).
// Throws Error (kind InvalidGraph with every diagnostic, Usage for an unknown
// fetch name, Runtime for an unreadable file or a static peak over the limit).
Executable compile_file(const std::string& path, const CompileOptions& options = {});
// The same for graph text in memory (the text format, or JSON when it starts
// with '{'); `name` names it in diagnostics.
Executable compile_source(std::string_view source, const CompileOptions& options = {},
                          const std::string& name = "<string>");

// ----- running --------------------------------------------------------------

// When unreferenced tensors go back to their allocator (SPEC section 4).
enum class Cleanup { Background, Safepoint, Close };
const char* cleanup_name(Cleanup c);  // "background", "safepoint", "close"

// One device's allocator figures (SPEC section 4), in bytes and counts.
struct MemoryStats {
    uint64_t in_use = 0;        // allocated and not yet released (pending included)
    uint64_t peak = 0;          // most in_use ever
    uint64_t pending = 0;       // unreferenced, not yet released
    uint64_t pending_peak = 0;  // most pending ever
    uint64_t reserved = 0;      // held from the system: in use plus cached
    uint64_t allocs = 0;
    uint64_t frees = 0;
    uint64_t live = 0;          // buffers not yet released
    uint64_t copied_in = 0;     // bytes copied onto this device from another
    uint64_t weights = 0;       // constants held for the session (placed once, released at close)
    uint64_t workspace = 0;     // non-tensor buffers held (library workspace, kernel scratch)
    bool operator==(const MemoryStats&) const = default;
};

struct Output {
    std::string name;
    std::string device;  // where it was computed
    Array value;
};

struct RunResult {
    std::vector<Output> outputs;  // in the Executable's output order (or the run's fetch order)
    // Per device the session has open, its figures when the run ended, its
    // outputs still held (peak and the counters are the session's, over all
    // its runs so far).
    std::map<std::string, MemoryStats> stats;
    double run_ms = 0;
    // The output of that name (std::out_of_range when none).
    const Output& output(std::string_view name) const;
};

using Feeds = std::map<std::string, Array, std::less<>>;

struct SessionOptions {
    Cleanup cleanup = Cleanup::Background;
    uint64_t memory_limit = 0;  // per device, in bytes; 0: the defaults (SPEC section 4)
    int threads = 0;            // CPU worker threads; 0: all cores
    std::string device;         // Session::compile_*'s device ("" as CompileOptions::device)
    bool allow_tf32 = false;    // GPU float32 matmul may use TF32
};

// A session's figures when it closes, before and after its teardown.
struct Teardown {
    std::map<std::string, MemoryStats> before, after;
    double teardown_ms = 0;
};

// Runs Executables, any number of times, in one session that stays open
// until close() (TensorFlow's Session, ONNX Runtime's InferenceSession): the
// devices open as the first run that needs them, and their allocators, the
// cleanup strategy and the CPU workers live as long as the session. The
// session keeps the last Executable's kernels (and their device copies of
// const literals), so running it again costs no setup; running another
// replaces them. Between runs it holds no tensor under background and
// safepoint (allocator caches and kernel workspace aside); under close it
// holds every tensor of every run until close(), as the strategy says. An
// error leaves the session open and usable. Runs take turns (a lock); an
// Executable may run in several sessions at once.
class Session {
public:
    explicit Session(SessionOptions options = {});
    ~Session();
    Session(Session&&) noexcept;
    Session& operator=(Session&&) noexcept;
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    const SessionOptions& options() const;

    // compile_file / compile_source with this session's device and memory limit
    // (where `options` leaves them unset).
    Executable compile_file(const std::string& path, CompileOptions options = {}) const;
    Executable compile_source(std::string_view source, CompileOptions options = {},
                              const std::string& name = "<string>") const;

    // Runs `exe` once: every input fed from `feeds` (by name; dtype and shape
    // as the graph declares them; the session does not keep them), the
    // outputs fetched (`fetch`: a subset of exe.outputs() by name; empty:
    // all) and then let go. Throws Error: Usage for a missing, unknown or
    // mistyped feed or an unknown fetch name; Runtime for a device that
    // cannot be opened or memory that runs out.
    RunResult run(const Executable& exe, const Feeds& feeds = {}, const std::vector<std::string>& fetch = {});

    // The devices' figures now, per device the session has open (none before
    // the first run).
    std::map<std::string, MemoryStats> stats() const;
    uint64_t runs() const;  // runs completed, failed ones included
    // Ends the session: every buffer released, the devices closed; the
    // figures before and after. Afterwards stats() is the after-teardown
    // figures and run() throws (Usage). Again: nothing more.
    Teardown close();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// ----- the live session ------------------------------------------------------

// A bound name of a LiveSession.
struct Variable {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    std::string device;
    uint64_t bytes = 0;  // of its buffer (64-byte rounded, as the statistics count it)
};

struct StatementResult {
    std::vector<std::string> bound;  // the names the text bound at its top level, in order
    std::optional<Array> shown;      // the text was a bare expression or name: its value
    std::vector<Diagnostic> warnings;
    uint64_t statements = 0;  // statements executed (repeat passes multiplied out)
    double ms = 0;
};

// What `del` or reset() released.
struct Released {
    uint64_t names = 0, buffers = 0, bytes = 0;
};

// A session's figures at teardown, per device: before and after it.

// A session that stays open between statements, as TensorFlow's
// EagerSession (SPEC section 8; `graphrun repl` is built on it): each
// execute() runs text statement by statement against the names already bound;
// values stay in memory while a name refers to them, and the cleanup strategy
// decides when unreferenced ones go back. A failed execute() throws Error
// (with its place) and leaves the session and every name as they were.
class LiveSession {
public:
    explicit LiveSession(SessionOptions options = {});
    ~LiveSession();  // closes
    LiveSession(LiveSession&&) noexcept;
    LiveSession& operator=(LiveSession&&) noexcept;
    LiveSession(const LiveSession&) = delete;
    LiveSession& operator=(const LiveSession&) = delete;

    // Runs complete statements (the text format; `del NAME` unbinds). `name`
    // names the text in diagnostics, its lines numbered from `first_line`.
    StatementResult execute(std::string_view text, const std::string& name = "<live>", uint32_t first_line = 1);
    // True when `text` cannot be complete yet (an open bracket, a trailing operator).
    static bool needs_more(std::string_view text);

    std::vector<Variable> variables() const;  // sorted by name
    Array value(std::string_view name) const;  // a bound name's value (Error, Usage, for an unknown name)
    Released del(std::string_view name);       // unbinds it (Error, Usage, for an unknown name)
    Released reset();                          // unbinds every name (Keras' clear_session)
    // Writes the named values into one .npz file.
    void save(const std::vector<std::string>& names, const std::string& file);

    std::map<std::string, MemoryStats> stats() const;  // per device opened, now
    // Teardown: every value released; the figures before and after. The
    // session then starts afresh (no names, zero statistics), same options.
    Teardown close();
    void set_cleanup(Cleanup c);  // takes effect at once
    Cleanup cleanup() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace lib

// The engine's implementation of this API (engine/api/library.cpp) defines
// GRAPHRUN_LIBRARY_IMPLEMENTATION: there graphrun:: names the engine's own types.
#ifndef GRAPHRUN_LIBRARY_IMPLEMENTATION
using namespace lib;
#endif

}  // namespace graphrun
