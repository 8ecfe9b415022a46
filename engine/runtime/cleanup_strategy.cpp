// The three cleanup strategies and the pending list they share.
#include "engine/runtime/cleanup_strategy.h"

#include <algorithm>

namespace graphrun {

const char* cleanup_name(CleanupStrategy s) {
    switch (s) {
        case CleanupStrategy::Background: return "background";
        case CleanupStrategy::Safepoint: return "safepoint";
        case CleanupStrategy::Close: return "close";
    }
    return "?";
}

std::unique_ptr<Cleanup> make_cleanup(CleanupStrategy kind, uint64_t static_peak) {
    switch (kind) {
        case CleanupStrategy::Background: return std::make_unique<BackgroundCleanup>(static_peak);
        case CleanupStrategy::Safepoint: return std::make_unique<SafepointCleanup>();
        case CleanupStrategy::Close: return std::make_unique<CloseCleanup>();
    }
    return std::make_unique<CloseCleanup>();
}

// --- the pending list -------------------------------------------------------

// safepoint and background count pending_ as pending together when it goes
// (mark_pending): one allocator call per batch instead of one per buffer.
void Cleanup::on_unreferenced(const PendingRelease& buf) {
    pending_.push_back(buf);
    batch_bytes_ += buf.bytes;
}

bool Cleanup::release_for_retry(const Allocator&, uint64_t) { return false; }

std::string Cleanup::oom_note(const MemoryStats&) const { return {}; }

void Cleanup::release_all(const PendingRelease* items, size_t n, bool marked) {
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && items[j].alloc == items[i].alloc) ++j;
        if (marked)
            items[i].alloc->release_batch(items + i, j - i);
        else
            items[i].alloc->release_unreferenced(items + i, j - i);
        i = j;
    }
}

void Cleanup::mark_pending() {
    for (size_t i = pending_marked_; i < pending_.size();) {
        uint64_t bytes = 0;
        size_t j = i;
        for (; j < pending_.size() && pending_[j].alloc == pending_[i].alloc; ++j) bytes += pending_[j].bytes;
        pending_[i].alloc->add_pending(bytes);
        i = j;
    }
    pending_marked_ = pending_.size();
}

void Cleanup::release_pending_now() {
    // Under safepoint a buffer is released at the safe point after it became
    // unreferenced, and is counted as pending only then, with the others of
    // that safe point: one allocator call per safe point instead of two per
    // buffer. A run that stops between two safe points (an error, a signal)
    // counts what is left with mark_pending(), before anyone reads the figures.
    release_all(pending_.data(), pending_marked_, true);
    release_all(pending_.data() + pending_marked_, pending_.size() - pending_marked_, false);
    pending_marked_ = 0;
    pending_.clear();
    batch_bytes_ = 0;
}

// --- close ------------------------------------------------------------------

void CloseCleanup::on_unreferenced(const PendingRelease& buf) {
    Cleanup::on_unreferenced(buf);
    buf.alloc->add_pending(buf.bytes);
    pending_marked_ = pending_.size();
}

std::string CloseCleanup::oom_note(const MemoryStats& s) const {
    if (s.pending == 0) return {};
    return " (" + std::to_string(s.pending) +
           " of the bytes in use are unreferenced tensors that --cleanup=close keeps until the session "
           "closes; --cleanup=safepoint or background would release them)";
}

// --- background -------------------------------------------------------------

namespace {
// The background strategy hands buffers to the reclaimer once a batch holds
// this many buffers or bytes, and at the end of every pass.
constexpr size_t kBatchBuffers = 256;
constexpr uint64_t kBatchBytes = uint64_t{1} << 20;
// A hand-over wakes a sleeping reclaimer only once this many buffers (or
// kBatchBytes) wait for it, or when the executing thread is about to wait for
// it. A wake-up is a system call and, on a virtual machine, an interrupt to
// the other core: 5 to 10 us of the executing thread's time, which a chain of
// tiny tensors must not pay every 256 nodes (measured: 0.10-0.11 us per node
// with a wake per 256 buffers, 0.07 with one per 4096).
constexpr size_t kWakeBuffers = 4096;
// The backlog may always reach this before the executing thread waits, even
// when one pass's static peak is smaller: otherwise a graph of tiny tensors
// would wait for the reclaimer (two thread switches) at every hand-over.
constexpr uint64_t kMinBacklogBytes = 4 * kBatchBytes;
}  // namespace

BackgroundCleanup::BackgroundCleanup(uint64_t static_peak)
    : Cleanup(kBatchBuffers, kBatchBytes),
      static_peak_(static_peak), backlog_limit_(std::max(static_peak, kMinBacklogBytes)) {}

BackgroundCleanup::~BackgroundCleanup() { stop_reclaimer(); }

void BackgroundCleanup::set_static_peak(uint64_t bytes) {
    static_peak_ = bytes;
    backlog_limit_ = std::max(bytes, kMinBacklogBytes);
}

void BackgroundCleanup::start() {
    if (!reclaimer_.joinable() && !stop_) reclaimer_ = std::thread([this] { reclaimer_loop(); });
}

