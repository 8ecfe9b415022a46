// oneDNN's conv, gemm and matmul kernels (engine/kernels/cpu/dnnl_kernels.cpp) against
// float64 references on odd shapes, what they decline, and how their memory
// is counted; max_pool's vector path against a reference. The oneDNN cases
// say SKIP and pass when graphrun is built without oneDNN.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/cpu/dnnl_kernels.h"
#include "engine/kernels/cpu/simd.h"
#include "tests/unit/kernel_test_helpers.h"

using namespace graphrun;
using namespace kernel_test;

namespace {

bool have_dnnl() {
    if (!kernels::dnnl_text().empty()) return true;
    MESSAGE("SKIP: graphrun is built without oneDNN (libdnnl-dev); its kernels are not tested");
    return false;
}

// Scratch from malloc that counts what is held, as the CPU device's workspace does.
class CountingScratch final : public ScratchMemory {
  public:
    void* allocate(uint64_t bytes) override {
        std::lock_guard<std::mutex> l(mu_);
        if (limit_ && held_ + bytes > limit_) return nullptr;
        held_ += bytes;
        ++allocs_;
        return std::malloc(bytes ? bytes : 1);
    }
    void release(void* p, uint64_t bytes) override {
        std::lock_guard<std::mutex> l(mu_);
        held_ -= bytes;
        std::free(p);
    }
    uint64_t held() const { return held_; }
    int allocs() const { return allocs_; }
    uint64_t limit_ = 0;

  private:
    std::mutex mu_;
    uint64_t held_ = 0;
    int allocs_ = 0;
};

struct ConvCase {
    int64_t n, c, h, w, m, kh, kw, group;
    std::vector<int64_t> strides, pads, dilations;
    bool bias = true, const_w = true;
    bool one_d = false;  // NCW: h must be 1
};

int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d) {
    return (in + pb + pe - (d * (k - 1) + 1)) / s + 1;
}

NodeId const_node(TestGraph& tg, const Tensor& t) {
    Node n;
    n.op = OpKind::Const;
    n.dtype = t.dtype;
    n.shape = t.shape;
    n.valid = true;
    n.literal.resize(static_cast<size_t>(t.n()) * dtype_size(t.dtype));
    std::memcpy(n.literal.data(), t.words.data(), n.literal.size());
    tg.g.nodes.push_back(std::move(n));
    return static_cast<NodeId>(tg.g.nodes.size() - 1);
}

