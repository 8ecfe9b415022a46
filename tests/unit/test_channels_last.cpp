// The layout pass (engine/plan/channels_last.h): which conv outputs are held
// channels-last, with a stand-in for oneDNN's answer (which convs run NHWC),
// so that the rules are tested on any build: a value stays NCHW when it is an
// output or fetched, read by a non-conv node, read as a conv's filter, or read
// or written by a conv that does not run channels-last.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "engine/api/prepare.h"
#include "engine/kernels/cpu/dnnl_kernels.h"
#include "engine/plan/channels_last.h"
#include "tests/unit/prepare_helpers.h"

using namespace graphrun;

namespace {

// No layout pass here: each test runs it with its own predicate.
PrepareResult prepared_unfused(const std::string& src, std::vector<std::string> fetch = {}) {
    return test::prepared(src, false, std::move(fetch));
}

std::vector<std::string> marked(const Graph& g) {
    std::vector<std::string> v;
    for (const Node& n : g.nodes)
        if (n.channels_last) v.emplace_back(n.display());
    return v;
}

const char* kChain =
    "x = random_uniform([2, 3, 6, 6], seed=1)\n"
    "w1 = random_uniform([4, 3, 1, 1], seed=2)\n"
    "w2 = random_uniform([4, 1, 3, 3], seed=3)\n"
    "w3 = random_uniform([3, 4, 1, 1], seed=4)\n"
    "a = conv(x, w1)\n"
    "b = conv(a, w2, pads=1, group=4)\n"
    "c = conv(b, w3)\n"
    "d = conv(c, w1)\n"
    "r = relu(d)\n"
    "e = conv(r, w2, pads=1, group=4)\n"
    "output e\n";

bool every_conv(const Graph&, const Node&, int) {
    return true;
}
bool not_c(const Graph&, const Node& n, int) {
    return n.display() != "c";
}

}  // namespace

TEST_CASE(
    "channels_last: conv outputs read only by convs that run NHWC are marked; outputs and other "
    "readers' are not") {
    PrepareResult p = prepared_unfused(kChain);
    Graph& g = p.prepared.graph();
    // d is read by relu, e is the output, x and the filters are not conv outputs.
    CHECK(mark_channels_last(g, every_conv) == 3);
    CHECK(marked(g) == std::vector<std::string>{"a", "b", "c"});
    // A conv that does not run NHWC keeps its input and output NCHW: b (its input) and c.
    CHECK(mark_channels_last(g, not_c) == 1);
    CHECK(marked(g) == std::vector<std::string>{"a"});
    CHECK(mark_channels_last(g, nullptr) == 0);
    CHECK(marked(g).empty());
}

TEST_CASE(
    "channels_last: a fetched value, a value read as a filter or by a conv in a repeat body stays "
    "NCHW") {
    PrepareResult p = prepared_unfused(kChain, {"b", "e"});
    Graph& g = p.prepared.graph();
    CHECK(mark_channels_last(g, every_conv) == 2);
    CHECK(marked(g) == std::vector<std::string>{"a", "c"});

    PrepareResult q = prepared_unfused(
        "x = random_uniform([1, 4, 4, 4], seed=1)\n"
        "w = random_uniform([4, 4, 1, 1], seed=2)\n"
        "f = conv(w, w)\n"  // f is read as a filter below
        "a = conv(x, f)\n"
        "b = conv(a, w)\n"  // b is read inside the repeat body
        "repeat 2 {\n"
        "  b = conv(b, w)\n"
        "}\n"
        "output b\n");
    Graph& h = q.prepared.graph();
    mark_channels_last(h, every_conv);
    CHECK(marked(h) == std::vector<std::string>{"a"});
}

TEST_CASE(
    "channels_last: a conv that reads a larger NCHW value from another op keeps its output NCHW") {
    PrepareResult p = prepared_unfused(
        "x = random_uniform([1, 8, 4, 4], seed=1)\n"
        "w = random_uniform([2, 8, 1, 1], seed=2)\n"
        "v = random_uniform([8, 2, 1, 1], seed=3)\n"
        "u = random_uniform([2, 8, 1, 1], seed=4)\n"
        "a = conv(x, w)\n"  // 8 channels in, 2 out: converting x costs more than a
        "b = conv(a, v)\n"  // a conv's input: marked whatever its size
        "c = conv(b, u)\n"
        "output c\n");
    Graph& g = p.prepared.graph();
    CHECK(mark_channels_last(g, every_conv) == 1);
    CHECK(marked(g) == std::vector<std::string>{"b"});
}

