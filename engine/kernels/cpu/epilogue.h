// A fused node's epilogue (engine/ir/epilogue.h) as the CPU's conv, matmul and
// gemm kernels apply it: to a block of the output right after the block is
// computed (a GEMM tile, an output channel's plane), while it is in cache.
// Each step rounds as the unfused op did: + bias, + residual, then the
// activation with the unfused kernel's formula (relu and clip in T; f32 tanh
// and sigmoid through vmath.h, f64 with libm; f64 gelu in double as the gelu
// kernel (cpu_math.h), f32 gelu as its ops written out: gelu_f32), so a
// fused node's result has the unfused chain's bits for the same main result.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "engine/ir/graph.h"
#include "engine/kernels/common/activation_ops.h"
#include "engine/kernels/common/kernel.h"
#include "engine/kernels/common/kernel_common.h"
#include "engine/kernels/cpu/cpu_math.h"
#include "engine/kernels/cpu/parallel.h"
#include "engine/kernels/cpu/simd.h"
#include "engine/kernels/cpu/vmath.h"

namespace graphrun::kernels {

template <class T>
class EpilogueRun {
public:
    // For node n of graph g; empty() when n has no epilogue.
    EpilogueRun(const Graph& g, const Node& n) {
        const Epilogue* e = g.epilogue_of(n);
        // An epilogue that only lists the ops a node took in (a transpose a
        // matmul reads in place) has nothing to apply.
        if (!e || (e->bias < 0 && e->residual < 0 && e->act == Activation::None)) return;
        active_ = true;
        bias_at_ = e->bias;
        residual_at_ = e->residual;
        act_ = e->act;
        p_.lo = static_cast<T>(e->lo);
        p_.hi = static_cast<T>(e->hi);
        p_.tanh = e->act == Activation::GeluTanh;
    }

    bool empty() const { return !active_; }

    // How the epilogue is split over workers, in elements, as the unfused
    // elementwise kernels split theirs (vec_f32 ops: kVecGrain, kVecColdBelow):
    // a chunk at least grain() long, and
    // below cold_below() it runs on the caller without waking a sleeping
    // worker (on a busy 2-core machine a wake-up cost ResNet-18's fused
    // convs 4 ms a pass).
    int64_t grain() const { return cheap() ? int64_t{1} << 15 : int64_t{1} << 13; }
    int64_t cold_below() const { return cheap() ? int64_t{1} << 19 : int64_t{1} << 16; }

    // The bias and residual buffers of this run (the kernel's inputs).
    void bind(const TensorRef* in) {
        bias_ = bias_at_ >= 0 ? static_cast<const T*>(in[bias_at_].data) : nullptr;
        residual_ = residual_at_ >= 0 ? static_cast<const T*>(in[residual_at_].data) : nullptr;
    }

    // Applies the epilogue to `rows` rows of `cols` elements of the output
    // `out`, the first at element `start`, rows `ld` elements apart. The bias
    // (along the output's last axis) takes column j as its index, so with a
    // bias a block must be whole rows of the last axis (start a multiple of it).
    void apply(T* out, int64_t start, int64_t rows, int64_t cols, int64_t ld) const {
        if (!active_) return;
        with_isa([&] {
            for (int64_t r = 0; r < rows; ++r) {
                T* __restrict y = out + start + r * ld;
                if (bias_) {
                    const T* __restrict b = bias_;
                    blocked_loop(cols, [=](int64_t j) { y[j] = y[j] + b[j]; });
                }
                if (residual_) {
                    const T* __restrict s = residual_ + start + r * ld;
                    blocked_loop(cols, [=](int64_t j) { y[j] = y[j] + s[j]; });
                }
                activate(y, cols);
            }
        });
    }

private:
    bool cheap() const { return act_ == Activation::None || act_ == Activation::Relu || act_ == Activation::Clip; }

