// Tensor memory: one allocation entry point per device allocator, feeding one
// statistics struct (SPEC section 4). No tensor buffer bypasses it.
#pragma once
#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace graphrun {

struct MemoryStats {
    uint64_t in_use = 0;        // bytes allocated and not yet released (pending included)
    uint64_t peak = 0;          // most in_use ever
    uint64_t pending = 0;       // unreferenced, not yet released: the strategy's backlog
    uint64_t pending_peak = 0;  // most pending ever
    uint64_t reserved = 0;      // held from the system: in use plus cached
    uint64_t allocs = 0;
    uint64_t frees = 0;
    uint64_t live = 0;          // buffers not yet released
    uint64_t copied_in = 0;     // bytes copied onto this device from another
    // Constants held for the session (placed when an executable is loaded,
    // released at close or when another replaces it): never in the tensor
    // fields above, but under the same limit.
    uint64_t weights = 0;
    // Non-tensor buffers the device holds now (a library's workspace, an error
    // flag, kernel scratch, a const literal's device copy): never in the
    // tensor fields above, but under the same limit (in_use + weights + workspace).
    uint64_t workspace = 0;
    bool operator==(const MemoryStats&) const = default;
};

// Rounds a byte count up to the 64-byte granule every buffer is counted in.
inline uint64_t round_up_64(uint64_t bytes) { return (bytes + 63) / 64 * 64; }

// A pending buffer on its way back to its allocator.
struct PendingRelease {
    void* data;
    uint64_t bytes;
    class Allocator* alloc;
};

// The device allocator interface: one entry point to allocate and one to
// release, both counted; the backlog accounting the cleanup strategies use.
// Thread-safe: the background reclaimer releases while the executor allocates.
class Allocator {
public:
    virtual ~Allocator() = default;
    // `bytes` is a multiple of 64. nullptr when in_use would exceed the limit
    // (or the system has no memory); the caller decides what that means.
    virtual void* allocate(uint64_t bytes) = 0;
    virtual void release(void* p, uint64_t bytes) = 0;
    // The offset plan of the executable the session runs (Plan::cpu_offset):
    // its buffers go at their offsets in one block of `bytes`, taken from the
    // system at the first of them (0: no plan). Only the CPU's allocator has
    // one; another ignores it.
    virtual void set_offset_plan(uint64_t bytes) { (void)bytes; }
    // allocate(), at `offset` of the plan's block when [offset, offset +
    // bytes) is free there, and as allocate() does otherwise.
    virtual void* allocate_at(uint64_t bytes, uint64_t offset) {
        (void)offset;
        return allocate(bytes);
    }
    // Whether allocate_at(bytes, offset) would find its range free now
    // (what the background reclaimer has returned counted in).
    virtual bool planned_range_free(uint64_t offset, uint64_t bytes) {
        (void)offset;
        (void)bytes;
        return true;
    }
    // release() for each of n pending buffers of this allocator; one lock for
    // the lot where the allocator can (the reclaimer's batches).
    virtual void release_batch(const PendingRelease* items, size_t n) {
        for (size_t i = 0; i < n; ++i) release(items[i].data, items[i].bytes);
    }
    // n buffers that became unreferenced since the last call and go back now
    // (the safepoint strategy): counted as pending together (pending_peak sees
    // them) and released, under one lock where the allocator can.
    virtual void release_unreferenced(const PendingRelease* items, size_t n) {
        uint64_t bytes = 0;
        for (size_t i = 0; i < n; ++i) bytes += items[i].bytes;
        add_pending(bytes);
        release_batch(items, n);
    }
    // Releases a buffer that never became pending: a node's scratch copy of an
    // input from another device, released as soon as the node has run.
    virtual void release_scratch(void* p, uint64_t bytes) {
        add_pending(bytes);
        release(p, bytes);
    }
    // A constant's buffer for the session (MemoryStats::weights): `bytes` a
    // multiple of 64; nullptr when the limit (in_use + weights + workspace)
    // has no room or the system no memory. release_weights gives it back.
    virtual void* allocate_weights(uint64_t bytes) = 0;
    virtual void release_weights(void* p, uint64_t bytes) = 0;
    // Host bytes the session uses in place as weights (a CPU constant's bytes
    // as the graph holds them, not copied): counted in `weights` and under the
    // limit, but not obtained from the system (not in `reserved`). False when
    // the limit has no room. release_adopted_weights stops counting them.
    virtual bool adopt_weights(uint64_t bytes) = 0;
    virtual void release_adopted_weights(uint64_t bytes) = 0;
    // A buffer became unreferenced (pending) / a pending buffer is about to be released.
    virtual void add_pending(uint64_t bytes) = 0;
    // Gives every cached block back to the system.
    virtual void trim() = 0;
    virtual MemoryStats stats() const = 0;
    virtual void add_copied_in(uint64_t bytes) = 0;
    virtual uint64_t limit() const = 0;
    // Teardown begins: from here on pending_peak stays as the run left it, so
    // that no peak figure counts teardown's own releases (SPEC section 4).
    // `peak` moves only on an allocation, and teardown allocates nothing.
    virtual void freeze_peaks() {}