// The conv of cc on random data by oneDNN's kernel, checked against float64 loops.
void check_conv(const ConvCase& cc, int threads) {
    const int64_t sh = cc.strides[0], sw = cc.strides[1], dh = cc.dilations[0], dw = cc.dilations[1];
    const int64_t pt = cc.pads[0], pl = cc.pads[1], pb = cc.pads[2], pr = cc.pads[3];
    const int64_t oh = out_dim(cc.h, cc.kh, sh, pt, pb, dh), ow = out_dim(cc.w, cc.kw, sw, pl, pr, dw);
    const int64_t cg = cc.c / cc.group, mg = cc.m / cc.group;
    Shape xs = cc.one_d ? Shape{cc.n, cc.c, cc.w} : Shape{cc.n, cc.c, cc.h, cc.w};
    Shape ws = cc.one_d ? Shape{cc.m, cg, cc.kw} : Shape{cc.m, cg, cc.kh, cc.kw};
    Shape ys = cc.one_d ? Shape{cc.n, cc.m, ow} : Shape{cc.n, cc.m, oh, ow};
    Tensor x = random_tensor(DType::F32, xs, -1, 1), w = random_tensor(DType::F32, ws, -1, 1),
           b = random_tensor(DType::F32, {cc.m}, -1, 1);
    TestGraph tg;
    const NodeId xi = tg.input(DType::F32, xs);
    const NodeId wi = cc.const_w ? const_node(tg, w) : tg.input(DType::F32, ws);
    std::vector<NodeId> ins{xi, wi};
    if (cc.bias) ins.push_back(const_node(tg, b));
    auto sp = [&](std::vector<int64_t> v) { return cc.one_d ? std::vector<int64_t>{v[1]} : v; };
    std::vector<NamedAttr> attrs{{"strides", Ints(sp(cc.strides)), {}},
                                 {"dilations", Ints(sp(cc.dilations)), {}},
                                 {"pads", Ints(cc.one_d ? std::vector<int64_t>{pl, pr} : cc.pads), {}},
                                 {"group", I(cc.group), {}}};
    const NodeId id = tg.op(OpKind::Conv, ins, attrs, DType::F32, ys);
    INFO("conv x", shape_string(xs), " w", shape_string(ws), " group ", cc.group, " strides ", sh, ",", sw,
         " dilations ", dh, ",", dw, " pads ", pt, ",", pl, ",", pb, ",", pr, " threads ", threads,
         cc.const_w ? " const w" : " w an input");
    auto kernel = kernels::make_dnnl_conv_kernel(tg.g, tg.g.node(id), nullptr);
    REQUIRE(kernel != nullptr);
    Tensor y(DType::F32, ys);
    std::vector<TensorRef> refs{x.ref(), w.ref()};
    if (cc.bias) refs.push_back(b.ref());
    TensorRef out = y.ref();
    CountingScratch scratch;
    KernelContext ctx;
    ctx.threads = threads;
    std::unique_ptr<ThreadPool> pool;
    if (threads > 1) {
        pool = std::make_unique<ThreadPool>(threads);
        ctx.pool = pool.get();
    }
    ctx.scratch = &scratch;
    for (int pass = 0; pass < 2; ++pass) {  // the second pass runs on the packed filter
        std::fill(y.words.begin(), y.words.end(), 0);
        REQUIRE(kernel->run(refs.data(), refs.size(), out, ctx) == "");
        int64_t bad = 0;
        for (int64_t ni = 0; ni < cc.n; ++ni)
            for (int64_t mi = 0; mi < cc.m; ++mi)
                for (int64_t i = 0; i < oh; ++i)
                    for (int64_t j = 0; j < ow; ++j) {
                        double s = cc.bias ? b.get(mi) : 0, mag = std::fabs(s);
                        const int64_t gi = mi / mg;
                        for (int64_t ci = 0; ci < cg; ++ci)
                            for (int64_t ki = 0; ki < cc.kh; ++ki)
                                for (int64_t kj = 0; kj < cc.kw; ++kj) {
                                    const int64_t ih = i * sh + ki * dh - pt, iw = j * sw + kj * dw - pl;
                                    if (ih < 0 || ih >= cc.h || iw < 0 || iw >= cc.w) continue;
                                    const double p = x.get(((ni * cc.c + gi * cg + ci) * cc.h + ih) * cc.w + iw) *
                                                     w.get(((mi * cg + ci) * cc.kh + ki) * cc.kw + kj);
                                    s += p;
                                    mag += std::fabs(p);
                                }
                        const double got = y.get(((ni * cc.m + mi) * oh + i) * ow + j);
                        if (!(std::fabs(got - s) <= 1e-5 * mag + 1e-6)) {
                            if (bad++ == 0) CHECK_MESSAGE(false, "first bad element: got ", got, " want ", s);
                        }
                    }
        CHECK(bad == 0);
    }
    // Between runs only a constant filter's packed copy is held (workspace), and none once the kernel ends.
    if (!cc.const_w) CHECK(scratch.held() == 0);
    kernel.reset();
    CHECK(scratch.held() == 0);
}

}  // namespace

TEST_CASE("dnnl conv: odd shapes against float64 loops") {
    if (!have_dnnl()) return;
    const std::vector<ConvCase> cases = {
        {1, 3, 9, 11, 5, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}},          // padded 3x3
        {2, 4, 10, 7, 6, 3, 2, 1, {2, 1}, {0, 1, 2, 0}, {1, 1}},          // stride, uneven pads, batch 2
        {1, 5, 12, 12, 3, 3, 3, 1, {1, 1}, {2, 2, 2, 2}, {2, 2}},         // dilation 2
        {3, 6, 8, 9, 4, 3, 3, 2, {1, 2}, {1, 1, 1, 1}, {1, 1}},           // groups 2, batch 3
        {2, 8, 13, 13, 8, 3, 3, 8, {2, 2}, {1, 1, 1, 1}, {1, 1}},         // depthwise s2
        {1, 16, 15, 15, 32, 3, 3, 16, {1, 1}, {1, 1, 1, 1}, {1, 1}},      // depthwise, multiplier 2
        {2, 17, 7, 5, 19, 1, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}},         // 1x1
        {1, 9, 9, 9, 7, 1, 1, 1, {2, 2}, {0, 0, 0, 0}, {1, 1}, false},    // 1x1 stride 2, no bias
        {1, 3, 20, 20, 8, 7, 7, 1, {2, 2}, {3, 3, 3, 3}, {1, 1}},         // a first layer
        {2, 4, 1, 21, 6, 1, 5, 2, {1, 2}, {0, 2, 0, 1}, {1, 1}, true, true, true},  // 1-D
    };
    for (const ConvCase& c : cases)
        for (int threads : {1, 2}) check_conv(c, threads);
    ConvCase dynamic = cases[3];
    dynamic.const_w = false;  // a filter that is an input: reordered in every run's scratch
    check_conv(dynamic, 2);
    ConvCase dynamic_1x1 = cases[6];
    dynamic_1x1.const_w = false;
    check_conv(dynamic_1x1, 1);
}

