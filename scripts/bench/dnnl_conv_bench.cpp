// oneDNN against graphrun's own CPU kernels, per shape: the conv layers of
// ResNet-18, MobileNet-v2 and SqueezeNet 1.1 (as torch exports them, read from
// the ONNX files of scripts/bench/onnx_bench.py), max_pool 3x3 s2 and the
// GEMMs of the MLP, MobileNet's classifier and the transformer. Built only on
// request where oneDNN is found:
//   cmake --build build --target dnnl_conv_bench && build/dnnl_conv_bench [--threads=2] [--batch=1,16]
// Each figure is the median (--min: the least) of repeated runs after a warm-up, in ms. NCHW in
// and out; oneDNN's weights are reordered once into the format it picks
// (format_tag::any), outside the timed loop. For conv two oneDNN variants:
//   plain:   the primitive on nchw src and dst (whatever implementation
//            oneDNN has for that: often its gemm-based conv);
//   blocked: src reordered to the format oneDNN picks, the blocked conv, the
//            dst reordered back to nchw, all three timed.
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/base/thread_pool.h"
#include "engine/ir/graph.h"
#include "engine/kernels/cpu/cpu_kernel.h"

using namespace graphrun;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

namespace {

struct ConvShape {
    const char* model;
    int count;  // layers of this shape in the model
    int64_t c, h, w, m, k, s, p, group;
};

// Unique conv shapes per model (batch 1 at 224x224), from the ONNX files.
const ConvShape kConvs[] = {
    {"resnet18", 1, 3, 224, 224, 64, 7, 2, 3, 1},
    {"resnet18", 4, 64, 56, 56, 64, 3, 1, 1, 1},
    {"resnet18", 1, 64, 56, 56, 128, 3, 2, 1, 1},
    {"resnet18", 3, 128, 28, 28, 128, 3, 1, 1, 1},
    {"resnet18", 1, 64, 56, 56, 128, 1, 2, 0, 1},
    {"resnet18", 1, 128, 28, 28, 256, 3, 2, 1, 1},
    {"resnet18", 3, 256, 14, 14, 256, 3, 1, 1, 1},
    {"resnet18", 1, 128, 28, 28, 256, 1, 2, 0, 1},
    {"resnet18", 1, 256, 14, 14, 512, 3, 2, 1, 1},
    {"resnet18", 3, 512, 7, 7, 512, 3, 1, 1, 1},
    {"resnet18", 1, 256, 14, 14, 512, 1, 2, 0, 1},
    {"mobilenet", 1, 3, 224, 224, 32, 3, 2, 1, 1},
    {"mobilenet", 1, 32, 112, 112, 32, 3, 1, 1, 32},
    {"mobilenet", 1, 32, 112, 112, 16, 1, 1, 0, 1},
    {"mobilenet", 1, 16, 112, 112, 96, 1, 1, 0, 1},
    {"mobilenet", 1, 96, 112, 112, 96, 3, 2, 1, 96},
    {"mobilenet", 1, 96, 56, 56, 24, 1, 1, 0, 1},
    {"mobilenet", 2, 24, 56, 56, 144, 1, 1, 0, 1},
    {"mobilenet", 1, 144, 56, 56, 144, 3, 1, 1, 144},
    {"mobilenet", 1, 144, 56, 56, 24, 1, 1, 0, 1},
    {"mobilenet", 1, 144, 56, 56, 144, 3, 2, 1, 144},
    {"mobilenet", 1, 144, 28, 28, 32, 1, 1, 0, 1},
    {"mobilenet", 3, 32, 28, 28, 192, 1, 1, 0, 1},
    {"mobilenet", 2, 192, 28, 28, 192, 3, 1, 1, 192},
    {"mobilenet", 2, 192, 28, 28, 32, 1, 1, 0, 1},
    {"mobilenet", 1, 192, 28, 28, 192, 3, 2, 1, 192},
    {"mobilenet", 1, 192, 14, 14, 64, 1, 1, 0, 1},
    {"mobilenet", 4, 64, 14, 14, 384, 1, 1, 0, 1},
    {"mobilenet", 4, 384, 14, 14, 384, 3, 1, 1, 384},
    {"mobilenet", 3, 384, 14, 14, 64, 1, 1, 0, 1},
    {"mobilenet", 1, 384, 14, 14, 96, 1, 1, 0, 1},
    {"mobilenet", 3, 96, 14, 14, 576, 1, 1, 0, 1},
    {"mobilenet", 2, 576, 14, 14, 576, 3, 1, 1, 576},
    {"mobilenet", 2, 576, 14, 14, 96, 1, 1, 0, 1},
    {"mobilenet", 1, 576, 14, 14, 576, 3, 2, 1, 576},
    {"mobilenet", 1, 576, 7, 7, 160, 1, 1, 0, 1},
    {"mobilenet", 3, 160, 7, 7, 960, 1, 1, 0, 1},
    {"mobilenet", 3, 960, 7, 7, 960, 3, 1, 1, 960},
    {"mobilenet", 2, 960, 7, 7, 160, 1, 1, 0, 1},
    {"mobilenet", 1, 960, 7, 7, 320, 1, 1, 0, 1},
    {"mobilenet", 1, 320, 7, 7, 1280, 1, 1, 0, 1},
    {"squeezenet", 1, 3, 224, 224, 64, 3, 2, 0, 1},
    {"squeezenet", 1, 64, 55, 55, 16, 1, 1, 0, 1},
    {"squeezenet", 2, 16, 55, 55, 64, 1, 1, 0, 1},
    {"squeezenet", 2, 16, 55, 55, 64, 3, 1, 1, 1},
    {"squeezenet", 1, 128, 55, 55, 16, 1, 1, 0, 1},
    {"squeezenet", 1, 128, 27, 27, 32, 1, 1, 0, 1},
    {"squeezenet", 2, 32, 27, 27, 128, 1, 1, 0, 1},
    {"squeezenet", 2, 32, 27, 27, 128, 3, 1, 1, 1},
    {"squeezenet", 1, 256, 27, 27, 32, 1, 1, 0, 1},
    {"squeezenet", 1, 256, 13, 13, 48, 1, 1, 0, 1},
    {"squeezenet", 2, 48, 13, 13, 192, 1, 1, 0, 1},
    {"squeezenet", 2, 48, 13, 13, 192, 3, 1, 1, 1},
    {"squeezenet", 1, 384, 13, 13, 48, 1, 1, 0, 1},
    {"squeezenet", 1, 384, 13, 13, 64, 1, 1, 0, 1},
    {"squeezenet", 2, 64, 13, 13, 256, 1, 1, 0, 1},
    {"squeezenet", 2, 64, 13, 13, 256, 3, 1, 1, 1},
    {"squeezenet", 1, 512, 13, 13, 64, 1, 1, 0, 1},
    {"squeezenet", 1, 512, 13, 13, 1000, 1, 1, 0, 1},
};

// fn's time in ms: one warm-up, then runs until 0.25 s or 200 runs (at least 5); the
// median, or with --min (a machine shared with builds) the least.
bool g_use_min = false;
double median_ms(const std::function<void()>& fn) {
    fn();
    std::vector<double> t;
    const auto start = std::chrono::steady_clock::now();
    while (t.size() < 5 || (t.size() < 200 && std::chrono::steady_clock::now() - start <
                                                  std::chrono::milliseconds(250))) {
        const auto a = std::chrono::steady_clock::now();
        fn();
        t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
    }
    if (g_use_min) return *std::min_element(t.begin(), t.end());
    std::nth_element(t.begin(), t.begin() + static_cast<long>(t.size() / 2), t.end());
    return t[t.size() / 2];
}

std::vector<float> random_floats(int64_t n) {
    static std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = u(rng);
    return v;
}

// Scratch from malloc, as the session's counting allocator would hand it out.
class MallocScratch final : public ScratchMemory {
  public:
    void* allocate(uint64_t bytes) override { return std::malloc(bytes); }
    void release(void* p, uint64_t) override { std::free(p); }
};

Attr ints(std::vector<int64_t> v) {
    std::vector<Attr> items;
    for (int64_t x : v) items.push_back(Attr::integer(x));
    return Attr::make_list(std::move(items));
}

// A graph of LoopParam inputs and one op node, as the unit tests build them.
struct OneOp {
    Graph g;
    NodeId input(Shape s) {
        Node n;
        n.op = OpKind::LoopParam;
        n.shape = std::move(s);
        n.valid = true;
        g.nodes.push_back(std::move(n));
        return static_cast<NodeId>(g.nodes.size() - 1);
    }
    NodeId op(OpKind k, std::vector<NodeId> in, std::vector<NamedAttr> attrs, Shape s) {
        Node n;
        n.op = k;
        for (NodeId id : in) n.inputs.push_back(Input{id, {}});
        n.attrs = std::move(attrs);
        n.shape = std::move(s);
        n.valid = true;
        g.nodes.push_back(std::move(n));
        return static_cast<NodeId>(g.nodes.size() - 1);
    }
};

struct Ours {
    int threads;
    std::unique_ptr<ThreadPool> pool;
    MallocScratch scratch;
    KernelContext ctx;
    explicit Ours(int t) : threads(t) {
        ctx.threads = t;
        if (t > 1) {
            pool = std::make_unique<ThreadPool>(t);
            ctx.pool = pool.get();
        }
        ctx.scratch = &scratch;
    }
    // The time of graphrun's kernel for node `id` on the given inputs.
    double time(const OneOp& o, NodeId id, std::vector<std::vector<float>*> in, std::vector<float>& out) {
        const Node& n = o.g.node(id);
        auto k = make_cpu_kernel(o.g, n);
        std::vector<TensorRef> refs;
        for (size_t i = 0; i < in.size(); ++i) {
            const Node& src = o.g.node(n.inputs[i].id);
            refs.push_back(TensorRef{in[i]->data(), DType::F32, &src.shape,
                                     static_cast<int64_t>(in[i]->size())});
        }
        TensorRef r{out.data(), DType::F32, &n.shape, static_cast<int64_t>(out.size())};
        std::string err;
        const double ms = median_ms([&] { err = k->run(refs.data(), refs.size(), r, ctx); });
        if (!err.empty()) std::fprintf(stderr, "graphrun kernel: %s\n", err.c_str());
        return ms;
    }
};

struct Dnnl {
    dnnl::engine eng{dnnl::engine::kind::cpu, 0};
    dnnl::stream strm{eng};
    dnnl::primitive_attr attr;
    Dnnl() { attr.set_scratchpad_mode(dnnl::scratchpad_mode::user); }
    dnnl::memory scratch(const dnnl::memory::desc& md) { return dnnl::memory(md, eng); }
};

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double d = 0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(double(a[i]) - double(b[i])));
    return d;
}