    // Test hook (Lua's Memcontrol): while `*countdown` > 0, every allocation
    // the hook may refuse counts it down, and the one that brings it to zero
    // fails. Allocators may share one countdown (a session gives every
    // device's allocator its SessionOptions::fail_allocation_countdown), so a
    // test arms one session, never the process. nullptr (the default): none.
    // Set before the allocator is used.
    void set_failure_countdown(std::atomic<int64_t>* countdown) { fail_countdown_ = countdown; }

protected:
    // Whether the hook makes this allocation fail (and counts it).
    bool injected_allocation_failure() {
        return fail_countdown_ && fail_countdown_->load(std::memory_order_relaxed) > 0 &&
               fail_countdown_->fetch_sub(1) == 1;
    }

private:
    std::atomic<int64_t>* fail_countdown_ = nullptr;
};

// A mutex for critical sections of a few hundred nanoseconds that two threads
// take often (the executor allocating, the reclaimer releasing): it spins a
// little before it sleeps, since a sleep and wake-up cost a hundred times the
// wait (glibc's plain mutex sleeps at once). TSan understands it as a mutex.
class BriefMutex {
public:
    void lock() {
        for (int i = 0; i < kSpins; ++i) {
            if (m_.try_lock()) return;
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        }
        m_.lock();
    }
    bool try_lock() { return m_.try_lock(); }
    void unlock() { m_.unlock(); }

private:
    static constexpr int kSpins = 100;  // a few microseconds
    std::mutex m_;
};

// The one accounting path of every device allocator (SPEC section 4): the
// limit on in_use, the statistics, zero-byte buffers and the failure-injection
// hook, under one lock. `Impl` says only how it gets, caches and gives back
// memory, in four members called with the lock held:
//   void* obtain_locked(uint64_t bytes);            // bytes > 0; nullptr: none to be had
//   void give_back_locked(void* p, uint64_t bytes);  // bytes > 0, p from obtain_locked
//   void trim_locked();                             // every cached block back to the system
//   uint64_t reserved_locked() const;               // held from the system: in use plus cached
// A template (CRTP), so that the executor's per-node allocate and release
// call the hooks directly, with nothing virtual between them.
template <class Impl>
class CountingAllocator : public Allocator {
public:
    explicit CountingAllocator(uint64_t limit_bytes) : limit_(limit_bytes) {}
    CountingAllocator(const CountingAllocator&) = delete;
    CountingAllocator& operator=(const CountingAllocator&) = delete;

