// The fusion pass (engine/plan/fuse.h): which chains become one node and
// which stay apart, batch_norm folded into new weights, names and outputs
// kept, and the fused run equal to the unfused one with the safepoint peak
// equal to the fused plan's static peak.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "engine/api/prepare.h"
#include "engine/api/run.h"
#include "engine/plan/fuse.h"
#include "engine/kernels/cpu/dnnl_kernels.h"
#include "tests/unit/prepare_helpers.h"

using namespace graphrun;

namespace {

using test::no_gpu;

// A stand-in GPU that runs every op (placement only: nothing here opens it).
const DeviceAvailability& fake_gpu() {
    static const DeviceAvailability d = [] {
        DeviceAvailability a;
        a.gpu_count = 1;
        a.why_no_gpu.clear();
        a.gpu_supports = [](OpKind, DType) { return true; };
        return a;
    }();
    return d;
}

using test::prepared;
using test::run_once;

const Node* find(const Graph& g, std::string_view name) {
    for (const Node& n : g.nodes)
        if (n.display() == name) return &n;
    return nullptr;
}

size_t fused_count(const Graph& g) {
    size_t k = 0;
    for (const Node& n : g.nodes) k += g.epilogue_of(n) != nullptr;
    return k;
}

std::string list(std::initializer_list<double> v) {
    std::string s = "[";
    for (double x : v) s += (s.size() > 1 ? ", " : "") + std::to_string(x);
    return s + "]";
}

// conv -> batch_norm -> relu with constant weights; the conv's bias optional.
std::string conv_bn_relu(bool bias, const std::string& tail = "y = relu(n)\noutput y\n") {
    std::string w = "[";
    for (int i = 0; i < 3 * 2 * 3 * 3; ++i) w += (i ? ", " : "") + std::to_string(0.05 * (i % 7) - 0.1);
    w += "]";
    return "x = random_uniform([1, 2, 5, 5], seed=3)\n"
           "w = const(" + w + ", shape=[3, 2, 3, 3])\n" +
           (bias ? "cb = " + list({0.1, -0.2, 0.3}) + "\nc = conv(x, w, cb, pads=1)\n" : "c = conv(x, w, pads=1)\n") +
           "s = " + list({1.5, 0.5, 2}) + "\nb = " + list({0.1, -0.2, 0.3}) + "\nm = " + list({0.05, 0.1, -0.1}) +
           "\nv = " + list({1, 2, 0.5}) + "\nn = batch_norm(c, s, b, m, v, epsilon=0.001)\n" + tail;
}

std::vector<float> floats(const HostTensor& t) {
    std::vector<float> v(t.data.size() / sizeof(float));
    std::memcpy(v.data(), t.data.data(), t.data.size());
    return v;
}

}  // namespace

TEST_CASE("fuse: conv + batch_norm + relu is one conv node with relu's name, batch_norm folded into new weights") {
    for (bool bias : {false, true}) {
        CAPTURE(bias);
        // The folded constants' values are read below: not pre-packed.
        PrepareResult f = prepared(conv_bn_relu(bias), true, {}, test::no_gpu(), false);
        const Graph& g = f.prepared.graph();
        const Node* y = find(g, "y");
        REQUIRE(y);
        CHECK(y->op == OpKind::Conv);
        const Epilogue* e = g.epilogue_of(*y);
        REQUIRE(e);
        CHECK(e->act == Activation::Relu);
        CHECK(e->residual == -1);
        CHECK(e->bias == -1);
        REQUIRE(e->fused.size() == 3);
        CHECK(e->fused[0].op == OpKind::Conv);
        CHECK(e->fused[0].name == "c");
        CHECK(e->fused[1].op == OpKind::BatchNorm);
        CHECK(e->fused[1].name == "n");
        CHECK(e->fused[2].op == OpKind::Relu);
        CHECK(e->describe() == "conv + batch_norm + relu");
        // The conv, the batch_norm and their constants left; x, the two folded constants and y stay.
        CHECK(g.nodes.size() == 4);
        for (const char* gone : {"c", "n", "w", "s", "b", "m", "v", "cb"}) CHECK_MESSAGE(!find(g, gone), gone);
        CHECK(g.bindings.count("w") == 0);
        CHECK(g.bindings.count("y") == 1);
        REQUIRE(y->inputs.size() == 3);
        const Node& w2 = g.node(y->inputs[1].id);
        const Node& b2 = g.node(y->inputs[2].id);
        CHECK(w2.op == OpKind::Const);
        CHECK(w2.shape == Shape{3, 2, 3, 3});
        CHECK(b2.shape == Shape{3});
        // Each node's inputs come before it, as validation orders them.
        for (size_t i = 0; i < g.nodes.size(); ++i)
            for (const Input& in : g.nodes[i].inputs) CHECK(static_cast<size_t>(in.id) < i);
        // w' = w * s / sqrt(v + eps), b' = (cb - m) * s / sqrt(v + eps) + b, per output channel.
        const double s[] = {1.5, 0.5, 2}, b[] = {0.1, -0.2, 0.3}, m[] = {0.05, 0.1, -0.1}, v[] = {1, 2, 0.5},
                     cb[] = {0.1, -0.2, 0.3};
        std::vector<float> wv(54), bv(3);
        std::memcpy(wv.data(), w2.literal.data(), 54 * 4);
        std::memcpy(bv.data(), b2.literal.data(), 3 * 4);
        const double eps = static_cast<float>(0.001);
        for (int k = 0; k < 3; ++k) {
            const double a = s[k] / std::sqrt(v[k] + eps);
            CHECK(bv[k] == doctest::Approx(((bias ? cb[k] : 0) - m[k]) * a + b[k]).epsilon(1e-6));
            for (int i = 0; i < 18; ++i)
                CHECK(wv[k * 18 + i] == doctest::Approx(static_cast<float>(0.05 * ((k * 18 + i) % 7) - 0.1) * a)
                                            .epsilon(1e-6));
        }
        // Fewer weights than the conv's and the batch_norm's (4 parameters) apart.
        PrepareResult u = prepared(conv_bn_relu(bias), false);
        CHECK(fused_count(u.prepared.graph()) == 0);
        CHECK(f.prepared.plan->weights.at("cpu") < u.prepared.plan->weights.at("cpu"));
        CHECK(f.prepared.plan->static_peak.at("cpu") < u.prepared.plan->static_peak.at("cpu"));
        // The same values, and the run's peak is the fused plan's static peak.
        RunResult rf = run_once(f), ru = run_once(u);
        CHECK(rf.before.at("cpu").peak == f.prepared.plan->static_peak.at("cpu"));
        CHECK(ru.before.at("cpu").peak == u.prepared.plan->static_peak.at("cpu"));
        CHECK(rf.before.at("cpu").weights == f.prepared.plan->weights.at("cpu"));
        REQUIRE(rf.outputs.size() == 1);
        CHECK(rf.outputs[0].name == "y");
        const std::vector<float> a = floats(rf.outputs[0]), c = floats(ru.outputs[0]);
        REQUIRE(a.size() == 75);
        REQUIRE(c.size() == 75);
        int positive = 0;
        for (size_t i = 0; i < a.size(); ++i) {
            CHECK(a[i] == doctest::Approx(c[i]).epsilon(1e-5).scale(1));
            CHECK(a[i] >= 0);
            positive += a[i] > 0;
        }
        CHECK(positive > 10);  // the relu did not zero everything
    }
}