struct ConvResult {
    double ours, plain, blocked;
    std::string plain_impl, blocked_impl;
    double err;
};

ConvResult bench_conv(const ConvShape& cs, int64_t batch, Ours& ours, Dnnl& d) {
    const int64_t oh = (cs.h + 2 * cs.p - cs.k) / cs.s + 1, ow = (cs.w + 2 * cs.p - cs.k) / cs.s + 1;
    const int64_t cg = cs.c / cs.group;
    std::vector<float> x = random_floats(batch * cs.c * cs.h * cs.w), w = random_floats(cs.m * cg * cs.k * cs.k),
                       bias = random_floats(cs.m);
    std::vector<float> y_ours(static_cast<size_t>(batch * cs.m * oh * ow)), y_dnnl(y_ours.size());
    ConvResult r{};
    {
        OneOp o;
        NodeId xi = o.input({batch, cs.c, cs.h, cs.w}), wi = o.input({cs.m, cg, cs.k, cs.k}), bi = o.input({cs.m});
        NodeId id = o.op(OpKind::Conv, {xi, wi, bi},
                         {{"strides", ints({cs.s, cs.s}), {}}, {"pads", ints({cs.p, cs.p, cs.p, cs.p}), {}},
                          {"group", Attr::integer(cs.group), {}}},
                         {batch, cs.m, oh, ow});
        r.ours = ours.time(o, id, {&x, &w, &bias}, y_ours);
    }
    using dims = dnnl::memory::dims;
    const dims src_d{batch, cs.c, cs.h, cs.w}, dst_d{batch, cs.m, oh, ow};
    const dims w_d = cs.group == 1 ? dims{cs.m, cs.c, cs.k, cs.k} : dims{cs.group, cs.m / cs.group, cg, cs.k, cs.k};
    const dims strides{cs.s, cs.s}, dil{0, 0}, pad{cs.p, cs.p};
    dnnl::memory::desc bias_md({cs.m}, dt::f32, tag::x);
    dnnl::memory w_user({w_d, dt::f32, cs.group == 1 ? tag::oihw : tag::goihw}, d.eng, w.data());
    dnnl::memory b_mem(bias_md, d.eng, bias.data());
    for (int blocked = 0; blocked < 2; ++blocked) {
        const tag io = blocked ? tag::any : tag::nchw;
        dnnl::convolution_forward::desc desc(
            dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, {src_d, dt::f32, io},
            {w_d, dt::f32, tag::any}, bias_md, {dst_d, dt::f32, io}, strides, dil, pad, pad);
        dnnl::convolution_forward::primitive_desc pd(desc, d.attr, d.eng);
        dnnl::memory w_mem(pd.weights_desc(), d.eng);
        dnnl::reorder(w_user, w_mem).execute(d.strm, w_user, w_mem);  // once, untimed
        dnnl::memory sp = d.scratch(pd.scratchpad_desc());
        dnnl::memory x_user({src_d, dt::f32, tag::nchw}, d.eng, x.data());
        dnnl::memory y_user({dst_d, dt::f32, tag::nchw}, d.eng, y_dnnl.data());
        const bool rx = pd.src_desc() != x_user.get_desc(), ry = pd.dst_desc() != y_user.get_desc();
        dnnl::memory x_mem = rx ? dnnl::memory(pd.src_desc(), d.eng) : x_user;
        dnnl::memory y_mem = ry ? dnnl::memory(pd.dst_desc(), d.eng) : y_user;
        dnnl::convolution_forward conv(pd);
        std::unique_ptr<dnnl::reorder> rin, rout;
        if (rx) rin = std::make_unique<dnnl::reorder>(x_user, x_mem);
        if (ry) rout = std::make_unique<dnnl::reorder>(y_mem, y_user);
        const double ms = median_ms([&] {
            if (rin) rin->execute(d.strm, x_user, x_mem);
            conv.execute(d.strm, {{DNNL_ARG_SRC, x_mem}, {DNNL_ARG_WEIGHTS, w_mem}, {DNNL_ARG_BIAS, b_mem},
                                  {DNNL_ARG_DST, y_mem}, {DNNL_ARG_SCRATCHPAD, sp}});
            if (rout) rout->execute(d.strm, y_mem, y_user);
            d.strm.wait();
        });
        (blocked ? r.blocked : r.plain) = ms;
        (blocked ? r.blocked_impl : r.plain_impl) = pd.impl_info_str();
        r.err = std::max(r.err, max_abs_diff(y_ours, y_dnnl));
    }
    return r;
}

