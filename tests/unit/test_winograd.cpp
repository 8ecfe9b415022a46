// Winograd's F(4x4, 3x3) conv (engine/kernels/cpu/winograd.h) against a
// double-precision direct conv, in nChw8c, nChw16c and NHWC: sizes that are and are not multiples of the
// 4x4 tile (down to one pixel), several parts of the transformed filter,
// bias, a residual apart from the output and the output itself, relu and
// clip, one to three workers. The products are a plain loop here (the
// engine gives it oneDNN's sgemm), so the test needs no oneDNN.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "engine/base/thread_pool.h"
#include "engine/kernels/cpu/simd.h"
#include "engine/kernels/cpu/winograd.h"

using namespace graphrun;
using namespace graphrun::kernels;

namespace {

// Index of (n, c, y, x) in nChw8c, nChw16c or NHWC (s.block 8, 16 or 0).
size_t at(const WinogradConv& s, int64_t channels, int64_t n, int64_t c, int64_t y, int64_t x) {
    const int64_t b = s.block ? s.block : channels;
    return static_cast<size_t>((((n * (channels / b) + c / b) * s.height + y) * s.width + x) * b + c % b);
}

struct Case {
    WinogradConv s;
    bool bias, residual, in_place;
    int threads;
};

// The largest |got - want| over the largest |want| before the activation
// (clip's bound would hide the scale of the sums).
double run_case(const Case& k, std::vector<float>* got = nullptr) {
    const WinogradConv& s = k.s;
    std::mt19937 rng(static_cast<unsigned>(s.channels * 131 + s.out_channels * 7 + s.height));
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const size_t xs = static_cast<size_t>(s.batch * s.channels * s.height * s.width);
    const size_t ys = static_cast<size_t>(s.batch * s.out_channels * s.height * s.width);
    std::vector<float> x(xs), w(static_cast<size_t>(s.out_channels * s.channels * 9)), b(s.out_channels), r(ys), y(ys);
    for (float& v : x) v = nd(rng);
    const float scale = std::sqrt(2.0f / static_cast<float>(9 * s.channels));
    for (float& v : w) v = nd(rng) * scale;
    for (float& v : b) v = nd(rng) * 0.5f;
    for (float& v : r) v = nd(rng);
    std::vector<double> want(ys);
    double top = 1e-30;
    for (int64_t n = 0; n < s.batch; ++n)
        for (int64_t m = 0; m < s.out_channels; ++m)
            for (int64_t oy = 0; oy < s.height; ++oy)
                for (int64_t ox = 0; ox < s.width; ++ox) {
                    double a = k.bias ? b[static_cast<size_t>(m)] : 0.0;
                    for (int64_t c = 0; c < s.channels; ++c)
                        for (int64_t i = 0; i < 3; ++i)
                            for (int64_t j = 0; j < 3; ++j) {
                                const int64_t iy = oy - 1 + i, ix = ox - 1 + j;
                                if (iy < 0 || iy >= s.height || ix < 0 || ix >= s.width) continue;
                                a += static_cast<double>(x[at(s, s.channels, n, c, iy, ix)]) *
                                     w[static_cast<size_t>(((m * s.channels + c) * 3 + i) * 3 + j)];
                            }
                    const size_t o = at(s, s.out_channels, n, m, oy, ox);
                    if (k.residual) a += r[o];
                    top = std::max(top, std::fabs(a));
                    if (s.act == Activation::Relu) a = std::max(a, 0.0);
                    if (s.act == Activation::Clip) a = std::min(std::max(a, double{s.lo}), double{s.hi});
                    want[o] = a;
                }
    std::unique_ptr<ThreadPool> pool = k.threads > 1 ? std::make_unique<ThreadPool>(k.threads) : nullptr;
    KernelContext ctx;
    ctx.threads = k.threads;
    ctx.pool = pool.get();
    const uint64_t bytes = winograd_scratch_bytes(s, k.threads);
    std::vector<float> scratch(bytes / sizeof(float) + 16);
    void* aligned = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) / 64 * 64);
    const float* residual = nullptr;
    if (k.residual) {
        if (k.in_place) y = r;
        residual = k.in_place ? y.data() : r.data();
    }
    winograd_conv3x3(s, x.data(), w.data(), k.bias ? b.data() : nullptr, residual, y.data(), aligned, ctx);
    double err = 0;
    for (size_t i = 0; i < ys; ++i) err = std::max(err, std::fabs(static_cast<double>(y[i]) - want[i]));
    if (got) *got = y;
    return err / top;
}

