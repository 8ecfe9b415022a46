// The CPU device's kernels (the interface is engine/kernel.h).
#pragma once
#include <memory>

#include "engine/ir/graph.h"
#include "engine/kernels/common/kernel.h"

namespace graphrun {

// The kernel for a validated node (every op of SPEC section 3 except LoopParam
// and Invalid). reshape and identity copy their input; the executor skips them
// when they alias.
std::unique_ptr<Kernel> make_cpu_kernel(const Graph& g, const Node& n);

// OpenBLAS's threads for a session: `threads` workers for gemm, and, when no
// node of the graph runs a matmul on the CPU, its idle workers stopped.
// OpenBLAS's state is the process's: sessions call this one at a time.
void set_blas_threads(int threads, bool graph_uses_blas);

// Stops OpenBLAS's idle workers, which spin for about a tenth of a second after
// the library loads: for commands that run no graph (check, convert), so that
// they have every core to themselves.
void stop_blas_workers();

}  // namespace graphrun
