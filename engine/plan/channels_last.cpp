#include "engine/plan/channels_last.h"

#include <vector>

#include "engine/ir/device_name.h"
#include "engine/ir/epilogue.h"
#include "engine/plan/node_blocks.h"

namespace graphrun {

namespace {
constexpr int32_t kNoBlock = NodeBlocks::kNone;
}  // namespace

size_t mark_channels_last(Graph& g, RunsChannelsLast runs_channels_last) {
    const size_t n = g.nodes.size();
    NodeBlocks blocks = node_blocks(g);
    const std::vector<int32_t>& block = blocks.block;
    const std::vector<bool>& pinned = blocks.pinned;
    std::vector<bool> ok_read(n, true), read(n, false);
    std::vector<int8_t> runs(n, -1);  // runs_channels_last, asked once per conv
    auto conv_runs = [&](NodeId id) {
        int8_t& r = runs[static_cast<size_t>(id)];
        if (r < 0) {
            const Node& c = g.node(id);
            r = runs_channels_last && c.op == OpKind::Conv && c.valid && c.dtype == DType::F32 &&
                        c.shape.size() == 4 && device_kind(c.placed) == DeviceKind::Cpu &&
                        runs_channels_last(g, c)
                    ? 1
                    : 0;
        }
        return r == 1;
    };
    // Every read of a value by a statement node: a conv's x or residual in the
    // value's block, by a conv that runs channels-last, or the value stays NCHW.
    for (size_t i = 0; i < n; ++i) {
        if (block[i] == kNoBlock) continue;
        const Node& r = g.node(static_cast<NodeId>(i));
        const Epilogue* e = g.epilogue_of(r);
        for (size_t k = 0; k < r.inputs.size(); ++k) {
            const NodeId v = r.inputs[k].id;
            if (v < 0) continue;
            const auto vi = static_cast<size_t>(v);
            read[vi] = true;
            const bool slot = k == 0 || (e && e->residual == static_cast<int8_t>(k));
            if (!slot || block[vi] != block[i] || !conv_runs(static_cast<NodeId>(i)))
                ok_read[vi] = false;
        }
    }
    size_t marked = 0;
    for (size_t i = 0; i < n; ++i) {
        Node& v = g.nodes[i];
        v.channels_last = false;
        if (block[i] == kNoBlock || pinned[i] || !read[i] || !ok_read[i] ||
            !conv_runs(static_cast<NodeId>(i)))
            continue;
        // A conv whose x comes in NCHW from another op would convert all of x to
        // save converting its smaller output: SqueezeNet's squeeze 1x1s read 128 to
        // 512 channels from a concat and write 16 to 64 (0.14 -> 0.35 ms each when
        // marked, one thread). It stays NCHW.
        const Node& x = g.node(v.inputs[0].id);
        if (x.op != OpKind::Conv &&
            checked_numel(x.shape).value_or(0) > checked_numel(v.shape).value_or(0))
            continue;
        v.channels_last = true;
        ++marked;
    }
    return marked;
}

}  // namespace graphrun
