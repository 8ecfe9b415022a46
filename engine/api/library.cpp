// The library API (include/graphrun/graphrun.h) over the engine API:
// compile_* is prepare() with its messages kept as data, Session is the
// engine's session (runtime/session.h) kept open across runs, with the feeds
// handed to it per run (never written into the graph), and LiveSession is
// the engine's live session (live.h) with its results converted.
#define GRAPHRUN_LIBRARY_IMPLEMENTATION  // graphrun:: names the engine's types here (see the header's end)
#include "graphrun/graphrun.h"

#include <algorithm>
#include <mutex>
#include <sstream>
#include <thread>

#include "engine/api/error.h"
#include "engine/api/live.h"
#include "engine/api/load.h"
#include "engine/api/prepare.h"
#include "engine/api/run.h"

#ifndef GRAPHRUN_VERSION
#define GRAPHRUN_VERSION "unknown"
#endif

namespace graphrun::lib {

namespace {

// The public enums repeat the engine's, value for value.
static_assert(static_cast<int>(DType::Bool) == static_cast<int>(graphrun::DType::Bool));
static_assert(static_cast<int>(DType::U8) == static_cast<int>(graphrun::DType::U8));
static_assert(static_cast<int>(ErrorKind::Mismatch) == static_cast<int>(graphrun::ErrorKind::Mismatch));
static_assert(static_cast<int>(Severity::Note) == static_cast<int>(graphrun::Severity::Note));
static_assert(static_cast<int>(Cleanup::Close) == static_cast<int>(graphrun::CleanupStrategy::Close));

DType from_engine(graphrun::DType t) { return static_cast<DType>(t); }
graphrun::DType to_engine(DType t) { return static_cast<graphrun::DType>(t); }

MemoryStats from_engine(const graphrun::MemoryStats& s) {
    return MemoryStats{s.in_use, s.peak,  s.pending, s.pending_peak, s.reserved,
                       s.allocs, s.frees, s.live,    s.copied_in,    s.weights, s.workspace};
}

std::map<std::string, MemoryStats> from_engine(const std::map<std::string, graphrun::MemoryStats>& m) {
    std::map<std::string, MemoryStats> out;
    for (const auto& [dev, s] : m) out[dev] = from_engine(s);
    return out;
}

Diagnostic from_engine(const Diagnostics& all, const graphrun::Diagnostic& d) {
    Diagnostic out;
    out.severity = static_cast<Severity>(d.severity);
    out.file = all.file();
    out.line = d.loc.line;
    out.column = d.loc.line ? d.loc.col : 0;  // a JSON place's col is its offset (Loc::in_json)
    out.json_pointer = all.pointer(d.loc);
    out.message = d.message;
    out.formatted = all.format(d);
    return out;
}

// A diagnostic the engine kept only as printed text ("FILE:L:C: error: MSG" and
// the source line, or "FILE: /pointer: error: MSG", or "FILE: error: MSG"):
// its place and message read back from the first line.
Diagnostic from_printed(const std::string& file, const std::string& printed) {
    Diagnostic out;
    out.file = file;
    out.formatted = printed;
    std::string first = printed.substr(0, printed.find('\n'));
    out.message = first;
    if (first.compare(0, file.size() + 1, file + ":") != 0) return out;
    std::string rest = first.substr(file.size() + 1);
    unsigned line = 0, col = 0;
    int used = 0;
    if (std::sscanf(rest.c_str(), "%u:%u:%n", &line, &col, &used) == 2 && used > 0) {
        out.line = line;
        out.column = col;
        rest = rest.substr(static_cast<size_t>(used));
    } else if (rest.size() > 2 && rest[0] == ' ' && rest[1] == '/') {
        const size_t colon = rest.find(": ", 1);
        if (colon != std::string::npos) {
            out.json_pointer = rest.substr(1, colon - 1);
            rest = rest.substr(colon + 1);
        }
    }
    for (const char* tag : {" error: ", " warning: ", " note: "})
        if (rest.compare(0, std::strlen(tag), tag) == 0) {
            out.message = rest.substr(std::strlen(tag));
            break;
        }
    return out;
}

// The engine's error as the library's: every error diagnostic with its place
// (`file`: the name the diagnostics were printed with).
Error from_engine(const graphrun::Error& e, const LoadedGraph* lg, std::string file = {}) {
    std::vector<Diagnostic> ds;
    if (lg) file = lg->display;
    if (lg && lg->diag.has_errors()) {
        for (const graphrun::Diagnostic& d : lg->diag.all())
            if (d.severity == graphrun::Severity::Error) ds.push_back(from_engine(lg->diag, d));
    } else {
        for (const std::string& printed : e.diagnostics) {
            ds.push_back(from_printed(file, printed));
            ds.back().severity = Severity::Error;
        }
    }
    return Error(static_cast<ErrorKind>(e.kind), e.message, std::move(ds));
}

std::string type_text(DType t, const std::vector<int64_t>& shape) {
    return graphrun::type_string(to_engine(t), shape);
}

}  // namespace

const char* version() { return GRAPHRUN_VERSION; }

const char* dtype_name(DType t) { return graphrun::dtype_name(to_engine(t)); }
size_t dtype_size(DType t) { return graphrun::dtype_size(to_engine(t)); }

const char* error_kind_name(ErrorKind k) {
    switch (k) {
        case ErrorKind::Usage: return "usage";
        case ErrorKind::InvalidGraph: return "invalid_graph";
        case ErrorKind::Runtime: return "runtime";
        case ErrorKind::Interrupted: return "interrupted";
        case ErrorKind::Leak: return "leak";
        case ErrorKind::Mismatch: return "mismatch";
    }
    return "runtime";
}

const char* cleanup_name(Cleanup c) { return graphrun::cleanup_name(static_cast<graphrun::CleanupStrategy>(c)); }

// ----- Executable -----------------------------------------------------------

struct Executable::Impl {
    // Immutable once compiled: runs read it, in any number of sessions at once.
    Prepared prepared;
    PrepareOptions options;  // as compiled (the memory limit also caps each GPU at run time)
    std::vector<Diagnostic> warnings;
};

const std::string& Executable::name() const { return impl_->prepared.loaded->display; }

std::vector<TensorInfo> Executable::inputs() const {
    std::vector<TensorInfo> out;
    for (const Node& n : impl_->prepared.graph().nodes)
        if (n.op == OpKind::Input && n.valid)
            out.push_back(TensorInfo{std::string(n.display()), from_engine(n.dtype), n.shape, std::string(n.placed)});
    return out;
}

std::vector<TensorInfo> Executable::outputs() const {
    const Graph& g = impl_->prepared.graph();
    std::vector<TensorInfo> out;
    for (const graphrun::Output& o : g.outputs) {
        const Node& n = g.node(o.id);
        out.push_back(TensorInfo{o.name, from_engine(n.dtype), n.shape, std::string(n.placed)});
    }
    return out;
}

std::vector<Diagnostic> Executable::warnings() const { return impl_->warnings; }

std::map<std::string, uint64_t> Executable::static_peak() const { return impl_->prepared.plan->static_peak; }

namespace {

PrepareOptions prepare_options(const CompileOptions& o) {
    PrepareOptions po;
    po.placement.device = o.device.empty() ? "auto" : o.device;
    po.placement.soft = o.soft_placement;
    po.fetch = o.fetch;
    po.fuse = o.fuse;
    po.memory_limit = o.memory_limit;
    return po;
}

// prepare()'s result as an Executable, or its error thrown. What prepare
// printed is kept: its warnings become Executable::warnings().
std::shared_ptr<Executable::Impl> finish_compile(PrepareResult pr, PrepareOptions po, const std::string& printed) {
    if (!pr.ok()) throw from_engine(*pr.error, pr.prepared.loaded.get());
    auto impl = std::make_shared<Executable::Impl>();
    const LoadedGraph& lg = *pr.prepared.loaded;
    for (const graphrun::Diagnostic& d : lg.diag.all())
        if (d.severity != graphrun::Severity::Error) impl->warnings.push_back(from_engine(lg.diag, d));
    // Placement's fallbacks are printed as "warning: ..." lines of their own.
    std::istringstream lines(printed);
    for (std::string line; std::getline(lines, line);)
        if (line.rfind("warning: ", 0) == 0) {
            Diagnostic d;
            d.severity = Severity::Warning;
            d.file = lg.display;
            d.message = line.substr(9);
            d.formatted = line;
            impl->warnings.push_back(std::move(d));
        }
    impl->prepared = std::move(pr.prepared);
    impl->options = std::move(po);
    return impl;
}

}  // namespace

Executable compile_file(const std::string& path, const CompileOptions& options) {
    PrepareOptions po = prepare_options(options);
    std::ostringstream printed;
    PrepareResult pr = prepare(path, po, printed);
    return Executable(finish_compile(std::move(pr), std::move(po), printed.str()));
}

Executable compile_source(std::string_view source, const CompileOptions& options, const std::string& name) {
    PrepareOptions po = prepare_options(options);
    InputLimits limits;
    limits.memory_limit = po.memory_limit ? po.memory_limit : default_cpu_memory_limit();
    std::string text(source);
    const bool json = looks_like_json(name, text);
    std::ostringstream printed;
    PrepareResult pr = prepare(load_graph_source(name, std::move(text), json, limits), po, printed);
    return Executable(finish_compile(std::move(pr), std::move(po), printed.str()));
}

// ----- Session --------------------------------------------------------------

const Output& RunResult::output(std::string_view name) const {
    for (const Output& o : outputs)
        if (o.name == name) return o;
    throw std::out_of_range("graphrun::RunResult::output: no output '" + std::string(name) + "'");
}

struct Session::Impl {
    SessionOptions options;
    std::mutex mu;  // runs take turns
    // The engine's session, opened by the first run; it keeps the last
    // executable's kernels (`loaded` keeps that executable alive).
    std::unique_ptr<graphrun::Session> engine;
    std::shared_ptr<Executable::Impl> loaded;
    bool closed = false;
    uint64_t runs = 0;
    std::map<std::string, MemoryStats> after;  // the figures after teardown, once closed
};

Session::Session(SessionOptions options) : impl_(std::make_unique<Impl>()) { impl_->options = std::move(options); }
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

const SessionOptions& Session::options() const { return impl_->options; }

namespace {
CompileOptions with_session_defaults(CompileOptions o, const SessionOptions& s) {
    if (o.device.empty()) o.device = s.device;
    if (o.memory_limit == 0) o.memory_limit = s.memory_limit;
    return o;
}

// Each feed checked against its input node (dtype and shape); every input
// must be fed. The views point into `feeds`, which the run does not keep.
std::vector<FeedView> feed_views(const Graph& g, const Feeds& feeds) {
    std::map<std::string_view, const Node*, std::less<>> inputs;
    std::vector<std::string> names;
    for (const Node& n : g.nodes)
        if (n.op == OpKind::Input && n.valid) {
            inputs[n.display()] = &n;
            names.emplace_back(n.display());
        }
    std::vector<FeedView> out;
    for (const auto& [name, a] : feeds) {
        auto it = inputs.find(name);
        if (it == inputs.end()) {
            std::string msg = "feed '" + name + "': the graph has no input '" + name + "'";
            const std::string near = nearest_name(name, names);
            if (!near.empty()) msg += "; did you mean '" + near + "'?";
            else if (names.empty()) msg += " (it has no inputs)";
            throw Error(ErrorKind::Usage, msg);
        }
        const Node& n = *it->second;
        if (to_engine(a.dtype) != n.dtype || a.shape != n.shape)
            throw Error(ErrorKind::Usage, "feed '" + name + "' is " + type_text(a.dtype, a.shape) + ", but input '" +
                                              name + "' is " + graphrun::type_string(n.dtype, n.shape));
        const uint64_t want = static_cast<uint64_t>(a.numel()) * dtype_size(a.dtype);
        if (a.bytes.size() != want)
            throw Error(ErrorKind::Usage, "feed '" + name + "' holds " + std::to_string(a.bytes.size()) +
                                              " bytes, but " + type_text(a.dtype, a.shape) + " takes " +
                                              std::to_string(want));
        out.push_back(FeedView{static_cast<NodeId>(&n - g.nodes.data()), a.bytes.data(), a.bytes.size()});
    }
    for (const auto& [name, n] : inputs)
        if (feeds.find(name) == feeds.end())
            throw Error(ErrorKind::Usage, "input '" + std::string(name) + "' (" +
                                              graphrun::type_string(n->dtype, n->shape) + ") has no feed");
    return out;
}

// A run's error as the library's, with its place in the graph's source.
Error run_failure(graphrun::Error e, const LoadedGraph& lg) {
    return from_engine(describe(std::move(e), lg), nullptr, lg.display);
}
}  // namespace

Executable Session::compile_file(const std::string& path, CompileOptions options) const {
    return lib::compile_file(path, with_session_defaults(std::move(options), impl_->options));
}

Executable Session::compile_source(std::string_view source, CompileOptions options, const std::string& name) const {
    return lib::compile_source(source, with_session_defaults(std::move(options), impl_->options), name);
}

RunResult Session::run(const Executable& exe, const Feeds& feeds, const std::vector<std::string>& fetch) {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->closed) throw Error(ErrorKind::Usage, "the session is closed");
    const Prepared& p = exe.impl_->prepared;
    const Graph& g = p.graph();
    std::vector<graphrun::Output> outputs;
    for (const std::string& name : fetch) {
        auto it = std::find_if(g.outputs.begin(), g.outputs.end(),
                               [&](const graphrun::Output& o) { return o.name == name; });
        if (it == g.outputs.end())
            throw Error(ErrorKind::Usage, "fetch '" + name + "': not an output of " + p.loaded->display +
                                              " (compile with CompileOptions::fetch to compute other names)");
        outputs.push_back(*it);
    }
    if (fetch.empty()) outputs = g.outputs;
    const SessionOptions& so = impl_->options;
    // The session's memory limit, where it sets one, bounds this run instead of the compiled one.
    if (so.memory_limit)
        for (const auto& [dev, peak] : p.plan->static_peak)
            if (const uint64_t bytes = peak_with_weights(*p.plan, dev); bytes > so.memory_limit)
                throw Error(ErrorKind::Runtime, over_limit_message(dev, bytes, so.memory_limit, bytes - peak));
    const std::vector<FeedView> views = feed_views(g, feeds);
    if (!impl_->engine) {
        graphrun::SessionOptions eo;
        eo.cleanup = static_cast<graphrun::CleanupStrategy>(so.cleanup);
        eo.threads = so.threads ? so.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        eo.cpu_memory_limit = so.memory_limit;  // 0: the default
        eo.gpu_runtime = gpu_runtime(nullptr);
        eo.gpu.memory_limit = so.memory_limit;
        eo.gpu.allow_tf32 = so.allow_tf32;
        impl_->engine = std::make_unique<graphrun::Session>(eo);
    }
    graphrun::Session& session = *impl_->engine;
    ++impl_->runs;
    impl_->loaded = exe.impl_;  // the engine's kernels read its graph
    if (std::optional<graphrun::Error> e = session.load(g, *p.plan)) throw run_failure(*e, *p.loaded);
    if (std::string refused = gpu_over_limit(*p.plan, session.stats(), session.limits()); !refused.empty())
        throw Error(ErrorKind::Runtime, refused);
    std::vector<HostTensor> fetched;
    if (std::optional<graphrun::Error> e = session.run(views, 1, outputs, fetched)) throw run_failure(*e, *p.loaded);
    RunResult out;
    out.stats = from_engine(session.stats());
    out.run_ms = session.run_ms();
    session.release_outputs();  // fetched: nothing of this run is held for the next
    for (HostTensor& t : fetched)
        out.outputs.push_back(Output{t.name, t.device, Array{from_engine(t.dtype), t.shape, std::move(t.data)}});
    return out;
}

