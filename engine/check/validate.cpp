// validate(): walks the graph in program order, checks each node's arity,
// attributes and device, infers its dtype and shape (engine/infer_*.cpp), and
// checks that loop-carried values keep their type.
#include "engine/check/validate.h"

#include <set>
#include <string>
#include <tuple>
#include <unordered_map>

#include "engine/base/interrupt.h"
#include "engine/ir/device_name.h"
#include "engine/check/infer_context.h"

namespace graphrun {

namespace {

using infer::NodeCheck;

// Validation stops after this many errors of its own, as the front ends do:
// a file of a million bad nodes gives a readable report, quickly.
constexpr size_t kMaxErrors = 50;

bool check_arity(NodeCheck& c) {
    const OpInfo& info = c.info;
    const auto n = static_cast<int>(c.arity());
    if (n >= info.min_inputs && (info.max_inputs < 0 || n <= info.max_inputs)) return true;
    std::string msg = "takes ";
    if (info.max_inputs == 0) {
        msg += "no tensor inputs";
    } else if (info.max_inputs < 0) {
        msg += "at least " + std::to_string(info.min_inputs) + " input" +
               (info.min_inputs == 1 ? "" : "s");
    } else if (info.min_inputs != info.max_inputs) {
        msg += std::to_string(info.min_inputs) + (info.max_inputs == info.min_inputs + 1 ? " or " : " to ") +
               std::to_string(info.max_inputs) + " inputs";
    } else if (info.max_inputs == 1) {
        msg += "1 input (x)";
    } else if (info.min_inputs != info.max_inputs) {  // optional inputs (layer_norm's bias)
        msg += std::to_string(info.min_inputs) + " to " + std::to_string(info.max_inputs) + " inputs";
    } else if (info.max_inputs > 2) {
        msg += std::to_string(info.max_inputs) + " inputs";
    } else {
        msg += std::to_string(info.max_inputs) + " inputs (a, b)";
    }
    c.error(c.node.loc, msg + ", got " + std::to_string(n));
    return false;
}

// Device names as written. A `with device` block's bad name is reported once,
// not once per node in the block.
class DeviceCheck {
  public:
    explicit DeviceCheck(Diagnostics& diag) : diag_(diag) {}

    void check(const Node& n) {
        if (n.device.empty() || parse_device_name(n.device)) return;
        if (n.device_from_block &&
            !reported_blocks_.emplace(n.device_loc.line, n.device_loc.col, n.device_loc.pointer)
                 .second)
            return;
        diag_.error(n.device_loc.known() ? n.device_loc : n.loc,
                    "unknown device '" + n.device +
                        "'; devices are cpu, cpu:0, gpu, gpu:N, cuda:N, /GPU:N and /device:CPU:0 "
                        "(case-insensitive)");
    }

