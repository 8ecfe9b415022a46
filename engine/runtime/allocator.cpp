// The CPU allocator and memory sizes.
#include "engine/runtime/allocator.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace graphrun {

std::atomic<int64_t> g_fail_allocation_countdown{0};

namespace {
// Zero-byte buffers are counted like any other but need no memory.
alignas(64) unsigned char g_empty_buffer[64];
}  // namespace

CpuAllocator::CpuAllocator(uint64_t limit_bytes) : limit_(limit_bytes) {}

CpuAllocator::~CpuAllocator() {
    std::lock_guard<BriefMutex> lock(mu_);
    trim_locked();
}

void* CpuAllocator::allocate(uint64_t bytes) {
    if (g_fail_allocation_countdown.load(std::memory_order_relaxed) > 0 &&
        g_fail_allocation_countdown.fetch_sub(1) == 1)
        return nullptr;
    std::lock_guard<BriefMutex> lock(mu_);
    if (s_.in_use + bytes > limit_ || s_.in_use + bytes < s_.in_use) return nullptr;
    void* p = nullptr;
    if (bytes == 0) {
        p = g_empty_buffer;
    } else if (void* q = take_cached(bytes)) {
        p = q;
    } else {
        // Keep what the allocator holds from the system within the limit too.
        if (s_.reserved + bytes > limit_) trim_locked();
        p = std::aligned_alloc(64, bytes);
        if (!p) {
            trim_locked();
            p = std::aligned_alloc(64, bytes);
            if (!p) return nullptr;
        }
        s_.reserved += bytes;
    }
    s_.in_use += bytes;
    s_.peak = std::max(s_.peak, s_.in_use);
    ++s_.allocs;
    ++s_.live;
    return p;
}

void CpuAllocator::add_pending(uint64_t bytes) {
    std::lock_guard<BriefMutex> lock(mu_);
    s_.pending += bytes;
    s_.pending_peak = std::max(s_.pending_peak, s_.pending);
}

void CpuAllocator::release(void* p, uint64_t bytes) {
    std::lock_guard<BriefMutex> lock(mu_);
    s_.pending -= std::min(s_.pending, bytes);
    release_locked(p, bytes);
}

void CpuAllocator::release_batch(const PendingRelease* items, size_t n) {
    // The reclaimer's batches: the blocks are gathered under a lock of their
    // own, then counted and handed over under mu_ by a vector swap (an append
    // only when allocate() has not yet taken the last batch), and allocate()
    // sorts them into the free lists when it finds a list empty. mu_ is taken
    // once per batch for a few stores instead of once per 32 buffers, so the
    // executor seldom finds it held, and the free lists' cache lines stay on
    // the executor's core.
    std::lock_guard<std::mutex> gather(incoming_mu_);
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; ++i) {
        bytes += items[i].bytes;
        if (items[i].bytes) incoming_.push_back(Block{items[i].data, items[i].bytes});
    }
    std::lock_guard<BriefMutex> lock(mu_);
    s_.pending -= std::min(s_.pending, bytes);
    s_.in_use -= bytes;
    s_.frees += n;
    s_.live -= n;
    cached_bytes_ += bytes;
    if (returned_.empty()) returned_.swap(incoming_);
    else returned_.insert(returned_.end(), incoming_.begin(), incoming_.end());
    incoming_.clear();
}

void CpuAllocator::release_unreferenced(const PendingRelease* items, size_t n) {
    std::lock_guard<BriefMutex> lock(mu_);
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; ++i) bytes += items[i].bytes;
    s_.pending_peak = std::max(s_.pending_peak, s_.pending + bytes);
    for (size_t i = 0; i < n; ++i) release_locked(items[i].data, items[i].bytes);
}

void CpuAllocator::release_scratch(void* p, uint64_t bytes) {
    std::lock_guard<BriefMutex> lock(mu_);
    release_locked(p, bytes);
}

void CpuAllocator::release_locked(void* p, uint64_t bytes) {
    s_.in_use -= bytes;
    ++s_.frees;
    --s_.live;
    if (bytes == 0) return;
    list_for(bytes).push_back(p);
    cached_bytes_ += bytes;
}

// A cached block of `bytes`, from its free list or else from what the
// reclaimer returned since the last look; nullptr when there is none.
void* CpuAllocator::take_cached(uint64_t bytes) {
    std::vector<void*>* list = &list_for(bytes);
    if (list->empty() && !returned_.empty()) {
        for (const Block& b : returned_) list_for(b.bytes).push_back(b.p);
        returned_.clear();
        list = &list_for(bytes);
    }
    if (list->empty()) return nullptr;
    void* p = list->back();
    list->pop_back();
    cached_bytes_ -= bytes;
    return p;
}

// The free list of one size. The last one looked up is remembered: a run
// allocates and releases one size many times in a row (a hash lookup was 5%
// of a chain of tiny adds), and the map's nodes never move.
std::vector<void*>& CpuAllocator::list_for(uint64_t bytes) {
    if (!last_list_ || last_bytes_ != bytes) {
        last_list_ = &cache_[bytes];
        last_bytes_ = bytes;
    }
    return *last_list_;
}

void CpuAllocator::trim_locked() {
    for (const Block& b : returned_) {
        std::free(b.p);
        s_.reserved -= b.bytes;
    }
    returned_.clear();
    for (auto& [size, blocks] : cache_) {
        for (void* p : blocks) std::free(p);
        s_.reserved -= size * blocks.size();
    }
    cache_.clear();
    last_list_ = nullptr;
    cached_bytes_ = 0;
}

void CpuAllocator::trim() {
    std::lock_guard<BriefMutex> lock(mu_);
    trim_locked();
}

MemoryStats CpuAllocator::stats() const {
    std::lock_guard<BriefMutex> lock(mu_);
    return s_;
}

void CpuAllocator::add_copied_in(uint64_t bytes) {
    std::lock_guard<BriefMutex> lock(mu_);
    s_.copied_in += bytes;
}

uint64_t default_cpu_memory_limit() {
    std::ifstream f("/proc/meminfo");
    std::string key;
    uint64_t kb = 0;
    std::string unit;
    while (f >> key >> kb >> unit) {
        if (key == "MemAvailable:") return kb * 1024 / 10 * 9;
    }
    return uint64_t{8} << 30;  // no /proc: a modest default
}

bool parse_memory_size(const std::string& s, uint64_t& out) {
    size_t i = 0;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
    if (i == 0) return false;
    double v = 0;
    try {
        size_t used = 0;
        v = std::stod(s.substr(0, i), &used);
        if (used != i) return false;
    } catch (...) {
        return false;
    }
    std::string unit = s.substr(i);
    while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
    for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    double mult = 0;
    if (unit.empty() || unit == "b") mult = 1;
    else if (unit == "kb") mult = 1e3;
    else if (unit == "mb") mult = 1e6;
    else if (unit == "gb") mult = 1e9;
    else if (unit == "tb") mult = 1e12;
    else if (unit == "k" || unit == "kib") mult = 1024.0;
    else if (unit == "m" || unit == "mib") mult = 1024.0 * 1024;
    else if (unit == "g" || unit == "gib") mult = 1024.0 * 1024 * 1024;
    else if (unit == "t" || unit == "tib") mult = 1024.0 * 1024 * 1024 * 1024;
    else return false;
    double bytes = std::floor(v * mult);
    if (!(bytes >= 0) || bytes > 1.8e19) return false;
    out = static_cast<uint64_t>(bytes);
    return true;
}

}  // namespace graphrun