TEST_CASE(
    "channels_last: prepare runs the pass after fusion, not under --memory-limit or --no-fuse") {
    static const DeviceAvailability no_gpu;
    auto marks = [](bool fuse, uint64_t limit) {
        PrepareOptions o;
        o.devices = &no_gpu;
        o.fuse = fuse;
        o.memory_limit = limit;
        o.refuse_over_limit = false;
        std::ostringstream err;
        PrepareResult r = prepare(load_graph_source("t.graph", kChain, false), o, err);
        INFO(err.str());
        REQUIRE(r.ok());
        return marked(r.prepared.graph());
    };
    CHECK(marks(true, uint64_t(1) << 30).empty());
    CHECK(marks(false, 0).empty());
    // With oneDNN these small convs run NHWC (a, b, c, and r: d fused with its relu).
    if (!kernels::dnnl_text().empty() && !std::getenv("GRAPHRUN_NO_DNNL"))
        CHECK(marks(true, 0) == std::vector<std::string>{"a", "b", "c", "r"});
}

bool not_e2(const Graph&, const Node& n, int) {
    return n.display() != "e2";
}

const char* kFire =
    "x = random_uniform([1, 4, 8, 8], seed=1)\n"
    "w = random_uniform([4, 4, 1, 1], seed=2)\n"
    "v = random_uniform([4, 8, 1, 1], seed=3)\n"
    "a = conv(x, w)\n"
    "p = max_pool(a, kernel_shape=2, strides=2)\n"
    "e1 = conv(p, w)\n"
    "e2 = conv(p, w)\n"
    "c = concat(e1, e2, axis=AXIS)\n"
    "q = max_pool(c, kernel_shape=2, strides=2)\n"
    "y = conv(q, FILTER)\n"
    "output y\n";

// kFire with the concat along axis (the last conv's filter fits its channels).
std::string fire_with_axis(const char* axis) {
    std::string s = kFire;
    s.replace(s.find("AXIS"), 4, axis);
    s.replace(s.find("FILTER"), 6, std::string(axis) == "1" ? "v" : "w");
    return s;
}

TEST_CASE(
    "channels_last: a max_pool and a channel concat between NHWC convs keep the layout, all or "
    "nothing") {
    {
        PrepareResult p = prepared_unfused(fire_with_axis("1"));
        Graph& g = p.prepared.graph();
        CHECK(mark_channels_last(g, every_conv) == 6);
        CHECK(marked(g) == std::vector<std::string>{"a", "p", "e1", "e2", "c", "q"});
        // A conv that does not run NHWC reads p: p goes NCHW, and with it the
        // max_pool's input a; e2's output is NCHW, and with it the concat, its
        // other input e1 and the max_pool after it.
        CHECK(mark_channels_last(g, not_e2) == 0);
        CHECK(marked(g).empty());
        CHECK(mark_channels_last(g, nullptr) == 0);
    }
    {
        // The concat fetched: it, its inputs and the pool after it stay NCHW.
        PrepareResult p = prepared_unfused(fire_with_axis("1"), {"c", "y"});
        Graph& g = p.prepared.graph();
        CHECK(mark_channels_last(g, every_conv) == 2);
        CHECK(marked(g) == std::vector<std::string>{"a", "p"});
    }
    for (const char* axis : {"0", "2", "-1"}) {
        // A concat along another axis runs on NCHW only.
        PrepareResult p = prepared_unfused(fire_with_axis(axis));
        Graph& g = p.prepared.graph();
        mark_channels_last(g, every_conv);
        CHECK(marked(g) == std::vector<std::string>{"a", "p"});
    }
}

// The marked values with their layouts ("a:16": nChw16c, "a:0": NHWC).
std::vector<std::string> blocks(const Graph& g) {
    std::vector<std::string> v;
    for (const Node& n : g.nodes)
        if (n.channels_last) v.emplace_back(std::string(n.display()) + ":" + std::to_string(n.channel_block));
    return v;
}

bool no_block16(const Graph&, const Node&, int block) {
    return block != 16;
}
bool nhwc_only(const Graph&, const Node&, int block) {
    return block == 0;
}
// b runs NHWC and nChw8c only.
bool b_not_16(const Graph&, const Node& n, int block) {
    return n.display() != "b" || block != 16;
}

