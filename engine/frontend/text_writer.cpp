// Writes a graph as a `.graph` script that parse_text reads back to the same
// graph: the same nodes in the same order, with the same names, inputs,
// attributes, devices, weak flags, repeats and outputs.
//
// Every node the user named is a statement `name = op(inputs, attr=value)`.
// A node with a generated name that feeds exactly one later node of the same
// statement is written inline, as the sub-expression it came from: the parser
// then creates it at the same point in program order (loop-carried values are
// captured when a name is first read, so order matters), and gives it the same
// generated name again, because generated names are chosen in program order
// around the user's names. A weak scalar literal is inlined as its number.
#include "engine/frontend/text_writer.h"

#include <charconv>
#include <cmath>

#include "engine/frontend/identifiers.h"

namespace graphrun {

namespace {

// Deepest chain of inlined calls in one statement; deeper chains are split
// into statements (the parser refuses nesting past kMaxNesting).
constexpr int kMaxInlineDepth = 32;

void write_number(std::string& out, const Attr& a) {
    if (a.is_int) {
        out += std::to_string(a.i);
        return;
    }
    if (std::isnan(a.f)) {
        out += "nan";
        return;
    }
    if (std::isinf(a.f)) {
        out += a.f > 0 ? "inf" : "-inf";
        return;
    }
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, a.f);
    std::string_view s(buf, static_cast<size_t>(r.ptr - buf));
    out += s;
    // Without a fraction or exponent it would read back as an integer.
    if (s.find_first_of(".e") == std::string_view::npos) out += ".0";
}

void write_string(std::string& out, std::string_view s) {
    out += '"';
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    out += '"';
}

void write_attr(std::string& out, const Attr& a) {
    switch (a.kind) {
        case Attr::Kind::Number:
            write_number(out, a);
            break;
        case Attr::Kind::Bool:
            out += a.b ? "true" : "false";
            break;
        case Attr::Kind::Ident:
            if (is_identifier(a.s))
                out += a.s;
            else
                write_string(out, a.s);  // a word either way
            break;
        case Attr::Kind::String:
            write_string(out, a.s);
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

// Which `with device` block a statement must stand in for its nodes to get
// their devices back: a node with a block's device needs that block, a node
// with no device needs none, a node with its own `device=` (or a weak
// literal, which the builder leaves without one) fits anywhere.
struct Placement {
    enum class Kind : uint8_t { Any, None, Block, Conflict } kind = Kind::Any;
    std::string device;  // Block
};

Placement placement_of(const Node& n) {
    Placement p;
    if (n.weak && n.device.empty()) return p;  // a weak literal takes no device from a block
    if (n.device_from_block) {
        p.kind = Placement::Kind::Block;
        p.device = n.device;
    } else if (n.device.empty()) {
        p.kind = Placement::Kind::None;
    }
    return p;
}

Placement merge(const Placement& a, const Placement& b) {
    if (a.kind == Placement::Kind::Any) return b;
    if (b.kind == Placement::Kind::Any) return a;
    if (a.kind == b.kind && a.device == b.device) return a;
    Placement c;
    c.kind = Placement::Kind::Conflict;
    return c;
}

class TextWriter {
  public:
    TextWriter(const Graph& g, const ExternalConsts* external)
        : g_(g), n_(g.nodes.size()), external_(external) {}

    std::string run() {
        count_uses();
        inlined_.assign(n_, false);
        height_.assign(n_, 1);
        placement_.resize(n_);
        decide(g_.top);
        out_ += "# graphrun graph\n";
        write_stmts(g_.top, 0);
        if (!g_.outputs.empty()) {
            out_ += "output ";
            for (size_t i = 0; i < g_.outputs.size(); ++i) {
                if (i > 0) out_ += ", ";
                out_ += written_output_name(g_, g_.outputs[i]);
            }
            out_ += '\n';
        }
        return std::move(out_);
    }

  private:
    void count_uses() {
        uses_.assign(n_, 0);
        consumer_.assign(n_, kNoNode);
        auto use = [&](NodeId id, NodeId by) {
            if (id < 0 || static_cast<size_t>(id) >= n_) return;
            ++uses_[static_cast<size_t>(id)];
            consumer_[static_cast<size_t>(id)] = by;
        };
        for (size_t i = 0; i < n_; ++i)
            for (const Input& in : g_.nodes[i].inputs) use(in.id, static_cast<NodeId>(i));
        for (const Repeat& r : g_.repeats)
            for (const Carry& c : r.carries) {
                use(c.init, kNoNode);
                use(c.update, kNoNode);
                use(c.param, kNoNode);
            }
        for (const Output& o : g_.outputs) use(o.id, kNoNode);
    }

    // May `id` be written inside the expression of the one node that reads it?
    bool candidate(NodeId id) const {
        if (id < 0 || static_cast<size_t>(id) >= n_) return false;
        const Node& n = g_.node(id);
        if (!n.generated || n.op == OpKind::LoopParam || n.op == OpKind::Invalid) return false;
        size_t i = static_cast<size_t>(id);
        if (uses_[i] != 1 || consumer_[i] == kNoNode) return false;
        return g_.node(consumer_[i]).repeat == n.repeat;
    }

    // Decides which nodes are inlined. Walking a statement list in program
    // order, candidates wait on a stack, as operands do in postfix order; a
    // node takes its inline operands from the top of the stack when they are
    // exactly there, so that writing them inside it keeps the order.
    void decide(const std::vector<Stmt>& stmts) {
        std::vector<NodeId> stack;
        for (const Stmt& s : stmts) {
            if (s.kind != Stmt::Kind::Node) {
                stack.clear();  // what waits becomes a statement of its own
                if (s.kind == Stmt::Kind::Repeat) decide(g_.repeats[static_cast<size_t>(s.index)].body);
                continue;
            }
            NodeId id = s.index;
            const Node& node = g_.node(id);
            std::vector<NodeId> operands;
            for (const Input& in : node.inputs)
                if (candidate(in.id) && consumer_[static_cast<size_t>(in.id)] == id)
                    operands.push_back(in.id);
            Placement p = placement_of(node);
            int height = 1;
            bool take = stack.size() >= operands.size();
            if (take && !operands.empty()) {
                size_t base = stack.size() - operands.size();
                for (size_t k = 0; k < operands.size() && take; ++k) {
                    NodeId o = operands[k];
                    take = stack[base + k] == o;
                    if (take) {
                        p = merge(p, placement_[static_cast<size_t>(o)]);
                        height = std::max(height, height_[static_cast<size_t>(o)] + 1);
                    }
                }
                take = take && p.kind != Placement::Kind::Conflict && height <= kMaxInlineDepth;
            }
            if (take) {
                for (NodeId o : operands) inlined_[static_cast<size_t>(o)] = true;
                stack.resize(stack.size() - operands.size());
            } else {
                stack.clear();
                p = placement_of(node);
                height = 1;
            }
            placement_[static_cast<size_t>(id)] = p;
            height_[static_cast<size_t>(id)] = height;
            if (candidate(id))
                stack.push_back(id);
            else
                stack.clear();
        }
    }

    void indent(int level) { out_.append(static_cast<size_t>(level) * 4, ' '); }

    void write_stmts(const std::vector<Stmt>& stmts, int level) {
        bool in_block = false;  // a `with device` block is open
        std::string block;      // its device
        auto close_block = [&] {
            if (!in_block) return;
            --level;
            indent(level);
            out_ += "}\n";
            in_block = false;
        };
        for (const Stmt& s : stmts) {
            if (s.kind == Stmt::Kind::Repeat) {
                close_block();
                const Repeat& r = g_.repeats[static_cast<size_t>(s.index)];
                indent(level);
                out_ += "repeat " + std::to_string(r.count) + " {\n";
                write_stmts(r.body, level + 1);
                indent(level);
                out_ += "}\n";
                continue;
            }
            if (s.kind == Stmt::Kind::Del) {
                const Del& d = g_.dels[static_cast<size_t>(s.index)];
                if (d.value == kNoNode) continue;
                close_block();
                indent(level);
                out_ += "del ";
                out_ += g_.node(d.value).name;
                out_ += '\n';
                continue;
            }
            size_t i = static_cast<size_t>(s.index);
            if (inlined_[i]) continue;
            const Placement& p = placement_[i];
            bool want = p.kind == Placement::Kind::Block;
            if (want != in_block || (want && p.device != block)) {
                close_block();
                if (want) {
                    indent(level);
                    out_ += "with device(";
                    write_string(out_, p.device);
                    out_ += ") {\n";
                    ++level;
                    in_block = true;
                    block = p.device;
                }
            }
            indent(level);
            out_ += g_.node(s.index).name;
            out_ += " = ";
            write_expr(s.index);
            out_ += '\n';
        }
        close_block();
    }

    void write_expr(NodeId id) {
        const Node& n = g_.node(id);
        size_t i = static_cast<size_t>(id);
        bool binary_use =
            consumer_[i] != kNoNode && takes_weak_literals(g_.node(consumer_[i]).op);
        if (n.op == OpKind::Const && n.weak && inlined_[i] && binary_use && n.attrs.size() == 1 &&
            n.attrs[0].name == "value" && n.attrs[0].value.kind == Attr::Kind::Number &&
            (n.device.empty() || n.device_from_block)) {
            write_number(out_, n.attrs[0].value);
            return;
        }
        out_ += op_name(n.op);
        out_ += '(';
        bool first = true;
        auto sep = [&] {
            if (!first) out_ += ", ";
            first = false;
        };
        for (const Input& in : n.inputs) {
            sep();
            if (in.id >= 0 && static_cast<size_t>(in.id) < n_ &&
                inlined_[static_cast<size_t>(in.id)])
                write_expr(in.id);
            else if (in.id >= 0 && static_cast<size_t>(in.id) < n_)
                out_ += g_.node(in.id).name;
        }
        if (n.host_literal) {  // an ONNX initializer: its values, flat, with its shape attr
            sep();
            auto ext = external_ ? external_->find(id) : ExternalConsts::const_iterator();
            if (external_ && ext != external_->end()) {  // a reference into the side file
                out_ += "file=";
                write_string(out_, ext->second.file);
                out_ += ", key=";
                write_string(out_, ext->second.key);
            } else {
                out_ += "value=";
                write_attr(out_, host_literal_value(n));
            }
        }
        for (const NamedAttr& a : n.attrs) {
            sep();
            out_ += a.name;
            out_ += '=';
            write_attr(out_, a.value);
        }
        if (!n.device.empty() && !n.device_from_block) {
            sep();
            out_ += "device=";
            write_string(out_, n.device);
        }
        out_ += ')';
    }

    const Graph& g_;
    size_t n_;
    const ExternalConsts* external_;
    std::vector<int> uses_;
    std::vector<NodeId> consumer_;
    std::vector<bool> inlined_;
    std::vector<int> height_;
    std::vector<Placement> placement_;
    std::string out_;
};

}  // namespace

std::string write_text(const Graph& g, const ExternalConsts* external) {
    return TextWriter(g, external).run();
}

}  // namespace graphrun
