// Graphviz DOT writer over the placed graph.
#include "engine/api/dot.h"

#include <map>

#include "engine/api/units.h"
#include "engine/base/printable.h"
#include "engine/ir/device_name.h"

namespace graphrun {

namespace {

// A fill colour per device: the CPU light blue, GPUs greens by index.
std::string device_colour(std::string_view dev) {
    if (dev.empty()) return "white";
    auto dn = parse_device_name(dev);
    if (!dn || dn->kind != DeviceKind::Gpu) return "lightblue";
    static const char* const kGpu[] = {"palegreen", "darkseagreen2", "aquamarine", "greenyellow"};
    return kGpu[static_cast<size_t>(dn->index) % 4];
}

class DotWriter {
public:
    DotWriter(const Prepared& p, std::ostream& out) : g_(p.graph()), plan_(p.plan ? &*p.plan : nullptr), out_(out) {
        for (const Output& o : g_.outputs) is_output_[o.id] = true;
    }

    void write() {
        std::map<std::string, bool> devices;
        for (const Node& n : g_.nodes)
            if (!n.placed.empty()) devices[std::string(n.placed)] = true;
        std::string legend;
        for (const auto& [dev, _] : devices) legend += (legend.empty() ? "" : ", ") + dev + ": " + device_colour(dev);
        out_ << "digraph \"" << dot_escape(g_.file) << "\" {\n"
             << "  graph [label=\"" << dot_escape(g_.file) << "\\n" << dot_escape(legend)
             << "\", labelloc=t, fontname=\"Helvetica\"];\n"
             << "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n"
             << "  edge [fontname=\"Helvetica\", fontsize=9];\n";
        block(g_.top, 1);
        for (size_t i = 0; i < g_.nodes.size(); ++i) {
            const Node& n = g_.nodes[i];
            for (const Input& in : n.inputs) out_ << "  n" << in.id << " -> n" << i << ";\n";
        }
        for (const Repeat& r : g_.repeats)
            for (const Carry& c : r.carries) {
                out_ << "  n" << c.init << " -> n" << c.param << " [label=\"init\"];\n";
                out_ << "  n" << c.update << " -> n" << c.param << " [style=dashed, label=\"next pass\", constraint=false];\n";
            }
        out_ << "}\n";
    }

private:
    void node(NodeId id, size_t depth) {
        const Node& n = g_.node(id);
        const std::string indent(2 * depth, ' ');
        if (n.op == OpKind::LoopParam) {
            out_ << indent << "n" << id << " [shape=ellipse, label=\"" << dot_escape(n.display()) << "\\ncarried\\n"
                 << dot_escape(type_string(n.dtype, n.shape)) << "\", fillcolor=\"" << device_colour(n.placed) << "\""
                 << (is_output_.count(id) ? ", peripheries=2" : "") << "];\n";
            return;
        }
        uint64_t bytes = 0;
        if (plan_ && static_cast<size_t>(id) < plan_->node_bytes.size()) {
            bytes = plan_->node_bytes[static_cast<size_t>(id)];
        } else if (auto numel = checked_numel(n.shape)) {
            bytes = checked_buffer_bytes(*numel, n.dtype).value_or(0);
        }
        out_ << indent << "n" << id << " [label=\"" << dot_escape(n.display()) << "\\n" << op_name(n.op) << "\\n"
             << dot_escape(type_string(n.dtype, n.shape)) << "\\n" << bytes << " bytes";
        if (bytes >= 1024) out_ << " (" << human_bytes(bytes) << ")";
        out_ << "\\n" << dot_escape(n.placed) << "\", fillcolor=\"" << device_colour(n.placed) << "\"";
        if (is_output_.count(id)) out_ << ", peripheries=2";
        out_ << "];\n";
    }

    void block(const std::vector<Stmt>& stmts, size_t depth) {
        const std::string indent(2 * depth, ' ');
        for (const Stmt& s : stmts) {
            if (s.kind == Stmt::Kind::Node) {
                node(s.index, depth);
                continue;
            }
            if (s.kind != Stmt::Kind::Repeat) continue;  // a `del` draws nothing
            const Repeat& r = g_.repeats[static_cast<size_t>(s.index)];
            out_ << indent << "subgraph cluster_repeat" << s.index << " {\n"
                 << indent << "  label=\"repeat " << r.count;
            if (r.loc.line) out_ << " (line " << r.loc.line << ")";
            out_ << "\";\n" << indent << "  style=rounded;\n";
            for (const Carry& c : r.carries) node(c.param, depth + 1);
            block(r.body, depth + 1);
            out_ << indent << "}\n";
        }
    }

    const Graph& g_;
    const Plan* plan_;
    std::ostream& out_;
    std::map<NodeId, bool> is_output_;
};

}  // namespace

// DOT files are UTF-8: a byte that is not (an ONNX name's) is written as
// \xHH, as in JSON (printable.h), before DOT's own quoting.
std::string dot_escape(std::string_view raw) {
    const std::string s = json_safe_text(raw);
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
    }
    return out;
}

void write_dot(const Prepared& p, std::ostream& out) { DotWriter(p, out).write(); }

}  // namespace graphrun