TEST_CASE("fuse: a filter two conv + batch_norm chains share folds into each (its values read by both folds)") {
    // Both convs read w; the first fold must leave w's values for the second
    // (a fold frees the old filter only where it was its only reader).
    std::string w = "[";
    for (int i = 0; i < 54; ++i) w += (i ? ", " : "") + std::to_string(0.05 * (i % 7) - 0.1);
    w += "]";
    const std::string src = "x = random_uniform([1, 2, 5, 5], seed=3)\n"
                            "w = const(" + w + ", shape=[3, 2, 3, 3])\n"
                            "s = " + list({1.5, 0.5, 2}) + "\nb = " + list({0.1, -0.2, 0.3}) + "\nm = " +
                            list({0.05, 0.1, -0.1}) + "\nv = " + list({1, 2, 0.5}) + "\n"
                            "c1 = conv(x, w, pads=1)\nn1 = batch_norm(c1, s, b, m, v, epsilon=0.001)\n"
                            "c2 = conv(x * 2, w, pads=1)\nn2 = batch_norm(c2, v, m, b, s, epsilon=0.001)\n"
                            "output n1, n2\n";
    PrepareResult f = prepared(src, true), u = prepared(src, false);
    CHECK(fused_count(f.prepared.graph()) == 2);
    CHECK(!find(f.prepared.graph(), "w"));  // neither conv reads it any more
    RunResult rf = run_once(f), ru = run_once(u);
    REQUIRE(rf.outputs.size() == 2);
    REQUIRE(ru.outputs.size() == 2);
    for (size_t o = 0; o < 2; ++o) {
        const std::vector<float> a = floats(rf.outputs[o]), c = floats(ru.outputs[o]);
        REQUIRE(a.size() == 75);
        REQUIRE(c.size() == 75);
        int nonzero = 0;
        for (size_t i = 0; i < a.size(); ++i) {
            CHECK(a[i] == doctest::Approx(c[i]).epsilon(1e-5).scale(1));
            nonzero += a[i] != 0;
        }
        CHECK(nonzero > 50);
    }
}

TEST_CASE("fuse: a fetched intermediate, a value read twice, or a batch_norm of a non-constant stops the chain") {
    // --fetch=n: the batch_norm's output must exist on its own; conv + batch_norm still fold.
    {
        PrepareResult r = prepared(conv_bn_relu(false), true, {"y", "n"});
        const Graph& g = r.prepared.graph();
        REQUIRE(find(g, "n"));
        REQUIRE(find(g, "y"));
        CHECK(find(g, "y")->op == OpKind::Relu);
        CHECK(!g.epilogue_of(*find(g, "y")));
        const Epilogue* e = g.epilogue_of(*find(g, "n"));
        REQUIRE(e);
        CHECK(e->describe() == "conv + batch_norm");
        CHECK(find(g, "n")->op == OpKind::Conv);
    }
    // --fetch=c: the conv's output is fetched, nothing fuses into it.
    {
        PrepareResult r = prepared(conv_bn_relu(false), true, {"y", "c"});
        const Graph& g = r.prepared.graph();
        CHECK(find(g, "c")->op == OpKind::Conv);
        CHECK(!g.epilogue_of(*find(g, "c")));
        // batch_norm + relu alone has no head: stays apart.
        CHECK(fused_count(g) == 0);
    }
    // c read twice: by the batch_norm and by z.
    {
        PrepareResult r = prepared(conv_bn_relu(false, "y = relu(n)\nz = c + y\noutput z\n"), true);
        const Graph& g = r.prepared.graph();
        CHECK(find(g, "c"));
        CHECK(find(g, "n"));
        CHECK(fused_count(g) == 0);
    }
    // A batch_norm whose mean is computed is not folded; the conv + relu of another chain still is.
    {
        const std::string src =
            "x = random_uniform([1, 2, 4, 4])\nw = random_uniform([2, 2, 1, 1])\np = ones([2])\n"
            "c = conv(x, w)\nn = batch_norm(c, p, p, p * 0.5, p)\ny = relu(n)\noutput y\n";
        PrepareResult r = prepared(src, true);
        const Graph& g = r.prepared.graph();
        CHECK(find(g, "n"));
        CHECK(find(g, "c"));
        CHECK(fused_count(g) == 0);  // w is not a const either
    }
}

TEST_CASE("fuse: a node on another device, a shape change, or a non-float dtype stays apart") {
    const std::string src =
        "x = random_uniform([4, 8], seed=1)\nw = random_uniform([8, 8], seed=2)\n"
        "h = x @ w\nwith device(\"gpu:0\") { y = relu(h) }\noutput y\n";
    {
        PrepareResult r = prepared(src, true, {}, fake_gpu());
        const Graph& g = r.prepared.graph();
        CHECK(find(g, "y")->placed == "gpu:0");
        CHECK(fused_count(g) == 0);
    }
    {
        // Everything on the (stand-in) GPU: the GPU kernels take no epilogue.
        PrepareOptions o;
        o.devices = &fake_gpu();
        o.placement.device = "gpu";
        o.refuse_over_limit = false;
        std::ostringstream err;
        PrepareResult r = prepare(load_graph_source("t.graph", "x = ones([2, 2])\ny = relu(x @ x)\n", false), o, err);
        REQUIRE(r.ok());
        CHECK(fused_count(r.prepared.graph()) == 0);
    }
    {
        // h + big broadcasts to [3, 4, 8]: the add changes the shape, so it is not fused.
        PrepareResult r = prepared(
            "x = ones([4, 8])\nw = ones([8, 8])\nbig = ones([3, 4, 8])\ny = relu(x @ w + big)\noutput y\n", true);
        CHECK(fused_count(r.prepared.graph()) == 0);
    }
    {
        // A cast between the matmul and the relu: no chain (and an i32 relu is no epilogue).
        PrepareResult r = prepared("x = ones([2, 2])\ny = relu(cast(x @ x, dtype=i32))\noutput y\n", true);
        CHECK(fused_count(r.prepared.graph()) == 0);
    }
}