    void* allocate(uint64_t bytes) override {
        if (injected_allocation_failure()) return nullptr;
        return allocate_counted(bytes);
    }
    void* allocate_at(uint64_t bytes, uint64_t offset) override {
        if (injected_allocation_failure()) return nullptr;
        return allocate_counted(bytes, Kind::Tensor, offset);
    }
    void set_offset_plan(uint64_t bytes) override {
        std::lock_guard<BriefMutex> lock(mu_);
        impl().set_offset_plan_locked(bytes);
    }
    bool planned_range_free(uint64_t offset, uint64_t bytes) override {
        std::lock_guard<BriefMutex> lock(mu_);
        return impl().range_free_locked(offset, bytes);
    }
    void release(void* p, uint64_t bytes) override {
        std::lock_guard<BriefMutex> lock(mu_);
        s_.pending -= std::min(s_.pending, bytes);
        release_locked(p, bytes);
    }
    void release_batch(const PendingRelease* items, size_t n) override {
        std::lock_guard<BriefMutex> lock(mu_);
        for (size_t i = 0; i < n; ++i) {
            s_.pending -= std::min(s_.pending, items[i].bytes);
            release_locked(items[i].data, items[i].bytes);
        }
    }
    void release_unreferenced(const PendingRelease* items, size_t n) override {
        std::lock_guard<BriefMutex> lock(mu_);
        uint64_t bytes = 0;
        for (size_t i = 0; i < n; ++i) bytes += items[i].bytes;
        if (!peaks_frozen_) s_.pending_peak = std::max(s_.pending_peak, s_.pending + bytes);
        for (size_t i = 0; i < n; ++i) release_locked(items[i].data, items[i].bytes);
    }
    void release_scratch(void* p, uint64_t bytes) override {
        std::lock_guard<BriefMutex> lock(mu_);
        release_locked(p, bytes);
    }
    void add_pending(uint64_t bytes) override {
        std::lock_guard<BriefMutex> lock(mu_);
        s_.pending += bytes;
        if (!peaks_frozen_) s_.pending_peak = std::max(s_.pending_peak, s_.pending);
    }
    void freeze_peaks() override {
        std::lock_guard<BriefMutex> lock(mu_);
        peaks_frozen_ = true;
    }
    void trim() override {
        std::lock_guard<BriefMutex> lock(mu_);
        impl().trim_locked();
    }
    MemoryStats stats() const override {
        std::lock_guard<BriefMutex> lock(mu_);
        MemoryStats s = s_;
        s.reserved = impl().reserved_locked();
        return s;
    }
    void add_copied_in(uint64_t bytes) override {
        std::lock_guard<BriefMutex> lock(mu_);
        s_.copied_in += bytes;
    }
    uint64_t limit() const override { return limit_; }

