// The live session: text statements and files run in one EagerSession that
// stays open; nothing is printed here.
#include "engine/api/live.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "engine/api/load.h"
#include "engine/api/output_paths.h"
#include "engine/api/prepare.h"
#include "engine/api/units.h"
#include "engine/base/interrupt.h"
#include "engine/base/printable.h"
#include "engine/ir/ops.h"
#include "engine/runtime/device.h"
#include "engine/runtime/eager_session.h"

namespace graphrun {

namespace {

// The name a bare expression's value is bound to, as Python's REPL binds `_`.
constexpr std::string_view kShownName = "_";
constexpr size_t kTimelineRows = 200;

bool ident_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }

// Calls f(word, offset) for each identifier of `text` outside strings and comments.
template <class F>
void for_each_word(std::string_view text, F&& f) {
    size_t i = 0;
    while (i < text.size()) {
        const char c = text[i];
        if (c == '#') {
            while (i < text.size() && text[i] != '\n') ++i;
        } else if (c == '"') {
            for (++i; i < text.size() && text[i] != '"' && text[i] != '\n'; ++i)
                if (text[i] == '\\') ++i;
            ++i;
        } else if (ident_start(c)) {
            const size_t start = i;
            while (i < text.size() && ident_char(text[i])) ++i;
            f(text.substr(start, i - start), start);
        } else if (c >= '0' && c <= '9') {  // a number, with its exponent (1e5 is no word)
            while (i < text.size() && (ident_char(text[i]) || text[i] == '.')) ++i;
        } else {
            ++i;
        }
    }
}

// The line and column (from 1) of byte `offset` of `text`, whose first line is `first_line`.
Loc loc_at(std::string_view text, size_t offset, uint32_t first_line) {
    Loc l;
    l.line = first_line;
    size_t line_start = 0;
    for (size_t i = 0; i < offset && i < text.size(); ++i)
        if (text[i] == '\n') {
            ++l.line;
            line_start = i + 1;
        }
    l.col = static_cast<uint32_t>(offset - line_start + 1);
    return l;
}

// An error at a place of the text, formatted as every diagnostic is.
Error error_at(ErrorKind kind, const std::string& display, const std::string& source, uint32_t first_line,
               Loc loc, const std::string& message) {
    Diagnostics d(display, source);
    d.set_first_line(first_line);
    d.error(loc, message);
    return Error{kind, message, 0, {d.format(d.all().front())}, loc};
}

// The error of a failed run, with its place in the text where it has one.
Error run_error(Error re, const std::string& display, const std::string& source, uint32_t first_line) {
    if (re.kind == ErrorKind::Interrupted) {
        re.diagnostics.assign(1, re.message);
        return re;
    }
    return error_at(re.kind, display, source, first_line, re.place, re.message);
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

// The first line of a statement's text, cut to 60 bytes, for the timeline.
std::string first_line_of(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\n')) text.remove_prefix(1);
    return clipped_text(text.substr(0, text.find('\n')), 60);
}

}  // namespace

struct LiveSession::Impl {
    LiveOptions opts;
    std::unique_ptr<EagerSession> session;
    std::vector<LiveTimelineRow> rows;
    uint64_t every = 1;   // a row every `every` recorded points
    uint64_t points = 0;  // points offered to the timeline
    std::optional<LiveTimelineRow> last;  // the latest point, always shown
    ReadFiles reads;      // the files :load read: never written by :save

    explicit Impl(LiveOptions o) : opts(std::move(o)) { open(); }

    void open() {
        SessionOptions so;
        so.cleanup = opts.cleanup;
        so.threads =
            opts.threads ? opts.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        so.cpu_memory_limit = opts.memory_limit;
        so.interrupt = &g_interrupt_signal;
        so.gpu.memory_limit = opts.memory_limit;
        so.gpu.allow_tf32 = opts.allow_tf32;
        so.gpu_runtime = opts.placement.device == "cpu" ? nullptr : gpu_runtime(nullptr);
        session = std::make_unique<EagerSession>(so);
        rows.clear();
        last.reset();
        every = 1;
        points = 0;
    }

    InputLimits limits() const {
        InputLimits l;
        l.memory_limit = opts.memory_limit ? opts.memory_limit : default_cpu_memory_limit();
        return l;
    }

