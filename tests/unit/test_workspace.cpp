// The `workspace` figure (MemoryStats::workspace, issue 17 item 4): buffers a
// device holds for itself (a library's workspace, an error flag, kernel
// scratch, a const literal's device copy) are counted apart from tensors,
// under the same memory limit; with them, the safepoint peak of a device
// still equals the static plan. And copies between two GPUs go through
// Device::copy_from_device where the device offers it. Run with fake GPUs:
// the CPU's kernels and a CpuAllocator under the names gpu:0 and gpu:1.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "engine/api/load.h"
#include "engine/check/placement.h"
#include "engine/kernels/cpu/cpu_kernel.h"
#include "engine/plan/plan.h"
#include "engine/runtime/allocator.h"
#include "engine/runtime/session.h"

using namespace graphrun;

namespace {

struct Countdown {
    explicit Countdown(int64_t k) : left(k) {}
    std::atomic<int64_t> left;
};

constexpr uint64_t kOpenWorkspace = 4096;  // what a fake GPU holds from open to close (cuBLAS's)
constexpr uint64_t kScratch = 1024;        // what each of its kernels takes while it runs

struct FakeCounters {
    int direct_copies = 0;  // copy_from_device calls that copied
    int scratch_taken = 0;
};

// The CPU kernel, with scratch taken as workspace around it (a GPU
// reduction's partial sums): it must never show in in_use or peak.
class ScratchKernel final : public Kernel {
public:
    ScratchKernel(std::unique_ptr<Kernel> inner, CpuAllocator& a, FakeCounters& c)
        : inner_(std::move(inner)), a_(a), c_(c) {}
    std::string run(const TensorRef* in, size_t n, TensorRef& out, const KernelContext& ctx) override {
        void* p = a_.allocate_workspace(kScratch, true);
        if (!p) return "out of memory: scratch";
        ++c_.scratch_taken;
        std::string e = inner_->run(in, n, out, ctx);
        a_.release_workspace(p, kScratch);
        return e;
    }

private:
    std::unique_ptr<Kernel> inner_;
    CpuAllocator& a_;
    FakeCounters& c_;
};

class FakeGpu final : public Device {
public:
    FakeGpu(int index, uint64_t limit, bool direct, FakeCounters& c)
        : name_("gpu:" + std::to_string(index)), alloc_(limit), direct_(direct), c_(c) {
        held_ = alloc_.allocate_workspace(kOpenWorkspace, false);
    }
    const std::string& name() const override { return name_; }
    DeviceKind kind() const override { return DeviceKind::Gpu; }
    Allocator& allocator() override { return alloc_; }
    bool supports(OpKind, DType) const override { return true; }
    std::unique_ptr<Kernel> make_kernel(const Graph& g, const Node& n) override {
        return std::make_unique<ScratchKernel>(make_cpu_kernel(g, n), alloc_, c_);
    }
    std::string copy_from_host(void* dst, const void* src, uint64_t bytes) override {
        std::memcpy(dst, src, bytes);
        return {};
    }
    std::string copy_to_host(void* dst, const void* src, uint64_t bytes) override {
        std::memcpy(dst, src, bytes);
        return {};
    }
    std::optional<std::string> copy_from_device(void* dst, Device& src, const void* p, uint64_t bytes) override {
        if (!direct_ || src.kind() != DeviceKind::Gpu) return std::nullopt;
        std::memcpy(dst, p, bytes);
        ++c_.direct_copies;
        return std::string();
    }
    std::string synchronize() override { return {}; }
    void close() override {
        if (held_) alloc_.release_workspace(held_, kOpenWorkspace);
        held_ = nullptr;
        alloc_.trim();
    }

private:
    std::string name_;
    CpuAllocator alloc_;
    bool direct_;
    FakeCounters& c_;
    void* held_ = nullptr;
};

class FakeRuntime final : public GpuRuntime {
public:
    FakeRuntime(uint64_t limit, bool direct) : limit_(limit), direct_(direct) {}
    std::string toolkit_version() const override { return "fake"; }
    std::string driver_version() override { return "fake"; }
    int device_count(std::string*) override { return 2; }
    std::optional<GpuInfo> info(int) override { return GpuInfo{}; }
    bool supports(OpKind, DType) const override { return true; }
    std::optional<uint64_t> driver_used_bytes(int, std::string*) override { return std::nullopt; }
    std::unique_ptr<Device> open(int index, const GpuDeviceOptions&, std::string*) override {
        return std::make_unique<FakeGpu>(index, limit_, direct_, counters);
    }
    FakeCounters counters;

private:
    uint64_t limit_;
    bool direct_;
};

struct Planned {
    std::unique_ptr<LoadedGraph> lg;
    std::optional<Plan> plan;
};

Planned plan_on_gpus(const std::string& src) {
    Planned p;
    p.lg = load_graph_source("t.graph", src, false);
    if (!p.lg->ok()) return p;
    std::ostringstream log;
    DeviceAvailability avail;
    avail.gpu_count = 2;
    avail.why_no_gpu.clear();
    PlacementOptions po;
    po.device = "gpu:0";
    if (place(p.lg->graph, po, avail, log)) return p;
    std::vector<NodeId> outs;
    for (const Output& o : p.lg->graph.outputs) outs.push_back(o.id);
    p.plan = compile_plan(p.lg->graph, outs, nullptr);
    return p;
}

struct Ran {
    std::map<std::string, MemoryStats> before, after;
    std::vector<HostTensor> outputs;
    std::string error;
};

Ran run_on(const Planned& p, FakeRuntime& rt, CleanupStrategy cleanup, int64_t iterations,
           std::atomic<int64_t>* fail_countdown = nullptr) {
    SessionOptions so;
    so.fail_allocation_countdown = fail_countdown;
    so.cleanup = cleanup;
    so.threads = 1;
    so.cpu_memory_limit = uint64_t{1} << 30;
    so.gpu_runtime = &rt;
    Ran r;
    Session s(p.lg->graph, *p.plan, so);
    if (auto e = s.run(iterations, p.lg->graph.outputs, r.outputs)) r.error = e->message;
    r.before = s.stats();
    s.close();
    r.after = s.stats();
    return r;
}

const char* kChain =
    "x = random_uniform([1000], seed=3)\n"
    "a = x * 2\n"
    "b = reduce_sum(a)\n"
    "c = a - b\n"
    "d = matmul(reshape(c, shape=[10, 100]), reshape(c, shape=[100, 10]))\n"
    "e = reduce_max(d * 2, device=\"cpu\")\n"
    "output d, e\n";

}  // namespace

