// Unit tests for the one accounting path (CountingAllocator, through the CPU
// allocator: the limit, the statistics, the failure-injection hook) and for the
// op table's family column and GPU-support table.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/ir/device_name.h"
#include "engine/ir/ops.h"
#include "engine/kernels/common/families.h"
#include "engine/runtime/allocator.h"

using namespace graphrun;

namespace {

// A failure-injection countdown for one test's allocators (Allocator::set_failure_countdown).
struct Countdown {
    explicit Countdown(int64_t k) : left(k) {}
    std::atomic<int64_t> left;
};

// A kernel factory that records which family was asked for.
template <OpFamily F>
std::unique_ptr<Kernel> probe(const Graph&, const Node&, int& called) {
    called = static_cast<int>(F);
    return nullptr;
}

}  // namespace

namespace doctest {
template <>
struct StringMaker<MemoryStats> {
    static String convert(const MemoryStats& s) {
        std::string t = "{in_use " + std::to_string(s.in_use) + ", peak " + std::to_string(s.peak) +
                        ", pending " + std::to_string(s.pending) + ", pending_peak " +
                        std::to_string(s.pending_peak) + ", reserved " + std::to_string(s.reserved) +
                        ", allocs " + std::to_string(s.allocs) + ", frees " + std::to_string(s.frees) +
                        ", live " + std::to_string(s.live) + ", copied_in " + std::to_string(s.copied_in) +
                        "}";
        return String(t.c_str());
    }
};
}  // namespace doctest

TEST_CASE("accounting: the limit refuses what would take in_use past it") {
    CpuAllocator a(1024);
    CHECK(a.limit() == 1024);
    void* p = a.allocate(1024);
    REQUIRE(p != nullptr);
    CHECK(a.allocate(64) == nullptr);  // 1088 > 1024
    MemoryStats s = a.stats();
    CHECK(s.in_use == 1024);
    CHECK(s.allocs == 1);  // a refusal is not an allocation
    CHECK(s.live == 1);
    a.release(p, 1024);
    void* q = a.allocate(1024);  // the limit counts in_use, not what is cached
    CHECK(q == p);
    a.release(q, 1024);
    // A size whose sum with in_use overflows is refused, not wrapped.
    CpuAllocator unlimited(std::numeric_limits<uint64_t>::max());
    void* r = unlimited.allocate(64);
    REQUIRE(r != nullptr);
    CHECK(unlimited.allocate(std::numeric_limits<uint64_t>::max() - 63) == nullptr);
    unlimited.release(r, 64);
    CHECK(unlimited.stats().in_use == 0);
}

TEST_CASE("accounting: the injected failure hits the k-th allocation only") {
    CpuAllocator a(1 << 20);
    Countdown k(3);
    a.set_failure_countdown(&k.left);
    void* p1 = a.allocate(64);
    void* p2 = a.allocate(0);
    void* p3 = a.allocate(64);  // the third: fails however much memory there is
    void* p4 = a.allocate(64);
    CHECK(p1 != nullptr);
    CHECK(p2 != nullptr);
    CHECK(p3 == nullptr);
    CHECK(p4 != nullptr);
    CHECK(k.left.load() == 0);
    MemoryStats s = a.stats();
    CHECK(s.allocs == 3);
    CHECK(s.live == 3);
    CHECK(s.in_use == 128);
    a.release(p1, 64);
    a.release(p2, 0);
    a.release(p4, 64);
    CHECK(a.stats().live == 0);
}

TEST_CASE("accounting: statistics after allocate, pending, release and trim") {
    CpuAllocator a(1 << 20);
    void* p = a.allocate(128);
    void* q = a.allocate(64);
    void* z = a.allocate(0);
    REQUIRE(p != nullptr);
    REQUIRE(q != nullptr);
    REQUIRE(z != nullptr);
    // A zero-byte buffer is counted but takes no memory.
    CHECK(a.stats() == MemoryStats{.in_use = 192, .peak = 192, .reserved = 192, .allocs = 3, .live = 3});

    a.add_pending(128);  // pending buffers are still in use
    CHECK(a.stats() == MemoryStats{.in_use = 192, .peak = 192, .pending = 128, .pending_peak = 128,
                                   .reserved = 192, .allocs = 3, .live = 3});

    a.release(p, 128);  // its block stays cached for reuse
    CHECK(a.stats() == MemoryStats{.in_use = 64, .peak = 192, .pending_peak = 128, .reserved = 192,
                                   .allocs = 3, .frees = 1, .live = 2});

    // A scratch buffer never becomes pending: pending_peak does not see it.
    a.release_scratch(q, 64);
    a.release(z, 0);
    a.add_copied_in(4096);
    CHECK(a.stats() == MemoryStats{.peak = 192, .pending_peak = 128, .reserved = 192, .allocs = 3,
                                   .frees = 3, .copied_in = 4096});

    a.trim();
    CHECK(a.stats() == MemoryStats{.peak = 192, .pending_peak = 128, .allocs = 3, .frees = 3,
                                   .copied_in = 4096});
}