    // A non-tensor buffer of the device's own (see MemoryStats::workspace),
    // counted in `workspace` only; `bytes` a multiple of 64. `injectable`:
    // whether the failure-injection hook may refuse it (kernel scratch) or not
    // (what a device opens with). release_workspace gives it back.
    void* allocate_workspace(uint64_t bytes, bool injectable) {
        if (injectable && injected_allocation_failure()) return nullptr;
        return allocate_counted(bytes, Kind::Workspace);
    }
    void release_workspace(void* p, uint64_t bytes) {
        std::lock_guard<BriefMutex> lock(mu_);
        s_.workspace -= std::min(s_.workspace, bytes);
        if (bytes != 0) impl().give_back_locked(p, bytes);
    }
    void* allocate_weights(uint64_t bytes) override { return allocate_counted(bytes, Kind::Weights); }
    bool adopt_weights(uint64_t bytes) override {
        std::lock_guard<BriefMutex> lock(mu_);
        const uint64_t held = s_.in_use + s_.workspace + s_.weights;
        if (held + bytes > limit_ || held + bytes < held) return false;
        s_.weights += bytes;
        return true;
    }
    void release_adopted_weights(uint64_t bytes) override {
        std::lock_guard<BriefMutex> lock(mu_);
        s_.weights -= std::min(s_.weights, bytes);
    }
    void release_weights(void* p, uint64_t bytes) override {
        std::lock_guard<BriefMutex> lock(mu_);
        s_.weights -= std::min(s_.weights, bytes);
        if (bytes != 0) impl().give_back_locked(p, bytes);
    }

protected:
    enum class Kind { Tensor, Workspace, Weights };
    static constexpr uint64_t kAnywhere = UINT64_MAX;
    // allocate() without the failure-injection hook: a tensor buffer, a
    // workspace buffer or a weight (`offset`: in the offset plan's block, or
    // kAnywhere). The limit holds the three together.
    void* allocate_counted(uint64_t bytes, Kind kind = Kind::Tensor, uint64_t offset = kAnywhere) {
        std::lock_guard<BriefMutex> lock(mu_);
        const uint64_t held = s_.in_use + s_.workspace + s_.weights;
        if (held + bytes > limit_ || held + bytes < held) return nullptr;
        void* p = empty_buffer_;
        if (bytes != 0) {
            p = offset == kAnywhere ? impl().obtain_locked(bytes) : impl().obtain_at_locked(bytes, offset);
            if (!p) return nullptr;
        }
        if (kind == Kind::Workspace) {
            s_.workspace += bytes;
            return p;
        }
        if (kind == Kind::Weights) {
            s_.weights += bytes;
            return p;
        }
        s_.in_use += bytes;
        s_.peak = std::max(s_.peak, s_.in_use);
        ++s_.allocs;
        ++s_.live;
        return p;
    }
    // Counts n buffers of `bytes` in all as released (pending ones included),
    // for an Impl that hands the memory back its own way (CpuAllocator's
    // batches). Under mu_.
    void count_released_locked(uint64_t bytes, uint64_t n) {
        s_.pending -= std::min(s_.pending, bytes);
        s_.in_use -= std::min(s_.in_use, bytes);
        s_.frees += n;
        s_.live -= std::min(s_.live, n);
    }

    uint64_t in_use_locked() const { return s_.in_use; }

    // An Impl with no offset plan (the GPU's): these do what allocate() does.
    void set_offset_plan_locked(uint64_t) {}
    void* obtain_at_locked(uint64_t bytes, uint64_t) { return impl().obtain_locked(bytes); }
    bool range_free_locked(uint64_t, uint64_t) const { return true; }

    // Guards the statistics and whatever Impl keeps with them.
    mutable BriefMutex mu_;

private:
    Impl& impl() { return static_cast<Impl&>(*this); }
    const Impl& impl() const { return static_cast<const Impl&>(*this); }

    void release_locked(void* p, uint64_t bytes) {
        s_.in_use -= std::min(s_.in_use, bytes);
        ++s_.frees;
        if (s_.live > 0) --s_.live;
        if (bytes != 0) impl().give_back_locked(p, bytes);
    }

    // Zero-byte buffers are counted like any other but need no memory: this
    // address is their non-null answer. Kernels never dereference a buffer of
    // no elements, and copies of zero bytes touch nothing.
    alignas(256) static inline unsigned char empty_buffer_[256] = {};

    const uint64_t limit_;
    MemoryStats s_;  // `reserved` is Impl's: reserved_locked()
    bool peaks_frozen_ = false;  // freeze_peaks(): teardown has begun
};

// Host memory: 64-byte aligned, freed blocks kept for reuse (that is what
// `reserved` shows), everything returned to the system by trim().
//   - A buffer under kArenaBytes: free blocks cached by size, each reused for
//     its own size only (a run asks for the same sizes again and again).
//   - A larger one: the best fit among the free ranges of the segments taken
//     from the system so far, split where the rest is large enough, merged
//     with its free neighbours when released (as PyTorch's caching allocator
//     does with its large blocks); a new segment, of the buffer's size, only
//     when none fits. A graph of many tensor sizes then reuses what its early,
//     larger tensors freed: with a block kept per size, MobileNet-v2 at batch
//     16 held 289 MiB for a safepoint peak of 91 MiB.
// A segment wholly free is given back by trim().
class CpuAllocator final : public CountingAllocator<CpuAllocator> {
public:
    explicit CpuAllocator(uint64_t limit_bytes) : CountingAllocator(limit_bytes) {}
    ~CpuAllocator() override;