WinogradConv shape(int64_t n, int64_t c, int64_t h, int64_t w, int64_t m, int64_t block = 8) {
    WinogradConv s;
    s.block = block;
    s.batch = n;
    s.channels = c;
    s.height = h;
    s.width = w;
    s.out_channels = m;
    return s;
}

bool avx2() { return active_isa() >= Isa::Avx2; }

}  // namespace

TEST_CASE("winograd: F(4x4, 3x3) matches the direct conv in double, every size, epilogue and worker count") {
    if (!avx2()) {
        MESSAGE("SKIP: the Winograd conv needs AVX2 and FMA, which this CPU lacks");
        return;
    }
    std::vector<Case> cases;
    // Tiles whole, cut at the right and the bottom, one pixel; the filter in one part and in two.
    const WinogradConv shapes[] = {shape(1, 8, 4, 4, 8),   shape(2, 16, 5, 7, 16),  shape(1, 8, 1, 1, 8),
                                   shape(3, 24, 9, 6, 40), shape(1, 64, 13, 11, 64), shape(2, 512, 6, 5, 96)};
    for (const WinogradConv& s : shapes)
        for (int threads : {1, 2, 3}) cases.push_back({s, true, false, false, threads});
    // nChw16c (the layout pass's choice with AVX-512): a pixel's two halves of
    // eight lanes; a filter part of 8 channels ends inside a block of 16.
    const WinogradConv shapes16[] = {shape(1, 16, 4, 4, 16, 16), shape(2, 32, 5, 7, 48, 16),
                                     shape(1, 16, 1, 1, 16, 16), shape(2, 512, 6, 5, 112, 16)};
    for (const WinogradConv& s : shapes16)
        for (int threads : {1, 2}) cases.push_back({s, true, false, false, threads});
    // NHWC (AVX-512's layout where a max_pool shares the group): a pixel's
    // channels together, x's and y's pixels channels and out_channels apart.
    const WinogradConv nhwc[] = {shape(1, 8, 4, 4, 8, 0), shape(2, 24, 5, 7, 40, 0), shape(1, 16, 1, 1, 8, 0),
                                 shape(2, 512, 6, 5, 104, 0)};
    for (const WinogradConv& s : nhwc)
        for (int threads : {1, 2}) cases.push_back({s, true, false, false, threads});
    WinogradConv relu16 = shape(2, 32, 10, 9, 32, 16);
    relu16.act = Activation::Relu;
    cases.push_back({relu16, true, true, false, 2});
    cases.push_back({relu16, true, true, true, 3});
    WinogradConv relu_nhwc = shape(2, 32, 10, 9, 48, 0);
    relu_nhwc.act = Activation::Relu;
    cases.push_back({relu_nhwc, true, true, false, 2});
    cases.push_back({relu_nhwc, false, true, true, 3});
    WinogradConv relu = shape(2, 16, 10, 9, 24);
    relu.act = Activation::Relu;
    WinogradConv clip = relu;
    clip.act = Activation::Clip;
    clip.lo = 0.0f;
    clip.hi = 0.5f;
    cases.push_back({relu, false, false, false, 2});
    cases.push_back({relu, true, true, false, 2});
    cases.push_back({relu, true, true, true, 2});
    cases.push_back({clip, true, true, true, 1});
    cases.push_back({clip, false, true, false, 3});
    for (const Case& k : cases) {
        CAPTURE(k.s.batch);
        CAPTURE(k.s.channels);
        CAPTURE(k.s.height);
        CAPTURE(k.s.width);
        CAPTURE(k.s.out_channels);
        CAPTURE(k.s.block);
        CAPTURE(static_cast<int>(k.s.act));
        CAPTURE(k.bias);
        CAPTURE(k.residual);
        CAPTURE(k.in_place);
        CAPTURE(k.threads);
        // The transforms' rounding: 2e-7 to 2.2e-6 of the largest sum here.
        CHECK(run_case(k) < 1e-5);
    }
}

