// Sessions on the real GPU through the CUDA plugin (issue 17): every
// allocation of every example made to fail in turn under the three strategies;
// --memory-limit out of memory; the safepoint peak equal to the static plan;
// --reset-device followed by another session's cuBLAS work. Each case says
// SKIP with the reason and passes where no GPU is usable: without the plugin
// (a build without CUDA, or the test binary run without GRAPHRUN_CUDA_PLUGIN:
// ctest's `unit_gpu` sets it), without a driver or without a device.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "engine/api/devices.h"
#include "engine/api/load.h"
#include "engine/check/placement.h"
#include "engine/plan/plan.h"
#include "engine/runtime/device.h"
#include "engine/runtime/session.h"

using namespace graphrun;

namespace {

// The process's GPU runtime with at least one usable GPU, or nullptr and why not.
GpuRuntime* usable_gpu(std::string& why) {
    GpuRuntime* rt = gpu_runtime(&why);
    if (!rt) return nullptr;
    if (rt->device_count(&why) == 0) return nullptr;
    return rt;
}

#define GPU_OR_SKIP(rt)                                   \
    std::string gpu_why_;                                 \
    GpuRuntime* rt = usable_gpu(gpu_why_);                \
    if (!rt) {                                            \
        MESSAGE("SKIP: no usable GPU: " << gpu_why_);     \
        return;                                           \
    }

struct Planned {
    std::unique_ptr<LoadedGraph> lg;
    std::unique_ptr<Plan> plan;
};

// Placed as `graphrun run --device=gpu` places it (soft placement: what has
// no GPU kernel, or asks for the CPU, runs there).
Planned plan_on_gpu(const std::string& name, const std::string& src) {
    Planned p;
    p.lg = load_graph_source(name, src, name.size() > 5 && name.substr(name.size() - 5) == ".json");
    REQUIRE(p.lg->ok());
    std::ostringstream log;
    PlacementOptions po;
    po.device = "gpu:0";
    REQUIRE_FALSE(place(p.lg->graph, po, device_availability(), log).has_value());
    std::vector<NodeId> outs;
    for (const Output& o : p.lg->graph.outputs) outs.push_back(o.id);
    auto plan = compile_plan(p.lg->graph, outs, nullptr);
    REQUIRE(plan);
    p.plan = std::make_unique<Plan>(std::move(*plan));
    return p;
}

std::vector<std::filesystem::path> example_graphs() {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(GRAPHRUN_SOURCE_DIR) / "scripts" /
                                                             "examples"))
        if (e.is_regular_file() && e.path().extension() == ".graph") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    return files;
}

std::string read_file(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

struct Ran {
    std::string error;
    std::map<std::string, MemoryStats> before, after;
    std::vector<HostTensor> outputs;
};

Ran run_session(const Planned& p, GpuRuntime* rt, CleanupStrategy c, int64_t iterations, uint64_t gpu_limit = 0,
                bool reset_device = false, std::atomic<int64_t>* fail_countdown = nullptr) {
    SessionOptions so;
    so.fail_allocation_countdown = fail_countdown;
    so.cleanup = c;
    so.threads = 1;
    so.cpu_memory_limit = uint64_t{1} << 32;
    so.gpu_runtime = rt;
    so.gpu.memory_limit = gpu_limit;
    so.gpu.reset_device = reset_device;
    Ran r;
    Session s(p.lg->graph, *p.plan, so);
    if (auto e = s.run(iterations, p.lg->graph.outputs, r.outputs)) r.error = e->message;
    r.before = s.stats();
    s.close();
    r.after = s.stats();
    return r;
}

std::string torn_down(const std::map<std::string, MemoryStats>& after) {
    std::string bad;
    for (const auto& [dev, s] : after)
        if (s.in_use || s.pending || s.reserved || s.live || s.workspace || s.weights || s.allocs != s.frees)
            bad += dev + ": in_use=" + std::to_string(s.in_use) + " pending=" + std::to_string(s.pending) +
                   " reserved=" + std::to_string(s.reserved) + " live=" + std::to_string(s.live) +
                   " workspace=" + std::to_string(s.workspace) + " allocs=" + std::to_string(s.allocs) +
                   " frees=" + std::to_string(s.frees) + "; ";
    return bad;
}

uint64_t total_allocs(const std::map<std::string, MemoryStats>& stats) {
    uint64_t n = 0;
    for (const auto& [dev, s] : stats) n += s.allocs;
    return n;
}

const CleanupStrategy kStrategies[] = {CleanupStrategy::Background, CleanupStrategy::Safepoint,
                                       CleanupStrategy::Close};

}  // namespace

