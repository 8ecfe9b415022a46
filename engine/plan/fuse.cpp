// The fusion pass: finds conv / matmul / gemm chains, folds batch_norm into
// new constants, gives the chain's last node the head's op and an epilogue,
// turns a transpose of a matmul operand's last two axes into the matmul's
// transpose flag, and renumbers the graph without the nodes that left it.
#include "engine/plan/fuse.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>

#include "engine/ir/device_name.h"
#include "engine/plan/node_blocks.h"
#include "engine/plan/renumber.h"

namespace graphrun {

namespace {

constexpr int32_t kNoBlock = NodeBlocks::kNone;  // a node in no statement list (a loop parameter)

// A number attribute (validated), or `def` when absent; rounded to the node's
// dtype, as the kernels apply an attribute (activation_params.h, norm_plan.h).
double number_attr(const Node& n, std::string_view name, double def) {
    const NamedAttr* a = n.find_attr(name);
    double v = def;
    if (a && a->value.kind == Attr::Kind::Bool) v = a->value.b ? 1.0 : 0.0;
    else if (a) v = a->value.is_int ? static_cast<double>(a->value.i) : a->value.f;
    return n.dtype == DType::F32 ? static_cast<double>(static_cast<float>(v)) : v;
}

// The activation an op is, if the epilogue has it.
std::optional<Epilogue> activation_of(const Node& n) {
    Epilogue e;
    switch (n.op) {
        case OpKind::Relu: e.act = Activation::Relu; break;
        case OpKind::Tanh: e.act = Activation::Tanh; break;
        case OpKind::Sigmoid: e.act = Activation::Sigmoid; break;
        case OpKind::Gelu: {
            const NamedAttr* a = n.find_attr("approximate");
            if (a && a->value.s != "tanh" && a->value.s != "none") return std::nullopt;
            e.act = a && a->value.s == "tanh" ? Activation::GeluTanh : Activation::Gelu;
            break;
        }
        case OpKind::Clip:
            e.act = Activation::Clip;
            e.lo = number_attr(n, "min", -INFINITY);
            e.hi = number_attr(n, "max", INFINITY);
            break;
        default: return std::nullopt;
    }
    return e;
}

// Whether `bias` adds along the last axis of `out`: its numel is that axis's
// size, and every other dimension it has is 1.
bool is_row_bias(const Shape& bias, const Shape& out) {
    if (out.empty() || bias.size() > out.size()) return false;
    int64_t numel = 1;
    for (size_t k = 0; k < bias.size(); ++k) {
        if (k + 1 < bias.size() && bias[k] != 1) return false;
        numel *= bias[k];
    }
    return numel == out.back() && (bias.empty() ? out.back() == 1 : bias.back() == out.back());
}

template <class T>
std::vector<T> values_of(const Node& n) {
    std::vector<T> v(n.literal.size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), n.literal.data(), v.size() * sizeof(T));
    return v;
}

template <class T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
    std::vector<uint8_t> b(v.size() * sizeof(T));
    if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
    return b;
}

// batch_norm folded into a conv's weights and bias, per output channel m:
// s = scale / sqrt(var + epsilon) (the batch_norm kernel's factor),
// w' = w · s, b' = (b − mean) · s + beta; in double, rounded once to T.
// w_bytes holds w's values on entry (the old literal itself where the conv
// was its only reader, else a copy) and the folded ones on return: a weight
// is never held a third time while it folds.
template <class T>
void fold_batch_norm(std::vector<uint8_t>& w_bytes, const Node* b, const Node* const bn[4], double eps,
                     int64_t channels, std::vector<uint8_t>& b_out) {
    const std::vector<T> scale = values_of<T>(*bn[0]), beta = values_of<T>(*bn[1]), mean = values_of<T>(*bn[2]),
                         var = values_of<T>(*bn[3]);
    std::vector<T> bv = b ? values_of<T>(*b) : std::vector<T>(static_cast<size_t>(channels), T(0));
    const size_t per = w_bytes.size() / sizeof(T) / static_cast<size_t>(channels);
    uint8_t* w = w_bytes.data();
    for (size_t m = 0; m < static_cast<size_t>(channels); ++m) {
        const double s = static_cast<double>(scale[m]) / std::sqrt(static_cast<double>(var[m]) + eps);
        for (size_t i = m * per; i < (m + 1) * per; ++i) {
            T v;
            std::memcpy(&v, w + i * sizeof(T), sizeof(T));
            v = static_cast<T>(static_cast<double>(v) * s);
            std::memcpy(w + i * sizeof(T), &v, sizeof(T));
        }
        bv[m] = static_cast<T>((static_cast<double>(bv[m]) - static_cast<double>(mean[m])) * s +
                               static_cast<double>(beta[m]));
    }
    b_out = bytes_of(bv);
}

class Fuser {
public:
    Fuser(Graph& g, Int8Runs int8_runs) : g_(g), int8_runs_(int8_runs) {}

    FuseStats run() {
        // Most scripts have nothing to fuse: one pass over the ops says so
        // (a million-node script then costs no reader index).
        bool any = false;
        for (const Node& n : g_.nodes) {
            const OpKind k = n.op;
            any |= k == OpKind::Conv || k == OpKind::Matmul || k == OpKind::Gemm || k == OpKind::Erf ||
                   k == OpKind::Tanh || k == OpKind::MaxPool || k == OpKind::AvgPool;
        }
        if (!any) return stats_;
        index();
        original_ = g_.nodes.size();
        // A transpose of a matmul operand's last two axes becomes the
        // matmul's transpose flag (gemm reads the operand transposed in place).
        for (size_t id = 0; id < original_; ++id) try_absorb_transposes(static_cast<NodeId>(id));
        // Then the GELU an exporter writes out in elementwise ops becomes one
        // gelu node, which a matmul chain can then take as its activation.
        for (size_t id = 0; id < original_; ++id) try_gelu(static_cast<NodeId>(id));
        if (!gelu_parts_.empty()) recount();
        // A pool of a concat along the channels pools each input instead, and
        // a conv of such a concat becomes a conv of each input, summed: the
        // concat leaves (SqueezeNet's fire modules; Inception's blocks).
        const bool split = split_concats();
        if (split) recount();
        // Attention before the chains: a scores matmul with a full-shape mask
        // added would otherwise take the mask as its residual.
        for (size_t id = 0; id < g_.nodes.size(); ++id) try_attention(static_cast<NodeId>(id));
        for (size_t id = 0; id < g_.nodes.size(); ++id) try_chain(static_cast<NodeId>(id));
        // A matmul no chain took still lists the transposes it took in, and a
        // gelu no chain took the ops it replaced.
        list_only(absorbed_, true);
        list_only(gelu_parts_, false);
        if (int8_runs_) {
            recount();
            const size_t before = g_.nodes.size();
            for (size_t id = 0; id < before; ++id) try_int8(static_cast<NodeId>(id));
        }
        // (A constant made for a rewrite that was then declined leaves with compact().)
        if (stats_.fused == 0 && !split && inserted_.empty()) return stats_;
        drop_unread_constants();
        compact();
        return stats_;
    }

private:
    // Each node of `taken` that no chain took (it has no epilogue) gets one
    // that applies nothing and lists its parts (and itself: and_self) for check.
    void list_only(std::map<NodeId, std::vector<FusedOp>>& taken, bool and_self) {
        for (auto& [id, parts] : taken) {
            Node& n = g_.node(id);
            if (removed_[static_cast<size_t>(id)] || n.epilogue >= 0 || parts.empty()) continue;
            Epilogue e;
            e.fused = std::move(parts);
            if (and_self) e.fused.push_back(FusedOp{n.op, std::string(n.display())});
            n.epilogue = static_cast<int32_t>(g_.epilogues.size());
            g_.epilogues.push_back(std::move(e));
            ++stats_.fused;
        }
    }

