#include "engine/plan/channels_last.h"

#include <algorithm>
#include <vector>

#include "engine/ir/device_name.h"
#include "engine/ir/epilogue.h"
#include "engine/plan/node_blocks.h"

namespace graphrun {

namespace {
constexpr int32_t kNoBlock = NodeBlocks::kNone;

// A concat along the channels or a max_pool of 4-D f32 values on the CPU: our
// own kernels run them on NHWC when every input and the output are held so
// (each pixel's channels copied in turn; the window's pixels maxed a channel
// vector at a time), or on a blocked layout (each image's blocks copied in
// turn; a block maxed as an NHWC image of `block` channels), so a chain of
// convs stays channels-last through them (SqueezeNet's fire modules and
// pools, ResNet's stem pool).
bool layout_free(const Graph& g, const Node& n) {
    if (!n.valid || n.dtype != DType::F32 || n.shape.size() != 4 ||
        device_kind(n.placed) != DeviceKind::Cpu)
        return false;
    if (n.op == OpKind::MaxPool) {
        if (n.inputs.size() != 1) return false;
    } else if (n.op == OpKind::Concat) {
        const NamedAttr* axis = n.find_attr("axis");
        if (n.inputs.empty() || !axis || !axis->value.is_int || (axis->value.i != 1 && axis->value.i != -3))
            return false;
    } else {
        return false;
    }
    for (const Input& v : n.inputs)
        if (v.id < 0 || g.node(v.id).shape.size() != 4) return false;
    return true;
}

// A global_avg_pool or global_max_pool of a 4-D f32 value on the CPU: our
// kernel reads its input in any channels-last layout (NHWC, nChw8c, nChw16c),
// and its output, [N, C, 1, 1], has the same bytes in every layout, so it
// ends a group without a conversion (ONNX Runtime reorders the last conv's
// blocked output to NCHW before its pool: SqueezeNet's 16x1000x13x13, 1.3 ms).
bool layout_sink(const Graph& g, const Node& n) {
    if ((n.op != OpKind::GlobalAvgPool && n.op != OpKind::GlobalMaxPool) || !n.valid || n.dtype != DType::F32 ||
        n.shape.size() != 4 || device_kind(n.placed) != DeviceKind::Cpu || n.inputs.size() != 1)
        return false;
    const NodeId x = n.inputs[0].id;
    return x >= 0 && g.node(x).shape.size() == 4;
}

// The group of each marked value (union-find over value ids).
struct Groups {
    std::vector<int32_t> parent;
    explicit Groups(size_t n) : parent(n) {
        for (size_t i = 0; i < n; ++i) parent[i] = static_cast<int32_t>(i);
    }
    int32_t find(int32_t v) {
        while (parent[static_cast<size_t>(v)] != v) {
            parent[static_cast<size_t>(v)] = parent[static_cast<size_t>(parent[static_cast<size_t>(v)])];
            v = parent[static_cast<size_t>(v)];
        }
        return v;
    }
    void join(int32_t a, int32_t b) {
        a = find(a);
        b = find(b);
        if (a != b) parent[static_cast<size_t>(std::max(a, b))] = std::min(a, b);
    }
};

// The values one conv, max_pool or concat reads or writes channels-last:
// every marked one of its x, residual (a conv's) or inputs (the others) and
// its output.
template <class F>
void each_touched(const Graph& g, NodeId self, bool free_op, const std::vector<bool>& cl, F f) {
    const Node& r = g.node(self);
    const Epilogue* e = g.epilogue_of(r);
    for (size_t k = 0; k < r.inputs.size(); ++k) {
        const NodeId v = r.inputs[k].id;
        const bool slot = free_op || (r.op == OpKind::Conv && (k == 0 || (e && e->residual == static_cast<int8_t>(k))));
        if (v >= 0 && slot && cl[static_cast<size_t>(v)]) f(v);
    }
    if (cl[static_cast<size_t>(self)]) f(self);
}

// Node::channel_block for each marked value, one per group (channels_last.h).
void choose_blocks(Graph& g, const std::vector<bool>& cl, const std::vector<bool>& free_op,
                   RunsChannelsLast runs_channels_last, int free_block) {
    const size_t n = g.nodes.size();
    Groups groups(n);
    std::vector<bool> touches(n, false);  // a conv, max_pool or concat next to a marked value
    for (size_t i = 0; i < n; ++i) {
        const Node& r = g.nodes[i];
        if (!free_op[i] && r.op != OpKind::Conv) continue;
        NodeId first = -1;
        each_touched(g, static_cast<NodeId>(i), free_op[i], cl, [&](NodeId v) {
            touches[i] = true;
            if (first < 0) first = v;
            else groups.join(first, v);
        });
    }
    // Per group (at its root): the blocks every value's channels allow, and
    // which our max_pool or concat may read (NHWC and free_block).
    constexpr uint8_t kAllow16 = 1, kAllow8 = 2;
    std::vector<uint8_t> allow(n, kAllow16 | kAllow8);
    for (size_t i = 0; i < n; ++i) {
        if (!cl[i]) continue;
        const Node& v = g.nodes[i];
        const int64_t c = v.shape.size() == 4 ? v.shape[1] : 0;
        uint8_t& a = allow[static_cast<size_t>(groups.find(static_cast<NodeId>(i)))];
        if (c <= 0 || c % 16 != 0) a &= static_cast<uint8_t>(~kAllow16);
        if (c <= 0 || c % 8 != 0) a &= static_cast<uint8_t>(~kAllow8);
    }
    const uint8_t free_allow = free_block == 16 ? kAllow16 : free_block == 8 ? kAllow8 : 0;
    for (size_t i = 0; i < n; ++i)
        if (touches[i] && free_op[i])
            each_touched(g, static_cast<NodeId>(i), true, cl, [&](NodeId v) { allow[static_cast<size_t>(groups.find(v))] &= free_allow; });
    // A block is dropped for the group when one of its convs has no fast code in it.
    for (const uint8_t bit : {kAllow16, kAllow8})
        for (size_t i = 0; i < n; ++i) {
            if (!touches[i] || free_op[i]) continue;
            NodeId some = -1;
            each_touched(g, static_cast<NodeId>(i), false, cl, [&](NodeId v) { some = v; });
            uint8_t& a = allow[static_cast<size_t>(groups.find(some))];
            if ((a & bit) && !runs_channels_last(g, g.nodes[i], bit == kAllow16 ? 16 : 8))
                a &= static_cast<uint8_t>(~bit);
        }
    for (size_t i = 0; i < n; ++i) {
        if (!cl[i]) continue;
        const uint8_t a = allow[static_cast<size_t>(groups.find(static_cast<NodeId>(i)))];
        g.nodes[i].channel_block = (a & kAllow16) ? 16 : (a & kAllow8) ? 8 : 0;
    }
}

}  // namespace

size_t mark_channels_last(Graph& g, RunsChannelsLast runs_channels_last, int free_block) {
    const size_t n = g.nodes.size();
    // Without a conv there is no chain to keep, and most graphs end here,
    // before the passes below (18M instructions for 100,000 nodes of
    // `x = x + 1`, on the way to check's first byte out).
    bool any_conv = false;
    for (Node& v : g.nodes) {
        any_conv = any_conv || v.op == OpKind::Conv;
        v.channels_last = false;
        v.channel_block = 0;
        v.winograd = false;
    }
    if (!runs_channels_last || !any_conv) return 0;
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
                        runs_channels_last(g, c, 0)
                    ? 1
                    : 0;
        }
        return r == 1;
    };
    std::vector<bool> free_op(n, false), sink(n, false);
    if (runs_channels_last)  // without oneDNN's convs there is no chain to keep
        for (size_t i = 0; i < n; ++i) {
            free_op[i] = block[i] != kNoBlock && layout_free(g, g.nodes[i]);
            sink[i] = block[i] != kNoBlock && layout_sink(g, g.nodes[i]);
        }
    // Every read of a value by a statement node: a conv's x or residual, an
    // input of a concat or max_pool as above, or a global pool's input, in the
    // value's block, or the value stays NCHW.
    for (size_t i = 0; i < n; ++i) {
        if (block[i] == kNoBlock) continue;
        const Node& r = g.node(static_cast<NodeId>(i));
        const Epilogue* e = g.epilogue_of(r);
        for (size_t k = 0; k < r.inputs.size(); ++k) {
            const NodeId v = r.inputs[k].id;
            if (v < 0) continue;
            const auto vi = static_cast<size_t>(v);
            read[vi] = true;
            const bool slot = free_op[i] || k == 0 || (e && e->residual == static_cast<int8_t>(k));
            if (!slot || block[vi] != block[i] || !(free_op[i] || sink[i] || conv_runs(static_cast<NodeId>(i))))
                ok_read[vi] = false;
        }
    }
    std::vector<bool> cl(n, false);
    for (size_t i = 0; i < n; ++i)
        cl[i] = block[i] != kNoBlock && !pinned[i] && read[i] && ok_read[i] &&
                (free_op[i] || conv_runs(static_cast<NodeId>(i)));
    // Until nothing changes (each step only clears): a concat or max_pool is
    // channels-last with all its inputs or not at all; a conv whose x comes in
    // NCHW from another op would convert all of x to save converting its
    // smaller output (SqueezeNet's squeeze 1x1s read 128 to 512 channels from
    // a concat and write 16 to 64: 0.14 -> 0.35 ms each, one thread, when the
    // concat was NCHW), so it stays NCHW.
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t i = 0; i < n; ++i) {
            const Node& v = g.nodes[i];
            if (free_op[i]) {
                bool all = cl[i];
                for (const Input& in : v.inputs) all = all && cl[static_cast<size_t>(in.id)];
                if (all) continue;
                for (const Input& in : v.inputs) {
                    changed = changed || cl[static_cast<size_t>(in.id)];
                    cl[static_cast<size_t>(in.id)] = false;
                }
                changed = changed || cl[i];
                cl[i] = false;
            } else if (cl[i]) {
                const Node& x = g.node(v.inputs[0].id);
                if (!cl[static_cast<size_t>(v.inputs[0].id)] && x.op != OpKind::Conv &&
                    checked_numel(x.shape).value_or(0) > checked_numel(v.shape).value_or(0)) {
                    cl[i] = false;
                    changed = true;
                }
            }
        }
    }
    size_t marked = 0;
    for (size_t i = 0; i < n; ++i) {
        g.nodes[i].channels_last = cl[i];
        marked += cl[i] ? 1 : 0;
    }
    if (marked) choose_blocks(g, cl, free_op, runs_channels_last, free_block);
    return marked;
}

}  // namespace graphrun
