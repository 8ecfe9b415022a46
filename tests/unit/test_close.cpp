// --cleanup=close against SPEC section 4: the session holds every tensor until
// it closes (no in-place reuse, no alias release, no copy released after its
// node), so one pass allocates exactly the plan's close growth, m passes peak
// at m times it, and a graph of n intermediate tensors of size s peaks at
// about n·m·s. safepoint and background keep running in place.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "engine/api/load.h"
#include "engine/check/placement.h"
#include "engine/kernels/cpu/cpu_kernel.h"
#include "engine/plan/plan.h"
#include "engine/runtime/cpu_device.h"
#include "engine/runtime/session.h"

using namespace graphrun;

namespace {

// A GPU for tests: the CPU's kernels and allocator under the name "gpu:0", so
// that copies between devices run on a machine without one.
class FakeGpu final : public Device {
public:
    explicit FakeGpu(uint64_t limit) : cpu_(limit) {}
    const std::string& name() const override { return name_; }
    DeviceKind kind() const override { return DeviceKind::Gpu; }
    Allocator& allocator() override { return cpu_.allocator(); }
    bool supports(OpKind op, DType dtype) const override { return cpu_.supports(op, dtype); }
    std::unique_ptr<Kernel> make_kernel(const Graph& g, const Node& n) override { return make_cpu_kernel(g, n); }
    std::string copy_from_host(void* dst, const void* src, uint64_t bytes) override {
        return cpu_.copy_from_host(dst, src, bytes);
    }
    std::string copy_to_host(void* dst, const void* src, uint64_t bytes) override {
        return cpu_.copy_to_host(dst, src, bytes);
    }
    std::string synchronize() override { return {}; }
    void close() override { cpu_.close(); }

private:
    std::string name_ = "gpu:0";
    CpuDevice cpu_;
};

class FakeGpuRuntime final : public GpuRuntime {
public:
    std::string toolkit_version() const override { return "fake"; }
    std::string driver_version() override { return "fake"; }
    int device_count(std::string*) override { return 1; }
    std::optional<GpuInfo> info(int) override { return GpuInfo{}; }
    bool supports(OpKind, DType) const override { return true; }
    std::optional<uint64_t> driver_used_bytes(int, std::string*) override { return std::nullopt; }
    std::unique_ptr<Device> open(int, const GpuDeviceOptions&, std::string*) override {
        return std::make_unique<FakeGpu>(uint64_t{1} << 32);
    }
};

struct Planned {
    std::unique_ptr<LoadedGraph> lg;
    std::optional<Plan> plan;
};

// Loads and plans `src`; with `fake_gpu`, nodes asking for a GPU go to the fake one.
Planned plan_of(const std::string& name, const std::string& src, bool fake_gpu = false) {
    Planned p;
    p.lg = load_graph_source(name, src, name.size() > 5 && name.substr(name.size() - 5) == ".json");
    if (!p.lg->ok()) return p;
    std::ostringstream log;
    DeviceAvailability avail;
    if (fake_gpu) {
        avail.gpu_count = 1;
        avail.why_no_gpu.clear();
    }
    if (place(p.lg->graph, PlacementOptions{}, avail, log)) return p;
    std::vector<NodeId> outs;
    for (const Output& o : p.lg->graph.outputs) outs.push_back(o.id);
    p.plan = compile_plan(p.lg->graph, outs, nullptr);
    return p;
}

struct Ran {
    std::map<std::string, MemoryStats> before, after;
    std::vector<HostTensor> outputs;
    bool error = false;
};

Ran run_planned(const Planned& p, CleanupStrategy cleanup, int64_t iterations, bool fake_gpu = false) {
    static FakeGpuRuntime fake;
    SessionOptions so;
    so.cleanup = cleanup;
    so.threads = 1;
    so.cpu_memory_limit = uint64_t{1} << 32;
    if (fake_gpu) so.gpu_runtime = &fake;
    Ran r;
    Session s(p.lg->graph, *p.plan, so);
    r.error = s.run(iterations, p.lg->graph.outputs, r.outputs).has_value();
    r.before = s.stats();
    s.close();
    r.after = s.stats();
    return r;
}

void check_torn_down(const std::map<std::string, MemoryStats>& after) {
    for (const auto& entry : after) {
        const auto& dev = entry.first;  // a variable, not a binding: INFO captures it
        const auto& s = entry.second;
        CAPTURE(dev);
        CHECK(s.in_use == 0);
        CHECK(s.pending == 0);
        CHECK(s.reserved == 0);
        CHECK(s.live == 0);
        CHECK(s.allocs == s.frees);
    }
}

// What close must show after m passes: every buffer of every pass still
// held, nothing released, m times the plan's close growth on each device.
void check_close_holds_everything(const Planned& p, const Ran& c, int64_t m) {
    for (const auto& entry : p.plan->close_growth) {
        const auto& dev = entry.first;  // a variable, not a binding: INFO captures it
        const auto& growth = entry.second;
        CAPTURE(dev);
        REQUIRE(c.before.count(dev));
        const MemoryStats& s = c.before.at(dev);
        CHECK(s.peak == growth * static_cast<uint64_t>(m));
        CHECK(s.in_use == s.peak);
        CHECK(s.frees == 0);
        CHECK(s.live == s.allocs);
    }
}

uint64_t plan_growth(const std::string& src) {
    Planned p = plan_of("t.graph", src);
    REQUIRE(p.plan);
    return p.plan->close_growth.at("cpu");
}

}  // namespace

