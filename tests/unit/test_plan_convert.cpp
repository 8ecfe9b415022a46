// The static plan (SPEC section 4) and converting every example between the
// two forms in memory, back to the same graph.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/frontend/json_writer.h"
#include "engine/api/load.h"
#include "engine/check/placement.h"
#include "engine/plan/plan.h"
#include "engine/frontend/text_writer.h"

using namespace graphrun;

namespace {

std::unique_ptr<LoadedGraph> load_ok(const std::string& src, bool json = false) {
    auto lg = load_graph_source(json ? "t.json" : "t.graph", src, json);
    std::ostringstream diags;
    lg->diag.print(diags);
    INFO(diags.str());
    REQUIRE(lg->ok());
    return lg;
}

uint64_t cpu_peak(LoadedGraph& lg) {
    std::ostringstream log;
    REQUIRE_FALSE(place(lg.graph, PlacementOptions{}, DeviceAvailability{}, log).has_value());
    std::vector<NodeId> outs;
    for (const Output& o : lg.graph.outputs) outs.push_back(o.id);
    auto plan = compile_plan(lg.graph, outs, nullptr);
    REQUIRE(plan);
    return plan->static_peak["cpu"];
}

bool same_graph(const Graph& a, const Graph& b, std::string& why) {
    if (a.nodes.size() != b.nodes.size()) {
        why = "node count " + std::to_string(a.nodes.size()) + " vs " + std::to_string(b.nodes.size());
        return false;
    }
    for (size_t i = 0; i < a.nodes.size(); ++i) {
        const Node &x = a.nodes[i], &y = b.nodes[i];
        if (x.name != y.name || x.display() != y.display() || x.op != y.op || x.device != y.device ||
            x.weak != y.weak || x.dtype != y.dtype || x.shape != y.shape || x.literal != y.literal ||
            x.inputs.size() != y.inputs.size() || x.repeat != y.repeat) {
            why = "node " + std::to_string(i) + " (" + std::string(x.display()) + " vs " + std::string(y.display()) +
                  ")";
            return false;
        }
        for (size_t k = 0; k < x.inputs.size(); ++k)
            if (x.inputs[k].id != y.inputs[k].id) {
                why = "input " + std::to_string(k) + " of " + std::string(x.display());
                return false;
            }
        if (x.attrs.size() != y.attrs.size()) {
            why = "attribute count of " + std::string(x.display());
            return false;
        }
        for (const NamedAttr& na : x.attrs) {
            const NamedAttr* nb = y.find_attr(na.name);
            if (!nb || !attr_equal(na.value, nb->value)) {
                why = "attribute " + na.name + " of " + std::string(x.display());
                return false;
            }
        }
    }
    if (a.repeats.size() != b.repeats.size()) {
        why = "repeat count";
        return false;
    }
    for (size_t r = 0; r < a.repeats.size(); ++r) {
        const Repeat &x = a.repeats[r], &y = b.repeats[r];
        if (x.count != y.count || x.carries.size() != y.carries.size()) {
            why = "repeat " + std::to_string(r);
            return false;
        }
        for (size_t c = 0; c < x.carries.size(); ++c)
            if (x.carries[c].name != y.carries[c].name || x.carries[c].param != y.carries[c].param ||
                x.carries[c].init != y.carries[c].init || x.carries[c].update != y.carries[c].update) {
                why = "carry " + x.carries[c].name;
                return false;
            }
    }
    if (a.outputs.size() != b.outputs.size()) {
        why = "output count";
        return false;
    }
    for (size_t o = 0; o < a.outputs.size(); ++o)
        if (a.outputs[o].id != b.outputs[o].id || a.outputs[o].name != b.outputs[o].name) {
            why = "output " + a.outputs[o].name;
            return false;
        }
    return true;
}

}  // namespace