TEST_CASE("accounting: release_unreferenced counts its buffers as pending together") {
    CpuAllocator a(1 << 20);
    void* p = a.allocate(256);
    void* q = a.allocate(64);
    a.add_pending(64);  // some other buffer already pending
    const PendingRelease items[] = {{p, 256, &a}, {q, 64, &a}};
    a.release_unreferenced(items, 2);
    CHECK(a.stats() == MemoryStats{.peak = 320, .pending = 64, .pending_peak = 64 + 256 + 64,
                                   .reserved = 320, .allocs = 2, .frees = 2});
}

TEST_CASE("accounting: release_batch releases pending buffers, and their blocks are reused") {
    CpuAllocator a(1 << 20);
    std::vector<void*> ps;
    for (int i = 0; i < 4; ++i) ps.push_back(a.allocate(128));
    void* z = a.allocate(0);
    std::vector<PendingRelease> items;
    for (void* p : ps) items.push_back({p, 128, &a});
    items.push_back({z, 0, &a});
    a.add_pending(4 * 128);
    a.release_batch(items.data(), items.size());
    CHECK(a.stats() == MemoryStats{.peak = 512, .pending_peak = 512, .reserved = 512, .allocs = 5,
                                   .frees = 5});
    // The returned blocks serve the next allocations of their size.
    std::vector<void*> again;
    for (int i = 0; i < 4; ++i) again.push_back(a.allocate(128));
    for (void* p : again) CHECK(p != nullptr);
    CHECK(a.stats().reserved == 512);
    for (void* p : again) a.release(p, 128);  // the allocator frees only cached blocks when it goes
    CHECK(a.stats().in_use == 0);
}

TEST_CASE("accounting: the cache is trimmed to keep reserved within the limit") {
    CpuAllocator a(256);
    void* p = a.allocate(128);
    a.release(p, 128);
    CHECK(a.stats().reserved == 128);
    void* q = a.allocate(192);  // 128 cached + 192 > 256: the cache goes first
    REQUIRE(q != nullptr);
    CHECK(a.stats().reserved == 192);
    a.release(q, 192);
}

TEST_CASE("ops: every op has a family, and the family dispatch reaches its factory") {
    using kernels::FamilyFactories;
    constexpr auto make_creation_kernel = &probe<OpFamily::Creation>;
    constexpr auto make_binary_kernel = &probe<OpFamily::Binary>;
    constexpr auto make_unary_kernel = &probe<OpFamily::Unary>;
    constexpr auto make_matmul_kernel = &probe<OpFamily::Matmul>;
    constexpr auto make_transpose_kernel = &probe<OpFamily::Transpose>;
    constexpr auto make_copy_kernel = &probe<OpFamily::Copy>;
    constexpr auto make_cast_kernel = &probe<OpFamily::Cast>;
    constexpr auto make_concat_kernel = &probe<OpFamily::Concat>;
    constexpr auto make_reduce_kernel = &probe<OpFamily::Reduce>;
    constexpr auto make_softmax_kernel = &probe<OpFamily::Softmax>;
    constexpr auto make_logic_kernel = &probe<OpFamily::Logic>;
    constexpr auto make_arg_reduce_kernel = &probe<OpFamily::ArgReduce>;
    constexpr auto make_layout_kernel = &probe<OpFamily::Layout>;
    constexpr auto make_norm_kernel = &probe<OpFamily::Norm>;
    constexpr auto make_conv_kernel = &probe<OpFamily::Conv>;
    FamilyFactories<int> probes GR_FAMILY_FACTORIES;
    probes.index = &probe<OpFamily::Index>;  // CPU only: not in GR_FAMILY_FACTORIES

    Graph g;
    for (const OpInfo& info : all_ops()) {
        CAPTURE(info.name);
        CHECK(info.family != OpFamily::None);
        CHECK((info.family == OpFamily::Creation) == is_creation(info.kind));
        CHECK((info.family == OpFamily::Binary) == is_binary_elementwise(info.kind));
        CHECK((info.family == OpFamily::Unary) == is_unary_elementwise(info.kind));
        CHECK((info.family == OpFamily::Reduce) == is_reduction(info.kind));
        CHECK((info.family == OpFamily::Copy) == is_alias_op(info.kind));
        Node n;
        n.op = info.kind;
        int called = -1;
        CHECK(kernels::make_family_kernel(probes, g, n, called) == nullptr);
        CHECK(called == static_cast<int>(info.family));
    }
    for (OpKind k : {OpKind::LoopParam, OpKind::Invalid}) {
        CHECK(op_info(k).family == OpFamily::None);
        Node n;
        n.op = k;
        int called = -1;
        CHECK(kernels::make_family_kernel(probes, g, n, called) == nullptr);
        CHECK(called == -1);
    }
}

