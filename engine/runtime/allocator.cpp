// The CPU allocator (its cache; the counting is CountingAllocator's) and memory sizes.
#include "engine/runtime/allocator.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace graphrun {

CpuAllocator::~CpuAllocator() {
    std::lock_guard<BriefMutex> lock(mu_);
    trim_locked();
}

void* CpuAllocator::obtain_locked(uint64_t bytes) {
    if (bytes >= kArenaBytes) {
        drain_returned();
        return arena_take(bytes);
    }
    if (void* p = take_cached(bytes)) return p;
    return from_system_locked(bytes);
}

// `bytes` more from the system (counted in reserved_), the cache trimmed
// first where that would take reserved_ past the limit or the system has no
// memory; nullptr when it still has none.
void* CpuAllocator::from_system_locked(uint64_t bytes) {
    // Keep what the allocator holds from the system within the limit too.
    if (reserved_ + bytes > limit()) trim_locked();
    void* p = std::aligned_alloc(64, bytes);
    if (!p) {
        trim_locked();
        p = std::aligned_alloc(64, bytes);
        if (!p) return nullptr;
    }
    reserved_ += bytes;
    return p;
}

void CpuAllocator::give_back_locked(void* p, uint64_t bytes) {
    if (bytes >= kArenaBytes) arena_give_back(p);
    else list_for(bytes).push_back(p);
}

// What the reclaimer returned, to the free lists and the segments.
void CpuAllocator::drain_returned() {
    for (const Block& b : returned_) give_back_locked(b.p, b.bytes);
    returned_.clear();
}

// The smallest free range of at least `bytes` (split when the rest is
// kArenaBytes or more), else a new segment of `bytes`; nullptr when the
// system has no memory.
void* CpuAllocator::arena_take(uint64_t bytes) {
    auto fit = free_ranges_.lower_bound({bytes, nullptr});
    if (fit == free_ranges_.end()) {
        char* p = static_cast<char*>(from_system_locked(bytes));
        if (!p) return nullptr;
        ranges_.emplace(p, Range{bytes, p, false});
        return p;
    }
    char* p = fit->second;
    free_ranges_.erase(fit);
    Range& r = ranges_.at(p);
    r.free = false;
    if (r.bytes - bytes >= kArenaBytes) {  // the rest stays free
        const uint64_t rest = r.bytes - bytes;
        r.bytes = bytes;
        ranges_.emplace(p + bytes, Range{rest, r.segment, true});
        free_ranges_.emplace(rest, p + bytes);
    }
    return p;
}

// A range handed out by arena_take is free again, merged with a free range
// on either side within its segment.
void CpuAllocator::arena_give_back(void* ptr) {
    auto it = ranges_.find(static_cast<char*>(ptr));
    if (it == ranges_.end() || it->second.free) return;  // not the arena's: nothing to do
    it->second.free = true;
    auto next = std::next(it);
    if (next != ranges_.end() && next->second.free && next->second.segment == it->second.segment) {
        free_ranges_.erase({next->second.bytes, next->first});
        it->second.bytes += next->second.bytes;
        ranges_.erase(next);
    }
    if (it != ranges_.begin()) {
        auto prev = std::prev(it);
        if (prev->second.free && prev->second.segment == it->second.segment) {
            free_ranges_.erase({prev->second.bytes, prev->first});
            prev->second.bytes += it->second.bytes;
            ranges_.erase(it);
            it = prev;
        }
    }
    free_ranges_.emplace(it->second.bytes, it->first);
    // A retired plan's block, all free now: back to the system.
    if (!retired_.empty() && retired_.count(it->second.segment)) free_whole_segment(ranges_.find(it->second.segment));
}

void CpuAllocator::set_offset_plan_locked(uint64_t bytes) {
    if (bytes == plan_bytes_) return;
    // Another plan: the old block goes back to the system as soon as it is
    // all free (now, or at the give-back that frees its last range), so that
    // a session that loads one executable after another holds one block.
    if (plan_block_) {
        auto it = ranges_.find(plan_block_);
        if (!free_whole_segment(it)) retired_.insert(plan_block_);
    }
    plan_block_ = nullptr;
    plan_bytes_ = bytes;
}

