// Splitting one kernel's loop over the session's workers (KernelContext::pool,
// sized by --threads). Nodes never run in parallel with each other.
#pragma once
#include <cstdint>

#include "engine/kernels/common/kernel.h"
#include "engine/base/thread_pool.h"

namespace graphrun::kernels {

// The cold_below for a job of `items` over input `x`: all of them when x is
// under kColdBytes (it then runs on the caller alone if the workers sleep),
// none otherwise. Between two BLAS or oneDNN calls the workers have gone to
// sleep while the library's own threads still spin: a woken worker of ours
// shares a core with one of them, slower than the caller alone.
constexpr int64_t kColdBytes = int64_t{2} << 20;
inline int64_t cold_rows(const TensorRef& x, int64_t items) {
    return x.numel * static_cast<int64_t>(dtype_size(x.dtype)) < kColdBytes ? items + 1 : 0;
}

// Calls body(begin, end) over disjoint chunks covering [0, n), each at least
// `grain` long. Without a pool, or when n < 2 * grain, one call body(0, n) on
// the calling thread: no allocation, no hand-over, so tiny tensors cost
// nanoseconds. body must not throw.
// cold_below: a job of fewer elements does not wake sleeping workers
// (ThreadPool::parallel_for); 0 for a job that always does.
template <class Body>
inline void parallel_for(const KernelContext& ctx, int64_t n, int64_t grain, const Body& body,
                         int64_t cold_below = 0) {
    if (n <= 0) return;
    if (ctx.pool != nullptr && n >= 2 * grain && ctx.pool->size() > 1)
        ctx.pool->parallel_for(n, grain, body, cold_below);
    else
        body(int64_t{0}, n);
}

}  // namespace graphrun::kernels
