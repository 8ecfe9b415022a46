// The CPU kernel families, one source file each; make_kernel.cpp lists them
// for the one dispatch by op family (engine/kernels/common/families.h).
#pragma once
#include <memory>

#include "engine/ir/graph.h"
#include "engine/kernels/cpu/cpu_kernel.h"

namespace graphrun::kernels {

// create.cpp: const zeros ones fill range random_uniform random_normal
std::unique_ptr<Kernel> make_creation_kernel(const Graph& g, const Node& n);
// elementwise.cpp: add sub mul div maximum minimum pow, neg abs square relu exp log sqrt rsqrt tanh
// sigmoid sin cos
std::unique_ptr<Kernel> make_binary_kernel(const Graph& g, const Node& n);
std::unique_ptr<Kernel> make_unary_kernel(const Graph& g, const Node& n);
// matmul.cpp: matmul (gemm: gemm.cpp; the fused attention: attention.cpp)
std::unique_ptr<Kernel> make_matmul_kernel(const Graph& g, const Node& n);
// Multiply-adds of a batch of products (matmul's, attention's heads) below
// which they run one after another rather than whole ones per worker.
constexpr int64_t kPerWorkerMacs = int64_t{1} << 21;
// attention.cpp: a matmul node with an Attention epilogue (engine/ir/epilogue.h)
std::unique_ptr<Kernel> make_attention_kernel(const Graph& g, const Node& n);
// Picks OpenBLAS's kernels for a CPU newer than it knows (matmul.cpp); every
// kernel factory that calls CBLAS calls it first.
void select_openblas_core();
// Sets OpenBLAS's threads (process-wide; nodes never run concurrently): the
// session's --threads for one product split over them, 1 while the session's
// workers each run whole products of a batch (matmul.cpp).
void blas_threads(int n);
// What the CPU kernels run with on this machine, chosen by the features the
// CPU reports: "avx512 loops, OpenBLAS SkylakeX kernels" (`graphrun devices`).
std::string cpu_kernels_text();
// shape_ops.cpp: transpose reshape identity cast concat
std::unique_ptr<Kernel> make_transpose_kernel(const Graph& g, const Node& n);
std::unique_ptr<Kernel> make_copy_kernel(const Graph& g, const Node& n);  // reshape, identity
std::unique_ptr<Kernel> make_cast_kernel(const Graph& g, const Node& n);
std::unique_ptr<Kernel> make_concat_kernel(const Graph& g, const Node& n);
// reduce.cpp: reduce_sum reduce_max reduce_mean softmax
std::unique_ptr<Kernel> make_reduce_kernel(const Graph& g, const Node& n);
std::unique_ptr<Kernel> make_softmax_kernel(const Graph& g, const Node& n);  // softmax log_softmax
// logic.cpp: equal not_equal less less_equal greater greater_equal logical_and logical_or
// logical_xor logical_not where
std::unique_ptr<Kernel> make_logic_kernel(const Graph& g, const Node& n);
// activation.cpp: floor ceil round erf reciprocal softplus sign clip leaky_relu elu selu gelu
// (make_unary_kernel hands them on)
std::unique_ptr<Kernel> make_activation_kernel(const Graph& g, const Node& n);
// arg_reduce.cpp: argmax argmin
std::unique_ptr<Kernel> make_arg_reduce_kernel(const Graph& g, const Node& n);
// layout.cpp: slice gather expand split pad tile (squeeze unsqueeze flatten are copies)
std::unique_ptr<Kernel> make_layout_kernel(const Graph& g, const Node& n);
// norm.cpp: layer_norm batch_norm
std::unique_ptr<Kernel> make_norm_kernel(const Graph& g, const Node& n);
// gemm.cpp: gemm (make_matmul_kernel hands it on, after choosing OpenBLAS's kernels)
std::unique_ptr<Kernel> make_gemm_kernel(const Graph& g, const Node& n);
// conv.cpp: conv conv_transpose; pool.cpp: max_pool avg_pool global_avg_pool global_max_pool
// (make_conv_kernel hands the pools on)
std::unique_ptr<Kernel> make_conv_kernel(const Graph& g, const Node& n);
// index_ops.cpp: top_k scatter_elements scatter_nd
std::unique_ptr<Kernel> make_index_kernel(const Graph& g, const Node& n);

}  // namespace graphrun::kernels