void bench_pool(int64_t batch, int64_t c, int64_t h, Ours& ours, Dnnl& d) {
    const int64_t o = (h + 2 - 3) / 2 + 1;
    std::vector<float> x = random_floats(batch * c * h * h), y1(static_cast<size_t>(batch * c * o * o)), y2(y1.size());
    OneOp g;
    NodeId xi = g.input({batch, c, h, h});
    NodeId id = g.op(OpKind::MaxPool, {xi},
                     {{"kernel_shape", ints({3, 3}), {}}, {"strides", ints({2, 2}), {}}, {"pads", ints({1, 1, 1, 1}), {}}},
                     {batch, c, o, o});
    const double t_ours = ours.time(g, id, {&x}, y1);
    using dims = dnnl::memory::dims;
    double t[2];
    std::string impl[2];
    for (int blocked = 0; blocked < 2; ++blocked) {
        dnnl::memory::desc src({batch, c, h, h}, dt::f32, tag::nchw), dst({batch, c, o, o}, dt::f32, tag::nchw);
        dnnl::memory::desc src_b = src, dst_b = dst;
        if (blocked) {
            src_b = dnnl::memory::desc({batch, c, h, h}, dt::f32, tag::nChw16c);
            dst_b = dnnl::memory::desc({batch, c, o, o}, dt::f32, tag::nChw16c);
        }
        dnnl::pooling_v2_forward::desc desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::pooling_max, src_b,
                                            dst_b, dims{2, 2}, dims{3, 3}, dims{0, 0}, dims{1, 1}, dims{1, 1});
        dnnl::pooling_v2_forward::primitive_desc pd(desc, d.attr, d.eng);
        dnnl::memory sp = d.scratch(pd.scratchpad_desc());
        dnnl::memory xu(src, d.eng, x.data()), yu(dst, d.eng, y2.data());
        dnnl::memory xm = blocked ? dnnl::memory(src_b, d.eng) : xu, ym = blocked ? dnnl::memory(dst_b, d.eng) : yu;
        dnnl::pooling_v2_forward prim(pd);
        t[blocked] = median_ms([&] {
            if (blocked) dnnl::reorder(xu, xm).execute(d.strm, xu, xm);
            prim.execute(d.strm, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DST, ym}, {DNNL_ARG_SCRATCHPAD, sp}});
            if (blocked) dnnl::reorder(ym, yu).execute(d.strm, ym, yu);
            d.strm.wait();
        });
        impl[blocked] = pd.impl_info_str();
    }
    std::printf("max_pool 3x3 s2 p1 %ldx%ldx%ldx%ld   ours %8.3f  dnnl %8.3f (%s)  dnnl+reorders %8.3f (%s)  diff %.1g\n",
                long(batch), long(c), long(h), long(h), t_ours, t[0], impl[0].c_str(), t[1], impl[1].c_str(),
                max_abs_diff(y1, y2));
}