std::map<std::string, MemoryStats> Session::stats() const {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->closed) return impl_->after;
    return impl_->engine ? from_engine(impl_->engine->stats()) : std::map<std::string, MemoryStats>{};
}

uint64_t Session::runs() const { return impl_->runs; }

Teardown Session::close() {
    std::lock_guard<std::mutex> lock(impl_->mu);
    Teardown t;
    if (impl_->closed) {
        t.before = t.after = impl_->after;
        return t;
    }
    impl_->closed = true;
    if (impl_->engine) {
        t.before = from_engine(impl_->engine->stats());
        impl_->engine->close();
        t.after = impl_->after = from_engine(impl_->engine->stats());
        t.teardown_ms = impl_->engine->teardown_ms();
        impl_->engine.reset();
    }
    impl_->loaded.reset();
    return t;
}

// ----- LiveSession ------------------------------------------------------------

struct LiveSession::Impl {
    std::unique_ptr<graphrun::LiveSession> live;
};

namespace {
LiveOptions live_options(const SessionOptions& o) {
    LiveOptions lo;
    lo.cleanup = static_cast<graphrun::CleanupStrategy>(o.cleanup);
    lo.placement.device = o.device.empty() ? "auto" : o.device;
    lo.memory_limit = o.memory_limit;
    lo.threads = o.threads;
    lo.allow_tf32 = o.allow_tf32;
    return lo;
}

Array from_engine(HostTensor&& t) { return Array{from_engine(t.dtype), t.shape, std::move(t.data)}; }

Released from_engine(const ReleaseReport& r) { return Released{r.names, r.buffers, r.bytes}; }
}  // namespace