TEST_CASE("dnnl conv: a batch whose blocked copies pass conv_chunk_bytes runs a slice at a time, same values") {
    if (!have_dnnl()) return;
    struct Restore {
        uint64_t was = kernels::conv_chunk_bytes();
        ~Restore() { kernels::set_conv_chunk_bytes(was); }
    } restore;
    const std::vector<ConvCase> cases = {
        {2, 4, 10, 7, 6, 3, 2, 1, {2, 1}, {0, 1, 2, 0}, {1, 1}},     // batch 2: slices of 1
        {6, 16, 9, 9, 32, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}},    // batch 6: 3 or 2 images a slice
        {3, 6, 8, 9, 4, 3, 3, 2, {1, 2}, {1, 1, 1, 1}, {1, 1}},      // groups, batch 3
        {4, 3, 20, 20, 8, 7, 7, 1, {2, 2}, {3, 3, 3, 3}, {1, 1}},    // a first layer
    };
    // 64 bytes: every reordered conv goes one image at a time; 12 KiB: some
    // images at a time (a divisor of the batch).
    for (uint64_t most : {uint64_t{64}, uint64_t{12} << 10}) {
        kernels::set_conv_chunk_bytes(most);
        for (const ConvCase& c : cases)
            for (int threads : {1, 2}) check_conv(c, threads);
        ConvCase dynamic = cases[1];
        dynamic.const_w = false;
        check_conv(dynamic, 2);
    }
}

TEST_CASE("dnnl conv: a constant filter is packed once and held as workspace until the kernel ends") {
    if (!have_dnnl()) return;
    TestGraph tg;
    Tensor x = random_tensor(DType::F32, {1, 16, 14, 14}, -1, 1), w = random_tensor(DType::F32, {32, 16, 3, 3}, -1, 1);
    const NodeId id = tg.op(OpKind::Conv, {tg.input(DType::F32, x.shape), const_node(tg, w)},
                            {{"pads", Ints({1, 1, 1, 1}), {}}}, DType::F32, {1, 32, 14, 14});
    auto kernel = kernels::make_dnnl_conv_kernel(tg.g, tg.g.node(id), nullptr);
    REQUIRE(kernel != nullptr);
    Tensor y(DType::F32, {1, 32, 14, 14});
    TensorRef refs[] = {x.ref(), w.ref()};
    TensorRef out = y.ref();
    CountingScratch scratch;
    KernelContext ctx;
    ctx.scratch = &scratch;
    REQUIRE(kernel->run(refs, 2, out, ctx) == "");
    const uint64_t held = scratch.held();
    CHECK(held >= 32 * 16 * 9 * sizeof(float));  // the packed filter, at least the filter's bytes
    const int allocs = scratch.allocs();
    REQUIRE(kernel->run(refs, 2, out, ctx) == "");
    CHECK(scratch.held() == held);                // not packed again
    CHECK(scratch.allocs() - allocs <= 1);        // at most the run's own scratch
    kernel.reset();
    CHECK(scratch.held() == 0);
    // No room under the limit for the packed filter: an out-of-memory error, nothing held.
    auto k2 = kernels::make_dnnl_conv_kernel(tg.g, tg.g.node(id), nullptr);
    CountingScratch small;
    small.limit_ = 1024;
    ctx.scratch = &small;
    const std::string e = k2->run(refs, 2, out, ctx);
    CHECK(e.rfind("out of memory: ", 0) == 0);
    CHECK(e.find("workspace") != std::string::npos);
    k2.reset();
    CHECK(small.held() == 0);
    // Through the CPU's factory the kernel has ours behind it: room for im2col's
    // smallest tile (9216 bytes) but not for the packed filter (18432) still runs.
    Tensor y_ref = y;
    auto k_cpu = make_cpu_kernel(tg.g, tg.g.node(id));
    CountingScratch tight;
    tight.limit_ = 16 << 10;
    ctx.scratch = &tight;
    std::fill(y.words.begin(), y.words.end(), 0);
    REQUIRE(k_cpu->run(refs, 2, out, ctx) == "");
    int64_t far = 0;
    for (int64_t i = 0; i < y.n(); ++i) far += !close(y.get(i), y_ref.get(i), 1e-4, 1e-5);
    CHECK(far == 0);
    k_cpu.reset();
    CHECK(tight.held() == 0);
    // Without scratch memory: an internal error, not a crash.
    auto k3 = kernels::make_dnnl_conv_kernel(tg.g, tg.g.node(id), nullptr);
    ctx.scratch = nullptr;
    CHECK(k3->run(refs, 2, out, ctx).find("no scratch memory") != std::string::npos);
}

