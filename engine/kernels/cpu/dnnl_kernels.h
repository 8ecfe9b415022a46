// oneDNN's CPU kernels for the ops where it beats ours (measured with
// scripts/bench/dnnl_conv_bench.cpp): conv and gemm with constant weights.
// Built where CMake finds oneDNN (dnnl_kernels.cpp); elsewhere every
// factory declines (dnnl_unavailable.cpp) and our kernels run, as they do
// when the environment has GRAPHRUN_NO_DNNL.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "engine/ir/graph.h"
#include "engine/kernels/common/kernel.h"
#include "engine/kernels/common/kernel_common.h"

namespace graphrun::kernels {

// Our kernel for a node: a oneDNN kernel runs it instead when the memory
// limit has no room for oneDNN's scratch or packed weights (our conv takes
// smaller im2col tiles; our gemm takes none).
using OwnKernelFactory = std::unique_ptr<Kernel> (*)(const Graph& g, const Node& n);

// A oneDNN kernel for a plain f32 conv (2-D or 1-D, any padding, stride,
// dilation and groups), or nullptr: a node with anything else (another dtype,
// an attribute conv on main does not have, an epilogue oneDNN has no fast
// post-ops for (dnnl_kernels.cpp maps it onto post-ops), or a
// shape oneDNN has only its reference code for) runs our kernel.
std::unique_ptr<Kernel> make_dnnl_conv_kernel(const Graph& g, const Node& n, OwnKernelFactory ours);
// Whether the conv node n runs in oneDNN's fast code on channels-last input and
// output in layout `block` (0 NHWC, 8 nChw8c, 16 nChw16c), with its epilogue
// as post-ops (the layout pass, engine/plan/channels_last.h, asks it of every
// conv; make_dnnl_conv_kernel then makes such a kernel for a node that reads
// or writes a channels-last value, in the layout the pass chose).
bool dnnl_conv_runs_channels_last(const Graph& g, const Node& n, int block);
// Whether the conv node n, as the layout pass left it, runs as Winograd's
// F(4x4, 3x3) (engine/kernels/cpu/winograd.h) rather than oneDNN's primitive.
bool dnnl_conv_runs_winograd(const Graph& g, const Node& n);
// The blocked layout a group of channels-last values that our max_pool or
// concat reads may be held in (the layout pass's free_block): 8 where
// oneDNN's CPU code has no AVX-512, whose windowed convs on NHWC run its
// nChw8c code with a reorder each way around every run; 0 (NHWC) elsewhere,
// where its NHWC convs (brgconv) need no reorder.
int dnnl_free_op_block();
// The int8 conv and matmul the fusion pass makes of an ONNX integer conv or
// matmul (engine/plan/fuse.h): x (a matmul's a) 8-bit (u8 or i8), its zero
// point the node's x_zero_point attribute, w (b) a constant i8 filter (2-D
// matrix), the output f32: oneDNN's int8 conv or matmul, exact (the sums are
// integers in s32, below 2^24 where the pass made it). Whether oneDNN has code
// for it that sums exactly (VNNI or AMX: without them its int8 kernels halve
// the weights to keep 16-bit sums from saturating), and the kernel; nullptr
// where n is no such node.
bool dnnl_int8_runs(const Graph& g, const Node& n);
std::unique_ptr<Kernel> make_dnnl_int8_kernel(const Graph& g, const Node& n);
// A oneDNN matmul for a plain f32 gemm whose b is a constant (packed once) and
// whose c, if any, is a bias row (beta 1, alpha 1); nullptr otherwise.
std::unique_ptr<Kernel> make_dnnl_gemm_kernel(const Graph& g, const Node& n, OwnKernelFactory ours);
// A oneDNN matmul for an f32 matmul of a (rank 2 or more, not transposed) by a
// constant 2-D b (packed once), with a fused epilogue's bias, residual and
// activation; nullptr otherwise.
std::unique_ptr<Kernel> make_dnnl_matmul_kernel(const Graph& g, const Node& n, OwnKernelFactory ours);
// Whether the oneDNN kernel of a gemm or matmul node keeps a packed copy of
// its constant b (oneDNN's choice on this CPU: AVX-512's kernels pack, AVX2's
// gemm reads b as it is); false where no oneDNN kernel runs the node. For tests.
bool dnnl_packs_weight(const Graph& g, const Node& n);
// The pre-pack pass (engine/plan/prepack.h) asks it of each CPU conv, gemm
// and matmul: where oneDNN's kernel for n, made with `threads` threads, reads
// its constant weight (input 1) in another layout than the constant's own
// (blocked conv filters, AVX-512's packed GEMM panels), the weight in that
// layout; nullopt otherwise. A kernel made for n once the graph holds it reads
// it as it is (where the session's threads make oneDNN choose another layout,
// it reorders it once into workspace, as it would the plain constant), and
// never hands over to ours, which reads the plain layout.
std::optional<PrepackedWeight> dnnl_pack_weight(const Graph& g, const Node& n, int threads);
// Where the node's weight (input 1) was pre-packed but no oneDNN kernel takes
// the node (never expected: the pass asks the same factory), an error kernel,
// so that our kernel never reads the packed bytes as the plain layout; nullptr
// for every other node. The CPU conv, gemm and matmul factories ask it before
// falling back to ours.
inline std::unique_ptr<Kernel> refuse_prepacked_weight(const Graph& g, const Node& n) {
    if (n.inputs.size() < 2 || !g.prepacked_weight(n.inputs[1].id)) return nullptr;
    return make_error_kernel("internal error: " + std::string(n.display()) +
                             "'s weight was packed for oneDNN's kernel, which declined the node");
}
// "oneDNN 2.6.3 (avx512_core)" — version and the ISA its JIT uses — or ""
// when graphrun was built without oneDNN.
std::string dnnl_text();

// The most scratch a oneDNN conv's blocked copies of its src and dst may take
// in one run (8 MiB): a conv whose copies would take more runs its batch in
// slices (dnnl_kernels.cpp). Set it before kernels are made (tests).
uint64_t conv_chunk_bytes();
void set_conv_chunk_bytes(uint64_t bytes);

}  // namespace graphrun::kernels