TEST_CASE("placement: each node holds its device's one interned name") {
    auto lg = load_ok(
        "a = [1, 2]\nb = relu(a, device=\"gpu:1\")\nc = neg(b, device=\"cuda:1\")\n"
        "d = abs(c, device=\"cpu\")\ne = d + 1\n");
    DeviceAvailability two_gpus;
    two_gpus.gpu_count = 2;
    two_gpus.gpu_supports = [](OpKind, DType) { return true; };
    std::ostringstream log;
    REQUIRE_FALSE(place(lg->graph, PlacementOptions{"gpu:1", true, false}, two_gpus, log).has_value());
    const Graph& g = lg->graph;
    auto placed = [&](const char* name) { return g.node(*g.find_fetchable(name)).placed; };
    CHECK(placed("a") == "gpu:1");
    CHECK(placed("b") == "gpu:1");
    CHECK(placed("c") == "gpu:1");
    CHECK(placed("d") == "cpu");
    CHECK(placed("e") == "gpu:1");
    // One copy of each name, however it was asked for.
    CHECK(placed("a").data() == placed("b").data());
    CHECK(placed("a").data() == placed("c").data());
    CHECK(interned_device_name(DeviceName{DeviceKind::Gpu, 1}).data() == placed("a").data());
    CHECK(interned_device_name(DeviceName{DeviceKind::Gpu, 0}) == "gpu:0");
    CHECK(log.str().empty());
}

TEST_CASE("placement: a fallback is logged with its cause, and the others keep the default") {
    auto lg = load_ok("a = [1, 2]\nb = relu(a, device=\"gpu\")\nc = b + 1\n");
    std::ostringstream log;
    REQUIRE_FALSE(place(lg->graph, PlacementOptions{"cpu", true, true}, DeviceAvailability{}, log).has_value());
    const Graph& g = lg->graph;
    CHECK(g.node(*g.find_fetchable("b")).placed == "cpu");
    CHECK(log.str().find("warning: gpu:0 unavailable: graphrun was built without CUDA support") != std::string::npos);
    CHECK(log.str().find("placement: b (relu) -> cpu (gpu:0 unavailable") != std::string::npos);
    CHECK(log.str().find("placement: c (add) -> cpu\n") != std::string::npos);
}

TEST_CASE("placement: a listed GPU this build cannot use is unavailable, and auto takes the first usable one") {
    // gpu:0 is older than the build's kernels, gpu:1 is not (a mixed machine).
    DeviceAvailability mixed;
    mixed.gpu_count = 2;
    mixed.gpu_supports = [](OpKind, DType) { return true; };
    const std::string old_gpu = "compute capability 7.5; this build of graphrun has kernels for 8.0 and newer";
    mixed.gpu_unusable = {old_gpu, ""};
    {
        auto lg = load_ok("a = [1, 2]\nb = relu(a)\nc = neg(b, device=\"gpu:0\")\n");
        std::ostringstream log;
        REQUIRE_FALSE(place(lg->graph, PlacementOptions{"auto", true, false}, mixed, log).has_value());
        const Graph& g = lg->graph;
        CHECK(g.node(*g.find_fetchable("a")).placed == "gpu:1");
        CHECK(g.node(*g.find_fetchable("b")).placed == "gpu:1");
        CHECK(g.node(*g.find_fetchable("c")).placed == "cpu");
        CHECK(log.str().find("warning: gpu:0 unavailable: " + old_gpu + "; running on cpu instead") !=
              std::string::npos);
    }
    {  // without soft placement: an error naming the node, the device and why
        auto lg = load_ok("a = [1, 2]\nb = relu(a, device=\"gpu:0\")\n");
        std::ostringstream log;
        auto err = place(lg->graph, PlacementOptions{"cpu", false, false}, mixed, log);
        REQUIRE(err.has_value());
        CHECK(err->message.find("cannot run on gpu:0: " + old_gpu) != std::string::npos);
    }
    {  // no usable GPU among those listed: auto is the CPU
        DeviceAvailability all_old = mixed;
        all_old.gpu_unusable = {old_gpu, old_gpu};
        auto lg = load_ok("a = [1, 2]\nb = relu(a)\n");
        std::ostringstream log;
        REQUIRE_FALSE(place(lg->graph, PlacementOptions{"auto", true, false}, all_old, log).has_value());
        CHECK(lg->graph.node(*lg->graph.find_fetchable("b")).placed == "cpu");
        CHECK(log.str().empty());  // auto falls back quietly, as TensorFlow does
    }
}

TEST_CASE("plan: a chain runs in place; its literals are weights, not tensors") {
    // y is written over x (x dies at y), z over y: 64; the literals 1 and 2 are weights.
    auto lg = load_ok("x = zeros([16])\ny = x + 1\nz = y * 2\noutput z\n");
    CHECK(cpu_peak(*lg) == 64);
    std::vector<NodeId> outs;
    for (const Output& o : lg->graph.outputs) outs.push_back(o.id);
    auto plan = compile_plan(lg->graph, outs, nullptr);
    REQUIRE(plan);
    CHECK(plan->weights.at("cpu") == 2 * 64);
}