    void record(std::string_view text) {
        LiveTimelineRow r = row(text);
        if (points++ % every == 0) {
            rows.push_back(r);
            if (rows.size() > 2 * kTimelineRows) {  // halve: every other row
                std::vector<LiveTimelineRow> kept;
                for (size_t i = 0; i < rows.size(); i += 2) kept.push_back(std::move(rows[i]));
                rows = std::move(kept);
                every *= 2;
            }
        }
        last = std::move(r);
    }
    LiveTimelineRow row(std::string_view text) const {
        return LiveTimelineRow{session->statements(), first_line_of(text), session->stats()};
    }

    // Runs a loaded, placed graph: `from_store` its first inputs, `bind` what the store takes.
    StatementResult run(const Graph& g, const std::string& display, const std::string& source, uint32_t first_line,
                        size_t predeclared,
                        std::vector<std::pair<std::string, NodeId>> bind, bool show,
                        std::vector<FeedView> feeds = {}) {
        StatementResult r;
        EagerRun spec;
        spec.feeds = std::move(feeds);
        for (size_t i = 0; i < predeclared; ++i) spec.from_store.push_back(static_cast<NodeId>(i));
        spec.bind = std::move(bind);
        const uint64_t before = session->statements();
        auto t0 = std::chrono::steady_clock::now();
        std::optional<Error> e = session->run(g, spec);
        r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        r.statements = session->statements() - before;
        if (e) {
            r.error = run_error(std::move(*e), display, source, first_line);
            return r;
        }
        for (const auto& [name, id] : spec.bind)
            if (static_cast<size_t>(id) >= predeclared) r.bound.push_back(name);
        if (show) {
            Error why;
            r.shown = session->value(kShownName, &why);
            if (!r.shown) {
                why.diagnostics.assign(1, why.message);
                r.error = std::move(why);
            }
        }
        return r;
    }
};

LiveSession::LiveSession(LiveOptions opts) : impl_(std::make_unique<Impl>(std::move(opts))) {}
LiveSession::~LiveSession() = default;

StatementResult LiveSession::execute(std::string_view text, const std::string& display, uint32_t first_line) {
    Impl& m = *impl_;
    StatementResult r;
    if (first_line == 0) first_line = 1;
    // Only blanks, semicolons and comments (or nothing at all) run no statement.
    bool any = false;
    for (size_t i = 0; i < text.size() && !any; ++i) {
        if (text[i] == '#')
            while (i < text.size() && text[i] != '\n') ++i;
        else
            any = static_cast<unsigned char>(text[i]) > ' ' && text[i] != ';';
    }
    if (!any) return r;
    // The source as the diagnostics show it (its lines numbered from first_line).
    const std::string source(text);

    // `del NAME, ...`: unbinds names (all of them, or none when one is unknown).
    {
        std::vector<std::pair<std::string_view, size_t>> words;
        for_each_word(text, [&](std::string_view w, size_t at) { words.emplace_back(w, at); });
        if (!words.empty() && words[0].first == "del") {
            std::string rest;  // what besides names and commas the statement holds
            size_t i = words[0].second + 3;
            for (; i < text.size(); ++i) {
                const char c = text[i];
                if (c == '#') break;
                if (!(ident_char(c) || c == ',' || c == ' ' || c == '\t' || c == ';' || c == '\n' || c == '\r'))
                    rest += c;
            }
            if (rest.empty()) {
                if (words.size() == 1) {
                    r.error = error_at(ErrorKind::InvalidGraph, display, source, first_line,
                                       loc_at(source, words[0].second + 3, first_line),
                                       "expected a name after 'del'");
                    return r;
                }
                for (size_t k = 1; k < words.size(); ++k)
                    if (!m.session->find(words[k].first)) {
                        std::string msg = "del: no name '" + std::string(words[k].first) + "' is bound";
                        std::vector<std::string> known;
                        for (const StoredValue& v : m.session->values()) known.push_back(v.name);
                        if (auto near = nearest_name(words[k].first, known); !near.empty())
                            msg += "; did you mean '" + near + "'?";
                        r.error = error_at(ErrorKind::InvalidGraph, display, source, first_line,
                                           loc_at(source, words[k].second, first_line), msg);
                        return r;
                    }
                for (size_t k = 1; k < words.size(); ++k) m.session->unbind(words[k].first);
                m.record(text);
                return r;
            }
        }
    }

    // The stored names the text mentions are bound before it, as inputs.
    std::vector<PredeclaredName> names;
    for_each_word(text, [&](std::string_view w, size_t) {
        if (std::any_of(names.begin(), names.end(), [&](const PredeclaredName& p) { return p.name == w; })) return;
        if (auto v = m.session->find(w)) names.push_back(PredeclaredName{v->name, v->dtype, v->shape});
    });
    std::unique_ptr<LoadedGraph> lg = load_statements(display, source, names, kShownName, first_line, m.limits());
    PrepareOptions po;
    po.fuse = false;  // every bound name holds its own value (SPEC section 8)
    po.placement = m.opts.placement;
    po.memory_limit = m.opts.memory_limit;
    std::ostringstream printed;  // warnings and --log-placement lines
    PrepareResult pr = load_and_place(std::move(lg), po, printed);
    if (!pr.ok()) {
        r.error = std::move(pr.error);
        if (r.error->diagnostics.empty()) r.error->diagnostics.push_back(printed.str());
        return r;
    }
    r.warnings = lines_of(printed.str());
    const Graph& g = pr.prepared.graph();
    std::vector<std::pair<std::string, NodeId>> bind;
    for (const auto& [name, id] : g.bindings) bind.emplace_back(std::string(name), id);
    // The text shows a value when its last statement is a bare expression (bound to `_`).
    bool show = false;
    if (!g.top.empty() && g.top.back().kind == Stmt::Kind::Node) {
        const Node& last = g.node(g.top.back().index);
        show = last.name == kShownName && static_cast<size_t>(g.top.back().index) >= names.size();
        if (show) {  // `_ = x` written out is an assignment, not a bare expression
            const Loc& at = last.loc;
            size_t off = 0;
            for (uint32_t line = first_line; line < at.line && off < source.size(); ++off)
                if (source[off] == '\n') ++line;
            off += at.col ? at.col - 1 : 0;
            std::string_view from(source);
            from = off < from.size() ? from.substr(off) : std::string_view();
            if (from.size() >= 1 && from[0] == '_') {
                size_t k = 1;
                while (k < from.size() && (from[k] == ' ' || from[k] == '\t')) ++k;
                if (k < from.size() && from[k] == '=') show = false;
            }
        }
    }
    StatementResult out = m.run(g, display, source, first_line, names.size(), std::move(bind), show);
    if (!out.error && !g.dels.empty())  // stored names the text deleted (`y = x + 1; del x`)
        for (const PredeclaredName& p : names)
            if (g.bindings.find(p.name) == g.bindings.end()) m.session->unbind(p.name);
    out.warnings = std::move(r.warnings);
    m.record(text);
    return out;
}

bool LiveSession::needs_more(std::string_view text) {
    int depth = 0;  // open ( [ {
    char last = 0;  // the last significant character
    size_t i = 0;
    while (i < text.size()) {
        const char c = text[i];
        if (c == '#') {
            while (i < text.size() && text[i] != '\n') ++i;
            continue;
        }
        if (c == '"') {
            for (++i; i < text.size() && text[i] != '"' && text[i] != '\n'; ++i)
                if (text[i] == '\\') ++i;
            last = '"';
            ++i;
            continue;
        }
        if (c == '(' || c == '[' || c == '{') ++depth;
        if (c == ')' || c == ']' || c == '}') --depth;
        if (c == '\n') {
            ++i;
            continue;
        }
        if (c != ' ' && c != '\t' && c != '\r') last = c;
        ++i;
    }
    if (depth > 0) return true;
    // A line ending in an operator, a comma or '=' goes on (a `**` or `@` too).
    return last == '+' || last == '-' || last == '*' || last == '/' || last == '@' || last == ',' || last == '=';
}

StatementResult LiveSession::load(const std::string& path, const FeedOptions& feeds, const ShapeBindings& shapes) {
    Impl& m = *impl_;
    StatementResult r;
    PrepareOptions po;
    po.fuse = false;  // every bound name holds its own value (SPEC section 8)
    po.placement = m.opts.placement;
    po.memory_limit = m.opts.memory_limit;
    po.shapes = shapes;
    if (looks_like_onnx(path)) add_feed_shapes(po, feeds);  // they bind its free dimensions
    std::ostringstream printed;
    PrepareResult pr = load_and_place(path, po, printed);
    if (!pr.ok()) {
        r.error = std::move(pr.error);
        if (r.error->diagnostics.empty()) r.error->diagnostics.push_back(printed.str());
        return r;
    }
    const Graph& g = pr.prepared.graph();
    FeedOptions f = feeds;
    f.memory_limit = m.limits().memory_limit;
    InputValues values;
    if (std::optional<Error> e = read_feeds(g, f, pr.file, values, printed)) {
        r.error = std::move(e);
        if (r.error->diagnostics.empty()) r.error->diagnostics.push_back(printed.str());
        return r;
    }
    r.warnings = lines_of(printed.str());
    m.reads.add_all(files_read(*pr.prepared.loaded, "a file the session loaded", &feeds, nullptr));
    std::vector<std::pair<std::string, NodeId>> bind;
    for (const Output& o : g.outputs) bind.emplace_back(o.name, o.id);
    const LoadedGraph& lg = *pr.prepared.loaded;
    StatementResult out = m.run(g, lg.display, lg.onnx ? std::string() : lg.source, 1, 0, std::move(bind), false,
                                 feed_views(values));
    out.warnings = std::move(r.warnings);
    m.record(":load " + path);
    return out;
}

std::optional<Error> LiveSession::save(const std::vector<std::string>& names, const std::string& file) {
    Impl& m = *impl_;
    std::vector<HostTensor> values;
    for (const std::string& name : names) {
        Error why;
        std::optional<HostTensor> t = m.session->value(name, &why);
        if (!t) {
            why.diagnostics.assign(1, why.message);
            return why;
        }
        values.push_back(std::move(*t));
    }
    if (values.empty()) return Error{ErrorKind::Usage, "nothing to save: name the values", 0, {}};
    std::ostringstream printed;
    if (std::optional<Error> e =
            check_output_paths({OutputPath{file, ":save " + file, true, "the saved values"}}, m.reads, printed)) {
        if (e->diagnostics.empty()) e->diagnostics.push_back(printed.str());
        return e;
    }
    OutputFileOptions o;
    o.outputs.push_back(ArraySource{":save", "", file, ""});
    if (std::optional<Error> e = write_output_files(values, o, printed)) {
        if (e->diagnostics.empty()) e->diagnostics.push_back(printed.str());
        return e;
    }
    return std::nullopt;
}

std::vector<LiveVar> LiveSession::vars() const {
    std::vector<LiveVar> out;
    for (const StoredValue& v : impl_->session->values())
        out.push_back(LiveVar{v.name, v.dtype, v.shape, v.device, v.bytes, v.buffer});
    return out;
}

std::optional<HostTensor> LiveSession::value(std::string_view name, Error* error) const {
    return impl_->session->value(name, error);
}

std::optional<ReleaseReport> LiveSession::del(std::string_view name) {
    ReleaseReport r;
    if (!impl_->session->unbind(name, &r.bytes, &r.buffers)) return std::nullopt;
    r.names = 1;
    return r;
}

ReleaseReport LiveSession::reset() {
    ReleaseReport r;
    for (const StoredValue& v : impl_->session->values())
        if (impl_->session->unbind(v.name, &r.bytes, &r.buffers)) ++r.names;
    return r;
}

std::map<std::string, MemoryStats> LiveSession::stats() const { return impl_->session->stats(); }

std::vector<LiveTimelineRow> LiveSession::timeline() const {
    std::vector<LiveTimelineRow> out = impl_->rows;
    if (impl_->last && (out.empty() || out.back().statement != impl_->last->statement)) out.push_back(*impl_->last);
    return out;
}

TeardownReport LiveSession::close() {
    Impl& m = *impl_;
    TeardownReport t;
    t.before = m.session->stats();
    t.rss_before = resident_bytes();
    m.session->close();
    t.teardown_ms = m.session->teardown_ms();
    t.after = m.session->stats();
    m.session.reset();
    t.rss_after = resident_bytes();
    m.open();
    return t;
}

void LiveSession::set_cleanup(CleanupStrategy s) {
    impl_->session->set_cleanup(s);
    impl_->opts.cleanup = s;
}

CleanupStrategy LiveSession::cleanup() const { return impl_->opts.cleanup; }
const LiveOptions& LiveSession::options() const { return impl_->opts; }

std::vector<std::string> LiveSession::op_names() {
    std::vector<std::string> out;
    for (int k = 0; k < static_cast<int>(OpKind::Invalid); ++k) {
        const auto op = static_cast<OpKind>(k);
        if (op == OpKind::LoopParam) continue;
        out.emplace_back(op_name(op));
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<std::string> LiveSession::names() const {
    std::vector<std::string> out;
    for (const StoredValue& v : impl_->session->values()) out.push_back(v.name);
    return out;
}

}  // namespace graphrun