// y[m,n] = a[m,k] @ op(b) (+ bias[n]); b is [n,k] when tb (ONNX Gemm transB=1), else [k,n].
void bench_gemm(const char* what, int64_t m, int64_t k, int64_t n, bool tb, Ours& ours, Dnnl& d) {
    std::vector<float> a = random_floats(m * k), b = random_floats(k * n), c = random_floats(n),
                       y1(static_cast<size_t>(m * n)), y2(y1.size());
    OneOp g;
    NodeId ai = g.input({m, k}), bi = g.input(tb ? Shape{n, k} : Shape{k, n}), ci = g.input({n});
    std::vector<NamedAttr> attrs;
    if (tb) attrs.push_back({"transpose_b", Attr::boolean(true), {}});
    NodeId id = g.op(OpKind::Gemm, {ai, bi, ci}, attrs, {m, n});
    const double t_ours = ours.time(g, id, {&a, &b, &c}, y1);
    using dims = dnnl::memory::dims;
    dnnl::memory::desc a_md({m, k}, dt::f32, tag::ab), b_user_md({k, n}, dt::f32, tb ? tag::ba : tag::ab),
        c_md({1, n}, dt::f32, tag::ab), y_md({m, n}, dt::f32, tag::ab);
    double t[2];
    std::string impl[2];
    for (int packed = 0; packed < 2; ++packed) {
        dnnl::memory::desc b_md = packed ? dnnl::memory::desc({k, n}, dt::f32, tag::any) : b_user_md;
        dnnl::matmul::desc desc(a_md, b_md, c_md, y_md);
        dnnl::matmul::primitive_desc pd(desc, d.attr, d.eng);
        dnnl::memory bu(b_user_md, d.eng, b.data()), bm = bu;
        if (pd.weights_desc() != b_user_md) {
            bm = dnnl::memory(pd.weights_desc(), d.eng);
            dnnl::reorder(bu, bm).execute(d.strm, bu, bm);
        }
        dnnl::memory sp = d.scratch(pd.scratchpad_desc());
        dnnl::memory am(a_md, d.eng, a.data()), cm(c_md, d.eng, c.data()), ym(y_md, d.eng, y2.data());
        dnnl::matmul prim(pd);
        t[packed] = median_ms([&] {
            prim.execute(d.strm, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_BIAS, cm},
                                  {DNNL_ARG_DST, ym}, {DNNL_ARG_SCRATCHPAD, sp}});
            d.strm.wait();
        });
        impl[packed] = pd.impl_info_str();
    }
    std::printf("gemm %-12s %5ldx%5ldx%5ld%s  ours %7.3f (%5.1f GFLOP/s)  dnnl %7.3f (%s)  dnnl packed %7.3f (%s, %5.1f GFLOP/s)  diff %.1g\n",
                what, long(m), long(k), long(n), tb ? " bT" : "   ", t_ours, 2e-6 * double(m * k * n) / t_ours, t[0],
                impl[0].c_str(), t[1], impl[1].c_str(), 2e-6 * double(m * k * n) / t[1], max_abs_diff(y1, y2));
    (void)dims{};
}

}  // namespace

