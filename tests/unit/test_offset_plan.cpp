// The CPU's offset plan (Plan::cpu_offset, issue 25): every large buffer of a
// plan without loops has its place in one block, and the CPU allocator puts
// it there. Under safepoint the run then takes exactly the block (every
// planned range is free when its buffer is allocated: a range the plan got
// wrong would send the buffer to another segment and show in `reserved`);
// background releases its backlog when a planned range still holds it; close
// plans nothing. Results are bit for bit those of a run without the plan.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "engine/plan/plan.h"
#include "engine/runtime/allocator.h"
#include "engine/runtime/session.h"
#include "tests/unit/prepare_helpers.h"

using namespace graphrun;

namespace {

// Buffers of 256 KiB to 2 MiB with lifetimes that end in another order than
// they begin (a skip connection, a value read again at the end), in-place
// elementwise nodes, an alias, and small values the plan leaves to the free
// lists.
const char* kScript = R"(
x = random_uniform([64, 4096], seed=1)
a = transpose(x)
b = tile(x, repeats=[2, 1])
c = slice(b, starts=[32], ends=[96])
d = concat(a, transpose(c), axis=1)
e = softmax(d, axis=-1)
f = transpose(e)
g = slice(f, starts=[0], ends=[64]) * 2.0 + x
r = reshape(g, shape=[4096, 64])
h = reduce_sum(r, axes=[1])
k = concat(h, reduce_sum(b, axes=[0]))
output k, g
)";

using Loaded = test::PlannedScript;

Loaded load(const std::string& src) { return test::plan_script(src); }

struct Ran {
    std::vector<HostTensor> outputs;
    MemoryStats before;
};

Ran run(const Loaded& l, const Plan& plan, CleanupStrategy cleanup, int64_t iterations, int threads) {
    SessionOptions so;
    so.cleanup = cleanup;
    so.threads = threads;
    so.cpu_memory_limit = uint64_t{1} << 32;
    Ran r;
    Session s(l.lg->graph, plan, so);
    auto err = s.run(iterations, l.lg->graph.outputs, r.outputs);
    REQUIRE_FALSE(err);
    r.before = s.stats()["cpu"];
    s.close();
    const MemoryStats after = s.stats()["cpu"];
    CHECK(after.in_use == 0);
    CHECK(after.reserved == 0);
    CHECK(after.allocs == after.frees);
    return r;
}

uint64_t planned_count(const Plan& p) {
    uint64_t n = 0;
    for (uint64_t o : p.cpu_offset) n += o != kNotPlanned;
    return n;
}

}  // namespace

TEST_CASE("offset plan: the large buffers have offsets in a block no larger than their sum, and at least their peak") {
    Loaded l = load(kScript);
    const Plan& p = l.plan;
    REQUIRE(p.cpu_offset.size() == l.lg->graph.nodes.size());
    CHECK(planned_count(p) >= 6);
    uint64_t sum = 0;
    for (size_t i = 0; i < p.cpu_offset.size(); ++i) {
        if (p.cpu_offset[i] == kNotPlanned) continue;
        const uint64_t bytes = p.node_bytes[i];
        CAPTURE(i);
        CHECK(bytes >= kPlannedBytes);
        CHECK(p.cpu_offset[i] % 64 == 0);
        CHECK(p.cpu_offset[i] + bytes <= p.cpu_arena_bytes);
        sum += bytes;
    }
    CHECK(p.cpu_arena_bytes < sum);                     // buffers share ranges
    CHECK(p.cpu_arena_bytes <= p.static_peak.at("cpu"));  // and no more than live at once here
    CHECK(p.cpu_arena_bytes + 64 * 1024 >= p.static_peak.at("cpu"));  // the small values are the rest
}

TEST_CASE("offset plan: safepoint takes exactly the block, every strategy gives the unplanned run's bits") {
    Loaded l = load(kScript);
    Plan unplanned = l.plan;
    unplanned.cpu_offset.clear();
    unplanned.cpu_arena_bytes = 0;
    const uint64_t small = 64 * 1024;  // k's and h's free lists
    for (CleanupStrategy cleanup : {CleanupStrategy::Safepoint, CleanupStrategy::Background, CleanupStrategy::Close}) {
        for (int64_t iterations : {1, 3}) {
            for (int threads : {1, 2}) {
                const std::string strategy = cleanup_name(cleanup);
                CAPTURE(strategy);
                CAPTURE(iterations);
                CAPTURE(threads);
                const Ran want = run(l, unplanned, cleanup, iterations, threads);
                const Ran got = run(l, l.plan, cleanup, iterations, threads);
                REQUIRE(got.outputs.size() == want.outputs.size());
                for (size_t i = 0; i < got.outputs.size(); ++i) CHECK(got.outputs[i].data == want.outputs[i].data);
                // Where a buffer is changes no figure but `reserved`, and
                // background's peak, which falls: its backlog goes back early.
                CHECK(got.before.allocs == want.before.allocs);
                if (cleanup == CleanupStrategy::Background) CHECK(got.before.peak <= want.before.peak);
                else CHECK(got.before.peak == want.before.peak);
                if (cleanup == CleanupStrategy::Safepoint) {
                    CHECK(got.before.peak == l.plan.static_peak.at("cpu"));
                    CHECK(got.before.reserved >= l.plan.cpu_arena_bytes);
                    CHECK(got.before.reserved <= l.plan.cpu_arena_bytes + small);
                    CHECK(got.before.reserved <= want.before.reserved);
                } else if (cleanup == CleanupStrategy::Background) {
                    // The backlog goes back before a planned range is reused: no other segment.
                    CHECK(got.before.reserved <= l.plan.cpu_arena_bytes + small);
                } else {
                    CHECK(got.before.reserved == want.before.reserved);  // close: nothing planned
                }
            }
        }
    }
}

