// The pre-pack pass (engine/plan/prepack.h): which constants it packs, with a
// stand-in for the kernels' answer so that the rules are tested on any build,
// and, with oneDNN, that a packed weight is held once (as `weights`, none as
// `workspace`) and gives the bits the plain constant gives, at the threads it
// was packed for and at others.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/api/prepare.h"
#include "engine/api/run.h"
#include "engine/kernels/cpu/dnnl_kernels.h"
#include "engine/plan/plan.h"
#include "engine/plan/prepack.h"
#include "tests/unit/prepare_helpers.h"

using namespace graphrun;

namespace {

// A const literal of `n` values (a pattern of small fractions).
std::string values(int n, int seed) {
    std::string s = "[";
    for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(((i * 37 + seed * 11) % 19 - 9) * 0.0625);
    return s + "]";
}

// x (1x16x8x8) through two 3x3 convs with const filters, w1 read once, w2 by
// both convs of the second stage; g a gemm by a const b, v a const that is
// also an output.
std::string graph_src() {
    return "x = random_uniform([1, 16, 8, 8], seed=1)\n"
           "w1 = const(" + values(16 * 16 * 9, 1) + ", shape=[16, 16, 3, 3])\n"
           "w2 = const(" + values(16 * 16 * 9, 2) + ", shape=[16, 16, 3, 3])\n"
           "a = conv(x, w1, pads=1)\n"
           "b = conv(a, w2, pads=1)\n"
           "c = conv(b, w2, pads=1)\n"
           "m = random_uniform([4, 64], seed=2)\n"
           "k = const(" + values(64 * 32, 3) + ", shape=[64, 32])\n"
           "g = gemm(m, k)\n"
           "v = const(" + values(64 * 32, 4) + ", shape=[64, 32])\n"
           "h = m @ v\n"
           "output c, g, h, v\n";
}

const Node* find(const Graph& g, const std::string& name) {
    for (const Node& n : g.nodes)
        if (n.display() == name) return &n;
    return nullptr;
}

// Packs every weight it is asked about: its bytes reversed, layout "test".
std::optional<PrepackedWeight> reverse_all(const Graph& g, const Node& n, int threads) {
    CHECK(threads == 3);
    const std::vector<uint8_t>& lit = g.node(n.inputs[1].id).literal;
    PrepackedWeight w;
    w.layout = {'t', 'e', 's', 't'};
    w.size = lit.size();
    w.bytes = std::shared_ptr<uint8_t>(static_cast<uint8_t*>(std::malloc(lit.size())), std::free);
    for (size_t i = 0; i < lit.size(); ++i) w.bytes.get()[i] = lit[lit.size() - 1 - i];
    return w;
}

bool same_bits(const HostTensor& a, const HostTensor& b) {
    return a.data.size() == b.data.size() && std::memcmp(a.data.data(), b.data.data(), a.data.size()) == 0;
}

}  // namespace

TEST_CASE("prepack: a CPU const read once as a conv's, gemm's or matmul's weight is packed; shared or output ones are not") {
    PrepareResult p = test::prepared(graph_src(), false);  // no passes: run this one alone
    Graph& g = p.prepared.graph();
    const std::vector<uint8_t> w1_plain = find(g, "w1")->literal;
    CHECK(prepack_weights(g, reverse_all, 3) == 2);  // w1 (conv) and k (gemm)
    const NodeId w1 = static_cast<NodeId>(find(g, "w1") - g.nodes.data());
    const NodeId k = static_cast<NodeId>(find(g, "k") - g.nodes.data());
    REQUIRE(g.prepacked_weight(w1));
    REQUIRE(g.prepacked_weight(k));
    CHECK(g.prepacked.size() == 2);
    // Held once: the literal is gone, the packed bytes are what the stand-in made.
    CHECK(find(g, "w1")->literal.empty());
    CHECK(find(g, "k")->literal.empty());
    const PrepackedWeight& pw = *g.prepacked_weight(w1);
    REQUIRE(pw.size == w1_plain.size());
    CHECK(pw.bytes.get()[0] == w1_plain.back());
    // w2: two readers; v: an output (and read by a matmul); neither is touched.
    CHECK(!find(g, "w2")->literal.empty());
    CHECK(!find(g, "v")->literal.empty());
    // A second call packs nothing more.
    CHECK(prepack_weights(g, reverse_all, 3) == 0);
    // The plan counts a packed weight's bytes as the weight's.
    std::string error;
    const std::optional<Plan> plan = compile_plan(g, {static_cast<NodeId>(find(g, "c") - g.nodes.data())}, &error);
    REQUIRE_MESSAGE(plan, error);
    CHECK(plan->weight_bytes[static_cast<size_t>(w1)] == (pw.size + 63) / 64 * 64);
}