    // Readers, the block of each statement, and the values that must stay.
    void index() {
        const size_t n = g_.nodes.size();
        readers_.assign(n, 0);
        reader_.assign(n, kNoNode);
        NodeBlocks blocks = node_blocks(g_);
        block_ = std::move(blocks.block);
        pinned_ = std::move(blocks.pinned);
        removed_.assign(n, false);
        for (size_t i = 0; i < n; ++i)  // every statement node's reads
            if (block_[i] != kNoBlock) count_reads(static_cast<NodeId>(i));
    }

    void count_reads(NodeId reader) {
        for (const Input& in : g_.node(reader).inputs) {
            if (in.id < 0) continue;
            ++readers_[static_cast<size_t>(in.id)];
            reader_[static_cast<size_t>(in.id)] = reader;
        }
    }

    bool fusable(const Node& n) const {
        return n.valid && n.epilogue < 0 && is_float(n.dtype) && device_kind(n.placed) == DeviceKind::Cpu &&
               checked_numel(n.shape).has_value();
    }

    // The node that takes `v` further along a chain: v's only reader, in v's
    // block, on the CPU, of v's dtype and shape; kNoNode when v must stay.
    NodeId next_of(NodeId v) const {
        const auto i = static_cast<size_t>(v);
        if (pinned_[i] || readers_[i] != 1) return kNoNode;
        const NodeId r = reader_[i];
        const Node& a = g_.node(v);
        const Node& b = g_.node(r);
        if (removed_[static_cast<size_t>(r)] || block_[static_cast<size_t>(r)] != block_[i] || !fusable(b) ||
            b.dtype != a.dtype || b.shape != a.shape)
            return kNoNode;
        return r;
    }

    // An add of `v` and one other operand: that operand's id, or kNoNode.
    NodeId other_addend(const Node& add, NodeId v) const {
        if (add.op != OpKind::Add || add.inputs.size() != 2) return kNoNode;
        const NodeId a = add.inputs[0].id, b = add.inputs[1].id;
        if (a == v && b != v) return b;
        if (b == v && a != v) return a;
        return kNoNode;
    }

    bool is_constant(NodeId id, DType t, int64_t numel) const {
        const Node& n = g_.node(id);
        return n.op == OpKind::Const && n.valid && n.dtype == t && checked_numel(n.shape) == numel &&
               n.literal.size() == static_cast<size_t>(numel) * dtype_size(t);
    }

    // Whether batch_norm `bn`, reading conv `head`, folds into it: every
    // parameter and the conv's weights and bias are constants.
    bool folds(const Node& head, const Node& bn, NodeId head_id) const {
        if (head.op != OpKind::Conv || bn.op != OpKind::BatchNorm || bn.inputs.size() != 5 ||
            bn.inputs[0].id != head_id || head.shape.size() < 2)
            return false;
        const int64_t m = head.shape[1];
        for (size_t k = 1; k < 5; ++k)
            if (!is_constant(bn.inputs[k].id, head.dtype, m)) return false;
        const Node& w = g_.node(head.inputs[1].id);
        const auto wn = checked_numel(w.shape);
        if (!wn || m <= 0 || *wn % m != 0 || !is_constant(head.inputs[1].id, head.dtype, *wn)) return false;
        return head.inputs.size() < 3 || is_constant(head.inputs[2].id, head.dtype, m);
    }

    NodeId add_constant(const Node& like, std::string name, const Shape& shape, std::vector<uint8_t> bytes,
                        NodeId before) {
        Node n;
        n.op = OpKind::Const;
        make_generated_like(n, like, std::move(name));
        n.host_literal = true;
        n.dtype = like.dtype;
        n.shape = shape;
        std::vector<Attr> dims;
        for (int64_t d : shape) dims.push_back(Attr::integer(d));
        n.attrs.push_back(NamedAttr{"shape", Attr::make_list(std::move(dims)), {}});
        n.attrs.push_back(NamedAttr{"dtype", Attr::ident(dtype_name(like.dtype)), {}});
        n.literal = std::move(bytes);
        return add_node(std::move(n), before);
    }

    // A new node, placed in the program just before `before` (or before the
    // node that one was made to precede, when it is new too).
    NodeId add_node(Node n, NodeId before) {
        if (static_cast<size_t>(before) >= original_) before = anchor_[static_cast<size_t>(before) - original_];
        const auto id = static_cast<NodeId>(g_.nodes.size());
        const int32_t block = block_[static_cast<size_t>(before)];
        g_.nodes.push_back(std::move(n));
        readers_.push_back(0);
        reader_.push_back(kNoNode);
        block_.push_back(block);
        pinned_.push_back(false);
        removed_.push_back(false);
        inserted_.emplace_back(id, before);
        anchor_.push_back(before);
        return id;
    }

    // A node like `like` (its dtype, device, repeat and location) computing
    // `op` of `inputs`, of `shape`, named `name`, just before `before`.
    NodeId add_like(const Node& like, OpKind op, std::vector<NamedAttr> attrs, Inputs inputs, Shape shape,
                    std::string name, NodeId before) {
        Node n;
        n.op = op;
        make_generated_like(n, like, std::move(name));
        n.dtype = like.dtype;
        n.attrs = std::move(attrs);
        n.inputs = std::move(inputs);
        n.shape = std::move(shape);
        return add_node(std::move(n), before);
    }

    static int64_t int_attr(const Node& n, std::string_view name, int64_t def) {
        const NamedAttr* a = n.find_attr(name);
        return a && a->value.kind == Attr::Kind::Number && a->value.is_int ? a->value.i : def;
    }

    // Whether `k` is a concat along axis 1 (the channels) of two or more
    // inputs, of rank 3 or more, that `reader` alone reads, in its block, and
    // that may leave the graph: it is no output and no carried value.
    bool channel_concat(NodeId k, NodeId reader) const {
        const auto i = static_cast<size_t>(k);
        const Node& c = g_.node(k);
        const size_t rank = c.shape.size();
        if (c.op != OpKind::Concat || pinned_[i] || removed_[i] || readers_[i] != 1 || reader_[i] != reader ||
            block_[i] != block_[static_cast<size_t>(reader)] || !fusable(c) || rank < 3 || c.inputs.size() < 2 ||
            c.inputs.size() > kMaxConcatParts)
            return false;
        const int64_t axis = int_attr(c, "axis", 0);
        if (axis != 1 && axis != 1 - static_cast<int64_t>(rank)) return false;
        int64_t channels = 0;
        for (const Input& in : c.inputs) {
            if (in.id < 0) return false;
            const Node& a = g_.node(in.id);
            if (!a.valid || a.dtype != c.dtype || a.shape.size() != rank || a.shape[1] <= 0) return false;
            for (size_t d = 0; d < rank; ++d)
                if (d != 1 && a.shape[d] != c.shape[d]) return false;
            channels += a.shape[1];
        }
        return channels == c.shape[1];
    }

