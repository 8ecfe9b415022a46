// The session's CPU workers (see thread_pool.h): OpenMP's team where the
// build has oneDNN, else threads of our own with job hand-over through one
// atomic ticket, a short spin, then a condition variable.
#include "engine/base/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <system_error>

#if defined(GRAPHRUN_OPENMP_POOL)
#include <sched.h>

#include <vector>

// libgomp's entry points, called directly rather than through `#pragma omp`:
// the team must be libgomp's, the one oneDNN (Debian's, built with GCC) runs
// on, whichever compiler builds graphrun; clang's -fopenmp targets LLVM's
// runtime instead, and its -fopenmp=libgomp compiles the pragma away.
// GOMP_parallel (libgomp's ABI since GCC 4.9) runs fn(data) on a team of
// num_threads, the caller included, and returns when all have.
extern "C" void GOMP_parallel(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags);
extern "C" int omp_get_thread_num(void);
#endif

namespace graphrun {

namespace {

// Chunks per thread: more than one, so that a worker that wakes up late (or
// a core taken by another process) costs its chunks, not the whole job.
constexpr int64_t kChunksPerThread = 4;
// How long an idle worker, or a caller waiting for the last chunk, spins
// before it sleeps: long enough to span the executor's work between two
// kernels, short enough not to keep a core from other processes for long.
constexpr auto kSpin = std::chrono::microseconds(50);
constexpr uint64_t kRemainingMask = 0xffffffffu;
#if defined(GRAPHRUN_OPENMP_POOL)
// Runs f() on each thread of a team of `threads` (OpenMP's parallel region).
template <class F>
void on_team(int threads, F& f) {
    GOMP_parallel([](void* p) { (*static_cast<F*>(p))(); }, &f, static_cast<unsigned>(threads), 0);
}

// How long after a region OpenMP's threads are taken to be still spinning:
// libgomp spins GOMP_SPINCOUNT pauses (10000 from graphrun, cli/main.cpp:
// 180 to 250 us on these machines, 18 to 25 ns a pause) before it sleeps;
// less, to be safe.
constexpr auto kTeamSpin = std::chrono::microseconds(100);

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
#endif

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// Spins until done() or kSpin has passed; true when done() held.
template <class Done>
bool spin_until(Done done) {
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
        for (int i = 0; i < 64; ++i) {
            if (done()) return true;
            cpu_relax();
        }
        if (std::chrono::steady_clock::now() - start > kSpin) return done();
    }
}

#if defined(GRAPHRUN_OPENMP_POOL)
// Moves each thread of OpenMP's team onto a CPU of its own (as far as the
// process may use enough of them), then lets it go anywhere again.
void spread_team(int threads) {
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
    std::vector<int> cpus;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
    if (cpus.size() < static_cast<size_t>(threads)) return;
    auto pin_and_release = [&] {
        const int t = omp_get_thread_num();
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpus[static_cast<size_t>(t) % cpus.size()], &one);
        if (sched_setaffinity(0, sizeof one, &one) == 0) sched_setaffinity(0, sizeof allowed, &allowed);
    };
    on_team(threads, pin_and_release);
}
#endif

}  // namespace

ThreadPool::ThreadPool(int threads) {
    const int want = std::clamp(threads, 1, 1024) - 1;
#if defined(GRAPHRUN_OPENMP_POOL)
    size_ = 1 + want;  // OpenMP starts the team's threads on the first region
#else
    try {
        workers_.reserve(static_cast<size_t>(want));
        for (int i = 0; i < want; ++i) workers_.emplace_back([this] { worker_loop(); });
    } catch (...) {  // std::system_error (no more threads), std::bad_alloc: a smaller pool
    }
    size_ = 1 + static_cast<int>(workers_.size());
#endif
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
}

void ThreadPool::uncrowd() {
#if defined(GRAPHRUN_OPENMP_POOL)
    if (size_ <= 1) return;
    const int64_t now = now_ns(), used = team_used_ns_.load(std::memory_order_relaxed);
    // Only while the team spins (a region now wakes nobody), and once a millisecond at most.
    if (used == 0 || now - used > std::chrono::nanoseconds(kTeamSpin).count() ||
        now - uncrowd_checked_ns_ < 1000000)
        return;
    uncrowd_checked_ns_ = now;
    if (busy_.exchange(true, std::memory_order_acquire)) return;
    constexpr int kMaxTeam = 64;
    const int team = std::min(size_, kMaxTeam);
    int cpu[kMaxTeam];
    std::fill(cpu, cpu + kMaxTeam, -1);  // OpenMP may give a smaller team
    bool crowded = false;
    auto where = [&] {
        const int t = omp_get_thread_num();
        if (t >= 0 && t < kMaxTeam) cpu[t] = sched_getcpu();
    };
    on_team(team, where);
    for (int i = 0; i < team && !crowded; ++i)
        for (int j = i + 1; j < team; ++j) crowded = crowded || (cpu[i] >= 0 && cpu[i] == cpu[j]);
    if (crowded) spread_team(team);
    note_team_used();
    busy_.store(false, std::memory_order_release);
#endif
}

