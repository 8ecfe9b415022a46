// `graphrun check`: parse, validate, place and plan; print nodes, outputs and the static peak.
#include <cstring>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "cli/app.h"
#include "cli/commands.h"
#include "engine/load.h"
#include "engine/plan.h"

namespace graphrun::cli {

namespace {

std::string where(const Node& n) {
    if (n.loc.line) return std::to_string(n.loc.line) + ":" + std::to_string(n.loc.col);
    return n.loc.pointer.str();
}

void print_text(const Graph& g, const Plan& plan, std::ostream& out) {
    size_t count = 0;
    for (const Node& n : g.nodes)
        if (n.op != OpKind::LoopParam) ++count;
    out << g.file << ": " << (g.from_json ? "json" : "text") << " graph, " << count << " node"
        << (count == 1 ? "" : "s");
    if (!g.repeats.empty()) out << ", " << g.repeats.size() << " repeat" << (g.repeats.size() == 1 ? "" : "s");
    out << "\n\nnodes:\n";
    // Types are computed once: a million-node graph prints a million of them.
    // Lines are built in one buffer, written in large pieces: formatting
    // through the stream field by field cost more than parsing the graph.
    std::vector<std::string> types(g.nodes.size());
    size_t wname = 4, wop = 2, wtype = 4, wdev = 6;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        const Node& n = g.nodes[i];
        if (n.op == OpKind::LoopParam) continue;
        types[i] = type_string(n.dtype, n.shape);
        wname = std::max(wname, n.display.size());
        wop = std::max(wop, std::strlen(op_name(n.op)));
        wtype = std::max(wtype, types[i].size());
        wdev = std::max(wdev, n.placed.size());
    }
    wname = std::min<size_t>(wname, 40);
    wtype = std::min<size_t>(wtype, 40);
    std::string buf;
    auto flush = [&](bool force) {
        if (force || buf.size() >= (size_t{1} << 16)) {
            out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
            buf.clear();
        }
    };
    auto field = [&](std::string_view text, size_t width) {  // left-aligned, as std::setw with std::left
        buf += text;
        if (text.size() < width) buf.append(width - text.size(), ' ');
    };
    auto print_block = [&](auto& self, const std::vector<Stmt>& stmts, int depth) -> void {
        const std::string indent(2 + 2 * static_cast<size_t>(depth), ' ');
        for (const Stmt& s : stmts) {
            if (s.kind == Stmt::Kind::Repeat) {
                const Repeat& r = g.repeats[static_cast<size_t>(s.index)];
                buf += indent;
                buf += "repeat " + std::to_string(r.count) + " {";
                if (!r.carries.empty()) {
                    buf += "  # carries";
                    for (const Carry& c : r.carries) buf += " " + c.name;
                }
                buf += "\n";
                self(self, r.body, depth + 1);
                buf += indent + "}\n";
                continue;
            }
            const Node& n = g.node(s.index);
            buf += indent;
            field(n.display, wname);
            buf += "  ";
            field(op_name(n.op), wop);
            buf += "  ";
            field(types[static_cast<size_t>(s.index)], wtype);
            buf += "  ";
            field(n.placed, wdev);
            buf += "  ";
            buf += where(n);
            for (size_t k = 0; k < n.inputs.size(); ++k) {
                buf += k == 0 ? "  <- " : ", ";
                buf += g.node(n.inputs[k].id).display;
            }
            buf += "\n";
            flush(false);
        }
    };
    print_block(print_block, g.top, 0);
    flush(true);
    out << "\noutputs:\n";
    for (const Output& o : g.outputs) {
        const Node& n = g.node(o.id);
        out << "  " << o.name << ": " << type_string(n.dtype, n.shape) << " (" << n.placed << ")\n";
    }
    out << "\nstatic peak (one pass, live tensor bytes):\n";
    for (const auto& [dev, bytes] : plan.static_peak)
        out << "  " << dev << ": " << bytes << " bytes (" << human_bytes(bytes) << ")\n";
}

void print_json(const Graph& g, const Plan& plan, std::ostream& out) {
    nlohmann::ordered_json doc;
    doc["file"] = g.file;
    doc["format"] = g.from_json ? "json" : "text";
    auto nodes = nlohmann::ordered_json::array();
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        const Node& n = g.nodes[i];
        if (n.op == OpKind::LoopParam) continue;
        nlohmann::ordered_json j;
        j["name"] = n.display;
        j["op"] = op_name(n.op);
        auto ins = nlohmann::ordered_json::array();
        for (const Input& in : n.inputs) ins.push_back(g.node(in.id).display);
        j["inputs"] = ins;
        j["dtype"] = dtype_name(n.dtype);
        j["shape"] = n.shape;
        j["device"] = n.placed;
        if (n.loc.line) {
            j["line"] = n.loc.line;
            j["column"] = n.loc.col;
        } else {
            j["line"] = nullptr;
            j["pointer"] = n.loc.pointer.view();
        }
        if (n.repeat >= 0) j["repeat"] = n.repeat;
        nodes.push_back(std::move(j));
    }
    doc["nodes"] = std::move(nodes);
    auto outs = nlohmann::ordered_json::array();
    for (const Output& o : g.outputs) {
        const Node& n = g.node(o.id);
        outs.push_back({{"name", o.name}, {"dtype", dtype_name(n.dtype)}, {"shape", n.shape}, {"device", n.placed}});
    }
    doc["outputs"] = std::move(outs);
    nlohmann::ordered_json peak = nlohmann::ordered_json::object();
    for (const auto& [dev, bytes] : plan.static_peak) peak[dev] = bytes;
    doc["static_peak"] = std::move(peak);
    out << doc.dump() << "\n";
}