    // Concats the pool and conv rewrites below take apart, at most this many inputs each.
    static constexpr size_t kMaxConcatParts = 16;

    // Returns whether it changed the graph (then the readers are stale).
    bool split_concats() {
        bool changed = false;
        // pool(concat(a, b, ...)) -> concat(pool(a), pool(b), ...): a pool works
        // channel by channel, and the concat then copies the pooled (smaller) values.
        for (size_t id = 0; id < original_; ++id) {
            const auto p_id = static_cast<NodeId>(id);
            const Node& p = g_.node(p_id);
            if ((p.op != OpKind::MaxPool && p.op != OpKind::AvgPool) || p.inputs.size() != 1 ||
                block_[id] == kNoBlock || removed_[id] || !fusable(p) || p.inputs[0].id < 0 ||
                !channel_concat(p.inputs[0].id, p_id))
                continue;
            const NodeId k_id = p.inputs[0].id;
            const Node like = p;  // add_like grows the node list
            const Node concat = g_.node(k_id);
            Inputs parts;
            for (size_t j = 0; j < concat.inputs.size(); ++j) {
                const Input& in = concat.inputs[j];
                Shape shape = like.shape;
                shape[1] = g_.node(in.id).shape[1];
                Inputs x;
                x.push_back(Input{in.id, like.inputs[0].loc});
                const NodeId q = add_like(like, like.op, like.attrs, std::move(x), std::move(shape),
                                          std::string(like.display()) + ".part" + std::to_string(j), p_id);
                parts.push_back(Input{q, in.loc});
            }
            Node& n = g_.node(p_id);
            n.op = OpKind::Concat;
            n.attrs = concat.attrs;
            n.inputs = std::move(parts);
            n.weak = false;
            removed_[static_cast<size_t>(k_id)] = true;
            changed = true;
        }
        if (changed) recount();
        // conv(concat(a, b, ...), w, bias) -> conv(a, w_a) + conv(b, w_b, bias) + ...,
        // w_a, w_b the slices of w along its input channels: the sum fuses as
        // the residual of the next conv. Not where the conv's output is larger
        // than the concat (the partial sums would hold more than the concat
        // did), nor before a batch_norm that folds into the whole conv.
        for (size_t id = 0; id < original_; ++id) {
            const auto c_id = static_cast<NodeId>(id);
            const Node& c = g_.node(c_id);
            if (c.op != OpKind::Conv || (c.inputs.size() != 2 && c.inputs.size() != 3) || block_[id] == kNoBlock ||
                removed_[id] || !fusable(c) || int_attr(c, "group", 1) != 1 || c.inputs[0].id < 0 ||
                !channel_concat(c.inputs[0].id, c_id))
                continue;
            const NodeId k_id = c.inputs[0].id, w_id = c.inputs[1].id;
            const Node& k = g_.node(k_id);
            const Node& w = g_.node(w_id);
            const std::optional<int64_t> wn = checked_numel(w.shape), cn = checked_numel(c.shape),
                                         kn = checked_numel(k.shape);
            if (!wn || !cn || !kn || *cn > *kn || *wn == 0 || w.shape.size() != c.shape.size() ||
                w.shape[1] != k.shape[1] || !is_constant(w_id, c.dtype, *wn))
                continue;
            if (const NodeId nx = next_of(c_id); nx != kNoNode && folds(c, g_.node(nx), c_id)) continue;
            const Node like = c;  // add_like grows the node list
            const Node concat = k;
            const std::vector<uint8_t> weights = w.literal;
            const Shape w_shape = w.shape;
            const auto m = static_cast<size_t>(w_shape[0]);
            const size_t elem = dtype_size(like.dtype);
            const size_t window = static_cast<size_t>(*wn) / m / static_cast<size_t>(w_shape[1]) * elem;
            const size_t row = static_cast<size_t>(w_shape[1]) * window;  // one output channel's weights
            const std::string base(like.display());
            NodeId acc = kNoNode;
            size_t offset = 0;  // in input channels
            for (size_t j = 0; j < concat.inputs.size(); ++j) {
                const NodeId a = concat.inputs[j].id;
                const auto ci = static_cast<size_t>(g_.node(a).shape[1]);
                std::vector<uint8_t> slice(m * ci * window);
                for (size_t o = 0; o < m; ++o)
                    std::memcpy(slice.data() + o * ci * window, weights.data() + o * row + offset * window,
                                ci * window);
                offset += ci;
                Shape ws = w_shape;
                ws[1] = static_cast<int64_t>(ci);
                const std::string part = base + ".part" + std::to_string(j);
                const NodeId wj = add_constant(like, part + "_weight", ws, std::move(slice), c_id);
                const bool last = j + 1 == concat.inputs.size();
                Inputs in;
                in.push_back(Input{a, like.inputs[0].loc});
                in.push_back(Input{wj, like.inputs[1].loc});
                if (last && like.inputs.size() == 3) in.push_back(like.inputs[2]);
                const NodeId cj = add_like(like, OpKind::Conv, like.attrs, std::move(in), like.shape, part, c_id);
                if (acc == kNoNode) {
                    acc = cj;
                    continue;
                }
                Inputs sum;
                sum.push_back(Input{cj, {}});
                sum.push_back(Input{acc, {}});
                if (!last) {
                    acc = add_like(like, OpKind::Add, {}, std::move(sum), like.shape, part + "_sum", c_id);
                    continue;
                }
                Node& n = g_.node(c_id);  // the last sum keeps the conv's id, name and place
                n.op = OpKind::Add;
                n.attrs.clear();
                n.inputs = std::move(sum);
                n.weak = false;
            }
            unread_.push_back(w_id);
            removed_[static_cast<size_t>(k_id)] = true;
            changed = true;
        }
        return changed;
    }

