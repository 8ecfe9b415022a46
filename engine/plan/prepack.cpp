// The pre-pack pass (prepack.h).
#include "engine/plan/prepack.h"

#include <cstdint>
#include <vector>

#include "engine/base/heap_trim.h"

namespace graphrun {

size_t prepack_weights(Graph& g, PackWeight pack, int threads) {
    if (!pack) return 0;
    // How many places read each constant: every node's inputs, the repeats'
    // carried values, the outputs.
    const size_t count = g.nodes.size();
    std::vector<uint32_t> reads(count, 0);
    auto read = [&](NodeId id) {
        if (id >= 0 && static_cast<size_t>(id) < count) ++reads[static_cast<size_t>(id)];
    };
    for (const Node& n : g.nodes)
        for (const Input& in : n.inputs) read(in.id);
    for (const Repeat& r : g.repeats)
        for (const Carry& c : r.carries) {
            read(c.init);
            read(c.update);
        }
    for (const Output& o : g.outputs) {
        read(o.id);
        read(o.id);  // an output is never packed: two reads
    }
    size_t packed = 0;
    constexpr uint64_t kReturnEvery = uint64_t{4} << 20;
    uint64_t freed = 0;
    for (Node& n : g.nodes) {
        if (!n.valid || n.placed != "cpu" || n.inputs.size() < 2) continue;
        if (n.op != OpKind::Conv && n.op != OpKind::Gemm && n.op != OpKind::Matmul) continue;
        const NodeId wid = n.inputs[1].id;
        if (wid < 0 || reads[static_cast<size_t>(wid)] != 1 || g.prepacked_weight(wid)) continue;
        Node& w = g.node(wid);
        if (w.op != OpKind::Const || !w.valid || w.placed != "cpu" || w.literal.empty()) continue;
        std::optional<PrepackedWeight> p = pack(g, n, threads);
        if (!p) continue;
        g.prepacked.emplace(wid, std::move(*p));
        freed += w.literal.size();
        std::vector<uint8_t>().swap(w.literal);  // held once: the packed bytes
        ++packed;
        // The plain bytes go back to the system as the pass goes, not at its
        // end, so that a model's weights are not all held twice at its peak
        // (glibc keeps freed blocks under its raised mmap threshold resident).
        if (freed >= kReturnEvery) {
            return_free_heap();
            freed = 0;
        }
    }
    return packed;
}

}  // namespace graphrun