TEST_CASE("fuse: matmul + bias + residual + gelu, gemm + sigmoid, inside a repeat body; a carried value stays") {
    const std::string src =
        "x = random_uniform([3, 4], seed=5)\nw = random_uniform([4, 4], seed=6)\nb = [0.5, -1, 0.25, 2]\n"
        "y = gelu(x @ w + b + x)\n"
        "z = sigmoid(gemm(x, w, b, alpha=0.5))\n"
        "output y, z\n";
    PrepareResult f = prepared(src, true), u = prepared(src, false);
    const Graph& g = f.prepared.graph();
    const Epilogue* e = g.epilogue_of(*find(g, "y"));
    REQUIRE(e);
    CHECK(find(g, "y")->op == OpKind::Matmul);
    CHECK(e->describe() == "matmul + add + add + gelu");
    CHECK(e->act == Activation::Gelu);
    CHECK(e->bias == 2);
    CHECK(e->residual == 3);
    CHECK(g.node(find(g, "y")->inputs[2].id).display() == "b");
    CHECK(g.node(find(g, "y")->inputs[3].id).display() == "x");
    const Epilogue* ez = g.epilogue_of(*find(g, "z"));
    REQUIRE(ez);
    CHECK(ez->describe() == "gemm + sigmoid");
    CHECK(find(g, "z")->inputs.size() == 3);
    RunResult rf = run_once(f), ru = run_once(u);
    REQUIRE(rf.outputs.size() == 2);
    // gemm + sigmoid: the same main result and formula, the same bits. The
    // fused f32 gelu is its ops' f32 steps (epilogue.h), the gelu kernel a
    // double formula rounded once: within a few ulp.
    CHECK(rf.outputs[1].data == ru.outputs[1].data);
    const std::vector<float> a = floats(rf.outputs[0]), c = floats(ru.outputs[0]);
    REQUIRE(a.size() == 12);
    for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(c[i]).epsilon(1e-6).scale(1e-6));
    CHECK(rf.before.at("cpu").peak == f.prepared.plan->static_peak.at("cpu"));

    // In a repeat body the chain fuses; a carried value cannot be fused away.
    PrepareResult loop = prepared(
        "w = random_uniform([4, 4], seed=6)\nh = ones([2, 4])\nrepeat 3 { h = relu(h @ w) }\noutput h\n", true);
    CHECK(fused_count(loop.prepared.graph()) == 1);
    PrepareResult carried = prepared(
        "w = random_uniform([4, 4], seed=6)\nh = ones([2, 4])\ny = ones([2, 4])\n"
        "repeat 3 { h = h @ w\n y = relu(h) }\noutput y\n", true);
    CHECK(fused_count(carried.prepared.graph()) == 0);
    RunResult rl = run_once(loop);
    CHECK(rl.before.at("cpu").peak == loop.prepared.plan->static_peak.at("cpu"));
}

TEST_CASE("fuse: conv + add residual + clip, and --no-fuse leaves the graph as written") {
    const std::string src =
        "x = random_uniform([2, 3, 6, 6], seed=9)\nw = random_uniform([3, 3, 3, 3], seed=4)\n"
        "r = random_uniform([2, 3, 6, 6], seed=8)\n"
        "y = clip(conv(x, w, pads=1) + r, min=0.5, max=5)\noutput y\n";
    PrepareResult f = prepared(src, true), u = prepared(src, false);
    const Graph& g = f.prepared.graph();
    const Epilogue* e = g.epilogue_of(*find(g, "y"));
    REQUIRE(e);
    CHECK(e->describe() == "conv + add + clip");
    CHECK(e->act == Activation::Clip);
    CHECK(e->lo == 0.5);
    CHECK(e->hi == 5);
    CHECK(e->residual == 2);  // the conv has no bias: the residual is its third input
    CHECK(fused_count(u.prepared.graph()) == 0);
    CHECK(u.prepared.graph().nodes.size() == g.nodes.size() + 2);
    RunResult rf = run_once(f), ru = run_once(u);
    // Our kernels give the unfused bits; oneDNN, where it runs the conv, adds
    // and clips in its post-ops with its own rounding: within an ulp or two.
    {
        const std::vector<float> a = floats(rf.outputs[0]), c = floats(ru.outputs[0]);
        REQUIRE(a.size() == c.size());
        for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(c[i]).epsilon(1e-6).scale(1e-6));
    }
    CHECK(rf.before.at("cpu").peak == f.prepared.plan->static_peak.at("cpu"));
    // The border pixels see fewer inputs (padding) than the middle ones: both sides of the clip show.
    const std::vector<float> a = floats(rf.outputs[0]);
    int clipped = 0, below = 0;
    for (float v : a) {
        CHECK(v >= 0.5f);
        CHECK(v <= 5.0f);
        clipped += v == 5.0f;
        below += v < 5.0f;
    }
    CHECK(clipped > 0);
    CHECK(below > 0);
}