    void try_chain(NodeId head_id) {
        {
            const Node& h = g_.node(head_id);
            const bool conv = h.op == OpKind::Conv && (h.inputs.size() == 2 || h.inputs.size() == 3);
            const bool mm = (h.op == OpKind::Matmul && h.inputs.size() == 2) ||
                            (h.op == OpKind::Gemm && (h.inputs.size() == 2 || h.inputs.size() == 3));
            if ((!conv && !mm) || block_[static_cast<size_t>(head_id)] == kNoBlock || !fusable(h)) return;
        }
        std::vector<NodeId> chain{head_id};
        NodeId cur = head_id;
        NodeId bn = kNoNode, bias = kNoNode, residual = kNoNode;
        Epilogue e;
        NodeId nx = next_of(cur);
        const Node& head = g_.node(head_id);
        if (nx != kNoNode && folds(head, g_.node(nx), head_id)) {
            bn = nx;
            chain.push_back(cur = nx);
            nx = next_of(cur);
        }
        if (nx != kNoNode && head.op == OpKind::Matmul) {
            const NodeId o = other_addend(g_.node(nx), cur);
            if (o != kNoNode && g_.node(o).dtype == head.dtype && g_.node(o).shape != head.shape &&
                is_row_bias(g_.node(o).shape, head.shape)) {
                bias = o;
                chain.push_back(cur = nx);
                nx = next_of(cur);
            }
        }
        // (gemm takes no residual: a third input is its c.)
        if (nx != kNoNode && head.op != OpKind::Gemm) {
            const NodeId o = other_addend(g_.node(nx), cur);
            if (o != kNoNode && g_.node(o).dtype == head.dtype && g_.node(o).shape == head.shape) {
                residual = o;
                chain.push_back(cur = nx);
                nx = next_of(cur);
            }
        }
        if (nx != kNoNode)
            if (std::optional<Epilogue> act = activation_of(g_.node(nx))) {
                e = *act;
                chain.push_back(cur = nx);
            }
        if (chain.size() < 2) return;

        if (auto taken = absorbed_.find(head_id); taken != absorbed_.end()) {
            for (FusedOp& f : taken->second) e.fused.push_back(std::move(f));
            taken->second.clear();
        }
        for (NodeId id : chain) {
            auto parts = gelu_parts_.find(id);
            if (parts == gelu_parts_.end()) {
                e.fused.push_back(FusedOp{g_.node(id).op, std::string(g_.node(id).display())});
            } else {
                for (FusedOp& f : parts->second) e.fused.push_back(std::move(f));
                parts->second.clear();
            }
        }
        const NodeId tail = chain.back();
        Inputs inputs = g_.node(head_id).inputs;
        if (bn != kNoNode) {
            // New constants, before the fused node: the old ones may have other readers.
            const Node& h = g_.node(head_id);
            const Node& b = g_.node(bn);
            const Node* params[4];
            for (size_t k = 0; k < 4; ++k) params[k] = &g_.node(b.inputs[k + 1].id);
            const Node& w = g_.node(h.inputs[1].id);
            const Node* cb = h.inputs.size() > 2 ? &g_.node(h.inputs[2].id) : nullptr;
            const double eps = number_attr(b, "epsilon", 1e-5);
            const int64_t m = h.shape[1];
            const std::string base(g_.node(tail).display());
            const Shape w_shape = w.shape;
            // Where this conv was w's only reader, w's values are not needed
            // again (drop_unread_constants removes it): they are folded in
            // place, so that the folded weights are neither held beside all the
            // old ones at the pass's end (a model's weights twice at its load's
            // peak) nor copied while they fold.
            const auto wi = static_cast<size_t>(h.inputs[1].id);
            std::vector<uint8_t> wb, bb;
            if (wi < readers_.size() && readers_[wi] == 1 && reader_[wi] == head_id && !pinned_[wi] &&
                !removed_[wi] && w.op == OpKind::Const) {
                readers_[wi] = 0;
                wb.swap(g_.node(h.inputs[1].id).literal);
            } else {
                wb = w.literal;
            }
            if (h.dtype == DType::F32) fold_batch_norm<float>(wb, cb, params, eps, m, bb);
            else fold_batch_norm<double>(wb, cb, params, eps, m, bb);
            const Node like = h;  // add_constant grows the node list
            const NodeId nw = add_constant(like, base + ".folded_weight", w_shape, std::move(wb), tail);
            const NodeId nb = add_constant(like, base + ".folded_bias", Shape{m}, std::move(bb), tail);
            for (const Input& in : g_.node(bn).inputs) unread_.push_back(in.id);
            for (size_t k = 1; k < inputs.size(); ++k) unread_.push_back(inputs[k].id);
            while (inputs.size() > 2) inputs.pop_back();
            inputs[1].id = nw;
            inputs.push_back(Input{nb, g_.node(head_id).inputs[1].loc});
        }
        auto add_input = [&](NodeId v, int8_t& slot) {
            slot = static_cast<int8_t>(inputs.size());
            inputs.push_back(Input{v, {}});
        };
        if (bias != kNoNode) add_input(bias, e.bias);
        if (residual != kNoNode) add_input(residual, e.residual);

        // The last node becomes the fused one; the others leave.
        Node& h = g_.node(head_id);
        Node& t = g_.node(tail);
        t.op = h.op;
        t.attrs = h.attrs;
        t.inputs = std::move(inputs);
        t.weak = false;
        t.epilogue = static_cast<int32_t>(g_.epilogues.size());
        g_.epilogues.push_back(std::move(e));
        for (NodeId id : chain)
            if (id != tail) removed_[static_cast<size_t>(id)] = true;
        ++stats_.fused;
    }

    // The f32 value of a scalar f32 constant (not a cast of one: the unfused
    // op reads the constant's own value).
    std::optional<float> f32_scalar(NodeId id) const {
        const Node& c = g_.node(id);
        if (c.op != OpKind::Const || !c.valid || c.dtype != DType::F32 || checked_numel(c.shape) != 1 ||
            c.literal.size() != 4)
            return std::nullopt;
        float f;
        std::memcpy(&f, c.literal.data(), 4);
        return f;
    }

    // Whether a matmul's attributes are at most its transpose flags (Bool).
    static bool only_transpose_flags(const Node& m) {
        for (const NamedAttr& a : m.attrs)
            if ((a.name != "transpose_a" && a.name != "transpose_b") || a.value.kind != Attr::Kind::Bool) return false;
        return true;
    }
    static bool flag(const Node& m, std::string_view name) {
        const NamedAttr* a = m.find_attr(name);
        return a && a->value.kind == Attr::Kind::Bool && a->value.b;
    }