void BackgroundCleanup::at_pass_end() {
    at_safe_point();
    flush_to_reclaimer(static_peak_);
}

// The backlog goes back before the allocation fails: over the limit, always;
// below it (the device itself is full, or its allocator failed otherwise: a
// GPU whose other users took memory, a kernel's scratch), when the backlog
// holds anything. The retry then allocates after the drain; the GPU's
// allocator synchronizes its stream and trims its pool when the first try of
// that allocation fails (gpu/cuda_allocator.cpp), so that the blocks the
// drain freed in stream order are free to be had.
bool BackgroundCleanup::release_for_retry(const Allocator& a, uint64_t bytes) {
    if (const MemoryStats s = a.stats(); s.in_use + s.workspace + s.weights + bytes <= a.limit()) {
        bool backlog = !pending_.empty();
        if (!backlog) {
            std::lock_guard<std::mutex> lock(mu_);
            backlog = queued_bytes_ > 0;
        }
        if (!backlog) return false;  // nothing to give back: the failure stands
    }
    flush_to_reclaimer(0);
    return true;
}

void BackgroundCleanup::after_run() {
    // The reclaimer may sleep on less than a wake-up's worth of buffers: it
    // gets them now, rather than while the session stays open or at close.
    if (reclaimer_.joinable()) cv_work_.notify_one();
}

void BackgroundCleanup::close() {
    stop_reclaimer();
    release_pending_now();
}

void BackgroundCleanup::stop_reclaimer() {
    if (!reclaimer_.joinable()) return;
    mark_pending();
    {
        std::lock_guard<std::mutex> lock(mu_);
        queue_.insert(queue_.end(), pending_.begin(), pending_.end());
        pending_.clear();
        pending_marked_ = 0;
        batch_bytes_ = 0;
        stop_ = true;
    }
    cv_work_.notify_one();
    reclaimer_.join();
}

void BackgroundCleanup::flush_to_reclaimer(uint64_t wait_above) {
    if (!reclaimer_.joinable()) {  // not started, or stopped: nobody to hand over to
        release_pending_now();
        return;
    }
    mark_pending();  // the batch counts as pending from its hand-over on
    std::unique_lock<std::mutex> lock(mu_);
    if (!pending_.empty()) {
        if (queue_.empty()) queue_.swap(pending_);
        else {
            queue_.insert(queue_.end(), pending_.begin(), pending_.end());
            pending_.clear();
        }
        pending_marked_ = 0;
        queued_bytes_ += batch_bytes_;
        batch_bytes_ = 0;
    }
    const bool wait = queued_bytes_ > wait_above || wait_above == 0;
    // A reclaimer that is not waiting needs no wake-up; a waiting one gets it
    // here (without a waiter, notify_one costs no system call).
    if (wait || queue_.size() >= kWakeBuffers || queued_bytes_ >= kBatchBytes) cv_work_.notify_one();
    if (wait) cv_drained_.wait(lock, [this] { return queue_.empty() && !busy_; });
    // The queue only shrinks from here (the reclaimer releases it): the next
    // safe point whose batch would take queue and batch past the bound hands
    // the batch over, and waits.
    const uint64_t room = backlog_limit_ - std::min(queued_bytes_, backlog_limit_);
    flush_bytes_ = std::min(kBatchBytes, room + 1);
}

// The executing thread releases the backlog itself: no wake-up and no
// thread switch to wait for, only the releases (a planned range is wanted
// now, and the reclaimer may not be running at all). A batch the reclaimer
// has already taken is waited for: it is being released.
void BackgroundCleanup::release_backlog_now() {
    if (!reclaimer_.joinable()) {
        release_pending_now();
        return;
    }
    std::vector<PendingRelease>& work = taken_;
    uint64_t room = 0;
    {
        std::unique_lock<std::mutex> lock(mu_);
        work.swap(queue_);
        cv_drained_.wait(lock, [this] { return !busy_; });
        uint64_t done = 0;
        for (const PendingRelease& f : work) done += f.bytes;
        queued_bytes_ -= std::min(queued_bytes_, done);
        room = backlog_limit_ - std::min(queued_bytes_, backlog_limit_);
    }
    release_all(work.data(), work.size(), true);  // counted as pending when handed over
    work.clear();  // its capacity goes to the queue at the next call
    release_pending_now();
    flush_bytes_ = std::min(kBatchBytes, room + 1);
}

void BackgroundCleanup::reclaimer_loop() {
    std::vector<PendingRelease> work;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
        cv_work_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty() && stop_) break;
        work.swap(queue_);
        busy_ = true;
        lock.unlock();
        uint64_t done = 0;
        for (const PendingRelease& f : work) done += f.bytes;
        const RunClock::time_point t0 = observer_ ? RunClock::now() : RunClock::time_point{};
        release_all(work.data(), work.size(), true);
        if (observer_) observer_->on_release_batch(t0, RunClock::now(), work.size(), done);
        work.clear();
        lock.lock();
        queued_bytes_ -= done;
        busy_ = false;
        if (queue_.empty()) cv_drained_.notify_all();
    }
    cv_drained_.notify_all();
}

}  // namespace graphrun