TEST_CASE("plan: the close growth is every Run step's output, each repeat pass counted, aliases 0") {
    // x, y, z: no donor is taken under close; the literals are weights (placed once, not per pass).
    CHECK(plan_growth("x = zeros([16])\ny = x + 1\nz = y * 2\noutput z\n") == 3 * 64);
    CHECK(plan_growth("x = zeros([4, 16])\ny = reshape(x, shape=[64])\nz = y\noutput z\n") == 256);
    CHECK(plan_growth("x = zeros([16])\nrepeat 0 { x = x + 1 }\noutput x\n") == 64);
    CHECK(plan_growth("x = zeros([16])\nrepeat 1 { x = x + 1 }\noutput x\n") == 64 + 64);
    CHECK(plan_growth("x = zeros([16])\nrepeat 1000 { x = x + 1 }\noutput x\n") == 64 + 1000 * 64);
    // Nested: 3 outer passes of (2 inner passes of a product) and (reduce_sum + add).
    CHECK(plan_growth("x = ones([16])\ns = zeros([])\nrepeat 3 {\n repeat 2 { x = x * 2 }\n"
                      " s = s + reduce_sum(x)\n}\noutput x, s\n") == 64 + 64 + 3 * (2 * 64 + 128));
    CHECK(plan_growth("x = ones([16])\nrepeat 5 { repeat 0 { x = x * 2 }\n x = x + 1 }\n") == 64 + 5 * 64);
    // The static peak is one x: in place under safepoint; the literal is a weight.
    Planned p = plan_of("t.graph", "x = zeros([16])\nrepeat 1000 { x = x + 1 }\noutput x\n");
    REQUIRE(p.plan);
    CHECK(p.plan->static_peak.at("cpu") == 64);
    CHECK(p.plan->weights.at("cpu") == 64);
    // Past 2^64 - 1 bytes the figure saturates.
    CHECK(plan_growth("x = zeros([16])\nrepeat 9223372036854775807 { x = x + 1 }\noutput x\n") == UINT64_MAX);
    CHECK(plan_growth("x = zeros([16])\nrepeat 4294967296 { repeat 4294967296 { x = x + 1 } }\noutput x\n") ==
          UINT64_MAX);
}

