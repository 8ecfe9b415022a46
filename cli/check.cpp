// `graphrun check`: parse, validate, place and plan; print nodes, outputs, the
// static peak and the close growth.
#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <exception>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "cli/app.h"
#include "cli/commands.h"
#include "engine/api/interrupt.h"
#include "engine/api/output_text.h"
#include "engine/api/prepare.h"
#include "engine/api/units.h"

namespace graphrun::cli {

namespace {

// Below this many nodes the listing is rendered after the plan, on one thread:
// a thread costs more than it saves.
constexpr size_t kParallelListingNodes = 20000;

// Bytes of the listing rendered into one piece: a million nodes take about
// 100 MB, which one string growing by doubling would copy and hold twice
// (a JSON graph's places, its pointers, are longer than any estimate).
constexpr size_t kListingPiece = size_t{1} << 20;

// The JSON pointers of a big JSON graph's nodes, found on a second core while
// this one validates, places and fuses the graph. Found by the listing, they
// cost about as much as the plan that runs beside it (80M instructions per
// 100,000 nodes), so they were on the path to the first byte out, and made
// a JSON graph slower to check than the same graph as text. A node whose
// place is not in the table (one made after parsing, or one whose index
// changed) is found by the finder, as before.
class PlaceTable {
  public:
    PlaceTable() = default;
    PlaceTable(const PlaceTable&) = delete;
    PlaceTable& operator=(const PlaceTable&) = delete;
    ~PlaceTable() { wait(); }

    // Reads the places of lg's nodes, for a well-formed JSON graph of
    // kParallelListingNodes nodes or more, and finds their pointers on a
    // thread of its own. lg must outlive the table.
    void start(const LoadedGraph& lg) {
        if (!lg.json || lg.diag.has_errors() || lg.graph.nodes.size() < kParallelListingNodes) return;
        try {
            offsets_.reserve(lg.graph.nodes.size());
            for (const Node& n : lg.graph.nodes)
                offsets_.push_back(n.loc.in_json() && n.loc.pointer.empty() ? n.loc.json_offset() : kNone);
            worker_ = std::jthread([this, text = std::string_view(lg.source)] { find(text); });
        } catch (...) {
            // No memory or no thread for it: the listing finds them.
            offsets_.clear();
        }
    }

    // Node `id`'s pointer, when the table holds its place `loc`.
    std::optional<std::string_view> pointer(size_t id, const Loc& loc) {
        wait();
        if (!found_ || id >= offsets_.size() || !loc.in_json() || !loc.pointer.empty() ||
            offsets_[id] != loc.json_offset())
            return std::nullopt;
        const uint32_t begin = id == 0 ? 0 : ends_[id - 1];
        return std::string_view(text_).substr(begin, ends_[id] - begin);
    }

  private:
    static constexpr uint32_t kNone = UINT32_MAX;

    // In the nodes' order: a node, then the literal input it made, is the
    // order the finder scans forward in (json_pointer.h).
    void find(std::string_view text) {
        try {
            JsonPointerFinder finder(text);
            ends_.reserve(offsets_.size());
            text_.reserve(offsets_.size() * 18);  // "/nodes/123456" and "/nodes/123456/inputs/1"
            for (uint32_t off : offsets_) {
                // A signal stops check while it validates: this thread is joined on the way out.
                if ((ends_.size() & 4095) == 0 && interrupted()) return;
                if (off != kNone) text_ += finder.pointer_at(off);
                if (text_.size() > UINT32_MAX) return;  // deep places' pointers: the finder finds them
                ends_.push_back(static_cast<uint32_t>(text_.size()));
            }
            found_ = true;
        } catch (...) {
            found_ = false;  // no memory: the listing finds them
        }
    }

    void wait() {
        if (worker_.joinable()) worker_.join();
    }