LiveSession::LiveSession(SessionOptions options) : impl_(std::make_unique<Impl>()) {
    impl_->live = std::make_unique<graphrun::LiveSession>(live_options(options));
}
LiveSession::~LiveSession() = default;
LiveSession::LiveSession(LiveSession&&) noexcept = default;
LiveSession& LiveSession::operator=(LiveSession&&) noexcept = default;

StatementResult LiveSession::execute(std::string_view text, const std::string& name, uint32_t first_line) {
    graphrun::StatementResult r = impl_->live->execute(text, name, first_line);
    if (r.error) throw from_engine(*r.error, nullptr, name);
    StatementResult out;
    out.bound = std::move(r.bound);
    if (r.shown) out.shown = from_engine(std::move(*r.shown));
    for (const std::string& w : r.warnings) {
        out.warnings.push_back(from_printed(name, w));
        out.warnings.back().severity = Severity::Warning;
    }
    out.statements = r.statements;
    out.ms = r.ms;
    return out;
}

bool LiveSession::needs_more(std::string_view text) { return graphrun::LiveSession::needs_more(text); }

std::vector<Variable> LiveSession::variables() const {
    std::vector<Variable> out;
    for (const LiveVar& v : impl_->live->vars())
        out.push_back(Variable{v.name, from_engine(v.dtype), v.shape, v.device, v.bytes});
    return out;
}

