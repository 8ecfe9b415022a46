// `graphrun check`: parse, validate, place and plan; print nodes, outputs and the static peak.
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
    return n.loc.pointer;
}

void print_text(const Graph& g, const Plan& plan, std::ostream& out) {
    size_t count = 0;
    for (const Node& n : g.nodes)
        if (n.op != OpKind::LoopParam) ++count;
    out << g.file << ": " << (g.from_json ? "json" : "text") << " graph, " << count << " node"
        << (count == 1 ? "" : "s");
    if (!g.repeats.empty()) out << ", " << g.repeats.size() << " repeat" << (g.repeats.size() == 1 ? "" : "s");
    out << "\n\nnodes:\n";
    size_t wname = 4, wop = 2, wtype = 4, wdev = 6;
    for (const Node& n : g.nodes) {
        if (n.op == OpKind::LoopParam) continue;
        wname = std::max(wname, n.display.size());
        wop = std::max(wop, std::string(op_name(n.op)).size());
        wtype = std::max(wtype, type_string(n.dtype, n.shape).size());
        wdev = std::max(wdev, n.placed.size());
    }
    wname = std::min<size_t>(wname, 40);
    wtype = std::min<size_t>(wtype, 40);
    auto print_block = [&](auto& self, const std::vector<Stmt>& stmts, int depth) -> void {
        std::string indent(2 + 2 * static_cast<size_t>(depth), ' ');
        for (const Stmt& s : stmts) {
            if (s.kind == Stmt::Kind::Repeat) {
                const Repeat& r = g.repeats[static_cast<size_t>(s.index)];
                out << indent << "repeat " << r.count << " {";
                if (!r.carries.empty()) {
                    out << "  # carries";
                    for (const Carry& c : r.carries) out << " " << c.name;
                }
                out << "\n";
                self(self, r.body, depth + 1);
                out << indent << "}\n";
                continue;
            }
            const Node& n = g.node(s.index);
            std::string ins;
            for (const Input& in : n.inputs) ins += (ins.empty() ? "" : ", ") + g.node(in.id).display;
            out << indent << std::left << std::setw(static_cast<int>(wname)) << n.display << "  "
                << std::setw(static_cast<int>(wop)) << op_name(n.op) << "  " << std::setw(static_cast<int>(wtype))
                << type_string(n.dtype, n.shape) << "  " << std::setw(static_cast<int>(wdev)) << n.placed << "  "
                << where(n);
            if (!ins.empty()) out << "  <- " << ins;
            out << "\n";
        }
    };
    print_block(print_block, g.top, 0);
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
            j["pointer"] = n.loc.pointer;
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