TEST_CASE("winograd: the same bits with AVX2 and AVX-512 and any number of workers") {
    if (!avx2()) {
        MESSAGE("SKIP: the Winograd conv needs AVX2 and FMA, which this CPU lacks");
        return;
    }
    // Every sum runs in one order whatever the register blocking (12 x 32 or
    // 6 x 16) and the blocks of tiles: a filter of 512 channels (4 chunks),
    // a part whose last panel is half used, NHWC with C != M.
    for (const WinogradConv& s : {shape(2, 512, 6, 5, 104, 0), shape(3, 24, 9, 6, 40, 8), shape(2, 32, 13, 11, 48, 16)}) {
        CAPTURE(s.channels);
        CAPTURE(s.out_channels);
        std::vector<float> base, other;
        const Isa saved = limit_isa(Isa::Avx2);
        run_case({s, true, false, false, 1}, &base);
        run_case({s, true, false, false, 3}, &other);
        CHECK(base == other);
        limit_isa(saved);
        if (active_isa() == Isa::Avx512) {
            run_case({s, true, false, false, 2}, &other);
            CHECK(base == other);
        } else {
            MESSAGE("AVX-512 against AVX2 not compared: this CPU has no AVX-512");
        }
    }
}

TEST_CASE("winograd: where it is not chosen") {
    if (!avx2()) {
        CHECK_FALSE(winograd_fits(shape(1, 64, 56, 56, 64)));
        return;
    }
    // With AVX2 in use (and no AVX-512).
    const Isa saved = limit_isa(Isa::Avx2);
    CHECK(winograd_fits(shape(1, 64, 56, 56, 64)));   // ResNet-18's first stage at batch 1: 196 tiles
    CHECK(winograd_fits(shape(1, 128, 28, 28, 128)));  // 49 tiles
    CHECK_FALSE(winograd_fits(shape(1, 256, 14, 14, 256)));  // 16 tiles: the filter's transform costs more
    CHECK(winograd_fits(shape(16, 512, 7, 7, 512)));   // the last stage at batch 16: 64 tiles
    CHECK_FALSE(winograd_fits(shape(1, 40, 56, 56, 20)));  // channels not a multiple of 8
    CHECK(winograd_fits(shape(1, 64, 56, 56, 64, 16)));
    CHECK(winograd_fits(shape(1, 40, 56, 56, 48, 0)));        // NHWC: multiples of 8
    CHECK_FALSE(winograd_fits(shape(1, 40, 56, 56, 48, 16)));  // channels not a multiple of the block
    CHECK_FALSE(winograd_fits(shape(1, 64, 56, 56, 64, 4)));   // neither NHWC, nChw8c nor nChw16c
    CHECK_FALSE(winograd_fits(shape(16, 16, 55, 55, 64)));  // too few input channels: SqueezeNet's first expands
    CHECK(winograd_fits(shape(1, 32, 27, 27, 128)));        // its next ones, 49 tiles
    CHECK_FALSE(winograd_fits(shape(1, 64, 56, 56, 12)));
    CHECK_FALSE(winograd_fits(shape(0, 64, 56, 56, 64)));
    WinogradConv gelu = shape(1, 64, 56, 56, 64);
    gelu.act = Activation::Gelu;  // only what the output transform applies: none, relu, clip
    CHECK_FALSE(winograd_fits(gelu));
    CHECK_FALSE(winograd_fits(shape(1, 64, int64_t{1} << 40, 56, 64)));  // sizes beyond int32 arithmetic
    // With AVX-512 in use: the direct conv beside it is twice as fast, so at
    // least 256 tiles, three quarters of whose pixels are the image's.
    if (limit_isa(saved) == Isa::Avx2 && active_isa() == Isa::Avx512) {
        CHECK(winograd_fits(shape(16, 64, 56, 56, 64, 0)));         // 3136 tiles
        CHECK(winograd_fits(shape(16, 128, 28, 28, 128, 0)));       // 784 tiles
        CHECK(winograd_fits(shape(16, 256, 14, 14, 256, 16)));      // 256 tiles, 77% the image's
        CHECK(winograd_fits(shape(16, 32, 27, 27, 128, 0)));        // SqueezeNet's, 784 tiles
        CHECK_FALSE(winograd_fits(shape(16, 64, 13, 13, 256, 0)));  // 256 tiles, 66% the image's
        CHECK_FALSE(winograd_fits(shape(16, 512, 7, 7, 512, 0)));   // 64 tiles
        CHECK_FALSE(winograd_fits(shape(1, 64, 56, 56, 64, 0)));    // 196 tiles
        CHECK_FALSE(winograd_fits(shape(1, 128, 28, 28, 128, 0)));  // 49 tiles
    } else {
        MESSAGE("the AVX-512 thresholds are not checked: this CPU has no AVX-512");
    }
    limit_isa(Isa::Baseline);
    CHECK_FALSE(winograd_fits(shape(1, 64, 56, 56, 64)));  // no AVX2 in use
    limit_isa(saved);
}