Array LiveSession::value(std::string_view name) const {
    graphrun::Error why;
    std::optional<HostTensor> t = impl_->live->value(name, &why);
    if (!t) throw from_engine(why, nullptr);
    return from_engine(std::move(*t));
}

Released LiveSession::del(std::string_view name) {
    std::optional<ReleaseReport> r = impl_->live->del(name);
    if (!r) throw Error(ErrorKind::Usage, "no name '" + std::string(name) + "'");
    return from_engine(*r);
}

Released LiveSession::reset() { return from_engine(impl_->live->reset()); }

void LiveSession::save(const std::vector<std::string>& names, const std::string& file) {
    if (std::optional<graphrun::Error> e = impl_->live->save(names, file)) throw from_engine(*e, nullptr, file);
}

std::map<std::string, MemoryStats> LiveSession::stats() const { return from_engine(impl_->live->stats()); }

Teardown LiveSession::close() {
    TeardownReport r = impl_->live->close();
    return Teardown{from_engine(r.before), from_engine(r.after), r.teardown_ms};
}

void LiveSession::set_cleanup(Cleanup c) { impl_->live->set_cleanup(static_cast<graphrun::CleanupStrategy>(c)); }

Cleanup LiveSession::cleanup() const { return static_cast<Cleanup>(impl_->live->cleanup()); }

}  // namespace graphrun::lib