// The segment that starts at `it`, given back to the system when it is one
// free range; false (nothing done) otherwise.
bool CpuAllocator::free_whole_segment(std::map<char*, Range>::iterator it) {
    if (it == ranges_.end() || !it->second.free || it->second.segment != it->first) return false;
    const auto next = std::next(it);
    if (next != ranges_.end() && next->second.segment == it->first) return false;
    free_ranges_.erase({it->second.bytes, it->first});
    reserved_ -= it->second.bytes;
    retired_.erase(it->first);
    if (it->first == plan_block_) plan_block_ = nullptr;
    std::free(it->first);
    ranges_.erase(it);
    return true;
}

void* CpuAllocator::obtain_at_locked(uint64_t bytes, uint64_t offset) {
    drain_returned();
    if (bytes < kArenaBytes || offset > plan_bytes_ || bytes > plan_bytes_ - offset) return obtain_locked(bytes);
    if (!plan_block_) {
        // A block over the memory limit is not taken: the buffers go by best fit.
        if (plan_bytes_ > limit()) return obtain_locked(bytes);
        char* p = static_cast<char*>(from_system_locked(plan_bytes_));
        if (!p) return obtain_locked(bytes);
        ranges_.emplace(p, Range{plan_bytes_, p, true});
        free_ranges_.emplace(plan_bytes_, p);
        plan_block_ = p;
    }
    if (char* p = carve(plan_block_ + offset, bytes)) return p;
    return arena_take(bytes);
}

bool CpuAllocator::range_free_locked(uint64_t offset, uint64_t bytes) {
    drain_returned();
    if (!plan_block_ || offset > plan_bytes_ || bytes > plan_bytes_ - offset) return true;
    char* p = plan_block_ + offset;
    auto it = ranges_.upper_bound(p);
    if (it == ranges_.begin()) return false;
    --it;
    return it->second.free && it->second.segment == plan_block_ && it->first + it->second.bytes >= p + bytes;
}

// [p, p + bytes) out of the plan's block, when one free range holds it all:
// the range is split around it (its free rest on either side stays free, of
// any size, and merges back when the buffer is given back); nullptr when
// any of it is held.
char* CpuAllocator::carve(char* p, uint64_t bytes) {
    auto it = ranges_.upper_bound(p);
    if (it == ranges_.begin()) return nullptr;
    --it;
    char* start = it->first;
    Range& r = it->second;
    if (!r.free || r.segment != plan_block_ || start + r.bytes < p + bytes) return nullptr;
    free_ranges_.erase({r.bytes, start});
    const uint64_t before = static_cast<uint64_t>(p - start);
    const uint64_t after = r.bytes - before - bytes;
    if (before) {
        r.bytes = before;
        free_ranges_.emplace(before, start);
        ranges_.emplace(p, Range{bytes, plan_block_, false});
    } else {
        r.bytes = bytes;
        r.free = false;
    }
    if (after) {
        ranges_.emplace(p + bytes, Range{after, plan_block_, true});
        free_ranges_.emplace(after, p + bytes);
    }
    return p;
}

// Every segment that is one free range (free ranges merge, so: a free range
// where its segment starts, with no range of that segment after it) goes back
// to the system.
void CpuAllocator::arena_trim() {
    for (auto r = ranges_.begin(); r != ranges_.end();) {
        const auto next = std::next(r);
        free_whole_segment(r);  // the plan's block too: the next planned buffer takes it anew
        r = next;
    }
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
    count_released_locked(bytes, n);
    if (returned_.empty()) returned_.swap(incoming_);
    else returned_.insert(returned_.end(), incoming_.begin(), incoming_.end());
    incoming_.clear();
}

// A cached block of `bytes`, from its free list or else from what the
// reclaimer returned since the last look; nullptr when there is none.
void* CpuAllocator::take_cached(uint64_t bytes) {
    std::vector<void*>* list = &list_for(bytes);
    if (list->empty() && !returned_.empty()) {
        drain_returned();
        list = &list_for(bytes);
    }
    if (list->empty()) return nullptr;
    void* p = list->back();
    list->pop_back();
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
    drain_returned();
    for (auto& [size, blocks] : cache_) {
        for (void* p : blocks) std::free(p);
        reserved_ -= size * blocks.size();
    }
    cache_.clear();
    last_list_ = nullptr;
    arena_trim();
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
