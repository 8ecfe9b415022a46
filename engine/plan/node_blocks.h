// What the plan passes that rewrite a placed graph (fusion, fuse.h; the
// channels-last layout, channels_last.h) both need to know of each node: the
// statement block it is in, and whether its value is pinned (a loop carry's
// parameter, init or update, or an output), which no rewrite may remove or
// re-lay out.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/ir/graph.h"

namespace graphrun {

struct NodeBlocks {
    static constexpr int32_t kNone = -2;  // in no statement list (a loop parameter)
    std::vector<int32_t> block;           // per node: -1 at top level, r in repeat r's body, or kNone
    std::vector<bool> pinned;             // per node
};

inline NodeBlocks node_blocks(const Graph& g) {
    NodeBlocks b;
    const size_t n = g.nodes.size();
    b.block.assign(n, NodeBlocks::kNone);
    b.pinned.assign(n, false);
    auto walk = [&](const std::vector<Stmt>& stmts, int32_t block) {
        for (const Stmt& s : stmts)
            if (s.kind == Stmt::Kind::Node) b.block[static_cast<size_t>(s.index)] = block;
    };
    walk(g.top, -1);
    for (size_t r = 0; r < g.repeats.size(); ++r) {
        walk(g.repeats[r].body, static_cast<int32_t>(r));
        for (const Carry& c : g.repeats[r].carries)
            for (NodeId v : {c.param, c.init, c.update})
                if (v >= 0) b.pinned[static_cast<size_t>(v)] = true;
    }
    for (const Output& o : g.outputs)
        if (o.id >= 0) b.pinned[static_cast<size_t>(o.id)] = true;
    return b;
}

}  // namespace graphrun