TEST_CASE("workspace: counted apart from tensors, released and trimmed like them") {
    CpuAllocator a(1 << 20);
    void* w = a.allocate_workspace(256, false);
    REQUIRE(w != nullptr);
    void* t = a.allocate(128);
    REQUIRE(t != nullptr);
    MemoryStats s = a.stats();
    CHECK(s.workspace == 256);
    CHECK(s.in_use == 128);  // a tensor's figures see the tensor only
    CHECK(s.peak == 128);
    CHECK(s.allocs == 1);
    CHECK(s.live == 1);
    CHECK(s.reserved == 384);  // the system's figure holds both
    a.release_workspace(w, 256);
    a.release(t, 128);
    s = a.stats();
    CHECK(s.workspace == 0);
    CHECK(s.frees == 1);
    CHECK(s.live == 0);
    CHECK(s.reserved == 384);  // cached until trimmed
    a.trim();
    CHECK(a.stats().reserved == 0);
    // A zero-byte workspace buffer is counted as nothing and takes nothing.
    void* z = a.allocate_workspace(0, false);
    CHECK(z != nullptr);
    a.release_workspace(z, 0);
    CHECK(a.stats() == MemoryStats{.peak = 128, .allocs = 1, .frees = 1});
}

TEST_CASE("workspace: the limit holds tensors and workspace together") {
    CpuAllocator a(1024);
    void* w = a.allocate_workspace(512, false);
    REQUIRE(w != nullptr);
    CHECK(a.allocate(576) == nullptr);  // 512 + 576 > 1024
    void* t = a.allocate(512);
    REQUIRE(t != nullptr);
    CHECK(a.allocate_workspace(64, false) == nullptr);  // 1024 + 64 > 1024
    CHECK(a.allocate_workspace(64, true) == nullptr);
    CHECK(a.stats().workspace == 512);
    CHECK(a.stats().allocs == 1);
    a.release(t, 512);
    a.release_workspace(w, 512);
    void* all = a.allocate(1024);  // both gone: the whole limit for tensors again
    CHECK(all != nullptr);
    a.release(all, 1024);
}

TEST_CASE("workspace: the failure-injection hook refuses scratch, never what a device opens with") {
    CpuAllocator a(1 << 20);
    Countdown k(1);
    a.set_failure_countdown(&k.left);
    void* opened = a.allocate_workspace(64, false);  // not counted by the hook
    CHECK(opened != nullptr);
    CHECK(k.left.load() == 1);
    CHECK(a.allocate_workspace(64, true) == nullptr);  // the first counted allocation fails
    CHECK(k.left.load() == 0);
    void* t = a.allocate(64);
    CHECK(t != nullptr);
    a.release(t, 64);
    a.release_workspace(opened, 64);
    CHECK(a.stats().workspace == 0);
}