TEST_CASE("offset plan: none for a plan with loops, or with no buffer as large as kPlannedBytes") {
    Loaded loop = load("x = random_uniform([131072], seed=1)\nrepeat 2 { x = x * 2.0 + 1.0 }\noutput x\n");
    CHECK(loop.plan.cpu_offset.empty());
    CHECK(loop.plan.cpu_arena_bytes == 0);
    Loaded small = load("x = random_uniform([1024], seed=1)\ny = transpose(x)\noutput y\n");
    CHECK(small.plan.cpu_offset.empty());
    CHECK(small.plan.cpu_arena_bytes == 0);
}

TEST_CASE("cpu allocator: planned buffers are carved at their offsets; a range still held goes to the best fit") {
    constexpr uint64_t K = 1024;
    CpuAllocator a(uint64_t{1} << 30);
    a.set_offset_plan(1024 * K);
    CHECK(a.planned_range_free(0, 1024 * K));  // the block is taken at the first planned buffer
    char* p = static_cast<char*>(a.allocate_at(512 * K, 0));
    REQUIRE(p);
    CHECK(a.stats().reserved == 1024 * K);
    char* q = static_cast<char*>(a.allocate_at(256 * K, 768 * K));
    CHECK(q == p + 768 * K);
    CHECK_FALSE(a.planned_range_free(256 * K, 512 * K));  // overlaps p
    CHECK(a.planned_range_free(512 * K, 256 * K));
    // Held: the buffer goes elsewhere (a new segment here), never over p.
    char* r = static_cast<char*>(a.allocate_at(512 * K, 256 * K));
    REQUIRE(r);
    CHECK((r + 512 * K <= p || r >= p + 1024 * K));
    CHECK(a.stats().reserved == 1536 * K);
    // p back: its range merges with the free one after it, and takes a buffer across both.
    a.release(p, 512 * K);
    CHECK(a.planned_range_free(0, 768 * K));
    char* s = static_cast<char*>(a.allocate_at(768 * K, 0));
    CHECK(s == p);
    std::memset(s, 1, 768 * K);
    std::memset(q, 2, 256 * K);
    std::memset(r, 3, 512 * K);
    CHECK(static_cast<unsigned char>(s[768 * K - 1]) == 1);
    CHECK(static_cast<unsigned char>(q[0]) == 2);
    // An offset past the block, or a small buffer: the plain path.
    void* t = a.allocate_at(512 * K, 1024 * K);
    REQUIRE(t);
    void* u = a.allocate_at(1024, 0);
    REQUIRE(u);
    CHECK(u != s);
    for (auto [ptr, bytes] : {std::pair<void*, uint64_t>{s, 768 * K}, {q, 256 * K}, {r, 512 * K}, {t, 512 * K}, {u, 1024}})
        a.release(ptr, bytes);
    CHECK(a.stats().in_use == 0);
    a.trim();
    CHECK(a.stats().reserved == 0);
    // Trimmed away, the block is taken anew at the next planned buffer; another plan, another block.
    void* v = a.allocate_at(512 * K, 512 * K);
    REQUIRE(v);
    CHECK(a.stats().reserved == 1024 * K);
    a.set_offset_plan(2048 * K);
    void* w = a.allocate_at(512 * K, 0);
    REQUIRE(w);
    CHECK(a.stats().reserved == 3072 * K);
    a.release(v, 512 * K);
    a.release(w, 512 * K);
    a.trim();
    CHECK(a.stats().reserved == 0);
}

TEST_CASE("cpu allocator: a block larger than the memory limit is never taken") {
    constexpr uint64_t K = 1024;
    CpuAllocator a(1024 * K);
    a.set_offset_plan(2048 * K);
    void* p = a.allocate_at(512 * K, 0);
    REQUIRE(p);
    CHECK(a.stats().reserved == 512 * K);  // best fit: a segment of its own size
    CHECK(a.allocate_at(768 * K, 512 * K) == nullptr);  // in_use would pass the limit
    a.release(p, 512 * K);
    a.trim();
    CHECK(a.stats().reserved == 0);
}

TEST_CASE("cpu allocator: an earlier plan's block goes back to the system once it is all free") {
    constexpr uint64_t K = 1024;
    CpuAllocator a(uint64_t{1} << 30);
    a.set_offset_plan(1024 * K);
    void* p = a.allocate_at(512 * K, 0);
    REQUIRE(p);
    a.set_offset_plan(2048 * K);  // p still lives in the old block: it stays
    CHECK(a.stats().reserved == 1024 * K);
    void* q = a.allocate_at(512 * K, 0);
    REQUIRE(q);
    CHECK(q != p);
    CHECK(a.stats().reserved == 3072 * K);
    a.release(p, 512 * K);  // its last range: the old block goes
    CHECK(a.stats().reserved == 2048 * K);
    a.release(q, 512 * K);
    a.set_offset_plan(1024 * K);  // the current block, all free, goes at once
    CHECK(a.stats().reserved == 0);
    CHECK(a.stats().in_use == 0);
}