int main(int argc, char** argv) {
    int threads = 2;
    std::vector<int64_t> batches{1, 16};
    bool convs = true;
    for (int i = 1; i < argc; ++i) {
        if (std::strncmp(argv[i], "--threads=", 10) == 0) threads = std::atoi(argv[i] + 10);
        else if (std::strcmp(argv[i], "--batch=1") == 0) batches = {1};
        else if (std::strcmp(argv[i], "--no-conv") == 0) convs = false;
        else if (std::strcmp(argv[i], "--min") == 0) g_use_min = true;
    }
    omp_set_num_threads(threads);
    setenv("GRAPHRUN_NO_DNNL", "1", 1);  // graphrun's factories give its own kernels
    Ours ours(threads);
    Dnnl d;
    std::printf("threads %d, oneDNN %d.%d.%d, ISA %d\n", threads, dnnl_version()->major, dnnl_version()->minor,
                dnnl_version()->patch, static_cast<int>(dnnl::get_effective_cpu_isa()));
    for (int64_t b : batches) bench_pool(b, 64, 112, ours, d);
    bench_gemm("mlp", 64, 784, 512, true, ours, d);
    bench_gemm("mlp2", 64, 512, 256, true, ours, d);
    bench_gemm("classifier", 1, 1280, 1000, true, ours, d);
    bench_gemm("resnet fc", 1, 512, 1000, true, ours, d);
    bench_gemm("transformer", 128, 256, 768, false, ours, d);
    bench_gemm("transformer", 128, 256, 768, true, ours, d);
    if (!convs) return 0;
    for (int64_t b : batches) {
        std::map<std::string, double[4]> total;  // ours, plain, blocked, best of the three per layer
        std::printf("\nconv, batch %ld: N C H W -> M k s p g   ours  dnnl-nchw  dnnl-blocked(+reorders)  [impls]\n", long(b));
        for (const ConvShape& cs : kConvs) {
            ConvResult r = bench_conv(cs, b, ours, d);
            std::printf("%-10s x%d %3ld %4ld %3ld -> %4ld k%ld s%ld p%ld g%-4ld %8.3f %8.3f %8.3f  [%s | %s] diff %.1g\n",
                        cs.model, cs.count, long(cs.c), long(cs.h), long(cs.w), long(cs.m), long(cs.k), long(cs.s),
                        long(cs.p), long(cs.group), r.ours, r.plain, r.blocked, r.plain_impl.c_str(),
                        r.blocked_impl.c_str(), r.err);
            auto& t = total[cs.model];
            t[0] += cs.count * r.ours;
            t[1] += cs.count * r.plain;
            t[2] += cs.count * r.blocked;
            t[3] += cs.count * std::min({r.ours, r.plain, r.blocked});
        }
        for (auto& [m, t] : total)
            std::printf("total %-10s batch %ld: ours %.2f  dnnl-nchw %.2f  dnnl-blocked %.2f  best-per-layer %.2f ms\n",
                        m.c_str(), long(b), t[0], t[1], t[2], t[3]);
    }
    return 0;
}