TEST_CASE("prepack: renumbering the nodes keeps each packed weight with its constant") {
    PrepareResult p = test::prepared(graph_src(), false);
    Graph& g = p.prepared.graph();
    REQUIRE(prepack_weights(g, reverse_all, 3) == 2);
    const NodeId w1 = static_cast<NodeId>(find(g, "w1") - g.nodes.data());
    std::vector<NodeId> remap(g.nodes.size());
    for (size_t i = 0; i < remap.size(); ++i) remap[i] = static_cast<NodeId>(i + 5);
    const uint8_t first = g.prepacked_weight(w1)->bytes.get()[0];
    g.remap_references(remap);
    REQUIRE(g.prepacked_weight(w1 + 5));
    CHECK(g.prepacked_weight(w1 + 5)->bytes.get()[0] == first);
    CHECK(!g.prepacked_weight(w1));
}

TEST_CASE("prepack: oneDNN's packed weights are held once as weights and give the plain constants' bits") {
    if (kernels::dnnl_text().empty()) {
        MESSAGE("SKIP: graphrun is built without oneDNN (libdnnl-dev); nothing is pre-packed");
        return;
    }
    PrepareResult packed = test::prepared(graph_src(), true, {}, test::no_gpu(), true);
    PrepareResult plain = test::prepared(graph_src(), true, {}, test::no_gpu(), false);
    const Graph& g = packed.prepared.graph();
    CHECK(plain.prepared.graph().prepacked.empty());
    const Node* w1 = find(g, "w1");
    REQUIRE(w1);
    const bool conv_packed = g.prepacked_weight(static_cast<NodeId>(w1 - g.nodes.data())) != nullptr;
    if (!conv_packed) MESSAGE("oneDNN reads this CPU's 3x3 conv filter as it is: nothing to pack");
    CHECK(w1->literal.empty() == conv_packed);
    for (int threads : {1, 2, 3}) {
        CAPTURE(threads);
        RunResult rp = test::run_once(packed, threads), ru = test::run_once(plain, threads);
        REQUIRE(rp.outputs.size() == 4);
        REQUIRE(ru.outputs.size() == 4);
        for (size_t i = 0; i < 4; ++i) {
            CAPTURE(rp.outputs[i].name);
            CHECK(same_bits(rp.outputs[i], ru.outputs[i]));
        }
        // The weights are what check predicts.
        CHECK(rp.before.at("cpu").weights == packed.prepared.plan->weights.at("cpu"));
        CHECK(ru.before.at("cpu").weights == plain.prepared.plan->weights.at("cpu"));
        if (!conv_packed || threads != static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))) continue;
        // Packed for this run's threads: w1's packed copy is not made again in workspace, as the plain
        // graph's kernel makes it (w2, read by two convs, is packed by each, in both).
        const PrepackedWeight* pw = g.prepacked_weight(static_cast<NodeId>(w1 - g.nodes.data()));
        CHECK(ru.before.at("cpu").workspace >= rp.before.at("cpu").workspace + pw->size);
    }
}

TEST_CASE("prepack: not under --memory-limit, --no-fuse or eager mode") {
    if (kernels::dnnl_text().empty()) {
        MESSAGE("SKIP: graphrun is built without oneDNN (libdnnl-dev)");
        return;
    }
    PrepareOptions o;
    o.devices = &test::no_gpu();
    o.refuse_over_limit = false;
    std::ostringstream err;
    o.memory_limit = uint64_t{1} << 30;
    PrepareResult limited = prepare(load_graph_source("t.graph", graph_src(), false), o, err);
    REQUIRE(limited.ok());
    CHECK(limited.prepared.graph().prepacked.empty());
    PrepareResult unfused = test::prepared(graph_src(), false);
    CHECK(unfused.prepared.graph().prepacked.empty());
}

TEST_CASE("prepack: a packed weight whose node no oneDNN kernel takes is an error, never read as the plain layout") {
    // f64: oneDNN's factories decline it; the stand-in packs it anyway.
    const std::string src = "a = const([1, 2, 3, 4], shape=[2, 2], dtype=f64)\n"
                            "k = const([1, 0, 0, 1], shape=[2, 2], dtype=f64)\n"
                            "g = gemm(a, k)\n"
                            "output g\n";
    PrepareResult p = test::prepared(src, false);
    Graph& g = p.prepared.graph();
    REQUIRE(prepack_weights(g, reverse_all, 3) == 1);
    RunFileOptions o;
    o.threads = 1;
    std::ostringstream err;
    RunResult r = run_prepared(p.prepared, InputValues{}, o, err);
    REQUIRE(r.error);
    CHECK(r.error->message.find("packed for oneDNN's kernel") != std::string::npos);
}