// Which op runs on the GPU on which dtype is gpu_runs (engine/ir/ops.cpp):
// tests/gpu_ops_test.py compares every op with a GPU kernel against the CPU on
// a GPU, and fails when an op of that table has no graph there. (A hand copy
// of the table here, compared with itself, could not fail.)
TEST_CASE("ops: every op but the index ops has a GPU kernel; loop parameters and invalid nodes none") {
    for (const OpInfo& info : all_ops()) {
        CAPTURE(info.name);
        // top_k and the scatters run on the CPU only (soft placement moves them there).
        CHECK(info.gpu == (info.family != OpFamily::Index));
        if (!info.gpu) {
            for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool})
                CHECK_FALSE(gpu_runs(info.kind, t));
            continue;
        }
        // A fixed result dtype (comparisons, logic, argmax) is the only dtype it runs on.
        if (auto fixed = fixed_result_dtype(info.kind)) {
            CHECK(gpu_runs(info.kind, *fixed));
            for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool})
                if (t != *fixed) CHECK_FALSE(gpu_runs(info.kind, t));
        }
    }
    for (OpKind k : {OpKind::LoopParam, OpKind::Invalid}) {
        CHECK_FALSE(op_info(k).gpu);
        for (DType t : {DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool}) CHECK_FALSE(gpu_runs(k, t));
    }
}

TEST_CASE("device kind: one enum, and the kind of a canonical name") {
    CHECK(DeviceName{}.kind == DeviceKind::Cpu);
    CHECK(DeviceName{DeviceKind::Gpu, 3}.str() == "gpu:3");
    CHECK(device_kind(DeviceName{}.str()) == DeviceKind::Cpu);
    CHECK(device_kind(DeviceName{DeviceKind::Gpu, 0}.str()) == DeviceKind::Gpu);
    CHECK(device_kind(interned_device_name(DeviceName{DeviceKind::Gpu, 12})) == DeviceKind::Gpu);
    CHECK(device_kind(interned_device_name(DeviceName{})) == DeviceKind::Cpu);
    auto parsed = parse_device_name("/device:GPU:1");
    REQUIRE(parsed);
    CHECK(parsed->kind == DeviceKind::Gpu);
}

TEST_CASE("accounting: a large buffer takes the best free range of the segments, split and merged again") {
    constexpr uint64_t K = 1024, M = 1024 * 1024;
    static_assert(CpuAllocator::kArenaBytes == 256 * K);
    CpuAllocator a(uint64_t{1} << 30);
    char* seg = static_cast<char*>(a.allocate(M));
    REQUIRE(seg != nullptr);
    a.release(seg, M);
    // Two smaller buffers share the freed segment: no new memory from the system.
    char* b = static_cast<char*>(a.allocate(384 * K));
    char* c = static_cast<char*>(a.allocate(512 * K));
    CHECK(b == seg);
    CHECK(c == seg + 384 * K);
    MemoryStats s = a.stats();
    CHECK(s.in_use == 896 * K);  // what was asked for, not the ranges' sizes
    CHECK(s.reserved == M);
    // The last 128 KiB is less than kArenaBytes: c took it with its range, and
    // the next buffer needs a segment of its own.
    char* d = static_cast<char*>(a.allocate(256 * K));
    REQUIRE(d != nullptr);
    CHECK((d < seg || d >= seg + M));
    CHECK(a.stats().reserved == M + 256 * K);
    // b and c go back and merge: the whole segment serves a buffer of its size again.
    a.release(c, 512 * K);
    a.release(b, 384 * K);
    CHECK(a.allocate(M) == seg);
    a.release(seg, M);
    a.release(d, 256 * K);
    // The best fit: the 256 KiB segment for a 256 KiB buffer, not the larger one.
    CHECK(a.allocate(256 * K) == d);
    // trim gives back the segments wholly free, and only those.
    a.trim();
    CHECK(a.stats().reserved == 256 * K);
    a.release(d, 256 * K);
    a.trim();
    s = a.stats();
    CHECK(s.reserved == 0);
    CHECK(s.in_use == 0);
    CHECK(s.live == 0);
}

TEST_CASE("accounting: free ranges of two segments do not merge, and the reclaimer's batches reach the segments") {
    constexpr uint64_t M = 1024 * 1024;
    CpuAllocator a(uint64_t{1} << 30);
    void* p = a.allocate(M);
    void* q = a.allocate(M);
    REQUIRE(p != nullptr);
    REQUIRE(q != nullptr);
    const PendingRelease items[] = {{p, M, &a}, {q, M, &a}};
    a.add_pending(2 * M);
    a.release_batch(items, 2);  // the background reclaimer's way back
    MemoryStats s = a.stats();
    CHECK(s.in_use == 0);
    CHECK(s.pending == 0);
    CHECK(s.reserved == 2 * M);
    // Even where the system placed the two segments side by side, a buffer of
    // both their sizes is a new segment.
    void* r = a.allocate(2 * M);
    REQUIRE(r != nullptr);
    CHECK(r != p);
    CHECK(r != q);
    CHECK(a.stats().reserved == 4 * M);
    // Each freed segment still serves a buffer of its own size.
    void* t = a.allocate(M);
    CHECK((t == p || t == q));
    a.release(t, M);
    a.release(r, 2 * M);
    a.trim();
    CHECK(a.stats().reserved == 0);
}