void ThreadPool::note_team_used() {
#if defined(GRAPHRUN_OPENMP_POOL)
    team_used_ns_.store(now_ns(), std::memory_order_relaxed);
#endif
}

bool ThreadPool::all_asleep() const {
#if defined(GRAPHRUN_OPENMP_POOL)
    const int64_t used = team_used_ns_.load(std::memory_order_relaxed);
    return used == 0 || now_ns() - used > std::chrono::nanoseconds(kTeamSpin).count();
#else
    return sleeping_.load(std::memory_order_relaxed) == static_cast<int>(workers_.size());
#endif
}

int64_t ThreadPool::chunk_count(int64_t n, int64_t grain) const {
    if (size_ <= 1) return 1;
    const int64_t by_grain = n / std::max<int64_t>(grain, 1);
    return std::max<int64_t>(1, std::min<int64_t>(by_grain, size_ * kChunksPerThread));
}

bool ThreadPool::dispatch(int64_t n, int64_t chunks, Invoke invoke, const void* body) {
#if defined(GRAPHRUN_OPENMP_POOL)
    if (size_ <= 1 || busy_.exchange(true, std::memory_order_acquire)) return false;
    // Chunks claimed in turn, as the workers of our own claim them: a thread
    // that joins the team late takes what is left.
    std::atomic<int64_t> next{0};
    const int team = static_cast<int>(std::min<int64_t>(chunks, size_));
    auto claim = [&] {
        for (int64_t c; (c = next.fetch_add(1, std::memory_order_relaxed)) < chunks;)
            invoke(body, chunk_begin(n, chunks, c), chunk_begin(n, chunks, c + 1));
    };
    on_team(team, claim);
    note_team_used();
    busy_.store(false, std::memory_order_release);
    return true;
#else
    if (workers_.empty() || busy_.exchange(true, std::memory_order_acquire)) return false;
    // No chunk of the previous job is claimable or running: the fields are ours.
    invoke_ = invoke;
    body_ = body;
    n_ = n;
    chunks_ = chunks;
    unfinished_.store(chunks, std::memory_order_relaxed);
    const uint64_t job = ((ticket_.load(std::memory_order_relaxed) >> 32) + 1) & kRemainingMask;
    const uint64_t ticket = job << 32 | static_cast<uint64_t>(chunks);
    ticket_.store(ticket, std::memory_order_release);
    {
        // Taking the lock orders this wake-up after a sleeper's check of the
        // ticket: it either saw the new job or is waiting and gets notified.
        std::lock_guard<std::mutex> lock(mu_);
    }
    wake_.notify_all();
    work(ticket);
    auto finished = [this] { return unfinished_.load(std::memory_order_acquire) == 0; };
    if (!spin_until(finished)) {
        std::unique_lock<std::mutex> lock(done_mu_);
        done_.wait(lock, finished);
    }
    busy_.store(false, std::memory_order_release);
    return true;
#endif
}

void ThreadPool::work(uint64_t w) {
    const uint64_t job = w >> 32;
    while ((w >> 32) == job && (w & kRemainingMask) != 0) {
        // A claim succeeds only on the ticket of this job with chunks left.
        if (!ticket_.compare_exchange_weak(w, w - 1, std::memory_order_acq_rel,
                                           std::memory_order_acquire))
            continue;
        const int64_t c = chunks_ - static_cast<int64_t>(w & kRemainingMask);
        invoke_(body_, chunk_begin(n_, chunks_, c), chunk_begin(n_, chunks_, c + 1));
        if (unfinished_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            std::lock_guard<std::mutex> lock(done_mu_);
            done_.notify_one();
        }
        w = ticket_.load(std::memory_order_acquire);
    }
}

void ThreadPool::worker_loop() {
    uint64_t seen = 0;  // the job number last taken part in
    for (;;) {
        uint64_t w = ticket_.load(std::memory_order_acquire);
        if ((w >> 32) == seen) {
            auto new_job = [&] {
                w = ticket_.load(std::memory_order_acquire);
                return (w >> 32) != seen;
            };
            if (!spin_until(new_job)) {
                std::unique_lock<std::mutex> lock(mu_);
                sleeping_.fetch_add(1, std::memory_order_relaxed);
                wake_.wait(lock, [&] { return stop_ || new_job(); });
                sleeping_.fetch_sub(1, std::memory_order_relaxed);
                if (stop_) return;
            }
        }
        seen = w >> 32;
        work(w);
    }
}

}  // namespace graphrun
