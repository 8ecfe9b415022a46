// Splitting one kernel's loop over KernelContext::threads (--threads): the
// range is cut into contiguous chunks, the calling thread runs the first and
// std::threads the others. Nodes never run in parallel with each other.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <system_error>
#include <thread>

namespace graphrun::kernels {

constexpr int kMaxWorkers = 64;

// Calls body(begin, end) over disjoint chunks covering [0, n), each at least
// `grain` long (one chunk when n is small or threads <= 1). body must not throw.
// When a thread cannot be started, its chunk runs on the calling thread.
template <class Body>
void parallel_for(int64_t n, int threads, int64_t grain, const Body& body) {
    if (n <= 0) return;
    int64_t chunks = std::min<int64_t>(std::max(threads, 1), kMaxWorkers);
    chunks = std::min<int64_t>(chunks, std::max<int64_t>(n / std::max<int64_t>(grain, 1), 1));
    if (chunks <= 1) {
        body(int64_t{0}, n);
        return;
    }
    auto bounds = [&](int64_t c) { return n / chunks * c + std::min(c, n % chunks); };
    std::array<std::thread, kMaxWorkers> workers;
    for (int64_t c = 1; c < chunks; ++c) {
        const int64_t lo = bounds(c), hi = bounds(c + 1);
        try {
            workers[static_cast<size_t>(c)] = std::thread([&body, lo, hi] { body(lo, hi); });
        } catch (...) {  // std::system_error, std::bad_alloc
            body(lo, hi);
        }
    }
    body(int64_t{0}, bounds(1));
    for (int64_t c = 1; c < chunks; ++c)
        if (workers[static_cast<size_t>(c)].joinable()) workers[static_cast<size_t>(c)].join();
}

}  // namespace graphrun::kernels