TEST_CASE("dnnl conv and gemm decline what is not plain f32 conv or gemm") {
    TestGraph tg;
    const NodeId x = tg.input(DType::F32, {1, 4, 8, 8});
    const NodeId w = const_node(tg, random_tensor(DType::F32, {4, 4, 3, 3}));
    // An attribute conv on main does not have (a fused epilogue's, say): ours runs it.
    const NodeId fused = tg.op(OpKind::Conv, {x, w}, {{"activation", W("relu"), {}}}, DType::F32, {1, 4, 6, 6});
    CHECK(kernels::make_dnnl_conv_kernel(tg.g, tg.g.node(fused), nullptr) == nullptr);
    const NodeId xd = tg.input(DType::F64, {1, 4, 8, 8});
    const NodeId wd = const_node(tg, random_tensor(DType::F64, {4, 4, 3, 3}));
    const NodeId f64 = tg.op(OpKind::Conv, {xd, wd}, {}, DType::F64, {1, 4, 6, 6});
    CHECK(kernels::make_dnnl_conv_kernel(tg.g, tg.g.node(f64), nullptr) == nullptr);
    const NodeId a = tg.input(DType::F32, {3, 5});
    const NodeId bin = tg.input(DType::F32, {5, 2});
    const NodeId bc = const_node(tg, random_tensor(DType::F32, {5, 2}));
    CHECK(kernels::make_dnnl_gemm_kernel(tg.g, tg.g.node(tg.op(OpKind::Gemm, {a, bin}, {}, DType::F32, {3, 2})), nullptr) ==
          nullptr);  // b not a constant
    CHECK(kernels::make_dnnl_gemm_kernel(
              tg.g, tg.g.node(tg.op(OpKind::Gemm, {a, bc}, {{"alpha", F(2), {}}}, DType::F32, {3, 2})), nullptr) == nullptr);
    const NodeId at = tg.input(DType::F32, {5, 3});
    CHECK(kernels::make_dnnl_gemm_kernel(
              tg.g, tg.g.node(tg.op(OpKind::Gemm, {at, bc}, {{"transpose_a", B(true), {}}}, DType::F32, {3, 2})), nullptr) ==
          nullptr);
    const NodeId cfull = const_node(tg, random_tensor(DType::F32, {3, 2}));
    CHECK(kernels::make_dnnl_gemm_kernel(tg.g, tg.g.node(tg.op(OpKind::Gemm, {a, bc, cfull}, {}, DType::F32,
                                                                {3, 2})), nullptr) == nullptr);  // c not a bias row
    CHECK(kernels::make_dnnl_gemm_kernel(
              tg.g, tg.g.node(tg.op(OpKind::Gemm, {a, bc}, {{"epilogue", W("relu"), {}}}, DType::F32, {3, 2})), nullptr) ==
          nullptr);
    if (kernels::dnnl_text().empty()) return;
    CHECK(kernels::make_dnnl_conv_kernel(tg.g, tg.g.node(tg.op(OpKind::Conv, {x, w}, {}, DType::F32, {1, 4, 6, 6})),
                                         nullptr) != nullptr);
    CHECK(kernels::make_dnnl_gemm_kernel(tg.g, tg.g.node(tg.op(OpKind::Gemm, {a, bc}, {}, DType::F32, {3, 2})),
                                         nullptr) != nullptr);
}