TEST_CASE(
    "channels_last: each group of values joined by convs gets one layout, blocked where every "
    "channel count allows it and every conv runs it") {
    PrepareResult q = prepared_unfused(
        "x = random_uniform([1, 8, 6, 6], seed=1)\n"
        "w1 = random_uniform([16, 8, 1, 1], seed=2)\n"
        "w2 = random_uniform([32, 16, 1, 1], seed=3)\n"
        "w3 = random_uniform([24, 32, 1, 1], seed=4)\n"
        "w4 = random_uniform([24, 24, 1, 1], seed=5)\n"
        "w5 = random_uniform([16, 24, 1, 1], seed=6)\n"
        "a = conv(x, w1)\n"
        "b = conv(a, w2)\n"
        "t = conv(b, w3)\n"
        "r = relu(t)\n"
        "c = conv(r, w4)\n"
        "d = conv(c, w5)\n"
        "output d\n");
    Graph& h = q.prepared.graph();
    // a, b (16 and 32 channels) form one group; t is read by relu, so NCHW; c (24) alone.
    CHECK(mark_channels_last(h, every_conv) == 3);
    CHECK(blocks(h) == std::vector<std::string>{"a:16", "b:16", "c:8"});
    CHECK(mark_channels_last(h, no_block16) == 3);
    CHECK(blocks(h) == std::vector<std::string>{"a:8", "b:8", "c:8"});
    // One conv of the group without nChw16c takes the whole group to nChw8c.
    CHECK(mark_channels_last(h, b_not_16) == 3);
    CHECK(blocks(h) == std::vector<std::string>{"a:8", "b:8", "c:8"});
    CHECK(mark_channels_last(h, nhwc_only) == 3);
    CHECK(blocks(h) == std::vector<std::string>{"a:0", "b:0", "c:0"});
    // Channels that are no multiple of 8 (kChain's 4 and 3): NHWC.
    PrepareResult k = prepared_unfused(kChain);
    Graph& kg = k.prepared.graph();
    CHECK(mark_channels_last(kg, every_conv) == 3);
    CHECK(blocks(kg) == std::vector<std::string>{"a:0", "b:0", "c:0"});
    // Marks of an earlier call are cleared, the block too.
    CHECK(mark_channels_last(h, nullptr) == 0);
    for (const Node& n : h.nodes) CHECK(n.channel_block == 0);
}

TEST_CASE("channels_last: a group our max_pool or concat reads or writes is NHWC or in the block asked for") {
    // kFire with 16 channels everywhere: the pools and the concat read NHWC only.
    std::string s = fire_with_axis("1");
    for (const char* from : {"[1, 4, 8, 8]", "[4, 4, 1, 1]", "[4, 8, 1, 1]"}) {
        const std::string to = std::string(from) == "[1, 4, 8, 8]"   ? "[1, 16, 8, 8]"
                               : std::string(from) == "[4, 4, 1, 1]" ? "[16, 16, 1, 1]"
                                                                     : "[16, 32, 1, 1]";
        s.replace(s.find(from), std::string(from).size(), to);
    }
    PrepareResult p = prepared_unfused(s);
    Graph& g = p.prepared.graph();
    CHECK(mark_channels_last(g, every_conv) == 6);
    CHECK(blocks(g) == std::vector<std::string>{"a:0", "p:0", "e1:0", "e2:0", "c:0", "q:0"});
    // Where the caller's kernels take a blocked layout (8: oneDNN without
    // AVX-512), the group is held in it, though 16 would fit its channels.
    CHECK(mark_channels_last(g, every_conv, 8) == 6);
    CHECK(blocks(g) == std::vector<std::string>{"a:8", "p:8", "e1:8", "e2:8", "c:8", "q:8"});
    CHECK(mark_channels_last(g, every_conv, 16) == 6);
    CHECK(blocks(g) == std::vector<std::string>{"a:16", "p:16", "e1:16", "e2:16", "c:16", "q:16"});
    // A conv with no fast code in that block leaves the group NHWC.
    CHECK(mark_channels_last(g, [](const Graph&, const Node&, int block) { return block != 8; }, 8) == 6);
    CHECK(blocks(g) == std::vector<std::string>{"a:0", "p:0", "e1:0", "e2:0", "c:0", "q:0"});
}

TEST_CASE("channels_last: a global pool's input is held in its group's layout; its output never is") {
    const char* src =
        "x = random_uniform([1, 16, 6, 6], seed=1)\n"
        "w = random_uniform([16, 16, 1, 1], seed=2)\n"
        "a = conv(x, w)\n"
        "b = conv(a, w)\n"
        "m = global_max_pool(a)\n"  // a: read by a conv and a global pool
        "p = global_avg_pool(b)\n"  // b: read by a global pool only
        "output m, p\n";
    PrepareResult pr = prepared_unfused(src);
    Graph& g = pr.prepared.graph();
    CHECK(mark_channels_last(g, every_conv) == 2);
    CHECK(blocks(g) == std::vector<std::string>{"a:16", "b:16"});
    // Fetched, b stays NCHW (the pool then reads a and b as they are).
    PrepareResult fetched = prepared_unfused(src, {"b", "m", "p"});
    Graph& h = fetched.prepared.graph();
    CHECK(mark_channels_last(h, every_conv) == 1);
    CHECK(marked(h) == std::vector<std::string>{"a"});
}
