// Built without oneDNN (CMake did not find it): every factory declines and
// our own kernels run.
#include "engine/kernels/cpu/dnnl_kernels.h"

namespace graphrun::kernels {

std::unique_ptr<Kernel> make_dnnl_conv_kernel(const Graph&, const Node&, OwnKernelFactory) { return nullptr; }
bool dnnl_int8_runs(const Graph&, const Node&) { return false; }
std::unique_ptr<Kernel> make_dnnl_int8_kernel(const Graph&, const Node&) { return nullptr; }
bool dnnl_conv_runs_channels_last(const Graph&, const Node&, int) { return false; }
bool dnnl_conv_runs_winograd(const Graph&, const Node&) { return false; }
int dnnl_free_op_block() { return 0; }
std::unique_ptr<Kernel> make_dnnl_gemm_kernel(const Graph&, const Node&, OwnKernelFactory) { return nullptr; }
std::unique_ptr<Kernel> make_dnnl_matmul_kernel(const Graph&, const Node&, OwnKernelFactory) { return nullptr; }
bool dnnl_packs_weight(const Graph&, const Node&) { return false; }
std::optional<PrepackedWeight> dnnl_pack_weight(const Graph&, const Node&, int) { return std::nullopt; }
std::string dnnl_text() { return ""; }
uint64_t conv_chunk_bytes() { return 0; }
void set_conv_chunk_bytes(uint64_t) {}

}  // namespace graphrun::kernels
