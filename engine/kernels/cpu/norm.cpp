// layer_norm and batch_norm (inference) on the CPU, in double for f32 and f64
// (an f32 result is rounded once).
//
// layer_norm: one task per row (the dimensions from axis on): the mean, then
// the variance of the deviations (a second pass over the row, which is in
// cache: no cancellation of E[x²] − E[x]²), then
// y = (x − mean) · (1 / sqrt(var + epsilon)) · scale + bias.
// batch_norm: per channel a = scale / sqrt(var + epsilon), then
// y = (x − mean) · a + bias over each [N, C] plane.
#include <cmath>
#include <vector>

#include "engine/kernels/common/kernel_common.h"
#include "engine/kernels/common/norm_plan.h"
#include "engine/kernels/cpu/kernel_families.h"
#include "engine/kernels/cpu/parallel.h"
#include "engine/kernels/cpu/simd.h"

namespace graphrun::kernels {

namespace {

// Elements per task, about: small rows are grouped.
constexpr int64_t kGrainElements = int64_t{1} << 14;

int64_t rows_per_task(int64_t len) {
    return std::max<int64_t>(1, kGrainElements / std::max<int64_t>(len, 1));
}

// A parameter of a row as `len` doubles: the tensor's own elements when
// dense, otherwise broadcast onto the row.
template <class T>
const T* row_param(const LayerNormParam& p, const T* data, int64_t len, std::vector<T>& expanded) {
    if (!p.present) return nullptr;
    if (p.dense) return data;
    expanded.resize(static_cast<size_t>(len));
    for (int64_t j = 0; j < len; ++j)
        expanded[static_cast<size_t>(j)] = data[param_offset(p.dims, j)];
    return expanded.data();
}

// The sum of term(i) over [0, n) in double, in kLanes independent lanes
// (element i in lane i % kLanes) combined in a fixed order: loops the
// compiler vectorizes (with_isa), the same bits on every path.
constexpr int kLanes = 16;
template <class F>
inline double lane_sum(int64_t n, const F& term) {
    double acc[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (int j = 0; j < kLanes; ++j) acc[j] += term(i + j);
    for (int j = 0; i + j < n; ++j) acc[j] += term(i + j);
    double s = 0;
    for (int j = 0; j < kLanes; ++j) s += acc[j];
    return s;
}

// One row of layer_norm: the mean, the variance of the deviations, the output.
template <class T>
inline void normalize_row(const T* __restrict xr, const T* __restrict scale, const T* __restrict bias,
                          T* __restrict orow, int64_t len, double eps) {
    const double n = static_cast<double>(len);
    const double mean = lane_sum(len, [=](int64_t j) { return static_cast<double>(xr[j]); }) / n;
    const double sq = lane_sum(len, [=](int64_t j) {
        const double d = static_cast<double>(xr[j]) - mean;
        return d * d;
    });
    const double inv = 1.0 / std::sqrt(sq / n + eps);
    // The output in blocks written out here, not through blocked_loop: a
    // lambda's copies of the pointers lose __restrict, and with the output
    // possibly aliasing scale or bias GCC's -O2 cost model (no runtime alias
    // check) left this loop scalar: half of layer_norm's time.
    auto out = [&](int64_t j) {
        const double y = (static_cast<double>(xr[j]) - mean) * inv * static_cast<double>(scale[j]);
        orow[j] = static_cast<T>(bias ? y + static_cast<double>(bias[j]) : y);
    };
    int64_t j = 0;
    if (bias) {
        for (; j + kVectorBlock <= len; j += kVectorBlock)
            GRAPHRUN_NO_ALIAS_LOOP
            for (int u = 0; u < kVectorBlock; ++u)
                orow[j + u] = static_cast<T>((static_cast<double>(xr[j + u]) - mean) * inv *
                                                 static_cast<double>(scale[j + u]) +
                                             static_cast<double>(bias[j + u]));
    } else {
        for (; j + kVectorBlock <= len; j += kVectorBlock)
            GRAPHRUN_NO_ALIAS_LOOP
            for (int u = 0; u < kVectorBlock; ++u)
                orow[j + u] = static_cast<T>((static_cast<double>(xr[j + u]) - mean) * inv *
                                             static_cast<double>(scale[j + u]));
    }
    for (; j < len; ++j) out(j);
}

template <class T>
class LayerNormKernel final : public KernelBase {
  public:
    LayerNormKernel(const Graph& g, const Node& n)
        : KernelBase(g, n),
          plan_(layer_norm_plan(n, in_shapes_)),
          eps_(static_cast<double>(float_attr_or<T>(n, "epsilon", 1e-5))) {}

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        if (!plan_) return "internal error: layer_norm shapes do not match";
        if (out.numel == 0) return "";
        const LayerNormPlan& p = *plan_;
        const T* x = static_cast<const T*>(in[0].data);
        std::vector<T> scale_buf, bias_buf;
        const T* scale = row_param(p.scale, static_cast<const T*>(in[1].data), p.len, scale_buf);
        const T* bias = row_param(
            p.bias, p.bias.present ? static_cast<const T*>(in[2].data) : nullptr, p.len, bias_buf);
        T* o = static_cast<T*>(out.data);
        const int64_t len = p.len;
        const double eps = eps_;
        parallel_for(ctx, p.rows, rows_per_task(len), [=](int64_t lo, int64_t hi) {
            with_isa([&] {
                for (int64_t r = lo; r < hi; ++r)
                    normalize_row(x + r * len, scale, bias, o + r * len, len, eps);
            });
        }, cold_rows(in[0], p.rows));
        return "";
    }

  private:
    std::optional<LayerNormPlan> plan_;  // nullopt: the shapes do not match
    double eps_;
};

template <class T>
class BatchNormKernel final : public KernelBase {
  public:
    BatchNormKernel(const Graph& g, const Node& n)
        : KernelBase(g, n),
          plan_(batch_norm_plan(in_shapes_[0])),
          eps_(static_cast<double>(float_attr_or<T>(n, "epsilon", 1e-5))) {}

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        const BatchNormPlan& p = plan_;
        for (size_t i = 1; i < 5; ++i)
            if (in[i].numel != p.channels)
                return "internal error: batch_norm parameters do not match x";
        if (out.numel == 0) return "";
        const T* x = static_cast<const T*>(in[0].data);
        const T* scale = static_cast<const T*>(in[1].data);
        const T* bias = static_cast<const T*>(in[2].data);
        const T* mean = static_cast<const T*>(in[3].data);
        const T* var = static_cast<const T*>(in[4].data);
        // Per channel: the factor, and mean and bias widened once.
        std::vector<double> a(static_cast<size_t>(p.channels) * 3);
        for (int64_t c = 0; c < p.channels; ++c) {
            const auto k = static_cast<size_t>(c) * 3;
            a[k] = static_cast<double>(scale[c]) / std::sqrt(static_cast<double>(var[c]) + eps_);
            a[k + 1] = static_cast<double>(mean[c]);
            a[k + 2] = static_cast<double>(bias[c]);
        }
        T* o = static_cast<T*>(out.data);
        const double* f = a.data();
        const int64_t channels = p.channels, inner = p.inner;
        parallel_for(ctx, p.outer * channels, rows_per_task(inner), [=](int64_t lo, int64_t hi) {
            with_isa([&] {
                for (int64_t plane = lo; plane < hi; ++plane) {
                    const double* fc = f + (plane % channels) * 3;
                    const double factor = fc[0], m = fc[1], b = fc[2];
                    const T* __restrict src = x + plane * inner;
                    T* __restrict dst = o + plane * inner;
                    blocked_loop(inner, [=](int64_t j) {
                        dst[j] = static_cast<T>((static_cast<double>(src[j]) - m) * factor + b);
                    });
                }
            });
        });
        return "";
    }

  private:
    BatchNormPlan plan_;
    double eps_;
};

}  // namespace

std::unique_ptr<Kernel> make_norm_kernel(const Graph& g, const Node& n) {
    if (n.op == OpKind::LayerNorm && (n.inputs.size() == 2 || n.inputs.size() == 3)) {
        if (n.dtype == DType::F32) return std::make_unique<LayerNormKernel<float>>(g, n);
        if (n.dtype == DType::F64) return std::make_unique<LayerNormKernel<double>>(g, n);
    }
    if (n.op == OpKind::BatchNorm && n.inputs.size() == 5) {
        if (n.dtype == DType::F32) return std::make_unique<BatchNormKernel<float>>(g, n);
        if (n.dtype == DType::F64) return std::make_unique<BatchNormKernel<double>>(g, n);
    }
    return make_error_kernel(std::string("internal error: no CPU kernel for ") + op_name(n.op) +
                             " on " + dtype_name(n.dtype));
}

}  // namespace graphrun::kernels