    void activate(T* __restrict y, int64_t n) const {
        const UnaryParams<T, double> p = p_;
        switch (act_) {
            case Activation::None: return;
            case Activation::Relu: blocked_loop(n, [=](int64_t j) { y[j] = y[j] < 0 ? T(0) : y[j]; }); return;
            case Activation::Clip:
                blocked_loop(n, [=](int64_t j) { y[j] = ClipOp::apply<CpuMath>(y[j], p); });
                return;
            case Activation::Tanh:
                if constexpr (std::is_same_v<T, float>) vec_f32(VecFn::Tanh, y, y, n);
                else
                    for (int64_t j = 0; j < n; ++j) y[j] = std::tanh(y[j]);
                return;
            case Activation::Sigmoid:  // elementwise.cpp's: f32 through vmath.h, f64 SigmoidWith
                if constexpr (std::is_same_v<T, float>) {
                    vec_f32(VecFn::Sigmoid, y, y, n);
                    return;
                }
                for (int64_t j = 0; j < n; ++j) {
                    const T x = y[j];
                    if (x >= 0) {
                        y[j] = T(1) / (T(1) + std::exp(-x));
                    } else {
                        const T e = std::exp(x);
                        y[j] = e / (T(1) + e);
                    }
                }
                return;
            case Activation::Gelu:
            case Activation::GeluTanh:
                if constexpr (std::is_same_v<T, float>) {
                    gelu_f32(y, n, act_ == Activation::GeluTanh);
                    return;
                }
                for (int64_t j = 0; j < n; ++j) y[j] = GeluOp::apply<CpuMath>(y[j], p);
                return;
        }
    }

    // f32 gelu as an exporter writes it out, each step in f32 and the erf or
    // tanh through vmath.h (several elements per call): x·0.5·(1 + erf(x/√2)),
    // or x·0.5·(1 + tanh(√(2/π)·(x + 0.044715·x·x·x))) with the constants in
    // f32. These are the bits of those ops unfused (the fusion pass makes
    // most fused gelus from them); the gelu op's own kernel, which rounds a
    // double formula once, differs from them by an ulp or so. Scalar libm
    // erfc per element made the transformer's fused FFN slower than unfused.
    static void gelu_f32(float* __restrict y, int64_t n, bool tanh_form) {
        constexpr int64_t kChunk = 256;
        float t[kChunk];
        for (int64_t j0 = 0; j0 < n; j0 += kChunk) {
            const int64_t m = std::min(kChunk, n - j0);
            float* __restrict v = y + j0;
            // (Through the lambdas' captures the output and t lose __restrict:
            // plain blocked_loop left these scalar, a divide per element, the
            // larger part of the transformer's fused FFN GELU.)
            if (tanh_form)
                noalias_blocked_loop(m, [&](int64_t j) { t[j] = (v[j] + (v[j] * v[j]) * v[j] * 0.044715f) * 0.7978845608f; });
            else
                noalias_blocked_loop(m, [&](int64_t j) { t[j] = v[j] / 1.41421356237f; });
            vec_f32(tanh_form ? VecFn::Tanh : VecFn::Erf, t, t, m);
            noalias_blocked_loop(m, [&](int64_t j) { v[j] = (v[j] * 0.5f) * (t[j] + 1.0f); });
        }
    }

    bool active_ = false;
    int8_t bias_at_ = -1, residual_at_ = -1;
    Activation act_ = Activation::None;
    UnaryParams<T, double> p_;
    const T* bias_ = nullptr;
    const T* residual_ = nullptr;
};

// The epilogue over a whole output of `shape`, as rows of its last axis, over
// the session's workers (matmul, gemm: after the BLAS call).
template <class T>
void apply_epilogue(EpilogueRun<T>& e, const TensorRef* in, TensorRef& out, const Shape& shape,
                    const KernelContext& ctx) {
    if (e.empty() || out.numel == 0) return;
    e.bind(in);
    const int64_t cols = shape.empty() ? 1 : shape.back();
    if (cols <= 0) return;
    T* y = static_cast<T*>(out.data);
    parallel_for(
        ctx, out.numel / cols, std::max<int64_t>(1, e.grain() / cols),
        [&](int64_t r0, int64_t r1) { e.apply(y, r0 * cols, r1 - r0, cols, cols); }, e.cold_below() / cols);
}

}  // namespace graphrun::kernels