    // softmax(q @ k [* s | / s] [+ mask]) @ v, from its last matmul `pv_id`,
    // becomes that matmul with an Attention epilogue (epilogue.h) reading q,
    // k, v and the mask: every f32 node of it on the CPU, each inner value read
    // only by the next in the same block, the batch dimensions of q, k, v and
    // the scores the same (no broadcast), the softmax over the last axis, and
    // the mask the scores' shape or one [Lq, Lk] matrix for all of them.
    void try_attention(NodeId pv_id) {
        const Node& pv = g_.node(pv_id);
        if (pv.op != OpKind::Matmul || pv.inputs.size() != 2 || pv.dtype != DType::F32 ||
            block_[static_cast<size_t>(pv_id)] == kNoBlock || !fusable(pv) || !only_transpose_flags(pv) ||
            flag(pv, "transpose_a"))
            return;
        auto inner = [&](NodeId v, NodeId reader) {
            if (v < 0 || !only_for(v, reader)) return false;
            const Node& n = g_.node(v);
            return fusable(n) && n.dtype == DType::F32;
        };
        const NodeId sm_id = pv.inputs[0].id;
        if (!inner(sm_id, pv_id)) return;
        const Node& sm = g_.node(sm_id);
        const size_t rank = sm.shape.size();
        if (sm.op != OpKind::Softmax || sm.inputs.size() != 1 || rank < 2) return;
        for (const NamedAttr& a : sm.attrs)
            if (a.name != "axis" || !a.value.is_int ||
                (a.value.i != -1 && a.value.i != static_cast<int64_t>(rank) - 1))
                return;
        const Shape& scores = sm.shape;
        std::vector<NodeId> chain{sm_id};  // program order reversed
        NodeId cur = sm.inputs[0].id, next = sm_id, mask = kNoNode;
        if (!inner(cur, next)) return;
        if (const Node& add = g_.node(cur); add.op == OpKind::Add && add.inputs.size() == 2 && add.attrs.empty()) {
            for (size_t k = 0; k < 2 && mask == kNoNode; ++k) {
                const NodeId x = add.inputs[k].id, m = add.inputs[1 - k].id;
                const OpKind xo = x >= 0 ? g_.node(x).op : OpKind::Invalid;
                if (x == m || (xo != OpKind::Mul && xo != OpKind::Div && xo != OpKind::Matmul) || !inner(x, cur) ||
                    g_.node(x).shape != scores)
                    continue;
                const Node& mn = g_.node(m);
                bool one = mn.shape.size() >= 2 && mn.shape.size() <= rank &&
                           mn.shape[mn.shape.size() - 2] == scores[rank - 2] && mn.shape.back() == scores[rank - 1];
                for (size_t d = 0; one && d + 2 < mn.shape.size(); ++d) one = mn.shape[d] == 1;
                if (mn.dtype != DType::F32 || !mn.valid || (mn.shape != scores && !one)) continue;
                mask = m;
                chain.push_back(cur);
                next = cur;
                cur = x;
            }
        }
        Attention at;
        if (const Node& sc = g_.node(cur); (sc.op == OpKind::Mul || sc.op == OpKind::Div) && sc.inputs.size() == 2 &&
                                           sc.attrs.empty()) {
            for (size_t k = 0; k < 2 && at.scale_op == Attention::Scale::None; ++k) {
                if (sc.op == OpKind::Div && k == 1) break;  // x / s only
                const NodeId x = sc.inputs[k].id;
                const std::optional<float> s = f32_scalar(sc.inputs[1 - k].id);
                if (!s || x < 0 || g_.node(x).op != OpKind::Matmul || !inner(x, cur) || g_.node(x).shape != scores)
                    continue;
                at.scale_op = sc.op == OpKind::Mul ? Attention::Scale::Multiply : Attention::Scale::Divide;
                at.scale = *s;
                unread_.push_back(sc.inputs[1 - k].id);
                chain.push_back(cur);
                next = cur;
                cur = x;
            }
        }
        if (!inner(cur, next)) return;
        const NodeId qk_id = cur;
        const Node& qk = g_.node(qk_id);
        if (qk.op != OpKind::Matmul || qk.inputs.size() != 2 || !only_transpose_flags(qk) || qk.shape != scores)
            return;
        chain.push_back(qk_id);
        // q, k, v and the output: the scores' rank and batch dimensions.
        const NodeId q = qk.inputs[0].id, k = qk.inputs[1].id, v = pv.inputs[1].id;
        for (NodeId id : {q, k, v, pv_id}) {
            const Node& n = g_.node(id);
            if (n.dtype != DType::F32 || n.shape.size() != rank ||
                !std::equal(scores.begin(), scores.end() - 2, n.shape.begin()))
                return;
            for (size_t d = rank - 2; d < rank; ++d)
                if (n.shape[d] > INT32_MAX) return;  // BLAS's int dimensions
        }
        if (scores[rank - 2] > INT32_MAX || scores[rank - 1] > INT32_MAX) return;
        at.on = true;
        at.qk_ta = flag(qk, "transpose_a");
        at.qk_tb = flag(qk, "transpose_b");

        Epilogue e;
        // An operand made by the head split's transpose ([..., L, H, D] to
        // [..., H, L, D]) that only this attention reads: the kernel reads the
        // split's input in place (Attention::heads) and the transpose leaves.
        NodeId operand[3] = {q, k, v};
        const NodeId user[3] = {qk_id, qk_id, pv_id};
        for (size_t j = 0; j < 3; ++j) {
            const NodeId t = operand[j];
            const Node& tn = g_.node(t);
            // (q's or k's split may also transpose each head's matrix, as
            // GPT-2's kᵀ, perm [0, 2, 3, 1]: the first product's flag flips.)
            const bool flips = j < 2 && splits_heads_transposed(tn, rank);
            if (!(flips || swaps_heads(tn, rank)) || !only_for(t, user[j]) || !fusable(tn) ||
                tn.dtype != DType::F32 || tn.inputs[0].id < 0)
                continue;
            if (flips) {
                bool& transposed = j == 0 ? at.qk_ta : at.qk_tb;
                transposed = !transposed;
            }
            operand[j] = tn.inputs[0].id;
            at.heads[j] = true;
            removed_[static_cast<size_t>(t)] = true;
            e.fused.push_back(FusedOp{tn.op, std::string(tn.display())});
        }
        // The product merged back by the same transpose ([..., H, Lq, Dv] to
        // [..., Lq, H, Dv]), its only reader: the kernel writes the merged
        // layout.
        NodeId merge = kNoNode;
        if (const auto p = static_cast<size_t>(pv_id); !pinned_[p] && readers_[p] == 1) {
            const NodeId t = reader_[p];
            const auto ti = static_cast<size_t>(t);
            const Node& tn = g_.node(t);
            if (swaps_heads(tn, rank) && only_for(pv_id, t) && fusable(tn) && tn.dtype == DType::F32 &&
                !removed_[ti])
                merge = t;
        }
        std::reverse(chain.begin(), chain.end());
        chain.push_back(pv_id);
        for (NodeId id : chain) {  // each after the transposes it took in
            if (auto taken = absorbed_.find(id); taken != absorbed_.end()) {
                for (FusedOp& f : taken->second) e.fused.push_back(std::move(f));
                taken->second.clear();
            }
            e.fused.push_back(FusedOp{g_.node(id).op, std::string(g_.node(id).display())});
        }
        if (merge != kNoNode) e.fused.push_back(FusedOp{g_.node(merge).op, std::string(g_.node(merge).display())});
        chain.pop_back();  // the rest leave; pv_id becomes the fused node
        Inputs inputs;
        inputs.push_back(Input{operand[0], qk.inputs[0].loc});
        inputs.push_back(Input{operand[1], qk.inputs[1].loc});
        inputs.push_back(Input{operand[2], pv.inputs[1].loc});
        if (mask != kNoNode) {
            at.mask = 3;
            inputs.push_back(Input{mask, {}});
        }
        // With the merge taken, the merge's node becomes the fused one (it
        // keeps its name, merged shape and readers) and pv_id leaves too.
        const NodeId fused = merge != kNoNode ? merge : pv_id;
        std::vector<NamedAttr> pv_attrs = g_.node(pv_id).attrs;  // transpose_b
        if (merge != kNoNode) {
            at.heads_out = true;
            chain.push_back(pv_id);
        }
        e.attention = at;
        for (NodeId id : chain) removed_[static_cast<size_t>(id)] = true;
        for (const Input& in : inputs) reader_[static_cast<size_t>(in.id)] = fused;
        Node& t = g_.node(fused);
        if (merge != kNoNode) {
            t.op = OpKind::Matmul;
            t.attrs = std::move(pv_attrs);
        }
        t.inputs = std::move(inputs);
        t.weak = false;
        t.epilogue = static_cast<int32_t>(g_.epilogues.size());
        g_.epilogues.push_back(std::move(e));
        ++stats_.fused;
    }