    // The reclaimer's batches, handed over by a vector swap (allocator.cpp).
    void release_batch(const PendingRelease* items, size_t n) override;

private:
    friend class CountingAllocator<CpuAllocator>;
    void* obtain_locked(uint64_t bytes);
    // The offset plan: its block is a segment of its own, taken at the first
    // planned buffer; a planned buffer is carved out of a free range of it at
    // its offset, and given back (merged) as any other. A range still held
    // (a buffer the reclaimer has not returned yet, or one the plan did not
    // foresee) sends the buffer to the best fit instead. Unplanned buffers
    // (kernel scratch) may use the block's free ranges by best fit too.
    void set_offset_plan_locked(uint64_t bytes);
    void* obtain_at_locked(uint64_t bytes, uint64_t offset);
    bool range_free_locked(uint64_t offset, uint64_t bytes);
    char* carve(char* p, uint64_t bytes);
    void* from_system_locked(uint64_t bytes);
    void give_back_locked(void* p, uint64_t bytes);
    void trim_locked();
    uint64_t reserved_locked() const { return reserved_; }

    void* take_cached(uint64_t bytes);
    std::vector<void*>& list_for(uint64_t bytes);
    // The segments' part (buffers of kArenaBytes or more).
    void* arena_take(uint64_t bytes);
    void arena_give_back(void* p);
    void arena_trim();
    void drain_returned();

  public:
    static constexpr uint64_t kArenaBytes = uint64_t{256} << 10;

  private:

    uint64_t reserved_ = 0;  // from aligned_alloc, not yet freed
    // Free blocks by size. A size's list keeps its capacity when emptied, so
    // that the steady state of a run (release a block, allocate one of the
    // same size) costs no heap allocation of its own.
    std::unordered_map<uint64_t, std::vector<void*>> cache_;
    std::vector<void*>* last_list_ = nullptr;  // cache_[last_bytes_], the last list used
    uint64_t last_bytes_ = 0;
    // Blocks release_batch returned, not yet sorted into cache_ (under mu_),
    // and the next batch being gathered (under incoming_mu_).
    struct Block {
        void* p;
        uint64_t bytes;
    };
    std::vector<Block> returned_;
    std::mutex incoming_mu_;
    std::vector<Block> incoming_;
    // The segments: each range of a segment, by address (free or handed
    // out), and the free ones by size for the best fit.
    struct Range {
        uint64_t bytes;
        char* segment;  // where its segment starts: ranges merge only within one
        bool free;
    };
    std::map<char*, Range> ranges_;
    std::set<std::pair<uint64_t, char*>> free_ranges_;
    // The segment that starts at `it` back to the system, when it is one free range.
    bool free_whole_segment(std::map<char*, Range>::iterator it);
    // The offset plan's block (a segment of ranges_; nullptr until its first
    // buffer or after a trim gave it back) and its size.
    char* plan_block_ = nullptr;
    uint64_t plan_bytes_ = 0;
    // Blocks of earlier plans that still hold a buffer: each goes back to the
    // system when its last range is given back.
    std::set<char*> retired_;
};

// 90% of the memory the system has available (MemAvailable), the default
// --memory-limit on the CPU.
uint64_t default_cpu_memory_limit();

// Parses "512MiB", "2GB", "1.5GiB", "1048576" (bytes). KB/MB/GB/TB are powers of
// 1000, KiB/MiB/GiB/TiB of 1024; K/M/G/T alone mean KiB/MiB/GiB/TiB.
bool parse_memory_size(const std::string& s, uint64_t& out);

}  // namespace graphrun