TEST_CASE("gpu: every allocation of every example fails in turn on the GPU, and teardown gives all back") {
    GPU_OR_SKIP(rt);
    for (const auto& file : example_graphs()) {
        CAPTURE(file.filename().string());
        Planned p = plan_on_gpu(file.string(), read_file(file));
        for (CleanupStrategy c : kStrategies) {
            CAPTURE(cleanup_name(c));
            Ran ok = run_session(p, rt, c, 2);
            INFO(ok.error);
            REQUIRE(ok.error.empty());
            REQUIRE(torn_down(ok.after).empty());
            // Scratch counts with the hook but not in allocs: try a few more
            // than the buffers, so that the last ones land past the end.
            const uint64_t n = total_allocs(ok.before) + 4;
            for (uint64_t k = 1; k <= n; ++k) {
                CAPTURE(k);
                std::atomic<int64_t> armed{static_cast<int64_t>(k)};
                Ran r = run_session(p, rt, c, 2, 0, false, &armed);
                INFO(r.error);
                CHECK(torn_down(r.after) == "");
                // Either the run got past the failure (background's second
                // chance, or the countdown outlived the run) or it says so.
                if (!r.error.empty()) CHECK(r.error.find("out of") != std::string::npos);
            }
        }
    }
}

TEST_CASE("gpu: --memory-limit out of memory under close, not under safepoint or background") {
    GPU_OR_SKIP(rt);
    // 41 tensors of 256 KiB one pass: 10.25 MiB held under close; 512 KiB in place.
    std::string src = "x = random_uniform([65536], seed=2)\n";
    for (int i = 0; i < 40; ++i) src += "x = x * 1.0001\n";
    src += "output x\n";
    Planned p = plan_on_gpu("chain.graph", src);
    const uint64_t limit = 8u << 20;  // the cuBLAS workspace is 1 MiB of it (an eighth at most)
    for (CleanupStrategy c : kStrategies) {
        CAPTURE(cleanup_name(c));
        Ran r = run_session(p, rt, c, 1, limit);
        INFO(r.error);
        if (c == CleanupStrategy::Close)
            CHECK(r.error.find("out of memory on gpu:0") != std::string::npos);
        else
            CHECK(r.error.empty());
        REQUIRE(r.before.count("gpu:0"));
        CHECK(r.before.at("gpu:0").workspace > 0);
        CHECK(r.before.at("gpu:0").in_use + r.before.at("gpu:0").workspace + r.before.at("gpu:0").weights <= limit);
        CHECK(torn_down(r.after) == "");
    }
}

TEST_CASE("gpu: the safepoint peak of every example equals the static plan, per device") {
    GPU_OR_SKIP(rt);
    for (const auto& file : example_graphs()) {
        CAPTURE(file.filename().string());
        Planned p = plan_on_gpu(file.string(), read_file(file));
        Ran r = run_session(p, rt, CleanupStrategy::Safepoint, 1);
        INFO(r.error);
        REQUIRE(r.error.empty());
        for (const auto& entry : p.plan->static_peak) {
            const auto& dev = entry.first;  // a variable, not a binding: INFO captures it
            const auto& bytes = entry.second;
            CAPTURE(dev);
            REQUIRE(r.before.count(dev));
            CHECK(r.before.at(dev).peak == bytes);
        }
        CHECK(torn_down(r.after) == "");
    }
}

TEST_CASE("gpu: --reset-device, then another session's cuBLAS work in the same process") {
    GPU_OR_SKIP(rt);
    const char* src =
        "a = random_uniform([64, 48], seed=1)\n"
        "b = random_uniform([48, 32], seed=2)\n"
        "c = matmul(a, b)\n"
        "d = reduce_sum(softmax(c))\n"
        "output c, d\n";
    Planned p = plan_on_gpu("mm.graph", src);
    Ran first = run_session(p, rt, CleanupStrategy::Background, 2, 0, true);
    INFO(first.error);
    REQUIRE(first.error.empty());
    CHECK(torn_down(first.after) == "");
    // Every CUDA object of the first session died with its context: the next
    // sessions make their own (stream, pool, cuBLAS handle, events, kernels).
    for (bool reset : {true, false, true}) {
        CAPTURE(reset);
        Ran again = run_session(p, rt, CleanupStrategy::Safepoint, 2, 0, reset);
        INFO(again.error);
        REQUIRE(again.error.empty());
        REQUIRE(again.outputs.size() == first.outputs.size());
        for (size_t i = 0; i < again.outputs.size(); ++i) CHECK(again.outputs[i].data == first.outputs[i].data);
        CHECK(torn_down(again.after) == "");
    }
}