    // Whether `t` is a transpose of rank `rank` whose output axis k is its
    // input's axis want(k), for every k.
    template <class Want>
    static bool transposes_as(const Node& t, size_t rank, Want want) {
        if (t.op != OpKind::Transpose || t.inputs.size() != 1 || t.shape.size() != rank) return false;
        const NamedAttr* a = t.find_attr("perm");
        if (!a || a->value.kind != Attr::Kind::List || a->value.list.size() != rank) return false;
        for (size_t k = 0; k < rank; ++k) {
            const Attr& p = a->value.list[k];
            if (!p.is_int) return false;
            const int64_t axis = p.i < 0 ? p.i + static_cast<int64_t>(rank) : p.i;
            if (axis != static_cast<int64_t>(want(k))) return false;
        }
        return true;
    }

    // Whether `t` is a transpose of only axes r-3 and r-2 (rank r 3 or more):
    // a head split, [..., L, H, D] to [..., H, L, D].
    static bool swaps_heads(const Node& t, size_t rank) {
        return rank >= 3 && transposes_as(t, rank, [rank](size_t k) {
                   return k == rank - 3 ? rank - 2 : (k == rank - 2 ? rank - 3 : k);
               });
    }

    // Whether `t` is a head split that also transposes each head's matrix:
    // [..., L, H, D] to [..., H, D, L] (perm [0, 2, 3, 1] at rank 4).
    static bool splits_heads_transposed(const Node& t, size_t rank) {
        return rank >= 3 && transposes_as(t, rank, [rank](size_t k) {
                   return k + 3 < rank ? k : (k == rank - 3 ? rank - 2 : (k == rank - 2 ? rank - 1 : rank - 3));
               });
    }

    // Whether `t` is a transpose of only its last two axes (rank 2 or more).
    static bool swaps_last_two(const Node& t, size_t rank) {
        if (t.op != OpKind::Transpose || t.inputs.size() != 1 || rank < 2) return false;
        if (!t.find_attr("perm")) return rank == 2;  // no perm: the axes reversed
        return transposes_as(t, rank, [rank](size_t k) { return k + 2 < rank ? k : (k + 2 == rank ? rank - 1 : rank - 2); });
    }

    // matmul(transpose(x, swap the last two), b) reads x with transpose_a
    // flipped (and b likewise): the transpose leaves when the matmul is its
    // only reader. Its name goes into the matmul's fused list.
    void try_absorb_transposes(NodeId mm_id) {
        {
            const Node& m = g_.node(mm_id);
            if (m.op != OpKind::Matmul || m.inputs.size() != 2 || block_[static_cast<size_t>(mm_id)] == kNoBlock ||
                !fusable(m))
                return;
        }
        for (size_t k = 0; k < 2; ++k) {
            Node& m = g_.node(mm_id);
            const NodeId t_id = m.inputs[k].id;
            const auto ti = static_cast<size_t>(t_id);
            const Node& t = g_.node(t_id);
            if (pinned_[ti] || removed_[ti] || readers_[ti] != 1 || block_[ti] != block_[static_cast<size_t>(mm_id)] ||
                !fusable(t) || t.dtype != m.dtype || !swaps_last_two(t, t.shape.size()))
                continue;
            const NodeId x = t.inputs[0].id;
            const char* flag = k == 0 ? "transpose_a" : "transpose_b";
            // Flipped as the kernels read it (bool_attr: a Bool, else false).
            NamedAttr* given = nullptr;
            for (NamedAttr& a : m.attrs)
                if (a.name == flag) given = &a;
            if (given) {
                const bool was = given->value.kind == Attr::Kind::Bool && given->value.b;
                given->value = Attr::boolean(!was, given->value.loc);
            } else {
                m.attrs.push_back(NamedAttr{flag, Attr::boolean(true), {}});
            }
            m.inputs[k].id = x;
            reader_[static_cast<size_t>(x)] = mm_id;
            removed_[ti] = true;
            absorbed_[mm_id].push_back(FusedOp{t.op, std::string(t.display())});
        }
    }

    // Readers again, of the nodes still in the graph.
    void recount() {
        std::fill(readers_.begin(), readers_.end(), 0);
        std::fill(reader_.begin(), reader_.end(), kNoNode);
        for (size_t i = 0; i < g_.nodes.size(); ++i)
            if (!removed_[i] && block_[i] != kNoBlock) count_reads(static_cast<NodeId>(i));
    }

    // `n` is op `op` of `v` and a scalar constant within 1e-6 of `want`: a
    // binary op with the constant on either side (kNoNode: any v).
    bool op_with_scalar(const Node& n, OpKind op, NodeId& v, double want) const {
        if (n.op != op || n.inputs.size() != 2) return false;
        for (size_t k = 0; k < 2; ++k) {
            const NodeId c = n.inputs[1 - k].id, x = n.inputs[k].id;
            if (v != kNoNode && x != v) continue;
            const Node& cn = g_.node(c);
            if (cn.op != OpKind::Const || !cn.valid || cn.dtype != n.dtype || checked_numel(cn.shape) != 1 ||
                cn.literal.size() != dtype_size(n.dtype))
                continue;
            double value = 0;
            if (n.dtype == DType::F32) {
                float f;
                std::memcpy(&f, cn.literal.data(), 4);
                value = f;
            } else {
                std::memcpy(&value, cn.literal.data(), 8);
            }
            if (std::fabs(value - want) > 1e-6 * std::fabs(want)) continue;
            v = x;
            return true;
        }
        return false;
    }

    // A binary op of a and b in either order.
    static bool of(const Node& n, OpKind op, NodeId a, NodeId b) {
        return n.op == op && n.inputs.size() == 2 &&
               ((n.inputs[0].id == a && n.inputs[1].id == b) || (n.inputs[0].id == b && n.inputs[1].id == a));
    }

    // The only reader of v within v's block when v is a pattern's inner value; kNoNode otherwise.
    NodeId inner_next(NodeId v, const Node& like) const {
        const auto i = static_cast<size_t>(v);
        if (pinned_[i] || readers_[i] != 1) return kNoNode;
        const NodeId r = reader_[i];
        const Node& b = g_.node(r);
        if (removed_[static_cast<size_t>(r)] || block_[static_cast<size_t>(r)] != block_[i] || !fusable(b) ||
            b.dtype != like.dtype || b.shape != like.shape)
            return kNoNode;
        return r;
    }