TEST_CASE("fuse: a residual block in channels-last convs gives the same bits run a slice of the batch at a time") {
    // Convs whose blocked copies pass conv_chunk_bytes run the batch in
    // slices (dnnl_kernels.cpp): the residual and the output are sliced with it.
    const std::string src =
        "x = random_uniform([4, 16, 12, 12], seed=1)\n"
        "w1 = random_uniform([16, 16, 3, 3], low=-0.1, high=0.1, seed=2)\n"
        "w2 = random_uniform([16, 16, 3, 3], low=-0.1, high=0.1, seed=3)\n"
        "w3 = random_uniform([8, 16, 1, 1], low=-0.1, high=0.1, seed=4)\n"
        "a = relu(conv(x, w1, pads=1))\n"
        "b = relu(conv(a, w2, pads=1) + a)\n"
        "y = conv(b, w3)\n"
        "output b, y\n";  // b NCHW: its conv reorders its output, the residual sliced with it
    struct Restore {
        uint64_t was = kernels::conv_chunk_bytes();
        ~Restore() { kernels::set_conv_chunk_bytes(was); }
    } restore;
    const RunResult whole = run_once(prepared(src, true));
    for (uint64_t most : {uint64_t{64}, uint64_t{20} << 10}) {
        kernels::set_conv_chunk_bytes(most);
        const RunResult sliced = run_once(prepared(src, true));
        CHECK(sliced.outputs[0].data == whole.outputs[0].data);
        CHECK(sliced.outputs[1].data == whole.outputs[1].data);
    }
    kernels::set_conv_chunk_bytes(restore.was);
    const RunResult unfused = run_once(prepared(src, false));
    const std::vector<float> a = floats(whole.outputs[1]), c = floats(unfused.outputs[1]);
    REQUIRE(a.size() == c.size());
    // y sums terms of both signs: within 1e-5 of its largest magnitude.
    float most = 0;
    for (float v : c) most = std::max(most, std::fabs(v));
    REQUIRE(most > 0);
    for (size_t i = 0; i < a.size(); ++i) CHECK(std::fabs(a[i] - c[i]) <= 1e-5f * most);
}

TEST_CASE("fuse: the GELU written as ops (erf and tanh forms) becomes gelu, and a matmul chain takes it") {
    const std::string head = "x = random_uniform([3, 8], seed=1) - 0.5\nw = random_uniform([8, 8], seed=2)\nh = x @ w\n";
    const std::string erf_form = "g = h * 0.5 * (1 + erf(h / 1.4142135623730951))\n";
    const std::string erf_form2 = "g = h * (1 + erf(h * 0.7071067811865476)) * 0.5\n";
    const std::string tanh_form = "g = h * 0.5 * (1 + tanh(0.7978845608 * (h + 0.044715 * (h * h * h))))\n";
    for (const std::string& form : {erf_form, erf_form2, tanh_form}) {
        CAPTURE(form);
        const bool tanh = form == tanh_form;
        {
            const std::string src = head + form + "output g\n";
            PrepareResult f = prepared(src, true), u = prepared(src, false);
            const Graph& g = f.prepared.graph();
            const Node* n = find(g, "g");
            REQUIRE(n);
            CHECK(n->op == OpKind::Matmul);
            const Epilogue* e = g.epilogue_of(*n);
            REQUIRE(e);
            CHECK(e->act == (tanh ? Activation::GeluTanh : Activation::Gelu));
            CHECK(e->fused.front().op == OpKind::Matmul);
            CHECK(e->fused.back().name == "g");
            CHECK(e->fused.size() == (tanh ? 10u : 6u));
            // x's random_uniform and literal, x, w, g: h and the pattern's ops and constants left.
            CHECK(g.nodes.size() == 5);
            RunResult rf = run_once(f), ru = run_once(u);
            const std::vector<float> a = floats(rf.outputs[0]), b = floats(ru.outputs[0]);
            REQUIRE(a.size() == b.size());
            for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-6).scale(1e-6));
            CHECK(rf.before.at("cpu").peak == f.prepared.plan->static_peak.at("cpu"));
        }
        {
            // h read again outside the pattern: gelu(h) alone, listing the ops it replaced.
            const std::string src = head + form + "y = g + h\noutput y\n";
            PrepareResult f = prepared(src, true);
            const Graph& g = f.prepared.graph();
            const Node* n = find(g, "g");
            REQUIRE(n);
            CHECK(n->op == OpKind::Gelu);
            CHECK((n->find_attr("approximate") != nullptr) == tanh);
            REQUIRE(n->inputs.size() == 1);
            CHECK(g.node(n->inputs[0].id).display() == "h");
            const Epilogue* e = g.epilogue_of(*n);
            REQUIRE(e);
            CHECK(e->act == Activation::None);
            CHECK(e->fused.size() == (tanh ? 9u : 5u));
        }
    }
    // An inner value that is fetched keeps the ops as written.
    const std::string src = head + "e = erf(h / 1.4142135623730951)\ng = h * 0.5 * (1 + e)\noutput g\n";
    PrepareResult f = prepared(src, true, {"g", "e"});
    CHECK(find(f.prepared.graph(), "g")->op == OpKind::Mul);
    CHECK(fused_count(f.prepared.graph()) == 0);
    // A constant that is not the GELU's: no rewrite.
    PrepareResult other = prepared(head + "g = h * 0.5 * (1 + erf(h / 1.5))\noutput g\n", true);
    CHECK(find(other.prepared.graph(), "g")->op == OpKind::Mul);
}

TEST_CASE("fuse: a transpose of a matmul operand's last two axes becomes its transpose flag") {
    // q @ kᵀ as exporters write it (a transpose of k's last two axes), the
    // transpose on a (flipping a flag already set), and a permutation that
    // moves another axis, which stays a transpose.
    const std::string src =
        "q = random_uniform([2, 3, 5, 4], seed=1)\nk = random_uniform([2, 3, 6, 4], seed=2)\n"
        "r = random_uniform([2, 3, 4, 7], seed=3)\nk2 = random_uniform([3, 2, 6, 4], seed=4)\n"
        "s = matmul(q, transpose(k, perm=[0, 1, 3, 2]))\n"
        "t = matmul(transpose(q, perm=[0, 1, 3, 2]), r, transpose_a=true)\n"
        "u = matmul(q, transpose(k2, perm=[1, 0, 3, 2]))\n"
        "output s, t, u\n";
    PrepareResult f = prepared(src, true), u = prepared(src, false);
    const Graph& g = f.prepared.graph();
    size_t transposes = 0;
    for (const Node& n : g.nodes) transposes += n.op == OpKind::Transpose;
    CHECK(transposes == 1);  // u's: it moves the batch axes too
    const Node* s = find(g, "s");
    REQUIRE(s);
    CHECK(s->op == OpKind::Matmul);
    CHECK(g.node(s->inputs[1].id).display() == "k");
    REQUIRE(s->find_attr("transpose_b"));
    CHECK(s->find_attr("transpose_b")->value.b);
    REQUIRE(g.epilogue_of(*s));
    CHECK(g.epilogue_of(*s)->describe() == "transpose + matmul");
    const Node* t = find(g, "t");
    REQUIRE(t);
    REQUIRE(t->find_attr("transpose_a"));
    CHECK_FALSE(t->find_attr("transpose_a")->value.b);  // transposed twice: read as it is
    CHECK(g.node(t->inputs[0].id).display() == "q");
    // The same values as the graph as written (a gemm's transpose flag reads the
    // same products), and the static peak holds.
    RunResult rf = run_once(f), ru = run_once(u);
    REQUIRE(rf.outputs.size() == 3);
    for (size_t k = 0; k < 3; ++k) {
        const std::vector<float> a = floats(rf.outputs[k]), b = floats(ru.outputs[k]);
        REQUIRE(a.size() == b.size());
        for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-6).scale(1e-6));
    }
    CHECK(rf.before.at("cpu").peak == f.prepared.plan->static_peak.at("cpu"));
}