  private:
    Diagnostics& diag_;
    std::set<std::tuple<uint32_t, uint32_t, std::string>> reported_blocks_;
};

bool infer_node(NodeCheck& c) {
    using namespace infer;
    const OpKind op = c.node.op;
    if (is_binary_elementwise(op)) return infer_binary(c);
    if (op >= OpKind::Floor && op <= OpKind::Gelu) return infer_activation(c);
    if (is_unary_elementwise(op)) return infer_unary(c);
    if (op >= OpKind::Equal && op <= OpKind::LogicalNot) return infer_logic(c);
    if (op >= OpKind::Conv && op <= OpKind::GlobalMaxPool) return infer_conv_area(c);
    switch (op) {
        case OpKind::Const:
            return infer_const(c);
        case OpKind::Zeros:
        case OpKind::Ones:
        case OpKind::Input:  // shape and dtype; its value comes from the feeds
            return infer_zeros_ones(c);
        case OpKind::Fill:
            return infer_fill(c);
        case OpKind::Range:
            return infer_range(c);
        case OpKind::RandomUniform:
        case OpKind::RandomNormal:
            return infer_random(c);
        case OpKind::Matmul:
            return infer_matmul(c);
        case OpKind::Transpose:
            return infer_transpose(c);
        case OpKind::Reshape:
            return infer_reshape(c);
        case OpKind::Cast:
        case OpKind::Identity:
            return infer_cast_identity(c);
        case OpKind::Concat:
            return infer_concat(c);
        case OpKind::ReduceSum:
        case OpKind::ReduceMax:
        case OpKind::ReduceMean:
        case OpKind::ReduceMin:
        case OpKind::ReduceProd:
            return infer_reduce(c);
        case OpKind::Softmax:
        case OpKind::LogSoftmax:
            return infer_softmax(c);
        case OpKind::Where:
            return infer_where(c);
        case OpKind::Argmax:
        case OpKind::Argmin:
            return infer_arg_reduce(c);
        case OpKind::Slice: return infer_slice(c);
        case OpKind::Gather: return infer_gather(c);
        case OpKind::Expand: return infer_expand(c);
        case OpKind::Split: return infer_split(c);
        case OpKind::Pad: return infer_pad(c);
        case OpKind::Tile: return infer_tile(c);
        case OpKind::Squeeze: return infer_squeeze(c);
        case OpKind::Unsqueeze: return infer_unsqueeze(c);
        case OpKind::Flatten: return infer_flatten(c);
        case OpKind::LayerNorm:
            return infer_layer_norm(c);
        case OpKind::BatchNorm:
            return infer_batch_norm(c);
        case OpKind::Gemm:
            return infer_gemm(c);
        case OpKind::TopK:
            return infer_top_k(c);
        case OpKind::ScatterElements:
        case OpKind::ScatterND:
            return infer_scatter(c);
        case OpKind::GatherElements:
            return infer_gather_elements(c);
        default:
            return false;
    }
}

// Checks nodes [first, end) in program order; the nodes before are already
// checked. Returns whether it stopped early (too many errors, or a stop
// request: then `signalled` is set).
bool check_nodes(Graph& g, Diagnostics& diag, NodeId first, bool& signalled) {
    std::unordered_map<NodeId, const Carry*> carry_of;
    for (const Repeat& r : g.repeats)
        for (const Carry& c : r.carries) carry_of[c.param] = &c;

    DeviceCheck devices(diag);
    const size_t base_errors = diag.error_count();
    bool stopped = false;
    const auto count = static_cast<NodeId>(g.nodes.size());
    for (NodeId id = first; id < count; ++id) {
        Node& n = g.node(id);
        n.valid = false;
        if (!n.host_literal) n.literal.clear();  // a host literal's bytes came with the graph
        // A signal stops validation of a huge graph within a second (every
        // 4096 nodes, a relaxed load); the rest stays invalid, and the
        // caller says why, once (load.cpp).
        if (!stopped && (id & 4095) == 0 && interrupted()) stopped = signalled = true;
        if (stopped || n.op == OpKind::Invalid) continue;
        if (diag.error_count() - base_errors >= kMaxErrors) {
            diag.error(n.loc, "too many errors (" + std::to_string(kMaxErrors) + "); stopping here");
            stopped = true;
            continue;
        }
        if (n.op == OpKind::LoopParam) {
            // Enters the body as its initial value; the type check of the update is below.
            auto it = carry_of.find(id);
            if (it == carry_of.end() || it->second->init < 0 || it->second->init >= count) {
                diag.error(n.loc,
                           "internal error: loop-carried '" + n.name + "' has no initial value");
                continue;
            }
            const Node& init = g.node(it->second->init);
            n.valid = init.valid;
            n.dtype = init.dtype;
            n.shape = init.shape;
            continue;
        }
        NodeCheck c(g, diag, id);
        devices.check(n);
        bool ok = check_arity(c);
        ok = c.check_attrs() && ok;
        for (const Input& in : n.inputs) {
            if (in.id < 0 || in.id >= id) {
                diag.error(in.loc.known() ? in.loc : n.loc,
                           "internal error: input of '" + std::string(n.display()) + "' is not an earlier node");
                ok = false;
            } else if (!g.node(in.id).valid) {
                ok = false;  // reported where it went wrong
            }
        }
        if (!ok) continue;
        n.valid = infer_node(c) && c.check_result_size(n.shape);
    }
    return stopped;
}

}  // namespace

bool validate_from(Graph& g, Diagnostics& diag, NodeId first) {
    bool signalled = false;
    check_nodes(g, diag, first, signalled);
    return !signalled && !diag.has_errors();
}

bool validate(Graph& g, Diagnostics& diag) {
    bool signalled = false;
    const bool stopped = check_nodes(g, diag, 0, signalled);
    const auto count = static_cast<NodeId>(g.nodes.size());
    for (const Repeat& r : g.repeats) {
        if (stopped) break;
        for (const Carry& c : r.carries) {
            if (c.init < 0 || c.update < 0 || c.init >= count || c.update >= count) continue;
            const Node& init = g.node(c.init);
            const Node& update = g.node(c.update);
            if (!init.valid || !update.valid) continue;
            if (init.dtype == update.dtype && init.shape == update.shape) continue;
            diag.error(update.loc, "loop-carried '" + c.name +
                                       "' changes type in the repeat body: it enters as " +
                                       type_string(init.dtype, init.shape) + " and leaves as " +
                                       type_string(update.dtype, update.shape));
        }
    }
    return !signalled && !diag.has_errors();
}

}  // namespace graphrun