TEST_CASE("workspace: the safepoint peak of a GPU equals the static plan, workspace apart") {
    Planned p = plan_on_gpus(kChain);
    REQUIRE(p.plan);
    REQUIRE(p.plan->static_peak.count("gpu:0"));
    const uint64_t plan_peak = p.plan->static_peak.at("gpu:0");
    for (int64_t m : {1, 3}) {
        CAPTURE(m);
        FakeRuntime rt(uint64_t{1} << 30, false);
        Ran r = run_on(p, rt, CleanupStrategy::Safepoint, m);
        REQUIRE(r.error.empty());
        REQUIRE(r.before.count("gpu:0"));
        const MemoryStats& s = r.before.at("gpu:0");
        CHECK(s.peak == plan_peak);
        CHECK(s.workspace == kOpenWorkspace);  // scratch went back after each node
        CHECK(rt.counters.scratch_taken > 0);
        REQUIRE(r.before.count("cpu"));
        CHECK(r.before.at("cpu").workspace == 0);  // the CPU holds none
        CHECK(r.before.at("cpu").peak == p.plan->static_peak.at("cpu"));
        const MemoryStats& after = r.after.at("gpu:0");
        CHECK(after.workspace == 0);
        CHECK(after.in_use == 0);
        CHECK(after.reserved == 0);
        CHECK(after.peak == plan_peak);
    }
}

TEST_CASE("workspace: every strategy gives it all back at teardown, also after an out-of-memory") {
    Planned p = plan_on_gpus(kChain);
    REQUIRE(p.plan);
    const uint64_t plan_peak = p.plan->static_peak.at("gpu:0");
    for (CleanupStrategy c : {CleanupStrategy::Background, CleanupStrategy::Safepoint, CleanupStrategy::Close}) {
        CAPTURE(static_cast<int>(c));
        // Room for the plan's tensors, but not with the workspace beside them.
        FakeRuntime tight(plan_peak + kOpenWorkspace / 2, false);
        Ran r = run_on(p, tight, c, 1);
        CHECK(r.error.find("out of memory") != std::string::npos);
        CHECK(r.error.find("bytes of workspace") != std::string::npos);
        for (const auto& entry : r.after) {
            const auto& dev = entry.first;  // a variable, not a binding: INFO captures it
            const auto& s = entry.second;
            CAPTURE(dev);
            CHECK(s.workspace == 0);
            CHECK(s.in_use == 0);
            CHECK(s.reserved == 0);
            CHECK(s.allocs == s.frees);
        }
        // Injected failures of scratch: the node fails, nothing is left.
        for (int64_t k = 1; k <= 8; ++k) {
            CAPTURE(k);
            FakeRuntime rt(uint64_t{1} << 30, false);
            Countdown cd(k);
            Ran f = run_on(p, rt, c, 2, &cd.left);
            for (const auto& entry : f.after) {
                const auto& dev = entry.first;  // a variable, not a binding: INFO captures it
                const auto& s = entry.second;
                CAPTURE(dev);
                CHECK(s.workspace == 0);
                CHECK(s.in_use == 0);
                CHECK(s.live == 0);
                CHECK(s.allocs == s.frees);
            }
        }
    }
}

TEST_CASE("workspace: inputs from another GPU go device to device where the device can") {
    const char* src =
        "with device(\"gpu:1\") {\n x = random_uniform([256], seed=5)\n y = x * 3\n}\n"
        "z = y + 1\n"
        "output z\n";
    Planned p = plan_on_gpus(src);
    REQUIRE(p.plan);
    FakeRuntime via_host(uint64_t{1} << 30, false), direct(uint64_t{1} << 30, true);
    Ran a = run_on(p, via_host, CleanupStrategy::Safepoint, 2);
    Ran b = run_on(p, direct, CleanupStrategy::Safepoint, 2);
    REQUIRE(a.error.empty());
    REQUIRE(b.error.empty());
    CHECK(via_host.counters.direct_copies == 0);
    CHECK(direct.counters.direct_copies == 2);  // one per pass
    REQUIRE(a.outputs.size() == 1);
    REQUIRE(b.outputs.size() == 1);
    CHECK(a.outputs[0].data == b.outputs[0].data);
    CHECK(a.outputs[0].device == "gpu:0");
    // Counted the same either way: a scratch copy on gpu:0, in its copied_in.
    CHECK(a.before.at("gpu:0").copied_in == 2 * 256 * 4);
    CHECK(b.before.at("gpu:0").copied_in == 2 * 256 * 4);
    CHECK(a.before.at("gpu:0").peak == b.before.at("gpu:0").peak);
    CHECK(b.before.at("gpu:0").peak == p.plan->static_peak.at("gpu:0"));
}