TEST_CASE("dnnl gemm: constant b packed once, bias rows, against float64") {
    if (!have_dnnl()) return;
    struct G {
        int64_t m, k, n;
        bool tb;
        int c_rank;  // 0: no c, 1: c [n], 2: c [1, n]
    };
    for (const G& gc : {G{1, 1280, 37, true, 1}, G{64, 78, 51, true, 2}, G{7, 33, 129, false, 0},
                        G{128, 40, 24, false, 1}, G{3, 1, 2, true, 1}}) {
        for (int threads : {1, 2}) {
            INFO("gemm ", gc.m, "x", gc.k, "x", gc.n, gc.tb ? " b transposed" : "", " c rank ", gc.c_rank,
                 " threads ", threads);
            Tensor a = random_tensor(DType::F32, {gc.m, gc.k}, -1, 1);
            Tensor b = random_tensor(DType::F32, gc.tb ? Shape{gc.n, gc.k} : Shape{gc.k, gc.n}, -1, 1);
            Tensor c = random_tensor(DType::F32, gc.c_rank == 2 ? Shape{1, gc.n} : Shape{gc.n}, -1, 1);
            TestGraph tg;
            std::vector<NodeId> ins{tg.input(DType::F32, a.shape), const_node(tg, b)};
            if (gc.c_rank) ins.push_back(const_node(tg, c));
            std::vector<NamedAttr> attrs;
            if (gc.tb) attrs.push_back({"transpose_b", B(true), {}});
            const NodeId id = tg.op(OpKind::Gemm, ins, attrs, DType::F32, {gc.m, gc.n});
            auto kernel = kernels::make_dnnl_gemm_kernel(tg.g, tg.g.node(id), nullptr);
            REQUIRE(kernel != nullptr);
            Tensor y(DType::F32, {gc.m, gc.n});
            std::vector<TensorRef> refs{a.ref(), b.ref()};
            if (gc.c_rank) refs.push_back(c.ref());
            TensorRef out = y.ref();
            CountingScratch scratch;
            KernelContext ctx;
            ctx.threads = threads;
            ctx.scratch = &scratch;
            for (int pass = 0; pass < 2; ++pass) {
                REQUIRE(kernel->run(refs.data(), refs.size(), out, ctx) == "");
                int64_t bad = 0;
                for (int64_t i = 0; i < gc.m; ++i)
                    for (int64_t j = 0; j < gc.n; ++j) {
                        double s = gc.c_rank ? c.get(j) : 0, mag = std::fabs(s);
                        for (int64_t q = 0; q < gc.k; ++q) {
                            const double p = a.get(i * gc.k + q) * b.get(gc.tb ? j * gc.k + q : q * gc.n + j);
                            s += p;
                            mag += std::fabs(p);
                        }
                        bad += !(std::fabs(y.get(i * gc.n + j) - s) <= 1e-5 * mag + 1e-6);
                    }
                CHECK(bad == 0);
            }
            kernel.reset();
            CHECK(scratch.held() == 0);
        }
    }
}