TEST_CASE("plan: outputs stay live to the end of the pass") {
    auto lg = load_ok("a = zeros([16])\nb = a + 1\nc = b + 1\noutput a, c\n");
    // a (64) is held, so b cannot be written over it: a + b = 128 (the
    // literal is a weight); c is written over b.
    CHECK(cpu_peak(*lg) == 128);
}

TEST_CASE("plan: a node nobody reads still runs and is dropped after it") {
    auto lg = load_ok("a = zeros([16])\nunused = ones([1024])\nb = a * 3\noutput b\n");
    // unused (4096) is live while it is made: a + unused = 4160; then a + lit + b = 192
    CHECK(cpu_peak(*lg) == 4160);
}

TEST_CASE("plan: aliases count 0 bytes and keep their source alive") {
    auto lg = load_ok("x = zeros([4, 16])\ny = reshape(x, shape=[64])\nz = y\noutput z\n");
    CHECK(cpu_peak(*lg) == 256);
}

TEST_CASE("plan: loop-carried values do not grow with the repeat count") {
    auto a = load_ok("x = zeros([16])\nrepeat 1 { x = x + 1 }\noutput x\n");
    auto b = load_ok("x = zeros([16])\nrepeat 1000 { x = x + 1 }\noutput x\n");
    auto c = load_ok("x = zeros([16])\nrepeat 0 { x = x + 1 }\noutput x\n");
    // The carried x (the literal is a weight); each pass writes x + 1 over x.
    CHECK(cpu_peak(*a) == 64);
    CHECK(cpu_peak(*b) == 64);
    CHECK(cpu_peak(*c) == 64);
}

TEST_CASE("plan: an init still used after the loop stays live during it") {
    // x0 is read after the loop, so the first pass cannot write over the buffer
    // it shares with x: x0 and the new x are live (the literal is a weight);
    // later passes are in place, and so is d over x.
    auto lg = load_ok("x = zeros([16])\nx0 = x\nrepeat 3 { x = x + 1 }\nd = x - x0\noutput d\n");
    CHECK(cpu_peak(*lg) == 64 + 64);
}

TEST_CASE("plan: nested loops") {
    auto lg = load_ok("x = ones([16])\ns = zeros([])\nrepeat 3 {\n repeat 2 { x = x * 2 }\n s = s + reduce_sum(x)\n}\n"
                      "output x, s\n");
    CHECK(cpu_peak(*lg) > 0);
}

TEST_CASE("convert: every example converts text -> json -> text to the same graph") {
    namespace fs = std::filesystem;
    int seen = 0;
    for (const auto& entry : fs::directory_iterator(fs::path(GRAPHRUN_SOURCE_DIR) / "scripts" / "examples")) {
        std::string path = entry.path().string();
        bool json = entry.path().extension() == ".json";
        if (!json && entry.path().extension() != ".graph") continue;
        CAPTURE(path);
        std::ifstream f(path);
        std::stringstream ss;
        ss << f.rdbuf();
        auto orig = load_ok(ss.str(), json);
        auto as_json = load_ok(write_json(orig->graph), true);
        auto as_text = load_ok(write_text(orig->graph), false);
        auto back = load_ok(write_text(as_json->graph), false);
        std::string why;
        CHECK_MESSAGE(same_graph(orig->graph, as_json->graph, why), "to json: " << why);
        CHECK_MESSAGE(same_graph(orig->graph, as_text->graph, why), "to text: " << why);
        CHECK_MESSAGE(same_graph(orig->graph, back->graph, why), "json back to text: " << why);
        ++seen;
    }
    CHECK(seen >= 10);
}

TEST_CASE("convert: weak literals, NaN, infinities, devices and repeats survive both ways") {
    auto orig = load_ok(
        "a = const([1, nan, -inf, 2.5], dtype=f64)\nb = a * 2 + -1.5\nwith device(\"gpu\") { c = b / inf }\n"
        "x = ones([4], dtype=f64)\nrepeat 2 { y = x * b\n x = y - 0.25 }\nrepeat 0 { x = x }\noutput c, x\n");
    for (int round = 0; round < 2; ++round) {
        auto other = round == 0 ? load_ok(write_json(orig->graph), true) : load_ok(write_text(orig->graph), false);
        std::string why;
        CHECK_MESSAGE(same_graph(orig->graph, other->graph, why), why);
    }
}