namespace {

// A constant of `shape` whose values vary (not random_uniform: the split
// takes a conv's weights only from a const).
std::string const_of(const std::vector<int64_t>& shape, double scale) {
    int64_t n = 1;
    std::string dims = "[";
    for (int64_t d : shape) {
        n *= d;
        dims += (dims.size() > 1 ? ", " : "") + std::to_string(d);
    }
    std::string v = "[";
    for (int64_t i = 0; i < n; ++i) v += (i ? ", " : "") + std::to_string(scale * ((i * 7) % 11 - 5));
    return "const(" + v + "], shape=" + dims + "])";
}

// SqueezeNet's fire module: two convs of x concatenated along the channels,
// max-pooled, then the next 1x1 conv (out_channels of them) with a bias and relu.
std::string fire(int64_t out_channels, const std::string& after_concat = "", const std::string& tail = "y = relu(conv(p, w, cb))\noutput y\n") {
    return "x = random_uniform([2, 4, 9, 9], seed=1)\n"
           "a = relu(conv(x, " + const_of({3, 4, 1, 1}, 0.1) + "))\n"
           "b = relu(conv(x, " + const_of({5, 4, 3, 3}, 0.05) + ", pads=1))\n"
           "c = concat(a, b, axis=1)\n" + after_concat +
           "p = max_pool(c, kernel_shape=[3, 3], strides=[2, 2])\n"
           "w = " + const_of({out_channels, 8, 1, 1}, 0.1) + "\n"
           "cb = " + const_of({out_channels}, 0.02) + "\n" + tail;
}

size_t count_op(const Graph& g, OpKind op) {
    size_t k = 0;
    for (const Node& n : g.nodes) k += n.op == op;
    return k;
}

}  // namespace

TEST_CASE("fuse: a pool of a concat pools each input, and a conv of a concat sums a conv of each input") {
    const std::string src = fire(6);
    // Not pre-packed: the weights' bytes are compared below (packed, oneDNN pads the 5 channels to 16).
    PrepareResult f = prepared(src, true, {}, test::no_gpu(), false), u = prepared(src, false);
    const Graph& g = f.prepared.graph();
    CHECK(count_op(u.prepared.graph(), OpKind::Concat) == 1);
    CHECK(count_op(g, OpKind::Concat) == 0);  // the concat left
    CHECK(count_op(g, OpKind::MaxPool) == 2);  // a pool per input
    CHECK(count_op(g, OpKind::Conv) == 4);     // a, b, and the split conv's two halves
    for (const Node& n : g.nodes)
        if (n.op == OpKind::MaxPool) CHECK((n.shape == Shape{2, 3, 4, 4} || n.shape == Shape{2, 5, 4, 4}));
    const Node* y = find(g, "y");
    REQUIRE(y);
    const Epilogue* e = g.epilogue_of(*y);
    REQUIRE(e);
    CHECK(e->describe() == "conv + add + relu");
    CHECK(e->residual >= 0);
    // The weights split along the input channels: 3 + 5 of the 8.
    const Node& w0 = g.node(y->inputs[1].id);
    CHECK(w0.op == OpKind::Const);
    CHECK((w0.shape == Shape{6, 3, 1, 1} || w0.shape == Shape{6, 5, 1, 1}));
    for (size_t i = 0; i < g.nodes.size(); ++i)
        for (const Input& in : g.nodes[i].inputs) CHECK(static_cast<size_t>(in.id) < i);
    // The split weights are the same bytes as the whole (each buffer rounded up to 64).
    CHECK(f.prepared.plan->weights.at("cpu") <= u.prepared.plan->weights.at("cpu") + 64);
    RunResult rf = run_once(f), ru = run_once(u);
    CHECK(rf.before.at("cpu").peak == f.prepared.plan->static_peak.at("cpu"));
    const std::vector<float> a = floats(rf.outputs[0]), c = floats(ru.outputs[0]);
    REQUIRE(a.size() == 2 * 6 * 16);
    REQUIRE(c.size() == a.size());
    int positive = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        CHECK(a[i] == doctest::Approx(c[i]).epsilon(1e-5).scale(1e-5));
        positive += a[i] > 0;
    }
    CHECK(positive > 20);
}

TEST_CASE("fuse: a concat stays where its conv's output is larger, a batch_norm folds, or another node reads it") {
    SUBCASE("the conv's output holds more than the concat: the pools split, the conv does not") {
        PrepareResult f = prepared(fire(12), true);
        const Graph& g = f.prepared.graph();
        CHECK(count_op(g, OpKind::Concat) == 1);  // the pooled values', before the whole conv
        CHECK(count_op(g, OpKind::MaxPool) == 2);
        CHECK(count_op(g, OpKind::Conv) == 3);
    }
    SUBCASE("a batch_norm after the conv folds into the whole conv") {
        const std::string bn = "s = " + const_of({6}, 0.1) + "\nm = " + const_of({6}, 0.01) +
                               "\nv = const([1, 2, 0.5, 1, 1, 2], shape=[6])\n"
                               "y = relu(batch_norm(conv(p, w, cb), s, cb, m, v))\noutput y\n";
        PrepareResult f = prepared(fire(6, "", bn), true);
        const Graph& g = f.prepared.graph();
        CHECK(count_op(g, OpKind::Conv) == 3);
        CHECK(count_op(g, OpKind::BatchNorm) == 0);
        CHECK(g.epilogue_of(*find(g, "y"))->describe() == "conv + batch_norm + relu");
    }
    SUBCASE("the concat is fetched, or read twice") {
        PrepareResult f = prepared(fire(6, "", "y = relu(conv(p, w, cb))\noutput y, c\n"), true);
        CHECK(count_op(f.prepared.graph(), OpKind::Concat) == 1);
        CHECK(count_op(f.prepared.graph(), OpKind::MaxPool) == 1);
        PrepareResult t = prepared(fire(6, "d = relu(c)\n", "y = relu(conv(p, w, cb))\noutput y, d\n"), true);
        CHECK(count_op(t.prepared.graph(), OpKind::Concat) == 1);
        CHECK(count_op(t.prepared.graph(), OpKind::MaxPool) == 1);
    }
}

