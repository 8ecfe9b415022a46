// Device placement with soft fallback.
#include "engine/check/placement.h"

#include <set>

namespace graphrun {

namespace {

// Why the listed GPU `index` cannot be used at all, or "" when it can.
const std::string& gpu_unusable(const DeviceAvailability& avail, int index) {
    static const std::string usable;
    const auto i = static_cast<size_t>(index);
    return i < avail.gpu_unusable.size() ? avail.gpu_unusable[i] : usable;
}

// Why `want` cannot run `n`, or "" when it can.
std::string unusable_cause(const DeviceName& want, const Node& n, const DeviceAvailability& avail) {
    if (want.kind == DeviceKind::Cpu) return {};
    if (avail.gpu_count == 0) return avail.why_no_gpu;
    if (want.index >= avail.gpu_count)
        return "no such device (" + std::to_string(avail.gpu_count) + " GPU" +
               (avail.gpu_count == 1 ? "" : "s") + " present)";
    if (const std::string& why = gpu_unusable(avail, want.index); !why.empty()) return why;
    if (n.op == OpKind::LoopParam) return {};
    // The plugin answers from the same op table (gpu_runs) that answers without it.
    if (avail.gpu_supports ? !avail.gpu_supports(n.op, n.dtype) : !gpu_runs(n.op, n.dtype))
        return std::string("no GPU kernel for ") + op_name(n.op) + " on " + dtype_name(n.dtype);
    return {};
}

}  // namespace

std::optional<Error> place(Graph& g, const PlacementOptions& opts, const DeviceAvailability& avail,
                           std::ostream& log) {
    std::optional<DeviceName> fallback_default;
    bool is_auto = opts.device == "auto";
    if (!is_auto) fallback_default = parse_device_name(opts.device);
    // `auto`: the first usable GPU (gpu:0 unless it is one this build cannot
    // use, on a machine that has a newer one), else the CPU.
    if (!fallback_default) {
        fallback_default = DeviceName{DeviceKind::Cpu, 0};
        for (int i = 0; i < avail.gpu_count; ++i)
            if (gpu_unusable(avail, i).empty()) {
                fallback_default = DeviceName{DeviceKind::Gpu, i};
                break;
            }
    }
    std::set<std::string> warned;
    // Per node, why it fell back to the CPU; sized on the first fallback
    // (most graphs have none, and a million-node graph would spend 32 MB on it).
    std::vector<std::string> fallback_cause;
    const std::string_view default_name = interned_device_name(*fallback_default);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        Node& n = g.nodes[i];
        if (n.op == OpKind::Invalid || n.op == OpKind::LoopParam || n.weak) continue;
        std::optional<DeviceName> want = n.device.empty() ? fallback_default : parse_device_name(n.device);
        if (!want) want = DeviceName{};  // validation has already rejected it
        std::string cause = unusable_cause(*want, n, avail);
        if (cause.empty()) {
            n.placed = *want == *fallback_default ? default_name : interned_device_name(*want);
            continue;
        }
        // `auto` asks for a GPU only where one is usable: a node without a GPU
        // kernel quietly runs on the CPU, as TensorFlow's default placement does.
        bool quiet = is_auto && n.device.empty();
        if (!opts.soft && !quiet) {
            return runtime_error_at(node_label(n) + " cannot run on " + want->str() + ": " + cause +
                                        " (soft placement is off; drop --no-soft-placement to run it on the CPU)",
                                    n.loc);
        }
        n.placed = interned_device_name(DeviceName{});
        if (quiet) continue;
        if (fallback_cause.empty()) fallback_cause.resize(g.nodes.size());
        fallback_cause[i] = want->str() + " unavailable: " + cause;
        if (warned.insert(fallback_cause[i]).second)
            log << "warning: " << fallback_cause[i] << "; running on cpu instead (soft placement)\n";
    }
    // A weak scalar literal is made where its one consumer runs.
    for (Node& n : g.nodes)
        for (const Input& in : n.inputs)
            if (g.node(in.id).weak) g.node(in.id).placed = n.placed;
    if (opts.log) {
        for (size_t i = 0; i < g.nodes.size(); ++i) {
            const Node& n = g.nodes[i];
            if (n.op == OpKind::Invalid || n.op == OpKind::LoopParam) continue;
            log << "placement: " << n.display() << " (" << op_name(n.op) << ") -> " << n.placed;
            if (!fallback_cause.empty() && !fallback_cause[i].empty()) log << " (" << fallback_cause[i] << ")";
            log << "\n";
        }
    }
    // A loop-carried value lives where its values are made.
    for (const Repeat& r : g.repeats)
        for (const Carry& c : r.carries) g.node(c.param).placed = g.node(c.init).placed;
    return std::nullopt;
}

}  // namespace graphrun
