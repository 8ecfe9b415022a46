// graphrun as a library: compile a graph from text once, run it twice in one
// session with different feeds, print the outputs and the memory statistics.
//
//     run_graph            the graph below
//     run_graph FILE       a graph file (.graph, .json, .onnx) whose inputs are all f32
#include <graphrun/graphrun.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

const char* const kGraph = R"(# y = relu(x @ w + b), and its sum
x = input([2, 3])
w = [[1.0, -1.0], [2.0, 0.5], [-1.0, 1.0]]
b = [0.5, -2.0]
y = relu(x @ w + b)
total = reduce_sum(y)
output y, total
)";

void print_array(const graphrun::Array& a) {
    std::printf("%s[", graphrun::dtype_name(a.dtype));
    for (size_t i = 0; i < a.shape.size(); ++i) std::printf(i ? ",%lld" : "%lld", static_cast<long long>(a.shape[i]));
    std::printf("]");
    if (a.dtype == graphrun::DType::F32) {
        const std::vector<float> v = a.values<float>();
        for (size_t i = 0; i < v.size() && i < 8; ++i) std::printf(" %g", static_cast<double>(v[i]));
        if (v.size() > 8) std::printf(" ... (%zu values)", v.size());
    }
    std::printf("\n");
}

// Every input filled with `base`, base + 1, base + 2, ... in row-major order.
graphrun::Feeds feeds_for(const graphrun::Executable& exe, float base) {
    graphrun::Feeds feeds;
    for (const graphrun::TensorInfo& in : exe.inputs()) {
        int64_t n = 1;
        for (int64_t d : in.shape) n *= d;
        std::vector<float> values(static_cast<size_t>(n));
        for (size_t i = 0; i < values.size(); ++i) values[i] = base + static_cast<float>(i);
        feeds[in.name] = graphrun::Array::of<float>(in.shape, values);
    }
    return feeds;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        graphrun::Session session({.cleanup = graphrun::Cleanup::Safepoint, .threads = 1, .device = "cpu"});
        graphrun::Executable exe =
            argc > 1 ? session.compile_file(argv[1]) : session.compile_source(kGraph, {}, "example.graph");
        std::printf("graphrun %s: %s, %zu input(s), %zu output(s)\n", graphrun::version(), exe.name().c_str(),
                    exe.inputs().size(), exe.outputs().size());
        for (float base : {1.0f, -2.0f}) {
            graphrun::RunResult r = session.run(exe, feeds_for(exe, base));
            std::printf("run %llu (inputs from %g):\n", static_cast<unsigned long long>(session.runs()),
                        static_cast<double>(base));
            for (const graphrun::Output& o : r.outputs) {
                std::printf("  %s = ", o.name.c_str());
                print_array(o.value);
            }
            for (const auto& [device, s] : r.stats)
                std::printf("  %s: peak %llu bytes, %llu allocations\n", device.c_str(),
                            static_cast<unsigned long long>(s.peak), static_cast<unsigned long long>(s.allocs));
            // The session stays open between runs, holding no tensor.
            for (const auto& [device, s] : session.stats())
                std::printf("  %s between runs: in_use %llu, live %llu\n", device.c_str(),
                            static_cast<unsigned long long>(s.in_use), static_cast<unsigned long long>(s.live));
        }
        graphrun::Teardown t = session.close();
        for (const auto& [device, s] : t.after)
            std::printf("%s after teardown: in_use %llu, reserved %llu, live %llu\n", device.c_str(),
                        static_cast<unsigned long long>(s.in_use), static_cast<unsigned long long>(s.reserved),
                        static_cast<unsigned long long>(s.live));
        return 0;
    } catch (const graphrun::Error& e) {
        std::fprintf(stderr, "run_graph: %s error: %s\n", graphrun::error_kind_name(e.kind()), e.what());
        for (const graphrun::Diagnostic& d : e.diagnostics()) std::fprintf(stderr, "%s\n", d.formatted.c_str());
        return 1;
    }
}