namespace {

bool int8_yes(const Graph&, const Node&) { return true; }
bool int8_no(const Graph&, const Node&) { return false; }

// conv(cast(q) - cast(zq), w): an ONNX integer conv as the importer writes it.
std::string int8_conv_script(const std::string& w0, const std::string& zp = "128", const std::string& tail = "") {
    std::string w = "[" + w0;
    for (int i = 1; i < 3 * 2 * 3 * 3; ++i) w += ", " + std::to_string((i * 37) % 255 - 127);
    return "q = input(shape=[1, 2, 4, 4], dtype=u8)\nzq = const(" + zp + ", dtype=u8)\n"
           "x = cast(q, dtype=f32) - cast(zq, dtype=f32)\n"
           "w = const(" + w + "], shape=[3, 2, 3, 3])\ny = conv(x, w, pads=[1, 1, 1, 1])\noutput y" + tail + "\n";
}

}  // namespace

TEST_CASE("fuse: an integer conv on 8-bit x becomes an int8 conv where asked, with the weights in i8") {
    // The rewrite: the conv reads q and an i8 copy of w, x_zero_point 128; the casts and the subtraction leave.
    PrepareResult r = prepared(int8_conv_script("-128"), false);
    Graph& g = r.prepared.graph();
    fuse_graph(g, int8_yes);
    const Node* y = find(g, "y");
    REQUIRE(y);
    REQUIRE(y->inputs.size() == 2);
    const Node& x8 = g.node(y->inputs[0].id);
    const Node& w8 = g.node(y->inputs[1].id);
    CHECK(x8.display() == "q");
    CHECK(w8.op == OpKind::Const);
    CHECK(w8.dtype == DType::I8);
    REQUIRE(w8.literal.size() == 54);
    CHECK(static_cast<int8_t>(w8.literal[0]) == -128);
    CHECK(static_cast<int8_t>(w8.literal[5]) == (5 * 37) % 255 - 127);
    const NamedAttr* zp = y->find_attr("x_zero_point");
    REQUIRE(zp);
    CHECK(zp->value.i == 128);
    REQUIRE(g.epilogue_of(*y));
    CHECK(g.epilogue_of(*y)->describe() == "cast + sub + conv");
    for (const char* gone : {"x", "w", "zq"}) CHECK_MESSAGE(!find(g, gone), gone);
    CHECK(g.nodes.size() == 3);  // q, the i8 weights, y

    // Declined (oneDNN has no exact int8 code here): the graph is as it was.
    PrepareResult kept = prepared(int8_conv_script("-128"), false);
    const size_t before = kept.prepared.graph().nodes.size();
    fuse_graph(kept.prepared.graph(), int8_no);
    CHECK(kept.prepared.graph().nodes.size() == before);
    const Graph& kg = kept.prepared.graph();
    CHECK(kg.node(find(kg, "y")->inputs[0].id).dtype == DType::F32);
    CHECK(!find(kept.prepared.graph(), "y")->find_attr("x_zero_point"));

    // A weight outside i8 (128), or not an integer: no rewrite.
    for (const char* w0 : {"128", "0.5"}) {
        CAPTURE(w0);
        PrepareResult r2 = prepared(int8_conv_script(w0), false);
        fuse_graph(r2.prepared.graph(), int8_yes);
        CHECK(!find(r2.prepared.graph(), "y")->find_attr("x_zero_point"));
    }
    // A value the conv read that something else reads too stays: x fetched as an output.
    PrepareResult r3 = prepared(int8_conv_script("3", "128", ", x"), false);
    fuse_graph(r3.prepared.graph(), int8_yes);
    CHECK(find(r3.prepared.graph(), "y")->find_attr("x_zero_point"));
    CHECK(find(r3.prepared.graph(), "x"));
}

TEST_CASE("fuse: an integer matmul on 8-bit a becomes an int8 matmul, b's columns bounded") {
    const std::string head = "a = input(shape=[2, 4], dtype=u8)\nza = const(3, dtype=u8)\n"
                             "x = cast(a, dtype=f32) - cast(za, dtype=f32)\n";
    PrepareResult r = prepared(head + "b = const([1, -2, 3, 4, 5, -128, 7, 8, 9, 10, 11, 127], shape=[4, 3])\n"
                                      "y = matmul(x, b)\noutput y\n",
                               false);
    Graph& g = r.prepared.graph();
    fuse_graph(g, int8_yes);
    const Node* y = find(g, "y");
    REQUIRE(y);
    CHECK(g.node(y->inputs[0].id).display() == "a");
    const Node& b8 = g.node(y->inputs[1].id);
    CHECK(b8.dtype == DType::I8);
    REQUIRE(b8.literal.size() == 12);
    CHECK(static_cast<int8_t>(b8.literal[5]) == -128);
    CHECK(static_cast<int8_t>(b8.literal[11]) == 127);
    REQUIRE(y->find_attr("x_zero_point"));
    CHECK(y->find_attr("x_zero_point")->value.i == 3);
    CHECK(g.epilogue_of(*y)->describe() == "cast + sub + matmul");
    // A transposed b is not taken.
    PrepareResult t = prepared(head + "b = const([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], shape=[3, 4])\n"
                                      "y = matmul(x, b, transpose_b=true)\noutput y\n",
                               false);
    fuse_graph(t.prepared.graph(), int8_yes);
    CHECK(!find(t.prepared.graph(), "y")->find_attr("x_zero_point"));
}

namespace {

// softmax(q @ kᵀ · s + mask) @ v over [2, 3] heads of 8 queries and 9 keys
// of 2 features (the scores larger than q and k together, as in a
// transformer), with `scores` the expression of the scores (q, k, v, m, mf
// in scope) and `tail` the rest.
std::string attention_src(const std::string& scores, const std::string& tail = "output y\n") {
    return "q = random_uniform([2, 3, 8, 2], seed=1)\nk = random_uniform([2, 3, 9, 2], seed=2)\n"
           "v = random_uniform([2, 3, 9, 3], seed=3)\nm = random_uniform([8, 9], seed=4)\n"
           "mf = random_uniform([2, 3, 8, 9], seed=5)\n"
           "s = " + scores + "\ny = matmul(softmax(s), v)\n" + tail;
}

}  // namespace

