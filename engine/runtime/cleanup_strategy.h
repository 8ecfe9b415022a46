// The cleanup strategies (SPEC section 4): when a buffer nothing refers to
// any more goes back to its allocator. The executor calls the hooks of
// Cleanup at fixed points of a run and never asks which strategy it has:
//   close      keeps every unreferenced buffer until the session closes;
//   safepoint  releases them at the next safe point (before each node's
//              dispatch, at the end of each repeat pass and of each pass);
//   background hands them in batches to a reclaimer thread that releases
//              them while the executor goes on.
// Every unreferenced buffer counts as pending (MemoryStats::pending) from the
// moment the strategy says so until it is released; the figures printed for
// each strategy depend on exactly when, so each hook says it.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/runtime/allocator.h"
#include "engine/runtime/run_observer.h"
#include "engine/runtime/session_options.h"

namespace graphrun {

class Cleanup {
public:
    virtual ~Cleanup() = default;
    Cleanup(const Cleanup&) = delete;
    Cleanup& operator=(const Cleanup&) = delete;

    // The session opened every device and is about to run.
    virtual void start() {}
    // A buffer nothing refers to any more (the execution frame's last drop).
    virtual void on_unreferenced(const PendingRelease& buf);
    // Just before a node's dispatch (before its output is allocated) and at
    // the end of every repeat pass. Inline and without a virtual call while
    // the batch is below the strategy's threshold: it runs once per node.
    void at_safe_point() {
        if (pending_.size() >= flush_buffers_ || batch_bytes_ >= flush_bytes_) flush_at_safe_point();
    }
    // The end of a pass of the plan.
    virtual void at_pass_end() { at_safe_point(); }
    // An allocation of `bytes` from `a` failed, over its limit or not (the
    // device itself was full). True when the strategy gave back what it held
    // and the allocation is worth one more try. Called on the executing
    // thread, also from inside a kernel's run (GPU scratch).
    virtual bool release_for_retry(const Allocator& a, uint64_t bytes);
    // The run stopped, finished or not: what is unreferenced and not yet
    // counted shows as pending from here on, before anyone reads the figures.
    void at_run_end() { mark_pending(); }
    // A planned buffer's range (Plan::cpu_offset) is still held, maybe by a
    // buffer waiting to be released: whatever the strategy holds back that it
    // would release before close goes back now, on the executing thread, so
    // that the range can be reused (background: the batch, the reclaimer's
    // queue, and the batch it is releasing, waited for). Safepoint has
    // released everything at the safe point just before; close keeps all.
    virtual void release_backlog_now() {}
    // The session goes idle after a run (the run's time is taken).
    virtual void after_run() {}
    // Between runs: what the strategy gives back before close is given back
    // now, and is back when this returns (nothing under close).
    virtual void drain() {}
    // Appended to an out-of-memory message for an allocator with these figures.
    virtual std::string oom_note(const MemoryStats& s) const;
    // Teardown, after every value has been dropped: releases everything left
    // and stops any thread. Idempotent.
    virtual void close() { release_pending_now(); }
    virtual bool thread_running() const { return false; }
    // True when the session must hold every buffer until it closes (close):
    // then no node runs in place (Plan::donor is not used) and a node's copy
    // of an input from another device is handed here too, not released
    // after the node, so that nothing is reused or released before close and
    // a pass allocates exactly Plan::close_growth.
    virtual bool holds_until_close() const { return false; }
    // The largest static peak of one pass of the executable the session runs
    // now (background bounds its backlog by it); set between runs.
    virtual void set_static_peak(uint64_t bytes) { (void)bytes; }
    // Told of the reclaimer's release batches (background); before start().
    void set_observer(RunObserver* o) { observer_ = o; }

protected:
    // A safe point calls flush_at_safe_point() once the batch holds
    // `flush_buffers` buffers or `flush_bytes` bytes.
    Cleanup(size_t flush_buffers, uint64_t flush_bytes) : flush_bytes_(flush_bytes), flush_buffers_(flush_buffers) {}
    // The strategy's work at a safe point, the batch over its threshold.
    virtual void flush_at_safe_point() {}