    std::vector<uint32_t> offsets_;  // each node's place as parsed, kNone for none in the text
    std::vector<uint32_t> ends_;     // where each node's pointer ends in text_
    std::string text_;
    bool found_ = false;
    std::jthread worker_;
};

// A node's place: from the table, else from the finder. Valid until the next call.
struct Places {
    PlaceTable& table;
    JsonPointerFinder& finder;
    std::string_view pointer(size_t id, const Loc& loc) {
        if (std::optional<std::string_view> p = table.pointer(id, loc)) return *p;
        return finder.pointer(loc);
    }
};

// The listing's text in pieces of about kListingPiece bytes, written through
// a cursor into a buffer already sized: a node line is about twenty short
// fields, and std::string's append (length and capacity checks and a
// memcpy call for each) was most of the cost of rendering a big listing.
class PieceWriter {
  public:
    explicit PieceWriter(std::vector<std::string>& pieces) : pieces_(pieces) {}
    // `text`, spaces up to `width` bytes (left-aligned, as std::setw with
    // std::left), then the two spaces between columns.
    void field(std::string_view text, size_t width) {
        const size_t pad = (text.size() < width ? width - text.size() : 0) + 2;
        room(text.size() + pad);
        copy(text);
        std::memset(buf_.data() + used_, ' ', pad);
        used_ += pad;
    }
    void put(std::string_view text) {
        room(text.size());
        copy(text);
    }
    // The end of a line: a full piece goes to the list.
    void end_line() {
        put("\n");
        if (used_ >= kListingPiece) flush();
    }
    void flush() {
        if (used_ == 0) return;
        buf_.resize(used_);
        pieces_.push_back(std::move(buf_));
        buf_ = std::string();
        used_ = 0;
    }

