// Folding at load with the engine's kernels (const_eval.h).
#include "engine/api/const_eval.h"

#include <cstdlib>
#include <memory>

#include "engine/base/diagnostics.h"
#include "engine/check/validate.h"
#include "engine/ir/ops.h"
#include "engine/kernels/common/kernel.h"
#include "engine/kernels/cpu/cpu_kernel.h"
#include "engine/plan/renumber.h"

namespace graphrun {

namespace {

// 64-byte aligned, as the allocators give every buffer.
struct Aligned {
    void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<void, Aligned>;

Buffer allocate(uint64_t bytes) {
    const uint64_t rounded = (bytes + 63) / 64 * 64;
    return Buffer(rounded ? std::aligned_alloc(64, rounded) : nullptr);
}

// A kernel's workspace (conv's columns): plain host memory, given back when
// the kernel returns. The fold's sizes are bounded by max_elements.
class HostScratch final : public ScratchMemory {
  public:
    void* allocate(uint64_t bytes) override { return std::aligned_alloc(64, (bytes + 63) / 64 * 64); }
    void release(void* p, uint64_t) override { std::free(p); }
};

}  // namespace

std::string evaluate_constant_graph(Graph& g, const std::vector<NodeId>& wanted, int64_t max_elements,
                                    uint64_t max_bytes, std::vector<std::vector<uint8_t>>& values,
                                    bool& kernel_error) {
    kernel_error = false;
    if (!g.repeats.empty()) return "it repeats";
    Diagnostics diag;
    if (!validate_from(g, diag, 0)) return "it does not validate";
    uint64_t total = 0;  // the bytes of every value, held until the end
    std::vector<int64_t> counts;
    counts.reserve(g.nodes.size());
    for (const Node& n : g.nodes) {
        if (!n.valid) return "it does not validate";
        if (n.op == OpKind::RandomUniform || n.op == OpKind::RandomNormal) return "it draws random numbers";
        if (n.op == OpKind::Input || n.op == OpKind::LoopParam) return "it reads an input";
        const std::optional<int64_t> numel = checked_numel(n.shape);
        if (!numel || *numel > max_elements) return "a value has more elements than a fold makes";
        const std::optional<uint64_t> bytes = checked_buffer_bytes(*numel, n.dtype);
        if (!bytes || *bytes > max_bytes - total) return "its values need more memory than the limit leaves";
        total += *bytes;
        counts.push_back(*numel);
        if (runs_in_storage_type(n.op)) continue;
        bool storage = is_storage(n.dtype);
        for (const Input& in : n.inputs) storage = storage || is_storage(g.node(in.id).dtype);
        if (storage) return "it computes on a storage type";
    }
    std::vector<Buffer> buffers(g.nodes.size());
    HostScratch scratch;
    KernelContext ctx;
    ctx.scratch = &scratch;
    std::vector<TensorRef> ins;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        const Node& n = g.nodes[i];
        const uint64_t bytes = static_cast<uint64_t>(counts[i]) * dtype_size(n.dtype);
        buffers[i] = allocate(bytes);
        if (bytes && !buffers[i]) return "out of memory";
        ins.clear();
        for (const Input& in : n.inputs) {
            const Node& src = g.node(in.id);
            ins.push_back(TensorRef{buffers[static_cast<size_t>(in.id)].get(), src.dtype, &src.shape,
                                    counts[static_cast<size_t>(in.id)]});
        }
        TensorRef out{buffers[i].get(), n.dtype, &n.shape, counts[i]};
        std::unique_ptr<Kernel> k = make_cpu_kernel(g, n);
        std::string err = k->run(ins.data(), ins.size(), out, ctx);
        if (!err.empty()) {
            kernel_error = true;
            return err;
        }
    }
    values.clear();
    for (NodeId id : wanted) {
        const auto i = static_cast<size_t>(id);
        const uint64_t bytes = static_cast<uint64_t>(counts[i]) * dtype_size(g.nodes[i].dtype);
        const auto* p = static_cast<const uint8_t*>(buffers[i].get());
        values.emplace_back(p, p + bytes);
    }
    return "";
}

size_t fold_constant_nodes(Graph& g, uint64_t max_bytes) {
    if (!g.repeats.empty()) return 0;
    const size_t count = g.nodes.size();
    std::vector<bool> read_by_fold(count, false);
    std::vector<TensorRef> ins;
    std::vector<Buffer> in_buffers;
    HostScratch scratch;
    KernelContext ctx;
    ctx.scratch = &scratch;
    size_t folded = 0;
    for (size_t i = 0; i < count; ++i) {
        Node& n = g.nodes[i];
        if (!n.valid || n.inputs.empty() || n.op == OpKind::Const || n.op == OpKind::Input ||
            n.op == OpKind::LoopParam || n.op == OpKind::Invalid || n.op == OpKind::RandomUniform ||
            n.op == OpKind::RandomNormal || is_storage(n.dtype) || n.epilogue >= 0)
            continue;
        bool constant = true;
        for (const Input& in : n.inputs) {
            const Node& src = g.node(in.id);
            const std::optional<int64_t> src_numel = checked_numel(src.shape);
            // An 8-bit zero point's cast (at most 1024 elements) folds; other
            // storage-typed constants (f16 weights) stay in their own type.
            const bool zero_point = n.op == OpKind::Cast && (src.dtype == DType::I8 || src.dtype == DType::U8) &&
                                    src_numel && *src_numel <= 1024;
            constant = constant && src.op == OpKind::Const && src.valid && (!is_storage(src.dtype) || zero_point) &&
                       src_numel &&
                       src.literal.size() == static_cast<uint64_t>(*src_numel) * dtype_size(src.dtype);
        }
        if (!constant) continue;
        const std::optional<int64_t> numel = checked_numel(n.shape);
        if (!numel) continue;
        const uint64_t bytes = static_cast<uint64_t>(*numel) * dtype_size(n.dtype);
        if (bytes > max_bytes) continue;
        ins.clear();
        in_buffers.clear();
        bool ok = true;
        for (const Input& in : n.inputs) {
            const Node& src = g.node(in.id);
            in_buffers.push_back(allocate(src.literal.size()));
            if (!src.literal.empty() && !in_buffers.back()) ok = false;
            if (!src.literal.empty() && ok) std::memcpy(in_buffers.back().get(), src.literal.data(), src.literal.size());
            ins.push_back(TensorRef{in_buffers.back().get(), src.dtype, &src.shape,
                                    static_cast<int64_t>(src.literal.size() / dtype_size(src.dtype))});
        }
        Buffer out_buffer = allocate(bytes);
        if (!ok || (bytes && !out_buffer)) continue;
        TensorRef out{out_buffer.get(), n.dtype, &n.shape, *numel};
        std::unique_ptr<Kernel> k = make_cpu_kernel(g, n);
        if (!k->run(ins.data(), ins.size(), out, ctx).empty()) continue;  // the run reports it
        for (const Input& in : n.inputs) read_by_fold[static_cast<size_t>(in.id)] = true;
        std::vector<Attr> dims;
        for (int64_t d : n.shape) dims.push_back(Attr::integer(d));
        n.op = OpKind::Const;
        n.inputs.clear();
        n.attrs.clear();
        n.attrs.push_back(NamedAttr{"shape", Attr::make_list(std::move(dims)), {}});
        n.attrs.push_back(NamedAttr{"dtype", Attr::ident(dtype_name(n.dtype)), {}});
        n.host_literal = true;
        const auto* p = static_cast<const uint8_t*>(out_buffer.get());
        n.literal.assign(p, p + bytes);
        ++folded;
    }
    if (!folded) return 0;
    // The constants only folded nodes read, and nothing else now: gone.
    std::vector<bool> read(count, false);
    for (const Node& n : g.nodes)
        for (const Input& in : n.inputs) read[static_cast<size_t>(in.id)] = true;
    for (const Output& o : g.outputs)
        if (o.id >= 0) read[static_cast<size_t>(o.id)] = true;
    std::vector<bool> removed(count, false);
    bool any = false;
    for (size_t i = 0; i < count; ++i)
        if (read_by_fold[i] && !read[i]) removed[i] = any = true;
    if (any) renumber_nodes(g, count, std::vector<std::vector<NodeId>>(count), removed);
    return folded;
}

}  // namespace graphrun
