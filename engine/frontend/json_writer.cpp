// Writes a graph as a JSON graph (SPEC section 2), one node per line, in a form
// that parse_json reads back to the same graph.
#include "engine/frontend/json_writer.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "engine/base/printable.h"
#include "engine/frontend/identifiers.h"

namespace graphrun {

namespace {

std::string json_string(std::string_view s) {
    // Bytes that are not UTF-8 cannot be written as JSON: they are written as
    // the text \xHH (printable.h), as every JSON writer of graphrun does.
    return json_quoted(s);
}

std::string number_text(const Attr& a) {
    if (a.is_int) return std::to_string(a.i);
    if (std::isnan(a.f)) return "\"nan\"";
    if (std::isinf(a.f)) return a.f > 0 ? "\"inf\"" : "\"-inf\"";
    // nlohmann prints the shortest text that reads back exactly, and keeps a
    // float a float (2.0, not 2).
    return nlohmann::json(a.f).dump();
}

void write_attr(std::string& out, const Attr& a) {
    switch (a.kind) {
        case Attr::Kind::Number:
            out += number_text(a);
            break;
        case Attr::Kind::Bool:
            out += a.b ? "true" : "false";
            break;
        case Attr::Kind::String:
        case Attr::Kind::Ident:
            out += json_string(a.s);
            break;
        case Attr::Kind::List:
            out += '[';
            for (size_t i = 0; i < a.list.size(); ++i) {
                if (i > 0) out += ", ";
                write_attr(out, a.list[i]);
            }
            out += ']';
            break;
    }
}

class JsonWriter {
  public:
    JsonWriter(const Graph& g, const ExternalConsts* external)
        : g_(g), external_(external), inlined_(g.nodes.size(), false) {
        // A weak scalar literal exists only as the operand it was written as; the
        // reader makes it again, just before its consumer, from the inline number.
        std::vector<int> uses(g.nodes.size(), 0);
        for (const Node& n : g.nodes)
            for (const Input& in : n.inputs)
                if (in.id >= 0 && static_cast<size_t>(in.id) < uses.size())
                    ++uses[static_cast<size_t>(in.id)];
        for (size_t i = 0; i < g.nodes.size(); ++i)
            inlined_[i] = uses[i] == 1 && is_inline_literal(g.nodes[i]);
    }

    std::string write() {
        out_ = "{\n  \"graphrun\": 1,\n  \"nodes\": [";
        write_stmts(g_.top, 4);
        out_ += "],\n  \"outputs\": [";
        for (size_t i = 0; i < g_.outputs.size(); ++i) {
            if (i > 0) out_ += ", ";
            out_ += json_string(written_output_name(g_, g_.outputs[i]));
        }
        out_ += "]\n}\n";
        return std::move(out_);
    }

  private:
    static bool is_inline_literal(const Node& n) {
        if (n.op != OpKind::Const || !n.weak || n.attrs.size() != 1 || n.attrs[0].name != "value")
            return false;
        Attr::Kind k = n.attrs[0].value.kind;
        return k == Attr::Kind::Number || k == Attr::Kind::Bool;
    }

    bool written(const Stmt& s) const {
        if (s.kind == Stmt::Kind::Repeat) return true;
        if (s.kind == Stmt::Kind::Del) return g_.dels[static_cast<size_t>(s.index)].value != kNoNode;
        const Node& n = g_.node(s.index);
        return !inlined_[static_cast<size_t>(s.index)] && n.op != OpKind::LoopParam &&
               n.op != OpKind::Invalid;
    }

    // Items of a node list, one per line, each line indented by `indent`; the
    // caller writes the brackets.
    void write_stmts(const std::vector<Stmt>& stmts, size_t indent) {
        bool first = true;
        for (const Stmt& s : stmts) {
            if (!written(s)) continue;
            out_ += first ? "\n" : ",\n";
            first = false;
            out_.append(indent, ' ');
            if (s.kind == Stmt::Kind::Repeat)
                write_repeat(g_.repeats[static_cast<size_t>(s.index)], indent);
            else if (s.kind == Stmt::Kind::Del)
                out_ += "{\"del\": [" + json_string(g_.node(g_.dels[static_cast<size_t>(s.index)].value).name) + "]}";
            else
                write_node(s.index);
        }
        if (!first) {
            out_ += '\n';
            out_.append(indent - 2, ' ');
        }
    }

    void write_repeat(const Repeat& r, size_t indent) {
        out_ += "{\"repeat\": " + std::to_string(r.count) + ", \"body\": [";
        write_stmts(r.body, indent + 2);
        out_ += "]}";
    }

    void write_node(NodeId id) {
        const Node& n = g_.node(id);
        out_ += "{\"name\": " + json_string(n.name) + ", \"op\": " + json_string(op_name(n.op));
        if (!n.inputs.empty()) {
            out_ += ", \"inputs\": [";
            for (size_t i = 0; i < n.inputs.size(); ++i) {
                if (i > 0) out_ += ", ";
                const Node& in = g_.node(n.inputs[i].id);
                if (inlined_[static_cast<size_t>(n.inputs[i].id)])
                    write_attr(out_, in.attrs[0].value);
                else
                    out_ += json_string(in.name);  // a LoopParam's name is its carried name
            }
            out_ += ']';
        }
        if (!n.attrs.empty()) {
            out_ += ", \"attrs\": {";
            auto ext = external_ ? external_->find(id) : ExternalConsts::const_iterator();
            if (n.host_literal && external_ && ext != external_->end()) {  // a reference into the side file
                out_ += "\"file\": " + json_string(ext->second.file) + ", \"key\": " +
                        json_string(ext->second.key) + ", ";
            } else if (n.host_literal) {  // an ONNX initializer: its values, flat, with its shape attr
                out_ += "\"value\": ";
                write_attr(out_, host_literal_value(n));
                out_ += ", ";
            }
            for (size_t i = 0; i < n.attrs.size(); ++i) {
                if (i > 0) out_ += ", ";
                out_ += json_string(n.attrs[i].name) + ": ";
                write_attr(out_, n.attrs[i].value);
            }
            out_ += '}';
        }
        if (!n.device.empty()) out_ += ", \"device\": " + json_string(n.device);
        out_ += '}';
    }

    const Graph& g_;
    const ExternalConsts* external_;
    std::vector<bool> inlined_;
    std::string out_;
};

}  // namespace

std::string write_json(const Graph& g, const ExternalConsts* external) {
    return JsonWriter(g, external).write();
}

}  // namespace graphrun