  private:
    // Room for n more bytes in this piece (a line longer than the slack
    // too: a node of a million inputs is one line, so the piece at least
    // doubles, or such a line would be copied once per input).
    void room(size_t n) {
        if (n <= buf_.size() - used_) return;
        std::string bigger(std::max({kListingPiece + kSlack, 2 * buf_.size(), used_ + n}), ' ');
        std::memcpy(bigger.data(), buf_.data(), used_);
        buf_ = std::move(bigger);
    }
    // Fields are short: a loop, not a memcpy call.
    void copy(std::string_view text) {
        char* d = buf_.data() + used_;
        for (char c : text) *d++ = c;
        used_ += text.size();
    }
    static constexpr size_t kSlack = 4096;
    std::vector<std::string>& pieces_;
    std::string buf_;
    size_t used_ = 0;
};

// The header and the nodes section of the text listing: all of it that does
// not depend on the plan, so that it can be rendered while the plan compiles.
// In pieces of about kListingPiece bytes, written one after the other.
std::vector<std::string> render_listing(const Graph& g, Places& places) {
    std::vector<std::string> pieces;
    // Names may hold any bytes: shown as a terminal may show them (output_text.h).
    std::string scratch;
    auto shown = [&scratch](std::string_view s) -> std::string_view {
        if (s.size() <= kMaxShownName && terminal_safe(s)) return s;
        scratch = terminal_text(s);
        return scratch;
    };
    size_t count = 0;
    for (const Node& n : g.nodes)
        if (n.op != OpKind::LoopParam) ++count;
    std::string buf = std::string(shown(g.file)) + ": " + (g.from_onnx ? "onnx" : g.from_json ? "json" : "text") + " graph, " + std::to_string(count) + " node" +
                      (count == 1 ? "" : "s");
    if (!g.repeats.empty())
        buf += ", " + std::to_string(g.repeats.size()) + " repeat" + (g.repeats.size() == 1 ? "" : "s");
    buf += "\n";
    if (!g.free_dims.empty()) {
        // An ONNX model's free input dimensions: the size each was read with, and what gave it.
        buf += "\nfree dimensions (bind with --dim=NAME=N, --input-shape=INPUT=AxBxC or an --input array):\n";
        for (const FreeDim& d : g.free_dims) {
            buf += "  ";
            buf += shown(d.input);
            buf += "[" + std::to_string(d.axis) + "]";
            if (!d.name.empty()) (buf += " '") += shown(d.name), buf += "'";
            buf += " = " + std::to_string(d.value);
            if (!d.bound_by.empty()) {
                buf += "  (";
                buf += shown(d.bound_by);
                buf += ")";
            } else {
                buf += "  (not bound: taken as 1)";
            }
            buf += "\n";
        }
    }
    buf += "\nnodes:\n";
    // Lines are written into one buffer: formatting through a stream field by
    // field cost more than parsing the graph. Neighbouring nodes nearly
    // always have one of a few types (a literal's, the value's), so the text
    // of the last few types is kept, not made again per node.
    struct TypeText {
        DType dtype = DType::F32;
        const Shape* shape = nullptr;
        std::string text;
    };
    std::array<TypeText, 4> types;
    size_t next_type = 0;  // the entry to replace next
    auto type_of = [&](const Node& n) -> const std::string& {
        for (const TypeText& t : types)
            if (t.shape && t.dtype == n.dtype && *t.shape == n.shape) return t.text;
        TypeText& t = types[next_type];
        next_type = (next_type + 1) % types.size();
        t.text = type_string(n.dtype, n.shape);
        t.dtype = n.dtype;
        t.shape = &n.shape;
        return t.text;
    };
    size_t wname = 4, wop = 2, wtype = 4, wdev = 6;
    for (const Node& n : g.nodes) {
        if (n.op == OpKind::LoopParam) continue;
        wname = std::max(wname, n.display().size());
        wop = std::max(wop, std::strlen(op_name(n.op)));
        wtype = std::max(wtype, type_of(n).size());
        wdev = std::max(wdev, n.placed.size());
    }
    wname = std::min<size_t>(wname, 40);
    wtype = std::min<size_t>(wtype, 40);
    PieceWriter out(pieces);
    out.put(buf);
    auto print_block = [&](auto& self, const std::vector<Stmt>& stmts, int depth) -> void {
        const std::string indent(2 + 2 * static_cast<size_t>(depth), ' ');
        for (const Stmt& s : stmts) {
            if (s.kind == Stmt::Kind::Repeat) {
                const Repeat& r = g.repeats[static_cast<size_t>(s.index)];
                out.put(indent);
                out.put("repeat " + std::to_string(r.count) + " {");
                if (!r.carries.empty()) {
                    out.put("  # carries");
                    for (const Carry& c : r.carries) {
                        out.put(" ");
                        out.put(shown(c.name));
                    }
                }
                out.end_line();
                self(self, r.body, depth + 1);
                out.put(indent);
                out.put("}");
                out.end_line();
                continue;
            }
            if (s.kind == Stmt::Kind::Del) {
                const Del& d = g.dels[static_cast<size_t>(s.index)];
                if (d.value == kNoNode) continue;
                out.put(indent);
                out.put("del ");
                out.put(shown(g.node(d.value).name));
                out.end_line();
                continue;
            }
            const Node& n = g.node(s.index);
            out.put(indent);
            out.field(shown(n.display()), wname);
            out.field(op_name(n.op), wop);
            out.field(type_of(n), wtype);
            out.field(n.placed, wdev);
            if (n.loc.line) {
                char at[32];  // two uint32 and a colon
                char* colon = std::to_chars(at, at + 12, n.loc.line).ptr;
                *colon = ':';
                char* end = std::to_chars(colon + 1, at + sizeof at, n.loc.col).ptr;
                out.put(std::string_view(at, static_cast<size_t>(end - at)));
            } else {
                out.put(places.pointer(static_cast<size_t>(s.index), n.loc));
            }
            for (size_t k = 0; k < n.inputs.size(); ++k) {
                out.put(k == 0 ? "  <- " : ", ");
                out.put(shown(g.node(n.inputs[k].id).display()));
            }
            out.end_line();
        }
    };
    print_block(print_block, g.top, 0);
    out.flush();
    return pieces;
}

// The rest of the text listing: what was fused, the inputs, outputs, the
// static peak, the weights and the close growth.
// The tensors the CPU's offset plan places (Plan::cpu_offset).
uint64_t planned_tensors(const Plan& plan) {
    uint64_t n = 0;
    for (uint64_t offset : plan.cpu_offset) n += offset != kNotPlanned;
    return n;
}

void print_text_tail(const Graph& g, const Plan& plan, std::ostream& out) {
    if (!g.epilogues.empty()) {
        out << "\nfused (one kernel each; --no-fuse runs them apart):\n";
        for (const Node& n : g.nodes) {
            const Epilogue* e = g.epilogue_of(n);
            if (!e) continue;
            out << "  " << terminal_text(n.display()) << ": " << e->describe() << "  <-";
            for (size_t k = 0; k < e->fused.size(); ++k)
                out << (k ? ", " : " ") << terminal_text(e->fused[k].name);
            out << "\n";
        }
    }
    bool any_cl = false;  // the layout pass's values (engine/plan/channels_last.h)
    for (const Node& n : g.nodes) {
        if (!n.channels_last) continue;
        out << (any_cl ? ", " : "\nchannels-last (NHWC between oneDNN convs, max_pools and concats, or oneDNN's blocked "
                                "nChw8c/nChw16c, marked [8]/[16]; --no-fuse keeps NCHW):\n  ")
            << terminal_text(n.display());
        if (n.channel_block) out << " [" << int{n.channel_block} << "]";
        any_cl = true;
    }
    if (any_cl) out << "\n";
    bool any_wino = false;  // convs run as Winograd's F(4x4, 3x3) (engine/kernels/cpu/winograd.h)
    for (const Node& n : g.nodes) {
        if (!n.winograd) continue;
        out << (any_wino ? ", " : "\nWinograd F(4x4, 3x3) convs (GRAPHRUN_NO_WINOGRAD=1 runs oneDNN's direct conv):\n  ")
            << terminal_text(n.display());
        any_wino = true;
    }
    if (any_wino) out << "\n";
    bool any_input = false;  // the values `run` needs: --input=NAME=@FILE.npy of this dtype and shape
    for (const Node& n : g.nodes) {
        if (n.op != OpKind::Input) continue;
        if (!any_input) out << "\ninputs (give each with --input=NAME=@FILE.npy, or --fill):\n";
        any_input = true;
        out << "  " << terminal_text(n.display()) << ": " << type_string(n.dtype, n.shape) << " (" << n.placed << ")\n";
    }
    out << "\noutputs:\n";
    for (const Output& o : g.outputs) {
        const Node& n = g.node(o.id);
        out << "  " << terminal_text(o.name) << ": " << type_string(n.dtype, n.shape) << " (" << n.placed << ")\n";
    }
    out << "\nstatic peak (one pass, live tensor bytes):\n";
    for (const auto& [dev, bytes] : plan.static_peak)
        out << "  " << dev << ": " << bytes << " bytes (" << human_bytes(bytes) << ")\n";
    if (plan.cpu_arena_bytes) {
        const uint64_t tensors = planned_tensors(plan);
        out << "\noffset plan (safepoint and background put each tensor of " << kPlannedBytes / 1024
            << " KiB or more at its place in one block):\n";
        out << "  cpu: " << plan.cpu_arena_bytes << " bytes (" << human_bytes(plan.cpu_arena_bytes) << ") for "
            << tensors << (tensors == 1 ? " tensor\n" : " tensors\n");
    }
    if (!plan.weights.empty()) {
        out << "\nweights (constants, placed once when the session opens and held until it closes):\n";
        for (const auto& [dev, bytes] : plan.weights)
            out << "  " << dev << ": " << bytes << " bytes (" << human_bytes(bytes) << ")\n";
    }
    out << "\nclose growth (--cleanup=close holds every tensor until the session closes):\n";
    for (const auto& [dev, bytes] : plan.close_growth) {
        out << "  " << dev << ": a pass allocates " << bytes << " bytes";
        if (bytes == UINT64_MAX) out << " or more";  // Plan::close_growth saturates
        out << " (" << human_bytes(bytes) << "); the peak grows by that per pass\n";
    }
}

void print_json(const Graph& g, const Plan& plan, Places& places, std::ostream& out) {
    nlohmann::ordered_json doc;
    doc["file"] = g.file;
    doc["format"] = g.from_onnx ? "onnx" : g.from_json ? "json" : "text";
    if (g.from_onnx) {
        auto dims = nlohmann::ordered_json::array();
        for (const FreeDim& d : g.free_dims)
            dims.push_back({{"input", d.input},
                            {"axis", d.axis},
                            {"name", d.name.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(d.name)},
                            {"size", d.value},
                            {"bound_by", d.bound_by.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(d.bound_by)}});
        doc["free_dims"] = dims;
    }
    auto nodes = nlohmann::ordered_json::array();
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        const Node& n = g.nodes[i];
        if (n.op == OpKind::LoopParam) continue;
        nlohmann::ordered_json j;
        j["name"] = n.display();
        j["op"] = op_name(n.op);
        auto ins = nlohmann::ordered_json::array();
        for (const Input& in : n.inputs) ins.push_back(g.node(in.id).display());
        j["inputs"] = ins;
        j["dtype"] = dtype_name(n.dtype);
        j["shape"] = n.shape;
        j["device"] = n.placed;
        if (n.loc.line) {
            j["line"] = n.loc.line;
            j["column"] = n.loc.col;
        } else {
            j["line"] = nullptr;
            j["pointer"] = places.pointer(i, n.loc);
        }
        if (n.repeat >= 0) j["repeat"] = n.repeat;
        nodes.push_back(std::move(j));
    }
    doc["nodes"] = std::move(nodes);
    // Per fused node, the nodes it stands for (their op and name), in program order.
    auto fused = nlohmann::ordered_json::array();
    for (const Node& n : g.nodes) {
        const Epilogue* e = g.epilogue_of(n);
        if (!e) continue;
        auto parts = nlohmann::ordered_json::array();
        for (const FusedOp& f : e->fused) parts.push_back({{"op", op_name(f.op)}, {"name", f.name}});
        fused.push_back({{"node", n.display()}, {"op", op_name(n.op)}, {"fused", std::move(parts)}});
    }
    doc["fused"] = std::move(fused);
    // The values held channels-last between the nodes that write and read them
    // (channels_last.h), and each one's layout: "nhwc", "nChw8c" or "nChw16c".
    auto cl = nlohmann::ordered_json::array();
    auto layouts = nlohmann::ordered_json::object();
    for (const Node& n : g.nodes)
        if (n.channels_last) {
            cl.push_back(n.display());
            layouts[n.display()] = n.channel_block == 16 ? "nChw16c" : n.channel_block == 8 ? "nChw8c" : "nhwc";
        }
    doc["channels_last"] = std::move(cl);
    doc["channel_layouts"] = std::move(layouts);
    // The convs that run as Winograd's F(4x4, 3x3) (engine/kernels/cpu/winograd.h).
    auto wino = nlohmann::ordered_json::array();
    for (const Node& n : g.nodes)
        if (n.winograd) wino.push_back(n.display());
    doc["winograd"] = std::move(wino);
    auto ins = nlohmann::ordered_json::array();
    for (const Node& n : g.nodes)
        if (n.op == OpKind::Input)
            ins.push_back({{"name", n.display()}, {"dtype", dtype_name(n.dtype)}, {"shape", n.shape}, {"device", n.placed}});
    doc["inputs"] = std::move(ins);
    auto outs = nlohmann::ordered_json::array();
    for (const Output& o : g.outputs) {
        const Node& n = g.node(o.id);
        outs.push_back({{"name", o.name}, {"dtype", dtype_name(n.dtype)}, {"shape", n.shape}, {"device", n.placed}});
    }
    doc["outputs"] = std::move(outs);
    nlohmann::ordered_json peak = nlohmann::ordered_json::object();
    for (const auto& [dev, bytes] : plan.static_peak) peak[dev] = bytes;
    doc["static_peak"] = std::move(peak);
    nlohmann::ordered_json growth = nlohmann::ordered_json::object();
    for (const auto& [dev, bytes] : plan.close_growth) growth[dev] = bytes;
    doc["close_growth"] = std::move(growth);
    nlohmann::ordered_json weights = nlohmann::ordered_json::object();
    for (const auto& [dev, bytes] : plan.weights) weights[dev] = bytes;
    doc["weights"] = std::move(weights);
    nlohmann::ordered_json offsets = nlohmann::ordered_json::object();
    if (plan.cpu_arena_bytes)
        offsets[std::string(kCpuDeviceName)] = {{"bytes", plan.cpu_arena_bytes}, {"tensors", planned_tensors(plan)}};
    doc["offset_plan"] = std::move(offsets);
    out << dump_json(doc) << "\n";
}

void print_json_error(const std::string& file, const Error& e, std::ostream& out) {
    nlohmann::ordered_json doc;
    doc["file"] = file;
    auto diags = nlohmann::ordered_json::array();
    for (const std::string& d : e.diagnostics) diags.push_back(d);
    if (diags.empty()) diags.push_back(e.message);
    doc["error"] = {{"code", exit_code(e)}, {"message", e.message}, {"diagnostics", diags}};
    out << dump_json(doc) << "\n";
}

}  // namespace

