// SPEC section 4: no peak figure counts teardown's own releases. Teardown makes
// every remaining tensor pending on its way back (close and background's
// reclaimer hand-over count it as pending first), which before
// Allocator::freeze_peaks raised pending_peak after the run had ended.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <sstream>
#include <string>

#include "engine/api/run.h"
#include "engine/runtime/allocator.h"

using namespace graphrun;

TEST_CASE("allocator: after freeze_peaks, pending moves but pending_peak and peak do not") {
    CpuAllocator a(uint64_t{1} << 20);
    void* p = a.allocate(64);
    void* q = a.allocate(128);
    void* r = a.allocate(256);
    REQUIRE(p);
    REQUIRE(q);
    REQUIRE(r);
    a.add_pending(64);
    CHECK(a.stats().pending_peak == 64);
    a.freeze_peaks();
    a.add_pending(128);  // teardown counts what is left as pending ...
    CHECK(a.stats().pending == 192);
    CHECK(a.stats().pending_peak == 64);
    PendingRelease both[] = {{p, 64, &a}, {q, 128, &a}};
    a.release_batch(both, 2);  // ... and releases it
    PendingRelease last[] = {{r, 256, &a}};
    a.release_unreferenced(last, 1);  // the safepoint path counts 256 pending on the way: not a peak now
    MemoryStats s = a.stats();
    CHECK(s.pending == 0);
    CHECK(s.in_use == 0);
    CHECK(s.pending_peak == 64);
    CHECK(s.peak == 448);
    a.trim();
}

TEST_CASE("run_file: peak and pending_peak are the same before and after teardown, every strategy, every script") {
    namespace fs = std::filesystem;
    static const DeviceAvailability no_gpu;
    int checked = 0;
    for (const char* dir : {"scripts/examples", "tests/scripts"}) {
        for (const auto& entry : fs::directory_iterator(fs::path(GRAPHRUN_SOURCE_DIR) / dir)) {
            const auto ext = entry.path().extension();
            if (ext != ".graph" && ext != ".json") continue;
            for (CleanupStrategy cleanup :
                 {CleanupStrategy::Background, CleanupStrategy::Safepoint, CleanupStrategy::Close}) {
                for (int64_t iterations : {1, 3}) {
                    CAPTURE(entry.path().string());
                    CAPTURE(cleanup_name(cleanup));
                    CAPTURE(iterations);
                    RunFileOptions o;
                    o.prepare.placement.device = "cpu";
                    o.prepare.devices = &no_gpu;
                    o.cleanup = cleanup;
                    o.iterations = iterations;
                    o.threads = 1;
                    std::ostringstream err;
                    RunResult r = run_file(entry.path().string(), o, err);
                    if (!r.ran) continue;  // a script of errors
                    REQUIRE(r.before.size() == r.after.size());
                    for (const auto& entry : r.before) {
                        const auto& dev = entry.first;  // a variable, not a binding: INFO captures it
                        const auto& b = entry.second;
                        CAPTURE(dev);
                        const MemoryStats& a = r.after.at(dev);
                        CHECK(a.peak == b.peak);
                        CHECK(a.pending_peak == b.pending_peak);
                        CHECK(a.pending == 0);
                        CHECK(a.in_use == 0);
                    }
                    ++checked;
                }
            }
        }
    }
    CHECK(checked >= 6 * 20);
}
