// Allocation-failure injection (Lua's Memcontrol): every example, every cleanup
// strategy, every allocation made to fail in turn; the run must report the
// out-of-memory error and teardown must still give everything back.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/api/load.h"
#include "engine/check/placement.h"
#include "engine/kernels/cpu/dnnl_kernels.h"
#include "engine/plan/plan.h"
#include "engine/runtime/session.h"
#include "tests/unit/prepare_helpers.h"

using namespace graphrun;

namespace {

struct InjectedRun {
    bool error = false;
    std::string message;
    bool reclaimer_running_after_close = false;
    MemoryStats before, after;
    std::vector<HostTensor> outputs;
};

// Whether two runs' outputs agree: the same names, dtypes and shapes, and
// values within f32 rounding (a kernel that fell back runs other arithmetic).
bool same_outputs(const std::vector<HostTensor>& a, const std::vector<HostTensor>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i].name != b[i].name || a[i].dtype != b[i].dtype || a[i].shape != b[i].shape ||
            a[i].data.size() != b[i].data.size())
            return false;
        if (a[i].dtype != DType::F32) {
            if (a[i].data != b[i].data) return false;
            continue;
        }
        const size_t n = a[i].data.size() / sizeof(float);
        for (size_t k = 0; k < n; ++k) {
            float x, y;
            std::memcpy(&x, a[i].data.data() + k * sizeof(float), sizeof x);
            std::memcpy(&y, b[i].data.data() + k * sizeof(float), sizeof y);
            if (!(std::fabs(static_cast<double>(x) - y) <= 1e-5 * std::fabs(static_cast<double>(y)) + 1e-6))
                return false;
        }
    }
    return true;
}

std::vector<std::filesystem::path> example_files() {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(GRAPHRUN_SOURCE_DIR) / "scripts" /
                                                             "examples")) {
        std::string ext = e.path().extension().string();
        if (e.is_regular_file() && (ext == ".graph" || ext == ".json")) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    return files;
}

std::string read_file(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// One loaded, placed and planned example; each run opens its own session on it.
struct PlannedExample {
    std::unique_ptr<LoadedGraph> lg;
    std::unique_ptr<Plan> plan;
};

PlannedExample plan_example(const std::filesystem::path& p) {
    test::PlannedScript s = test::plan_script(read_file(p), p.string(), p.extension() == ".json");
    PlannedExample ex;
    ex.lg = std::move(s.lg);
    ex.plan = std::make_unique<Plan>(std::move(s.plan));
    return ex;
}

// `fail_countdown` arms the failure-injection hook for this run's session only.
InjectedRun run_example(const PlannedExample& ex, CleanupStrategy cleanup,
                        std::atomic<int64_t>* fail_countdown = nullptr) {
    SessionOptions so;
    so.fail_allocation_countdown = fail_countdown;
    so.cleanup = cleanup;
    so.threads = 1;
    so.cpu_memory_limit = uint64_t{1} << 32;  // far above any example: only injected failures
    InjectedRun r;
    std::vector<HostTensor> fetched;
    Session s(ex.lg->graph, *ex.plan, so);
    auto err = s.run(2, ex.lg->graph.outputs, fetched);
    if (err) {
        r.error = true;
        r.message = err->message;
    }
    r.before = s.stats()["cpu"];
    s.close();
    r.reclaimer_running_after_close = s.reclaimer_running();
    r.after = s.stats()["cpu"];
    r.outputs = std::move(fetched);
    return r;
}

// Plain CHECKs would add one assertion per field per run (thousands); one
// boolean keeps the report short and still names the figures on failure.
bool torn_down(const MemoryStats& s) {
    return s.in_use == 0 && s.pending == 0 && s.reserved == 0 && s.live == 0 && s.allocs == s.frees;
}

std::string describe(const MemoryStats& s) {
    return "in_use=" + std::to_string(s.in_use) + " pending=" + std::to_string(s.pending) +
           " reserved=" + std::to_string(s.reserved) + " live=" + std::to_string(s.live) +
           " allocs=" + std::to_string(s.allocs) + " frees=" + std::to_string(s.frees);
}

}  // namespace

TEST_CASE("injection: every allocation of every example fails in turn, under every strategy, and tears down") {
    auto files = example_files();
    REQUIRE(files.size() >= 2);
    const std::string expected = "out of memory on cpu at node";
    int recovered = 0;
    bool packs = false;  // a oneDNN kernel of some example packs its constant b (oneDNN's choice on this CPU)
    for (const auto& file : files) {
        CAPTURE(file.filename().string());
        PlannedExample ex = plan_example(file);
        for (const Node& n : ex.lg->graph.nodes)
            if ((n.op == OpKind::Matmul || n.op == OpKind::Gemm) && kernels::dnnl_packs_weight(ex.lg->graph, n))
                packs = true;
        for (CleanupStrategy st : {CleanupStrategy::Background, CleanupStrategy::Safepoint, CleanupStrategy::Close}) {
            CAPTURE(cleanup_name(st));
            InjectedRun ok = run_example(ex, st);
            INFO(ok.message);
            REQUIRE_FALSE(ok.error);
            REQUIRE(torn_down(ok.after));
            const uint64_t allocs = ok.before.allocs;
            REQUIRE(allocs > 0);
            REQUIRE(ok.after.allocs == allocs);
            for (uint64_t k = 1; k <= allocs; ++k) {
                CAPTURE(k);
                std::atomic<int64_t> countdown{static_cast<int64_t>(k)};
                InjectedRun r = run_example(ex, st, &countdown);
                // The k-th allocation was the one that failed: the hook is spent.
                CHECK(countdown.load() == 0);
                INFO(r.message);
                INFO(describe(r.after));
                CHECK_FALSE(r.reclaimer_running_after_close);
                CHECK(torn_down(r.after));
                if (st == CleanupStrategy::Background && !r.error) {
                    // Background gave its backlog back and tried once more
                    // (Cleanup::release_for_retry): the retry took the failed
                    // allocation's place, and the run is the clean one.
                    CHECK(r.after.allocs == allocs);
                    continue;
                }
                if (!r.error) {
                    // A oneDNN kernel whose packed weight or scratch (workspace)
                    // had no room ran our kernel instead, which needs none, and
                    // made its packed copy at the next pass: the run is the clean one.
                    CHECK(r.after.allocs == allocs);
                    CHECK(same_outputs(r.outputs, ok.outputs));
                    ++recovered;
                    continue;
                }
                CHECK(r.message.rfind(expected, 0) == 0);
                // Allocations 1..k-1 succeeded, the k-th failed, nothing ran after it.
                CHECK(r.after.allocs == k - 1);
            }
        }
    }
    // matmul.graph's product by a constant runs oneDNN where graphrun has it:
    // its packed b (where oneDNN packs it: AVX-512, not AVX2's gemm, which reads
    // b where it is) is the allocation that a fallback recovers from.
    if (packs) CHECK(recovered > 0);
}