int check_command(const CheckOptions& opts, std::ostream& out, std::ostream& err) {
    auto fail = [&](const std::string& file, const Error& e) {
        if (opts.format == Format::Json) print_json_error(file, e, out);
        return exit_code(e);
    };
    PrepareOptions engine = opts.engine;
    engine.refuse_over_limit = false;  // check lists the static peak; only run refuses it
    PlaceTable table;
    engine.on_parsed = [&table](const LoadedGraph& lg) { table.start(lg); };
    PrepareResult pr = load_and_place(opts.file, engine, err);
    if (pr.error) {
        // A --fetch mistake is reported on stderr only, as a usage error.
        if (pr.error->kind == ErrorKind::Usage) return exit_code(*pr.error);
        return fail(pr.file, *pr.error);
    }
    Prepared& p = pr.prepared;
    const Graph& g = p.graph();
    JsonPointerFinder finder = json_places(*p.loaded);
    Places places{table, finder};
    std::optional<Error> plan_error;
    std::vector<std::string> listing;
    if (opts.format == Format::Text) {
        // The listing is rendered on a second thread while the plan compiles
        // (each takes about a fifth of a second for a million nodes); both
        // only read the graph.
        std::exception_ptr render_failed;
        auto render = [&] {
            try {
                listing = render_listing(g, places);
            } catch (...) {
                render_failed = std::current_exception();
            }
        };
        std::optional<std::jthread> renderer;
        if (g.nodes.size() >= kParallelListingNodes) {
            try {
                renderer.emplace(render);
            } catch (const std::system_error&) {
                // No thread to be had: render after the plan, on this one.
            }
        }
        plan_error = plan_prepared(p, engine, err);
        if (renderer) renderer->join();
        else render();
        if (render_failed) std::rethrow_exception(render_failed);
    } else {
        plan_error = plan_prepared(p, engine, err);
    }
    if (plan_error) return fail(pr.file, *plan_error);
    if (opts.format == Format::Json) {
        print_json(g, *p.plan, places, out);
    } else {
        std::ostringstream tail;
        print_text_tail(g, *p.plan, tail);
        // The graph is not read again: a big one (a million nodes take about
        // 60 ms to free) goes on a second thread while the listing is written.
        std::optional<std::jthread> freer;
        if (g.nodes.size() >= kParallelListingNodes) {
            try {
                freer.emplace([&p] { p.loaded.reset(); });
            } catch (const std::system_error&) {
                // No thread to be had: it is freed on return.
            }
        }
        for (const std::string& piece : listing) out.write(piece.data(), static_cast<std::streamsize>(piece.size()));
        out << tail.str();
    }
    return kExitOk;
}

}  // namespace graphrun::cli
