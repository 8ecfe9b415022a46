// `graphrun dot` (engine/api/dot.h): one DOT node per graph node, one edge per
// operand, repeat bodies as clusters, fill colour by placed device.
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "engine/api/dot.h"

using namespace graphrun;

namespace {

size_t count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
    return n;
}

std::string dot_of(const std::string& src, const DeviceAvailability& devices, const std::string& device = "auto") {
    PrepareOptions o;
    o.devices = &devices;
    o.placement.device = device;
    o.refuse_over_limit = false;
    std::ostringstream err;
    PrepareResult r = prepare(load_graph_source("t.graph", src, false), o, err);
    REQUIRE_MESSAGE(r.ok(), err.str());
    std::ostringstream out;
    write_dot(r.prepared, out);
    return out.str();
}

}  // namespace

TEST_CASE("dot: nodes, edges, clusters and the placed device's colour") {
    DeviceAvailability gpu;
    gpu.gpu_count = 1;
    gpu.gpu_supports = [](OpKind op, DType) { return op != OpKind::Softmax; };
    const std::string src =
        "a = ones([4, 4])\n"
        "x = ones([4])\n"
        "repeat 3 {\n  x = a @ x\n  repeat 2 { x = x * 0.5 }\n}\n"
        "y = softmax(x, device=\"cpu\")\n"
        "output y, x\n";
    const std::string dot = dot_of(src, gpu, "gpu");
    CHECK(dot.rfind("digraph \"t.graph\" {\n", 0) == 0);
    CHECK(dot.size() > 2);
    CHECK(dot.substr(dot.size() - 2) == "}\n");
    CHECK(count(dot, "subgraph cluster_repeat") == 2);
    CHECK(count(dot, "label=\"repeat 3 (line 3)\"") == 1);
    CHECK(count(dot, "label=\"repeat 2 (line 5)\"") == 1);
    // Two carried values (x in each loop): ellipses, each with an init edge and a next-pass edge.
    CHECK(count(dot, "shape=ellipse") == 2);
    CHECK(count(dot, "[label=\"init\"]") == 2);
    CHECK(count(dot, "label=\"next pass\"") == 2);
    // The softmax runs on the CPU, the rest on the GPU.
    CHECK(dot.find("softmax\\nf32[4]\\n64 bytes\\ncpu\", fillcolor=\"lightblue\"") != std::string::npos);
    CHECK(dot.find("a\\nones\\nf32[4,4]\\n64 bytes\\ngpu:0\", fillcolor=\"palegreen\"") != std::string::npos);
    CHECK(count(dot, "peripheries=2") == 2);  // the two outputs
    // Each operand is an edge: matmul 2, mul 2 (the scalar literal too), softmax 1.
    CHECK(count(dot, " -> ") == 2 + 2 + 1 + 4);
}

TEST_CASE("dot: names are escaped in labels") {
    CHECK(dot_escape("a\"b\\c\nd") == "a\\\"b\\\\c d");
    DeviceAvailability none;
    const std::string dot = dot_of("x = [1, 2]\ny = x + 1\n", none);
    CHECK(dot.find("y\\nadd\\nf32[2]\\n64 bytes\\ncpu\", fillcolor=\"lightblue\", peripheries=2") != std::string::npos);
}