    // The GELU as exporters write it, from its erf or its tanh node:
    //   erf:  x / √2 (or x · 1/√2) -> erf -> + 1, then (x · 0.5) · that, or (x · that) · 0.5
    //   tanh: x + 0.044715 · (x · x) · x -> · √(2/π) -> tanh -> + 1, then the same two endings
    // becomes gelu(x) (approximate="tanh" for the second) in the last node's
    // place; x may have other readers. Evaluated as the gelu kernel does (in
    // double, rounded once), it differs from the ops' f32 steps by their rounding.
    void try_gelu(NodeId at) {
        const Node& t = g_.node(at);
        if ((t.op != OpKind::Erf && t.op != OpKind::Tanh) || t.inputs.size() != 1 || !fusable(t) ||
            block_[static_cast<size_t>(at)] == kNoBlock)
            return;
        const bool tanh = t.op == OpKind::Tanh;
        std::vector<NodeId> inner;  // the pattern's nodes before its last, each read only within it
        NodeId x = kNoNode;
        const NodeId pre = t.inputs[0].id;
        const Node& p = g_.node(pre);
        if (!tanh) {
            if (!op_with_scalar(p, OpKind::Div, x, 1.4142135623730951) &&
                !op_with_scalar(p, OpKind::Mul, x, 0.7071067811865476))
                return;
            inner = {pre};
        } else {
            NodeId sum = kNoNode;
            if (!op_with_scalar(p, OpKind::Mul, sum, 0.7978845608028654)) return;
            const Node& a = g_.node(sum);
            if (a.op != OpKind::Add || a.inputs.size() != 2) return;
            for (size_t k = 0; k < 2 && x == kNoNode; ++k) {
                const NodeId cand = a.inputs[k].id, cube_k = a.inputs[1 - k].id;
                NodeId cube = kNoNode;
                if (!op_with_scalar(g_.node(cube_k), OpKind::Mul, cube, 0.044715)) continue;
                const Node& c = g_.node(cube);
                if (c.op != OpKind::Mul || c.inputs.size() != 2) continue;
                for (size_t j = 0; j < 2; ++j) {
                    const NodeId sq = c.inputs[j].id;
                    if (c.inputs[1 - j].id == cand && of(g_.node(sq), OpKind::Mul, cand, cand)) {
                        x = cand;
                        inner = {sq, cube, cube_k, sum, pre};
                        break;
                    }
                }
            }
            if (x == kNoNode) return;
        }
        inner.push_back(at);
        const Node& xn = g_.node(x);
        if (xn.dtype != t.dtype || xn.shape != t.shape || !fusable(xn)) return;
        // + 1 after the erf or tanh
        const NodeId plus = inner_next(at, t);
        NodeId one_x = at;
        if (plus == kNoNode || !op_with_scalar(g_.node(plus), OpKind::Add, one_x, 1.0)) return;
        inner.push_back(plus);
        const NodeId m = inner_next(plus, t);
        if (m == kNoNode || g_.node(m).op != OpKind::Mul || g_.node(m).inputs.size() != 2) return;
        NodeId last = kNoNode;
        const NodeId other = g_.node(m).inputs[0].id == plus ? g_.node(m).inputs[1].id : g_.node(m).inputs[0].id;
        NodeId half_x = x;
        if (other == x) {  // (x · (1 + erf)) · 0.5
            NodeId mx = m;
            const NodeId end = inner_next(m, t);
            if (end == kNoNode || !op_with_scalar(g_.node(end), OpKind::Mul, mx, 0.5)) return;
            inner.push_back(m);
            last = end;
        } else if (op_with_scalar(g_.node(other), OpKind::Mul, half_x, 0.5) && inner_next(other, t) == m) {
            inner.push_back(other);  // (x · 0.5) · (1 + erf)
            last = m;
        } else {
            return;
        }
        // Every inner node is read only inside the pattern (the last reads the ones before it).
        for (NodeId v : inner) {
            const auto i = static_cast<size_t>(v);
            const Node& vn = g_.node(v);
            if (pinned_[i] || removed_[i] || block_[i] != block_[static_cast<size_t>(last)] || !fusable(vn) ||
                vn.dtype != t.dtype || vn.shape != t.shape)
                return;
            if (readers_[i] != 1) return;
        }
        std::vector<FusedOp> parts;
        std::vector<NodeId> order = inner;
        order.push_back(last);
        std::sort(order.begin(), order.end());
        for (NodeId v : order) parts.push_back(FusedOp{g_.node(v).op, std::string(g_.node(v).display())});
        for (NodeId v : inner) {
            removed_[static_cast<size_t>(v)] = true;
            for (const Input& in : g_.node(v).inputs) unread_.push_back(in.id);
        }
        for (const Input& in : g_.node(last).inputs) unread_.push_back(in.id);
        Node& n = g_.node(last);
        const Loc x_loc = n.inputs[0].loc;
        n.op = OpKind::Gelu;
        n.inputs = Inputs{};
        n.inputs.push_back(Input{x, x_loc});
        n.attrs.clear();
        if (tanh) n.attrs.push_back(NamedAttr{"approximate", Attr::string("tanh"), {}});
        n.weak = false;
        gelu_parts_.emplace(last, std::move(parts));
    }

    // The constants the folds stopped reading, when nothing else reads them.
    // A scalar's value (f32 or 8-bit): a constant, or a cast of one to f32.
    std::optional<double> scalar_value(NodeId id) const {
        const Node* n = &g_.node(id);
        if (n->op == OpKind::Cast && n->inputs.size() == 1 && n->dtype == DType::F32) n = &g_.node(n->inputs[0].id);
        if (n->op != OpKind::Const || !n->valid || checked_numel(n->shape) != 1 ||
            n->literal.size() != dtype_size(n->dtype))
            return std::nullopt;
        if (n->dtype == DType::U8) return static_cast<double>(n->literal[0]);
        if (n->dtype == DType::I8) return static_cast<double>(static_cast<int8_t>(n->literal[0]));
        if (n->dtype != DType::F32) return std::nullopt;
        float f;
        std::memcpy(&f, n->literal.data(), 4);
        return static_cast<double>(f);
    }

    // The node `id` that only `reader` reads, in its block, no output or carried value: it may leave.
    bool only_for(NodeId id, NodeId reader) const {
        const auto i = static_cast<size_t>(id);
        return !pinned_[i] && !removed_[i] && readers_[i] == 1 && reader_[i] == reader &&
               block_[i] == block_[static_cast<size_t>(reader)];
    }

