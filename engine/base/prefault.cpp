// Prefaulter: MADV_POPULATE_WRITE (Linux 5.14) in steps that trail the filler.
#include "engine/base/prefault.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <system_error>

namespace graphrun {

namespace {

constexpr size_t kStep = size_t{2} << 20;  // populated per system call

size_t page_size() {
    static const size_t p = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return p;
}

}  // namespace

Prefaulter::Prefaulter(void* base, size_t bytes, size_t ahead) : ahead_(ahead) {
#ifdef MADV_POPULATE_WRITE
    // Whole pages inside the buffer only: the pages at its ends may hold
    // other allocations, which the kernel would fault in as well (harmless,
    // but not ours to touch).
    const size_t page = page_size();
    const auto start = reinterpret_cast<uintptr_t>(base);
    const uintptr_t first = (start + page - 1) / page * page;
    const uintptr_t last = (start + bytes) / page * page;
    if (last <= first) return;
    base_ = reinterpret_cast<char*>(first);
    bytes_ = last - first;
    // One call up front says whether the kernel supports it.
    if (madvise(base_, page, MADV_POPULATE_WRITE) != 0) return;
    try {
        thread_ = std::thread([this] { loop(); });
    } catch (const std::system_error&) {
        // No thread to be had: the filler faults its pages in itself.
    }
#else
    (void)base;
    (void)bytes;
#endif
}

void Prefaulter::stop() {
    if (!thread_.joinable()) return;
    stop_.store(true);
    used_.store(SIZE_MAX);  // a new value: wakes a wait() begun before the notify
    used_.notify_one();
    thread_.join();
}

void Prefaulter::loop() {
#ifdef MADV_POPULATE_WRITE
    const auto origin = reinterpret_cast<uintptr_t>(base_);
    size_t done = page_size();  // the probe in the constructor
    while (done < bytes_) {
        const size_t used = used_.load();
        if (stop_.load()) return;  // stop() sets stop_ before used_
        const size_t target = used >= bytes_ - std::min(bytes_, ahead_) ? bytes_ : used + ahead_;
        if (done < target) {
            const size_t n = std::min(kStep, target - done);
            if (madvise(reinterpret_cast<void*>(origin + done), n, MADV_POPULATE_WRITE) != 0) return;
            done += n;
            continue;
        }
        // Far enough ahead: sleep until the filler moves on (or stops).
        waiting_.store(true);
        if (!stop_.load()) used_.wait(used);
        waiting_.store(false);
    }
#endif
}

}  // namespace graphrun
