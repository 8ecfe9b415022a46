// The library API (include/graphrun/graphrun.h) over the engine API:
// compile_* is prepare() with its messages kept as data, Session::run is
// run_prepared() with the feeds put into the graph's input nodes for the
// length of one run and taken out again before it returns, and LiveSession
// is the engine's live session (live.h) with its results converted.
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
static_assert(static_cast<int>(ErrorKind::Mismatch) == static_cast<int>(graphrun::ErrorKind::Mismatch));
static_assert(static_cast<int>(Severity::Note) == static_cast<int>(graphrun::Severity::Note));
static_assert(static_cast<int>(Cleanup::Close) == static_cast<int>(graphrun::CleanupStrategy::Close));

DType from_engine(graphrun::DType t) { return static_cast<DType>(t); }
graphrun::DType to_engine(DType t) { return static_cast<graphrun::DType>(t); }

MemoryStats from_engine(const graphrun::MemoryStats& s) {
    return MemoryStats{s.in_use, s.peak,  s.pending, s.pending_peak, s.reserved,
                       s.allocs, s.frees, s.live,    s.copied_in,    s.workspace};
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
    out.column = d.loc.col;
    out.json_pointer = std::string(d.loc.pointer.view());
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
    // Held for the length of a run, during which the input nodes hold the
    // feeds (the engine reads an input's value from Node::literal); the run
    // empties them again before it lets go, so that between runs the graph is
    // exactly as compiled.
    std::mutex run_mu;
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
    bool closed = false;
    uint64_t runs = 0;
    // The devices' figures after the last run's teardown: what they hold now.
    std::map<std::string, MemoryStats> now;
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

// Empties the input nodes a run filled, however the run ends.
struct FedInputs {
    std::vector<Node*> nodes;
    ~FedInputs() {
        for (Node* n : nodes) std::vector<uint8_t>().swap(n->literal);
    }
};

// Puts each feed into its input node (checked against the node's dtype and
// shape); every input must be fed.
void apply_feeds(Graph& g, const Feeds& feeds, FedInputs& fed) {
    std::map<std::string_view, Node*, std::less<>> inputs;
    std::vector<std::string> names;
    for (Node& n : g.nodes)
        if (n.op == OpKind::Input && n.valid) {
            inputs[n.display()] = &n;
            names.emplace_back(n.display());
        }
    for (const auto& [name, a] : feeds) {
        auto it = inputs.find(name);
        if (it == inputs.end()) {
            std::string msg = "feed '" + name + "': the graph has no input '" + name + "'";
            const std::string near = nearest_name(name, names);
            if (!near.empty()) msg += "; did you mean '" + near + "'?";
            else if (names.empty()) msg += " (it has no inputs)";
            throw Error(ErrorKind::Usage, msg);
        }
        Node& n = *it->second;
        if (to_engine(a.dtype) != n.dtype || a.shape != n.shape)
            throw Error(ErrorKind::Usage, "feed '" + name + "' is " + type_text(a.dtype, a.shape) + ", but input '" +
                                              name + "' is " + graphrun::type_string(n.dtype, n.shape));
        const uint64_t want = static_cast<uint64_t>(a.numel()) * dtype_size(a.dtype);
        if (a.bytes.size() != want)
            throw Error(ErrorKind::Usage, "feed '" + name + "' holds " + std::to_string(a.bytes.size()) +
                                              " bytes, but " + type_text(a.dtype, a.shape) + " takes " +
                                              std::to_string(want));
    }
    for (const auto& [name, n] : inputs)
        if (feeds.find(name) == feeds.end())
            throw Error(ErrorKind::Usage, "input '" + std::string(name) + "' (" +
                                              graphrun::type_string(n->dtype, n->shape) + ") has no feed");
    for (const auto& [name, a] : feeds) {
        Node& n = *inputs.find(name)->second;
        fed.nodes.push_back(&n);
        n.literal = a.bytes;
    }
}
}  // namespace

Executable Session::compile_file(const std::string& path, CompileOptions options) const {
    return lib::compile_file(path, with_session_defaults(std::move(options), impl_->options));
}

Executable Session::compile_source(std::string_view source, CompileOptions options, const std::string& name) const {
    return lib::compile_source(source, with_session_defaults(std::move(options), impl_->options), name);
}

RunResult Session::run(const Executable& exe, const Feeds& feeds, const std::vector<std::string>& fetch) {
    if (impl_->closed) throw Error(ErrorKind::Usage, "the session is closed");
    Executable::Impl& x = *exe.impl_;
    std::lock_guard<std::mutex> lock(x.run_mu);
    Prepared& p = x.prepared;
    Graph& g = p.graph();
    for (const std::string& name : fetch)
        if (std::none_of(g.outputs.begin(), g.outputs.end(), [&](const graphrun::Output& o) { return o.name == name; }))
            throw Error(ErrorKind::Usage, "fetch '" + name + "': not an output of " + p.loaded->display +
                                              " (compile with CompileOptions::fetch to compute other names)");
    const SessionOptions& so = impl_->options;
    RunFileOptions ro;
    ro.prepare = x.options;
    ro.cleanup = static_cast<graphrun::CleanupStrategy>(so.cleanup);
    ro.threads = so.threads;
    ro.allow_tf32 = so.allow_tf32;
    // The session's memory limit, where it sets one, bounds this run instead of the compiled one.
    const uint64_t compiled_limit = p.cpu_memory_limit;
    struct RestoreLimit {
        Prepared& p;
        uint64_t limit;
        ~RestoreLimit() { p.cpu_memory_limit = limit; }
    } restore{p, compiled_limit};
    if (so.memory_limit) {
        ro.prepare.memory_limit = so.memory_limit;
        p.cpu_memory_limit = so.memory_limit;
        for (const auto& [dev, bytes] : p.plan->static_peak)
            if (bytes > so.memory_limit)
                throw Error(ErrorKind::Runtime, over_limit_message(dev, bytes, so.memory_limit));
    }
    FedInputs fed;
    apply_feeds(g, feeds, fed);
    std::ostringstream printed;
    graphrun::RunResult rr = run_prepared(p, ro, printed);
    ++impl_->runs;
    if (rr.ran) impl_->now = from_engine(rr.after);
    if (rr.error) throw from_engine(*rr.error, p.loaded.get());
    RunResult out;
    out.before_teardown = from_engine(rr.before);
    out.after_teardown = from_engine(rr.after);
    out.run_ms = rr.run_ms;
    out.teardown_ms = rr.teardown_ms;
    auto take = [&](HostTensor& t) {
        out.outputs.push_back(Output{t.name, t.device, Array{from_engine(t.dtype), t.shape, std::move(t.data)}});
    };
    if (fetch.empty()) {
        for (HostTensor& t : rr.outputs) take(t);
    } else {
        for (const std::string& name : fetch)
            for (HostTensor& t : rr.outputs)
                if (t.name == name) {
                    take(t);
                    break;
                }
    }
    return out;
}

std::map<std::string, MemoryStats> Session::stats() const { return impl_->now; }

uint64_t Session::runs() const { return impl_->runs; }

void Session::close() {
    impl_->closed = true;
    for (auto& [dev, s] : impl_->now) s = MemoryStats{};
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
    std::string why;
    std::optional<HostTensor> t = impl_->live->value(name, &why);
    if (!t) throw Error(ErrorKind::Usage, why.empty() ? "no name '" + std::string(name) + "'" : why);
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