    // conv or matmul (cast_f32(x8) [- zp], w) with constant integer weights in
    // i8's range becomes the int8 conv or matmul (fuse.h) where oneDNN runs it exactly.
    void try_int8(NodeId id) {
        Node& c = g_.node(id);
        const bool conv = c.op == OpKind::Conv;
        if (removed_[static_cast<size_t>(id)] || (!conv && c.op != OpKind::Matmul) || !c.valid ||
            c.epilogue >= 0 || c.dtype != DType::F32 || c.inputs.size() != 2 || (conv && c.shape.size() != 4) ||
            (!conv && !c.attrs.empty()) || device_kind(c.placed) != DeviceKind::Cpu ||
            block_[static_cast<size_t>(id)] == kNoBlock)
            return;
        // x: cast(x8), or cast(x8) - zp.
        NodeId sub = kNoNode, cast = c.inputs[0].id;
        double zp = 0;
        if (g_.node(cast).op == OpKind::Sub) {
            sub = cast;
            const Node& s = g_.node(sub);
            if (s.inputs.size() != 2 || s.dtype != DType::F32) return;
            const std::optional<double> z = scalar_value(s.inputs[1].id);
            if (!z || *z != std::nearbyint(*z)) return;
            zp = *z;
            cast = s.inputs[0].id;
        }
        const Node& cn = g_.node(cast);
        if (cn.op != OpKind::Cast || cn.dtype != DType::F32 || cn.inputs.size() != 1) return;
        const NodeId x8 = cn.inputs[0].id;
        const DType xt = g_.node(x8).dtype;
        if (xt != DType::U8 && xt != DType::I8) return;
        // The weights: a constant f32 filter of integers in i8's range.
        const NodeId wid = c.inputs[1].id;
        const Node& w = g_.node(wid);
        const auto wn = checked_numel(w.shape);
        if (w.op != OpKind::Const || !w.valid || w.dtype != DType::F32 || !wn || *wn <= 0 || w.shape.empty() ||
            w.literal.size() != static_cast<size_t>(*wn) * 4)
            return;
        // Each output reads k weights: a conv's output channel o its block
        // w[o, ...]; a matmul's column o the column b[:, o] (b is 2-D).
        if (!conv && w.shape.size() != 2) return;
        const int64_t outs = conv ? w.shape[0] : w.shape[1];
        if (outs <= 0 || *wn % outs != 0) return;
        const int64_t k = *wn / outs;
        std::vector<uint8_t> w8(static_cast<size_t>(*wn));
        double most = 0;
        for (int64_t o = 0; o < outs; ++o) {
            double l1 = 0;
            for (int64_t j = 0; j < k; ++j) {
                const size_t i = static_cast<size_t>(conv ? o * k + j : j * outs + o);
                float f;
                std::memcpy(&f, w.literal.data() + i * 4, 4);
                if (!(f >= -128.0f && f <= 127.0f) || f != std::nearbyint(f)) return;
                w8[i] = static_cast<uint8_t>(static_cast<int8_t>(f));
                l1 += std::fabs(f);
            }
            most = std::max(most, l1);
        }
        const double lo = xt == DType::I8 ? -128 : 0, hi = xt == DType::I8 ? 127 : 255;
        if (zp < lo || zp > hi) return;  // a zero point of another range: not an 8-bit one
        if (std::max(zp - lo, hi - zp) * most >= 16777216.0) return;
        // The rewrite, asked of oneDNN, and undone where it declines.
        Node wi;
        wi.op = OpKind::Const;
        make_generated_like(wi, w, std::string(w.display()) + "_i8");
        wi.host_literal = true;
        wi.dtype = DType::I8;
        wi.shape = w.shape;
        std::vector<Attr> dims;
        for (int64_t d : w.shape) dims.push_back(Attr::integer(d));
        wi.attrs.push_back(NamedAttr{"shape", Attr::make_list(std::move(dims)), {}});
        wi.attrs.push_back(NamedAttr{"dtype", Attr::ident("i8"), {}});
        wi.literal = std::move(w8);
        const NodeId w8id = add_node(std::move(wi), id);
        Node& node = g_.node(id);  // add_node may have moved the nodes
        const Inputs old_inputs = node.inputs;
        node.inputs[0].id = x8;
        node.inputs[1].id = w8id;
        node.attrs.push_back(NamedAttr{"x_zero_point", Attr::integer(static_cast<int64_t>(zp)), {}});
        if (!int8_runs_(g_, node)) {
            node.inputs = old_inputs;
            node.attrs.pop_back();
            removed_[static_cast<size_t>(w8id)] = true;
            return;
        }
        // What it no longer reads leaves where nothing else reads it.
        std::vector<FusedOp> parts;
        if (only_for(sub == kNoNode ? cast : sub, id)) {
            if (sub != kNoNode) {
                removed_[static_cast<size_t>(sub)] = true;
                parts.push_back(FusedOp{OpKind::Sub, std::string(g_.node(sub).display())});
                if (only_for(cast, sub)) removed_[static_cast<size_t>(cast)] = true;
                // The zero point: a constant, or a cast of one, that only the subtraction read.
                const NodeId z = g_.node(sub).inputs[1].id;
                if (g_.node(z).op == OpKind::Cast && only_for(z, sub)) {
                    removed_[static_cast<size_t>(z)] = true;
                    unread_.push_back(g_.node(z).inputs[0].id);
                } else if (g_.node(z).op == OpKind::Const) {
                    unread_.push_back(z);
                }
            } else {
                removed_[static_cast<size_t>(cast)] = true;
            }
            if (removed_[static_cast<size_t>(cast)])
                parts.insert(parts.begin(), FusedOp{OpKind::Cast, std::string(g_.node(cast).display())});
        }
        unread_.push_back(wid);
        Node& done = g_.node(id);
        parts.push_back(FusedOp{done.op, std::string(done.display())});
        Epilogue e;
        e.fused = std::move(parts);
        done.epilogue = static_cast<int32_t>(g_.epilogues.size());
        g_.epilogues.push_back(std::move(e));
        ++stats_.fused;
    }

    void drop_unread_constants() {
        recount();
        for (NodeId v : unread_) {
            const auto i = static_cast<size_t>(v);
            if (g_.node(v).op == OpKind::Const && !removed_[i] && readers_[i] == 0 && !pinned_[i] &&
                block_[i] != kNoBlock)
                removed_[i] = true;
        }
    }

    // Renumbers the nodes: the removed ones out, each new constant just before
    // the node that reads it, the rest in their order.
    void compact() {
        std::vector<std::vector<NodeId>> before(original_);
        for (const auto& [id, at] : inserted_)
            if (!removed_[static_cast<size_t>(id)]) before[static_cast<size_t>(at)].push_back(id);
        stats_.removed += renumber_nodes(g_, original_, before, removed_);
    }

    Graph& g_;
    Int8Runs int8_runs_;
    size_t original_ = 0;           // nodes before the pass added constants
    std::vector<int32_t> readers_;  // per node: reads by statement nodes (a node reading it twice: 2)
    std::vector<NodeId> reader_;    // per node: its last reader
    std::vector<int32_t> block_;    // per node: -1 top level, r repeat r's body, kNoBlock none
    std::vector<bool> pinned_;      // outputs and carried values
    std::vector<bool> removed_;
    std::vector<std::pair<NodeId, NodeId>> inserted_;  // new node, the original node it goes before
    std::vector<NodeId> anchor_;    // per new node (id - original_): that original node
    std::vector<NodeId> unread_;    // constants a fold or a gelu stopped reading
    std::map<NodeId, std::vector<FusedOp>> gelu_parts_;  // per gelu node made of ops, those ops
    std::map<NodeId, std::vector<FusedOp>> absorbed_;    // per matmul, the transposes it took in
    FuseStats stats_;
};

}  // namespace

FuseStats fuse_graph(Graph& g, Int8Runs int8_runs) { return Fuser(g, int8_runs).run(); }

}  // namespace graphrun