TEST_CASE("fuse: softmax(q @ kT * scale + mask) @ v becomes one attention node, with the unfused ops' bits") {
    struct Case {
        std::string scores, parts;
        Attention::Scale scale;
        bool mask;
    };
    const Case cases[] = {
        {"matmul(q, transpose(k, perm=[0, 1, 3, 2])) * 0.5 + m", "transpose + matmul + mul + add + softmax + matmul",
         Attention::Scale::Multiply, true},
        {"mf + matmul(q, k, transpose_b=true) / 3", "matmul + div + add + softmax + matmul", Attention::Scale::Divide,
         true},
        {"0.25 * matmul(q, k, transpose_b=true)", "matmul + mul + softmax + matmul", Attention::Scale::Multiply, false},
        {"matmul(q, k, transpose_b=true)", "matmul + softmax + matmul", Attention::Scale::None, false},
    };
    for (const Case& c : cases) {
        INFO(c.scores);
        const std::string src = attention_src(c.scores);
        PrepareResult f = prepared(src, true), u = prepared(src, false);
        const Graph& g = f.prepared.graph();
        const Node* y = find(g, "y");
        REQUIRE(y);
        const Epilogue* e = g.epilogue_of(*y);
        REQUIRE(e);
        CHECK(y->op == OpKind::Matmul);
        CHECK(e->attention.on);
        CHECK(e->describe() == c.parts);
        CHECK(e->attention.scale_op == c.scale);
        CHECK(e->attention.qk_tb);
        REQUIRE(y->inputs.size() == (c.mask ? 4u : 3u));
        CHECK(g.node(y->inputs[0].id).display() == "q");
        CHECK(g.node(y->inputs[1].id).display() == "k");
        CHECK(g.node(y->inputs[2].id).display() == "v");
        if (c.mask) CHECK(g.node(y->inputs[3].id).display().substr(0, 1) == "m");
        CHECK(!find(g, "s"));
        CHECK(count_op(g, OpKind::Softmax) == 0);
        // The scores ([2, 3, 8, 9]) are never whole: the static peak falls, and
        // the safepoint run's peak is the fused plan's.
        CHECK(f.prepared.plan->static_peak.at("cpu") < u.prepared.plan->static_peak.at("cpu"));
        for (int threads : {1, 2}) {
            RunResult rf = run_once(f, threads), ru = run_once(u, threads);
            REQUIRE(rf.outputs.size() == 1);
            CHECK(rf.outputs[0].data == ru.outputs[0].data);
            CHECK(rf.before.at("cpu").peak == f.prepared.plan->static_peak.at("cpu"));
        }
    }
    // Inside a repeat body, from values carried around it.
    const std::string loop =
        "q = random_uniform([3, 5, 4], seed=1)\nk = random_uniform([3, 4, 5], seed=2)\n"
        "h = random_uniform([3, 5, 4], seed=3)\n"
        "repeat 2 { h = matmul(softmax(matmul(q, k) / 2), h) }\noutput h\n";
    PrepareResult lf = prepared(loop, true), lu = prepared(loop, false);
    CHECK(count_op(lf.prepared.graph(), OpKind::Softmax) == 0);
    CHECK(run_once(lf).outputs[0].data == run_once(lu).outputs[0].data);
}

namespace {

// The epilogue of `g`'s fused attention (its one node with one), or nullptr.
const Epilogue* attention_of(const Graph& g, const Node** node = nullptr) {
    for (const Node& n : g.nodes)
        if (const Epilogue* e = g.epilogue_of(n); e && e->attention.on) {
            if (node) *node = &n;
            return e;
        }
    return nullptr;
}

// The fused run's outputs are the unfused run's bytes, on each thread count.
void same_outputs(PrepareResult& f, PrepareResult& u, std::initializer_list<int> threads) {
    for (int t : threads) {
        INFO("threads ", t);
        RunResult rf = run_once(f, t), ru = run_once(u, t);
        REQUIRE(rf.outputs.size() == ru.outputs.size());
        for (size_t i = 0; i < rf.outputs.size(); ++i) CHECK(rf.outputs[i].data == ru.outputs[i].data);
    }
}

}  // namespace

TEST_CASE("fuse: the attention reads a head split's input in place, with the unfused ops' bits") {
    // q, k, v as a transformer's projections give them, [batch, L, heads, D],
    // each split into heads by a transpose of axes 1 and 2.
    const std::string split =
        "q4 = random_uniform([2, 8, 3, 2], seed=1)\nk4 = random_uniform([2, 9, 3, 2], seed=2)\n"
        "v4 = random_uniform([2, 9, 3, 3], seed=3)\n"
        "q = transpose(q4, perm=[0, 2, 1, 3])\nk = transpose(k4, perm=[0, 2, 1, 3])\n"
        "v = transpose(v4, perm=[0, 2, 1, 3])\n";
    {
        // ... and the heads merged back ([2, 8, 3, 3], then [2, 8, 9]).
        const std::string src = split +
                                "o = matmul(softmax(matmul(q, k, transpose_b=true) * 0.5), v)\n"
                                "y = reshape(transpose(o, perm=[0, 2, 1, 3]), shape=[2, 8, 9])\noutput y\n";
        PrepareResult f = prepared(src, true), u = prepared(src, false);
        const Graph& g = f.prepared.graph();
        // The merge's transpose became the fused node: o is gone.
        CHECK(!find(g, "o"));
        const Node* y = nullptr;
        const Epilogue* e = attention_of(g, &y);
        REQUIRE(e);
        CHECK(y->op == OpKind::Matmul);
        CHECK(y->shape == Shape{2, 8, 3, 3});
        CHECK(e->attention.heads[0]);
        CHECK(e->attention.heads[1]);
        CHECK(e->attention.heads[2]);
        CHECK(e->attention.heads_out);
        CHECK(e->describe() == "transpose + transpose + transpose + matmul + mul + softmax + matmul + transpose");
        REQUIRE(y->inputs.size() == 3);
        CHECK(g.node(y->inputs[0].id).display() == "q4");
        CHECK(g.node(y->inputs[1].id).display() == "k4");
        CHECK(g.node(y->inputs[2].id).display() == "v4");
        CHECK(count_op(g, OpKind::Transpose) == 0);
        CHECK(f.prepared.plan->static_peak.at("cpu") < u.prepared.plan->static_peak.at("cpu"));
        for (int threads : {1, 2}) {
            RunResult rf = run_once(f, threads), ru = run_once(u, threads);
            REQUIRE(rf.outputs.size() == 1);
            CHECK(rf.outputs[0].data == ru.outputs[0].data);
            CHECK(rf.before.at("cpu").peak == f.prepared.plan->static_peak.at("cpu"));
        }
    }
    {
        // q's split is read again (fetched): it stays, and k's and v's are taken.
        const std::string src = split + "y = matmul(softmax(matmul(q, k, transpose_b=true)), v)\noutput y, q\n";
        PrepareResult f = prepared(src, true), u = prepared(src, false);
        const Graph& g = f.prepared.graph();
        const Epilogue* e = attention_of(g);
        REQUIRE(e);
        CHECK_FALSE(e->attention.heads[0]);
        CHECK(e->attention.heads[1]);
        CHECK(e->attention.heads[2]);
        CHECK_FALSE(e->attention.heads_out);  // y is fetched: no merge to take
        CHECK(count_op(g, OpKind::Transpose) == 1);
        same_outputs(f, u, {2});
    }
}

