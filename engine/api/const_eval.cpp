// Folding at load with the engine's kernels (const_eval.h).
#include "engine/api/const_eval.h"

#include <cstdlib>
#include <memory>

#include "engine/base/diagnostics.h"
#include "engine/check/validate.h"
#include "engine/ir/ops.h"
#include "engine/kernels/common/kernel.h"
#include "engine/kernels/cpu/cpu_kernel.h"

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
    for (const Node& n : g.nodes) {
        if (!n.valid) return "it does not validate";
        if (n.op == OpKind::RandomUniform || n.op == OpKind::RandomNormal) return "it draws random numbers";
        if (n.op == OpKind::Input || n.op == OpKind::LoopParam) return "it reads an input";
        const std::optional<int64_t> numel = checked_numel(n.shape);
        if (!numel || *numel > max_elements) return "a value has more elements than a fold makes";
        const std::optional<uint64_t> bytes = checked_buffer_bytes(*numel, n.dtype);
        if (!bytes || *bytes > max_bytes - total) return "its values need more memory than the limit leaves";
        total += *bytes;
        if (runs_in_storage_type(n.op)) continue;
        bool storage = is_storage(n.dtype);
        for (const Input& in : n.inputs) storage = storage || is_storage(g.node(in.id).dtype);
        if (storage) return "it computes on a storage type";
    }
    std::vector<Buffer> buffers(g.nodes.size());
    std::vector<int64_t> counts(g.nodes.size(), 0);
    HostScratch scratch;
    KernelContext ctx;
    ctx.scratch = &scratch;
    std::vector<TensorRef> ins;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        const Node& n = g.nodes[i];
        counts[i] = *checked_numel(n.shape);
        const std::optional<uint64_t> bytes = checked_buffer_bytes(counts[i], n.dtype);
        if (!bytes) return "a value is too big";
        buffers[i] = allocate(*bytes);
        if (*bytes && !buffers[i]) return "out of memory";
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

}  // namespace graphrun
