// The storage types' pass: arithmetic on f16/bf16/i8/u8 widened to its compute
// type around each node (see storage_types.h).
#include "engine/plan/storage_types.h"

#include "engine/plan/renumber.h"

#include <string>
#include <utility>
#include <vector>

namespace graphrun {

namespace {

class Widener {
  public:
    explicit Widener(Graph& g) : g_(g), original_(g.nodes.size()) {}

    size_t run() {
        bool any = false;
        for (const Node& n : g_.nodes)
            if (is_storage(n.dtype)) {
                any = true;
                break;
            }
        if (!any) return 0;  // a graph without storage types pays one scan, not a list per node
        before_.resize(original_);
        for (NodeId id : statement_nodes()) widen(id);
        if (g_.nodes.size() == original_) return 0;
        const size_t added = g_.nodes.size() - original_;
        compact();
        return added;
    }

  private:
    std::vector<NodeId> statement_nodes() const {
        std::vector<NodeId> ids;
        auto walk = [&](const std::vector<Stmt>& stmts) {
            for (const Stmt& s : stmts)
                if (s.kind == Stmt::Kind::Node) ids.push_back(s.index);
        };
        walk(g_.top);
        for (const Repeat& r : g_.repeats) walk(r.body);
        return ids;
    }

    // A generated node like `like` (device, block, location) inserted before `at`.
    NodeId add(Node n, const Node& like, NodeId at, std::string name) {
        make_generated_like(n, like, std::move(name));
        const auto id = static_cast<NodeId>(g_.nodes.size());
        g_.nodes.push_back(std::move(n));
        before_[static_cast<size_t>(at)].push_back(id);
        return id;
    }

    static Node cast_node(NodeId from, Loc loc, DType to, const Shape& shape) {
        Node c;
        c.op = OpKind::Cast;
        c.dtype = to;
        c.shape = shape;
        c.inputs.push_back(Input{from, loc});
        c.attrs.push_back(NamedAttr{"dtype", Attr::ident(dtype_name(to)), {}});
        return c;
    }

    void widen(NodeId id) {
        const Node& n0 = g_.node(id);
        if (runs_in_storage_type(n0.op)) return;
        bool storage_in = false;
        for (const Input& in : n0.inputs) storage_in = storage_in || is_storage(g_.node(in.id).dtype);
        if (!storage_in && !is_storage(n0.dtype)) return;
        const std::string base(n0.name);
        const Inputs operands = n0.inputs;  // add() moves the nodes: n0 dangles after it
        // Each storage-typed operand read through a cast to its compute type.
        Inputs wide_inputs;
        std::vector<std::pair<NodeId, NodeId>> made;  // (operand, its cast): `a + a` casts a once
        for (size_t k = 0; k < operands.size(); ++k) {
            const Input in = operands[k];
            const Node& src = g_.node(in.id);
            if (!is_storage(src.dtype)) {
                wide_inputs.push_back(in);
                continue;
            }
            bool reused = false;
            for (const auto& [from, cast] : made)
                if (from == in.id) {
                    wide_inputs.push_back(Input{cast, in.loc});
                    reused = true;
                }
            if (reused) continue;
            Node c = cast_node(in.id, in.loc, compute_dtype(src.dtype), src.shape);
            const NodeId cid = add(std::move(c), g_.node(id), id, base + ".in" + std::to_string(k) + "." +
                                                                      dtype_name(compute_dtype(src.dtype)));
            made.emplace_back(in.id, cid);
            wide_inputs.push_back(Input{cid, in.loc});
        }
        Node& n = g_.node(id);
        if (!is_storage(n.dtype)) {
            n.inputs = std::move(wide_inputs);
            return;
        }
        // The op itself in the compute type, then the node becomes the cast back.
        const DType storage = n.dtype, wide = compute_dtype(n.dtype);
        Node w;
        w.op = n.op;
        w.dtype = wide;
        w.shape = n.shape;
        w.inputs = std::move(wide_inputs);
        w.attrs = n.attrs;
        w.weak = n.weak;
        w.epilogue = n.epilogue;
        for (NamedAttr& a : w.attrs)  // creation ops: zeros(…, dtype=f16) makes f32 values first
            if (a.name == "dtype") a.value = Attr::ident(dtype_name(wide));
        const Node like = g_.node(id);  // add() may move the nodes
        const NodeId wid = add(std::move(w), like, id, base + "." + dtype_name(wide));
        Node& back = g_.node(id);
        back.op = OpKind::Cast;
        back.inputs = Inputs{};
        back.inputs.push_back(Input{wid, like.loc});
        back.attrs.clear();
        back.attrs.push_back(NamedAttr{"dtype", Attr::ident(dtype_name(storage)), {}});
        back.epilogue = -1;
        back.weak = false;
        back.literal.clear();
        back.host_literal = false;
    }

    // Renumbers: each new node just before the node it was added for.
    void compact() { renumber_nodes(g_, original_, before_, std::vector<bool>(original_, false)); }

    Graph& g_;
    size_t original_;
    std::vector<std::vector<NodeId>> before_;  // per original node: the nodes added before it
};

}  // namespace

size_t widen_storage_types(Graph& g) { return Widener(g).run(); }

}  // namespace graphrun