TEST_CASE("fuse: the attention takes in a split that also transposes k's heads (GPT-2's kT), with the unfused ops' bits") {
    const std::string src =
        "q4 = random_uniform([2, 8, 3, 2], seed=1)\nk4 = random_uniform([2, 9, 3, 2], seed=2)\n"
        "v = random_uniform([2, 3, 9, 3], seed=3)\n"
        "q = transpose(q4, perm=[0, 2, 1, 3])\nkt = transpose(k4, perm=[0, 2, 3, 1])\n"
        "y = matmul(softmax(matmul(q, kt) / 4), v)\noutput y\n";
    PrepareResult f = prepared(src, true), u = prepared(src, false);
    const Graph& g = f.prepared.graph();
    const Epilogue* e = attention_of(g);
    REQUIRE(e);
    CHECK(e->attention.heads[0]);
    CHECK(e->attention.heads[1]);
    CHECK_FALSE(e->attention.heads[2]);
    CHECK_FALSE(e->attention.qk_ta);
    CHECK(e->attention.qk_tb);  // k4's heads [9, 2] read transposed
    CHECK(count_op(g, OpKind::Transpose) == 0);
    same_outputs(f, u, {1, 2});
}

TEST_CASE("fuse: attention stays apart where the scores are fetched, the softmax is not over their last axis, or the batch broadcasts") {
    auto unfused = [](const std::string& src, std::vector<std::string> fetch = {}) {
        PrepareResult r = prepared(src, true, std::move(fetch));
        const Graph& g = r.prepared.graph();
        CHECK(count_op(g, OpKind::Softmax) == 1);
        for (const Node& n : g.nodes)
            if (const Epilogue* e = g.epilogue_of(n)) CHECK_FALSE(e->attention.on);
    };
    const std::string qk = "matmul(q, k, transpose_b=true)";
    unfused(attention_src(qk + " * 0.5"), {"y", "s"});  // the scores fetched
    unfused(attention_src("matmul(q, k, transpose_b=true) * 0.5",
                          "z = s + 1\noutput y, z\n"));  // the scores read twice
    unfused("q = random_uniform([2, 3, 5, 4], seed=1)\nk = random_uniform([2, 3, 5, 4], seed=2)\n"
            "y = matmul(softmax(matmul(q, k, transpose_b=true), axis=2), q)\noutput y\n");  // not the last axis
    unfused("q = random_uniform([2, 3, 8, 2], seed=1)\nk = random_uniform([1, 3, 9, 2], seed=2)\n"
            "v = random_uniform([2, 3, 9, 3], seed=3)\n"
            "y = matmul(softmax(matmul(q, k, transpose_b=true)), v)\noutput y\n");  // k's batch broadcasts
    unfused(attention_src(qk + " * v2", "output y\n").insert(0, "v2 = random_uniform([1])\n"));  // scale not a constant
    unfused(attention_src(qk + " + random_uniform([9], seed=9)"));  // a mask of one row, broadcast
}

TEST_CASE("fuse: the fused attention's scores are workspace under the limit: over it the run fails and gives all back") {
    // q, k, v and the output, [2, 3, 32, 2] f32 each, are the static peak (at
    // the attention node); the scores' buffer, [32, 32] f32 for one worker,
    // comes on top of it as workspace. A limit with room for the peak and the
    // output's host copy but not the scores fails at that node.
    const std::string src =
        "q = random_uniform([2, 3, 32, 2], seed=1)\nk = random_uniform([2, 3, 32, 2], seed=2)\n"
        "v = random_uniform([2, 3, 32, 2], seed=3)\n"
        "y = matmul(softmax(matmul(q, k, transpose_b=true) * 0.5), v)\noutput y\n";
    const uint64_t tensor = 2 * 3 * 32 * 2 * sizeof(float), scores = 32 * 32 * sizeof(float);
    CHECK(prepared(src, true).prepared.plan->static_peak.at("cpu") == 4 * tensor);
    for (bool room : {false, true}) {
        INFO("room for the scores: " << room);
        PrepareOptions o;
        o.devices = &no_gpu();
        o.fuse = true;
        o.memory_limit = 4 * tensor + tensor + (room ? scores : 0);
        std::ostringstream err;
        PrepareResult r = prepare(load_graph_source("t.graph", src, false), o, err);
        INFO(err.str());
        REQUIRE(r.ok());
        REQUIRE(count_op(r.prepared.graph(), OpKind::Softmax) == 0);
        RunFileOptions ro;
        ro.prepare = o;
        ro.cleanup = CleanupStrategy::Safepoint;
        ro.threads = 1;
        ro.check_leaks = true;
        RunResult rr = run_prepared(r.prepared, InputValues{}, ro, err);
        if (room) {
            CHECK_FALSE(rr.error);
        } else {
            REQUIRE(rr.error);
            CHECK(rr.error->message.find("4096 bytes of scratch for the fused attention's scores (workspace) exceed "
                                         "the memory limit") != std::string::npos);
        }
        REQUIRE(rr.ran);
        const MemoryStats& after = rr.after.at("cpu");
        CHECK(after.in_use == 0);
        CHECK(after.workspace == 0);
        CHECK(after.live == 0);
    }
}