TEST_CASE("dnnl matmul: a's batch by a constant b, a fused bias, residual and activation, against float64") {
    if (!have_dnnl()) return;
    struct M {
        Shape a;
        int64_t n;
        bool tb, bias, residual;
        Activation act;
    };
    const M cases[] = {
        {{2, 3, 5}, 7, false, false, false, Activation::None},
        {{1, 64, 33}, 40, true, true, false, Activation::None},
        {{4, 1, 16}, 129, false, true, true, Activation::Relu},
        {{3, 17}, 24, true, false, true, Activation::Clip},
        {{2, 2, 9, 31}, 65, false, true, true, Activation::Gelu},  // gelu: ours after oneDNN's product
        {{128, 256}, 768, false, true, false, Activation::Tanh},
    };
    for (const M& mc : cases) {
        for (int threads : {1, 2}) {
            const int64_t k = mc.a.back(), n = mc.n;
            int64_t rows = 1;
            for (size_t d = 0; d + 1 < mc.a.size(); ++d) rows *= mc.a[d];
            Shape ys = mc.a;
            ys.back() = n;
            INFO("matmul a", shape_string(mc.a), " n ", n, mc.tb ? " b transposed" : "", mc.bias ? " bias" : "",
                 mc.residual ? " residual" : "", " ", activation_name(mc.act), " threads ", threads);
            Tensor a = random_tensor(DType::F32, mc.a, -1, 1);
            Tensor b = random_tensor(DType::F32, mc.tb ? Shape{n, k} : Shape{k, n}, -1, 1);
            Tensor bias = random_tensor(DType::F32, {n}, -1, 1);
            Tensor res = random_tensor(DType::F32, ys, -1, 1);
            TestGraph tg;
            std::vector<NodeId> ins{tg.input(DType::F32, a.shape), const_node(tg, b)};
            std::vector<TensorRef> refs{a.ref(), b.ref()};
            Epilogue e;
            e.act = mc.act;
            if (mc.act == Activation::Clip) e.lo = -0.25, e.hi = 0.5;
            if (mc.bias) {
                e.bias = static_cast<int8_t>(ins.size());
                ins.push_back(const_node(tg, bias));
                refs.push_back(bias.ref());
            }
            if (mc.residual) {
                e.residual = static_cast<int8_t>(ins.size());
                ins.push_back(tg.input(DType::F32, ys));
                refs.push_back(res.ref());
            }
            std::vector<NamedAttr> attrs;
            if (mc.tb) attrs.push_back({"transpose_b", B(true), {}});
            const NodeId id = tg.op(OpKind::Matmul, ins, attrs, DType::F32, ys);
            const bool fused = mc.bias || mc.residual || mc.act != Activation::None;
            if (fused) {
                tg.g.epilogues.push_back(e);
                tg.g.nodes[static_cast<size_t>(id)].epilogue = static_cast<int32_t>(tg.g.epilogues.size() - 1);
            }
            auto kernel = kernels::make_dnnl_matmul_kernel(tg.g, tg.g.node(id), nullptr);
            REQUIRE(kernel != nullptr);
            Tensor y(DType::F32, ys);
            TensorRef out = y.ref();
            CountingScratch scratch;
            KernelContext ctx;
            ctx.threads = threads;
            ctx.scratch = &scratch;
            for (int pass = 0; pass < 2; ++pass) {  // the second pass runs on the packed b
                std::fill(y.words.begin(), y.words.end(), 0);
                REQUIRE(kernel->run(refs.data(), refs.size(), out, ctx) == "");
                int64_t bad = 0;
                for (int64_t i = 0; i < rows; ++i)
                    for (int64_t j = 0; j < n; ++j) {
                        double s = 0, mag = 0;
                        for (int64_t q = 0; q < k; ++q) {
                            const double p = a.get(i * k + q) * b.get(mc.tb ? j * k + q : q * n + j);
                            s += p;
                            mag += std::fabs(p);
                        }
                        if (mc.bias) s += bias.get(j), mag += std::fabs(bias.get(j));
                        if (mc.residual) s += res.get(i * n + j), mag += std::fabs(res.get(i * n + j));
                        switch (mc.act) {
                            case Activation::Relu: s = std::max(s, 0.0); break;
                            case Activation::Clip: s = std::min(std::max(s, e.lo), e.hi); break;
                            case Activation::Gelu: s = 0.5 * s * (1 + std::erf(s / std::sqrt(2.0))); break;
                            case Activation::Tanh: s = std::tanh(s); break;
                            default: break;
                        }
                        const double got = y.get(i * n + j);
                        if (!(std::fabs(got - s) <= 1e-5 * mag + 1e-6)) {
                            if (bad++ == 0) CHECK_MESSAGE(false, "first bad element [", i, ",", j, "]: got ", got,
                                                          " want ", s);
                        }
                    }
                CHECK(bad == 0);
            }
            if (kernels::dnnl_packs_weight(tg.g, tg.g.node(id)))
                CHECK(scratch.held() > 0);  // the packed b, held while the kernel lives
            else
                CHECK(scratch.held() == 0);  // b read where it is (AVX2's gemm:jit)
            kernel.reset();
            CHECK(scratch.held() == 0);
        }
    }
}