    // Releases a list of pending buffers, one call per run of the same
    // allocator; `marked`: add_pending was called for them.
    static void release_all(const PendingRelease* items, size_t n, bool marked);
    // Counts pending_[pending_marked_, end) as pending: one add_pending per
    // run of the same allocator.
    void mark_pending();
    // Releases pending_ now (what is not yet counted is counted as it goes).
    void release_pending_now();

    // safepoint and close: the pending list; background: the batch to hand over.
    std::vector<PendingRelease> pending_;
    uint64_t batch_bytes_ = 0;  // bytes in pending_
    // pending_[0, pending_marked_) is counted as pending (add_pending), the
    // rest not yet: safepoint and background count a batch when it goes.
    size_t pending_marked_ = 0;
    RunObserver* observer_ = nullptr;
    // The batch's threshold in bytes: background lowers it to what its
    // backlog bound has room for.
    uint64_t flush_bytes_;

private:
    const size_t flush_buffers_;
};

// --cleanup=close: counts each buffer as pending at once (its out-of-memory
// message says how much of what is in use is unreferenced) and releases it
// at close. It holds every buffer the session allocates: nothing runs in
// place, nothing is released before close (SPEC section 4).
class CloseCleanup final : public Cleanup {
public:
    CloseCleanup() : Cleanup(SIZE_MAX, UINT64_MAX) {}  // a safe point never has work
    void on_unreferenced(const PendingRelease& buf) override;
    std::string oom_note(const MemoryStats& s) const override;
    bool holds_until_close() const override { return true; }
};

// --cleanup=safepoint: a buffer goes back at the safe point after it became
// unreferenced, counted as pending only then with the others of that safe
// point (one allocator call per safe point instead of two per buffer).
class SafepointCleanup final : public Cleanup {
public:
    SafepointCleanup() : Cleanup(1, UINT64_MAX) {}  // work as soon as one buffer waits
    void drain() override { release_pending_now(); }

protected:
    void flush_at_safe_point() override { release_pending_now(); }
};

// --cleanup=background: batches of buffers go to a reclaimer thread. The
// executor waits for it when the backlog passes a bound, so that the peak
// cannot grow with the iterations.
class BackgroundCleanup final : public Cleanup {
public:
    // `static_peak`: the largest static peak of one pass over the devices.
    explicit BackgroundCleanup(uint64_t static_peak);
    ~BackgroundCleanup() override;
    void start() override;
    void at_pass_end() override;
    bool release_for_retry(const Allocator& a, uint64_t bytes) override;
    void after_run() override;
    void close() override;
    bool thread_running() const override { return reclaimer_.joinable(); }
    void set_static_peak(uint64_t bytes) override;
    void drain() override { flush_to_reclaimer(0); }
    void release_backlog_now() override;

protected:
    // Hands the batch over: one lock per batch, not per buffer.
    void flush_at_safe_point() override { flush_to_reclaimer(backlog_limit_); }

private:
    // Hands the batch over (one lock per batch, not per buffer); then, if
    // more than `wait_above` bytes are still queued (0: always), waits until
    // the reclaimer has released them all.
    void flush_to_reclaimer(uint64_t wait_above);
    void reclaimer_loop();
    void stop_reclaimer();

    // A hand-over inside a pass waits when the backlog exceeds backlog_limit_
    // (the static peak, at least kMinBacklogBytes); the one at the end of a
    // pass when it exceeds static_peak_, so that no pass starts with more than
    // one static peak of garbage. The backlog is the queue and the batch not
    // yet handed over together: after each hand-over the batch's threshold
    // (flush_bytes_) is lowered to the room the queue left below
    // backlog_limit_, so that no safe point lets the two together pass it.
    // Read and set on the executing thread only.
    uint64_t static_peak_;
    uint64_t backlog_limit_;

    std::thread reclaimer_;
    std::mutex mu_;
    std::condition_variable cv_work_, cv_drained_;
    std::vector<PendingRelease> queue_;
    std::vector<PendingRelease> taken_;  // release_backlog_now's, from the queue (executing thread)
    uint64_t queued_bytes_ = 0;  // handed over, not yet released
    bool stop_ = false;
    bool busy_ = false;
};

// The strategy `kind`; `static_peak` as for BackgroundCleanup.
std::unique_ptr<Cleanup> make_cleanup(CleanupStrategy kind, uint64_t static_peak);

}  // namespace graphrun