void print_json_error(const LoadedGraph& lg, int code, const std::string& message, std::ostream& out) {
    nlohmann::ordered_json doc;
    doc["file"] = lg.display;
    doc["error"] = {{"code", code}, {"message", message}};
    out << doc.dump() << "\n";
}

}  // namespace

int check_command(const CheckOptions& opts, std::ostream& out, std::ostream& err) {
    auto lg = load_graph(opts.file);
    if (!lg->ok()) {
        lg->diag.print(err);
        int code = lg->read_failed ? kExitRuntime : kExitInvalidGraph;
        if (opts.format == Format::Json) {
            std::string first = lg->diag.all().empty() ? "" : lg->diag.format(lg->diag.all().front());
            if (!first.empty() && first.find('\n') != std::string::npos) first.resize(first.find('\n'));
            print_json_error(*lg, code, first, out);
        }
        return code;
    }
    lg->diag.print(err);  // warnings, if any
    Graph& g = lg->graph;
    std::string fetch_error;
    if (!apply_fetch(g, opts.fetch, fetch_error)) {
        err << "graphrun: error: " << fetch_error << "\n";
        return kExitUsage;
    }
    if (auto perr = place(g, opts.placement, device_availability(), err)) {
        Diagnostics d(lg->display, lg->source);
        d.error(perr->loc, perr->message);
        d.print(err);
        if (opts.format == Format::Json) print_json_error(*lg, kExitRuntime, perr->message, out);
        return kExitRuntime;
    }
    std::vector<NodeId> outputs;
    for (const Output& o : g.outputs) outputs.push_back(o.id);
    std::string plan_error;
    auto plan = compile_plan(g, outputs, &plan_error);
    if (!plan) {
        err << lg->display << ": error: " << plan_error << "\n";
        if (opts.format == Format::Json) print_json_error(*lg, kExitInvalidGraph, plan_error, out);
        return kExitInvalidGraph;
    }
    if (opts.format == Format::Json) print_json(g, *plan, out);
    else print_text(g, *plan, out);
    return kExitOk;
}

std::string human_bytes(uint64_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        ++u;
    }
    std::ostringstream os;
    if (u == 0) os << bytes << " B";
    else os << std::fixed << std::setprecision(2) << v << " " << units[u];
    return os.str();
}

}  // namespace graphrun::cli