TEST_CASE("dnnl matmul declines what ours must run") {
    TestGraph tg;
    const NodeId bc = const_node(tg, random_tensor(DType::F32, {5, 2}));
    const NodeId a = tg.input(DType::F32, {3, 5});
    const NodeId a1 = tg.input(DType::F32, {5});
    const NodeId bin = tg.input(DType::F32, {5, 2});
    const NodeId b3 = const_node(tg, random_tensor(DType::F32, {1, 5, 2}));
    const NodeId at = tg.input(DType::F32, {5, 3});
    const NodeId ad = tg.input(DType::F64, {3, 5});
    const NodeId bd = const_node(tg, random_tensor(DType::F64, {5, 2}));
    auto made = [&](NodeId id) { return kernels::make_dnnl_matmul_kernel(tg.g, tg.g.node(id), nullptr) != nullptr; };
    CHECK(!made(tg.op(OpKind::Matmul, {a, bin}, {}, DType::F32, {3, 2})));   // b not a constant
    CHECK(!made(tg.op(OpKind::Matmul, {a1, bc}, {}, DType::F32, {2})));      // a 1-D: a dimension dropped
    CHECK(!made(tg.op(OpKind::Matmul, {a, b3}, {}, DType::F32, {1, 3, 2}))); // b batched
    CHECK(!made(tg.op(OpKind::Matmul, {at, bc}, {{"transpose_a", B(true), {}}}, DType::F32, {3, 2})));
    CHECK(!made(tg.op(OpKind::Matmul, {ad, bd}, {}, DType::F64, {3, 2})));
    if (kernels::dnnl_text().empty()) return;
    CHECK(made(tg.op(OpKind::Matmul, {a, bc}, {}, DType::F32, {3, 2})));
}

TEST_CASE("max_pool: the vector path against a reference, NaN and infinities included") {
    struct P {
        int64_t h, w, k, s, pad;
        bool ceil;
    };
    for (const P& pc : {P{112, 112, 3, 2, 1, false}, P{55, 55, 3, 2, 0, true}, P{9, 37, 3, 1, 1, false},
                        P{8, 50, 2, 2, 0, false}, P{10, 40, 5, 3, 2, false}, P{7, 3000, 3, 2, 1, false}}) {
        for (DType t : {DType::F32, DType::F64}) {
            const auto od = [&](int64_t in) {
                const int64_t span = in + 2 * pc.pad - pc.k;
                return (pc.ceil ? (span + pc.s - 1) / pc.s : span / pc.s) + 1;
            };
            const int64_t oh = od(pc.h), ow = od(pc.w);
            Tensor x = random_tensor(t, {2, 3, pc.h, pc.w}, -5, 5);
            // A few NaNs and infinities.
            for (int64_t i = 0; i < x.n(); i += 997) x.set(i, i % 3 == 0 ? kNaN : i % 3 == 1 ? kInf : -kInf);
            std::vector<NamedAttr> attrs{{"kernel_shape", Ints({pc.k, pc.k}), {}},
                                         {"strides", Ints({pc.s, pc.s}), {}},
                                         {"pads", Ints({pc.pad, pc.pad, pc.pad, pc.pad}), {}}};
            if (pc.ceil) attrs.push_back({"ceil_mode", B(true), {}});
            for (int threads : {1, 2}) {
                INFO("max_pool ", pc.h, "x", pc.w, " k", pc.k, " s", pc.s, " p", pc.pad, " ", dtype_name(t),
                     " threads ", threads);
                Result r = run_op(OpKind::MaxPool, {&x}, attrs, t, {2, 3, oh, ow}, threads);
                REQUIRE(r.error == "");
                int64_t bad = 0;
                for (int64_t pl = 0; pl < 6; ++pl)
                    for (int64_t i = 0; i < oh; ++i)
                        for (int64_t j = 0; j < ow; ++j) {
                            double m = -kInf;
                            bool nan = false;
                            for (int64_t a = 0; a < pc.k; ++a)
                                for (int64_t b = 0; b < pc.k; ++b) {
                                    const int64_t ih = i * pc.s + a - pc.pad, iw = j * pc.s + b - pc.pad;
                                    if (ih < 0 || ih >= pc.h || iw < 0 || iw >= pc.w) continue;
                                    const double v = x.get((pl * pc.h + ih) * pc.w + iw);
                                    nan |= std::isnan(v);
                                    m = std::max(m, v);
                                }
                            const double got = r.out.get((pl * oh + i) * ow + j);
                            bad += nan ? !std::isnan(got) : got != m;
                        }
                CHECK(bad == 0);
            }
        }
    }
}
