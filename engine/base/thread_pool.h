// The session's CPU workers: one kernel at a time splits its loop over them
// (--threads). Two ways, chosen at build time:
// - Built with oneDNN (GRAPHRUN_OPENMP_POOL): the workers are OpenMP's, the
//   team oneDNN's convolutions and matmuls run on, so that one set of threads
//   serves every kernel. With a pool of our own beside OpenMP's, a kernel
//   after a oneDNN one woke our sleeping worker while OpenMP's still spun
//   (GOMP_SPINCOUNT, cli/main.cpp) on the other core: on 2 cores SqueezeNet's
//   first max_pool took 0.17-0.25 ms with two threads, 0.23 with one, and
//   0.10-0.12 on OpenMP's team (ONNX Runtime: 0.10).
// - Otherwise (no oneDNN; the thread-sanitizer build, which cannot see into
//   libgomp): a fixed set of threads of our own, started once. Idle workers
//   spin for a few tens of microseconds, so back-to-back kernels hand over
//   without a wake up, then sleep on a condition variable.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace graphrun {

class ThreadPool {
  public:
    // `threads` counts every worker including the calling thread: ThreadPool(1)
    // starts no thread. A thread that cannot be started leaves the pool smaller.
    explicit ThreadPool(int threads);
    ~ThreadPool();  // joins the workers
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    // Threads that take part in parallel_for, the caller included (>= 1).
    int size() const { return size_; }

    // Says that the calling thread's OpenMP team (oneDNN's) has just finished
    // a parallel region: its threads spin for a while before they sleep, so a
    // job that follows soon finds them awake (see cold_below). Nothing without
    // GRAPHRUN_OPENMP_POOL.
    void note_team_used();

    // GRAPHRUN_OPENMP_POOL: where two threads of OpenMP's team share a CPU
    // (while the process may use one for each), moves them apart. Called
    // between passes; does nothing unless the team ran a region in the last
    // 100 us (it spins then: checking wakes nobody), and checks once a
    // millisecond at most. Both threads spin while they wait, so two on one
    // CPU take turns: an MLP's 0.35 ms passes took 2.2 ms for the first 80 ms
    // of a run, until Linux moved one (it keeps a thread that ran in the last
    // half millisecond where it is).
    void uncrowd();

    // Calls body(begin, end) over disjoint chunks that cover [0, n) exactly
    // once, each at least `grain` long (except when n < grain), and returns
    // when all have run; the calling thread runs chunks too. body must not
    // throw. A call made while the pool is busy (from inside a body, or from a
    // second thread) runs body(0, n) on the calling thread.
    //
    //
    // cold_below: when every worker is asleep (no job for a while: the node
    // before was a gemm, or a run of tiny tensors), a job of fewer than
    // cold_below elements runs on the caller alone and wakes nobody. Waking a
    // worker takes from microseconds to milliseconds on a virtual machine
    // (measured here: up to 3.5 ms before a woken worker ran), and the caller
    // then waits for the chunk it took; a job worth less than that is better
    // done alone. A longer job wakes the workers, which then spin between the
    // jobs that follow it.
    template <class Body>
    void parallel_for(int64_t n, int64_t grain, const Body& body, int64_t cold_below = 0) {
        if (n <= 0) return;
        const int64_t chunks = chunk_count(n, grain);
        if (chunks <= 1 || (n < cold_below && all_asleep()) || !dispatch(n, chunks, &call<Body>, &body))
            body(int64_t{0}, n);
    }

    // How parallel_for cuts [0, n): chunk c of `chunks` starts here.
    static int64_t chunk_begin(int64_t n, int64_t chunks, int64_t c) {
        return n / chunks * c + (c < n % chunks ? c : n % chunks);
    }

  private:
    using Invoke = void (*)(const void* body, int64_t begin, int64_t end);
    template <class Body>
    static void call(const void* body, int64_t begin, int64_t end) {
        (*static_cast<const Body*>(body))(begin, end);
    }

    int64_t chunk_count(int64_t n, int64_t grain) const;
    bool all_asleep() const;
    // Runs the job on the pool; false (nothing run) when the pool is busy or has no worker.
    bool dispatch(int64_t n, int64_t chunks, Invoke invoke, const void* body);
    void work(uint64_t word);  // claims and runs chunks of the job whose ticket is `word`
    void worker_loop();

    int size_ = 1;
    std::vector<std::thread> workers_;
    // GRAPHRUN_OPENMP_POOL: when OpenMP's team last finished a region (steady
    // clock, nanoseconds; 0: never).
    std::atomic<int64_t> team_used_ns_{0};
    int64_t uncrowd_checked_ns_ = 0;  // uncrowd()'s last check

    // The current job. `ticket_` packs (job number << 32 | chunks not yet
    // claimed); a claim is a compare-exchange on it, so a worker that arrives
    // after its job ended can never claim a chunk of the next one. The fields
    // below are written only while no chunk is claimable and none is running.
    std::atomic<uint64_t> ticket_{0};
    Invoke invoke_ = nullptr;
    const void* body_ = nullptr;
    int64_t n_ = 0, chunks_ = 0;
    std::atomic<int64_t> unfinished_{0};  // chunks of the current job not yet done
    std::atomic<bool> busy_{false};       // a parallel_for is running

    std::mutex mu_;  // guards the sleeping workers' wake-up
    std::condition_variable wake_;
    bool stop_ = false;
    std::atomic<int> sleeping_{0};     // workers waiting on wake_
    std::mutex done_mu_;  // guards the caller's wait for the last chunk
    std::condition_variable done_;
};

}  // namespace graphrun
