// Renumbering a graph after a plan pass (see renumber.h).
#include "engine/plan/renumber.h"

#include <utility>

namespace graphrun {

size_t renumber_nodes(Graph& g, size_t original, const std::vector<std::vector<NodeId>>& before,
                      const std::vector<bool>& removed) {
    const size_t count = g.nodes.size();
    std::vector<NodeId> remap(count, kNoNode);
    std::vector<Node> kept;
    kept.reserve(count);
    auto keep = [&](NodeId id) {
        remap[static_cast<size_t>(id)] = static_cast<NodeId>(kept.size());
        kept.push_back(std::move(g.nodes[static_cast<size_t>(id)]));
    };
    size_t gone = 0;
    for (size_t i = 0; i < original; ++i) {
        for (NodeId id : before[i]) keep(id);
        if (removed[i]) {
            ++gone;
            continue;
        }
        keep(static_cast<NodeId>(i));
    }
    g.nodes = std::move(kept);
    auto fix_stmts = [&](std::vector<Stmt>& stmts) {
        std::vector<Stmt> out;
        out.reserve(stmts.size());
        for (const Stmt& s : stmts) {
            if (s.kind != Stmt::Kind::Node) {
                out.push_back(s);
                continue;
            }
            const auto i = static_cast<size_t>(s.index);
            for (NodeId id : before[i]) out.push_back(Stmt{Stmt::Kind::Node, remap[static_cast<size_t>(id)]});
            if (!removed[i]) out.push_back(Stmt{Stmt::Kind::Node, remap[i]});
        }
        stmts = std::move(out);
    };
    fix_stmts(g.top);
    for (Repeat& r : g.repeats) fix_stmts(r.body);
    g.remap_references(remap);
    return gone;
}

void make_generated_like(Node& n, const Node& like, std::string name) {
    n.generated = true;
    n.valid = true;
    n.repeat = like.repeat;
    n.placed = like.placed;
    n.device = like.device;
    n.device_loc = like.device_loc;
    n.loc = like.loc;
    n.name = std::move(name);
}

}  // namespace graphrun