TEST_CASE("close: n·m·s on elementwise chains, inside repeats and over iterations") {
    const int64_t elems = 1024;
    const uint64_t s = elems * 4;  // bytes of one intermediate
    struct Chain {
        const char* what;
        const char* op;   // one step of the chain, over x
        int ops;          // steps per pass of the body
        int repeat;       // 0: no repeat block
        int per_step;     // intermediates of size s each step makes
    };
    const Chain chains[] = {
        {"unary chain", "x = relu(x)", 12, 0, 1},
        {"binary with a literal", "x = x * 1.0001", 12, 0, 1},
        {"binary with a fresh tensor", "x = x + ones([1024])", 6, 0, 2},
        {"unary chain in repeat 50", "x = neg(x)", 3, 50, 1},
        {"binary chain in repeat 7", "x = x - 0.5", 2, 7, 1},
        {"mixed chain in repeat 200", "x = abs(x)\nx = x + 1", 1, 200, 2},
    };
    for (const Chain& c : chains) {
        CAPTURE(c.what);
        std::string src = "x = random_uniform([" + std::to_string(elems) + "], seed=1)\n";
        std::string body;
        for (int i = 0; i < c.ops; ++i) body += std::string(c.op) + "\n";
        src += c.repeat ? "repeat " + std::to_string(c.repeat) + " {\n" + body + "}\n" : body;
        src += "output x\n";
        // n: the intermediates of size s one pass makes (random_uniform's included).
        const uint64_t n = 1 + static_cast<uint64_t>(c.ops) * static_cast<uint64_t>(std::max(c.repeat, 1)) *
                                   static_cast<uint64_t>(c.per_step);
        Planned p = plan_of("t.graph", src);
        REQUIRE(p.plan);
        std::vector<uint8_t> want;
        uint64_t safepoint_peak = 0;
        for (int64_t m : {1, 4, 16}) {
            CAPTURE(m);
            Ran close = run_planned(p, CleanupStrategy::Close, m);
            REQUIRE_FALSE(close.error);
            const uint64_t peak = close.before.at("cpu").peak;
            CHECK(static_cast<double>(peak) >= 0.9 * static_cast<double>(n * static_cast<uint64_t>(m) * s));
            check_close_holds_everything(p, close, m);
            check_torn_down(close.after);

            Ran sp = run_planned(p, CleanupStrategy::Safepoint, m);
            Ran bg = run_planned(p, CleanupStrategy::Background, m);
            REQUIRE_FALSE(sp.error);
            REQUIRE_FALSE(bg.error);
            // safepoint runs in place: its peak is the static plan's, whatever m.
            CHECK(sp.before.at("cpu").peak == p.plan->static_peak.at("cpu"));
            if (m == 1) safepoint_peak = sp.before.at("cpu").peak;
            CHECK(sp.before.at("cpu").peak == safepoint_peak);
            CHECK(sp.before.at("cpu").allocs < close.before.at("cpu").allocs);
            CHECK(bg.before.at("cpu").peak < peak);
            check_torn_down(sp.after);
            check_torn_down(bg.after);
            // The same values under every strategy, after any number of passes.
            REQUIRE(close.outputs.size() == 1);
            if (want.empty()) want = close.outputs[0].data;
            CHECK(close.outputs[0].data == want);
            CHECK(sp.outputs[0].data == want);
            CHECK(bg.outputs[0].data == want);
        }
    }
}

TEST_CASE("close: every example and golden script peaks at m times its close growth") {
    namespace fs = std::filesystem;
    int checked = 0;
    for (const char* dir : {"scripts/examples", "tests/scripts"}) {
        for (const auto& entry : fs::directory_iterator(fs::path(GRAPHRUN_SOURCE_DIR) / dir)) {
            const std::string path = entry.path().string();
            if (entry.path().extension() != ".graph" && entry.path().extension() != ".json") continue;
            CAPTURE(path);
            std::ifstream in(path, std::ios::binary);
            std::stringstream ss;
            ss << in.rdbuf();
            Planned p = plan_of(path, ss.str());
            if (!p.plan) continue;  // a script of errors
            bool ran = true;
            for (int64_t m : {1, 3}) {
                Ran c = run_planned(p, CleanupStrategy::Close, m);
                check_torn_down(c.after);
                if (c.error) {  // a script of runtime errors (division by zero)
                    ran = false;
                    break;
                }
                check_close_holds_everything(p, c, m);
            }
            checked += ran;
        }
    }
    CHECK(checked >= 20);
}

TEST_CASE("close: copies of inputs from another device are held too, and counted in the growth") {
    // y on the GPU reads x from the CPU (a copy on the GPU each pass), z on the
    // CPU reads y back (a copy on the CPU), and the loop carries w across.
    const std::string src =
        "x = ones([256])\n"
        "with device(\"gpu:0\") { y = x * 2 }\n"
        "z = relu(y, device=\"cpu\")\n"
        "w = zeros([256])\n"
        "repeat 3 { with device(\"gpu:0\") { w = w + z } }\n"
        "output z, w\n";
    Planned p = plan_of("t.graph", src, true);
    REQUIRE(p.plan);
    REQUIRE(p.plan->close_growth.count("gpu:0"));
    REQUIRE(p.plan->close_growth.count("cpu"));
    for (int64_t m : {1, 2, 5}) {
        CAPTURE(m);
        Ran c = run_planned(p, CleanupStrategy::Close, m, true);
        REQUIRE_FALSE(c.error);
        CHECK(c.before.at("gpu:0").copied_in > 0);
        CHECK(c.before.at("cpu").copied_in > 0);
        check_close_holds_everything(p, c, m);
        check_torn_down(c.after);
        Ran sp = run_planned(p, CleanupStrategy::Safepoint, m, true);
        REQUIRE_FALSE(sp.error);
        CHECK(sp.outputs[0].data == c.outputs[0].data);
        CHECK(sp.outputs[1].data == c.outputs[1].data);
        for (const auto& [dev, peak] : p.plan->static_peak) CHECK(sp.before.at(dev).peak == peak);
        check_torn_down(sp.after);
    }
}
