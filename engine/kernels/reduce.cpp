// Reductions (reduce_sum, reduce_max, reduce_mean over any set of axes) and
// softmax. Float sums accumulate in double; f64 sums also pairwise along
// contiguous runs and compensated (Kahan) across them, so results stay within
// 1e-5 relative of a float64 reference. Integer sums wrap; NaN propagates
// through reduce_max and softmax.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>

#include "engine/kernels/kernel_common.h"
#include "engine/kernels/kernel_families.h"
#include "engine/kernels/parallel.h"

namespace graphrun::kernels {

namespace {

constexpr int64_t kReduceGrain = int64_t{1} << 15;  // input elements per thread, at least
constexpr int64_t kTileWidth = 64;                  // output lanes accumulated together

enum class ReduceKind { Sum, Max, Mean };

template <class T>
constexpr bool kIsInt = std::is_integral_v<T>;

// A walk over some axes of the input (outermost first) by flat index.
struct Axes {
    int rank = 0;
    std::array<int64_t, kMaxDims> size{}, stride{};
    int64_t count = 1;  // product of the sizes
};

struct Odometer {
    const Axes& axes;
    std::array<int64_t, kMaxDims> idx{};
    int64_t offset = 0;

    Odometer(const Axes& a, int64_t flat) : axes(a) {
        for (int d = a.rank - 1; d >= 0; --d) {
            idx[d] = flat % a.size[d];
            flat /= a.size[d];
            offset += idx[d] * a.stride[d];
        }
    }
    void next() {
        for (int d = axes.rank - 1; d >= 0; --d) {
            offset += axes.stride[d];
            if (++idx[d] < axes.size[d]) return;
            offset -= axes.size[d] * axes.stride[d];
            idx[d] = 0;
        }
    }
};

// numpy's pairwise summation, in double.
template <class T>
double pairwise_sum(const T* x, int64_t n) {
    if (n < 8) {
        double s = 0;
        for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]);
        return s;
    }
    if (n <= 128) {
        double r[8];
        for (int j = 0; j < 8; ++j) r[j] = static_cast<double>(x[j]);
        int64_t i = 8;
        for (; i + 8 <= n; i += 8)
            for (int j = 0; j < 8; ++j) r[j] += static_cast<double>(x[i + j]);
        double s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; ++i) s += static_cast<double>(x[i]);
        return s;
    }
    int64_t half = n / 2;
    half -= half % 8;
    return pairwise_sum(x, half) + pairwise_sum(x + half, n - half);
}

template <class T>
T nan_max(T m, T x) {
    if constexpr (kIsInt<T>)
        return x > m ? x : m;
    else
        return (x > m || x != x) ? x : m;  // once m is NaN it stays NaN
}

// The max of m and x[0, n), in independent lanes so that it vectorizes.
template <class T>
T run_max(const T* x, int64_t n, T m) {
    int64_t i = 0;
    if (n >= kVectorBlock) {
        T acc[kVectorBlock];
        for (int j = 0; j < kVectorBlock; ++j) acc[j] = x[j];
        for (i = kVectorBlock; i + kVectorBlock <= n; i += kVectorBlock)
            for (int j = 0; j < kVectorBlock; ++j) acc[j] = nan_max(acc[j], x[i + j]);
        for (int j = 0; j < kVectorBlock; ++j) m = nan_max(m, acc[j]);
    }
    for (; i < n; ++i) m = nan_max(m, x[i]);
    return m;
}

// What a lane accumulates in: the value (max), wrapping unsigned (integer
// sums), double (float sums).
template <class T, ReduceKind K, class = void>
struct Accumulator {
    using type = double;
};
template <class T, ReduceKind K>
struct Accumulator<T, K, std::enable_if_t<K == ReduceKind::Max>> {
    using type = T;
};
template <class T, ReduceKind K>
struct Accumulator<T, K, std::enable_if_t<K != ReduceKind::Max && std::is_integral_v<T>>> {
    using type = std::make_unsigned_t<T>;
};

// Compensated addition (Kahan-Babuska/Neumaier).
struct Compensated {
    double sum = 0, comp = 0;
    void add(double v) {
        const double t = sum + v;
        comp += std::fabs(sum) >= std::fabs(v) ? (sum - t) + v : (v - t) + sum;
        sum = t;
    }
    double value() const { return sum + comp; }
};

template <class T, ReduceKind K>
class ReduceKernel final : public KernelBase {
  public:
    ReduceKernel(const Graph& g, const Node& n) : KernelBase(g, n) {
        const Shape& s = in_shapes_[0];
        const size_t r = s.size();
        std::vector<bool> reduced(r, true);  // axes absent: every axis
        if (auto axes = ints_attr(n, "axes")) {
            reduced.assign(r, false);
            for (int64_t a : *axes) {
                const int64_t k = normalize_axis(a, r);
                if (k < 0) {
                    ok_ = false;
                    return;
                }
                reduced[static_cast<size_t>(k)] = true;
            }
        }
        // Merge neighbouring axes of the same kind (size-1 axes dropped): the
        // input is contiguous, so a merged run keeps a single stride.
        struct Dim {
            int64_t size, stride;
            bool reduced;
        };
        std::vector<Dim> dims;  // outermost first
        std::vector<int64_t> stride(r, 1);
        for (size_t k = r; k > 1; --k) stride[k - 2] = stride[k - 1] * s[k - 1];
        for (size_t k = 0; k < r; ++k) {
            if (reduced[k]) count_ *= s[k];
            if (s[k] == 1) continue;
            if (!dims.empty() && dims.back().reduced == reduced[k]) {
                dims.back().size *= s[k];
                dims.back().stride = stride[k];
                continue;
            }
            dims.push_back({s[k], stride[k], reduced[k]});
        }
        if (dims.size() > static_cast<size_t>(kMaxDims)) {
            ok_ = false;
            return;
        }
        // Innermost axis reduced: each output sums contiguous runs of length
        // run_. Innermost axis kept: each output row accumulates lanes side by side.
        inner_reduced_ = !dims.empty() && dims.back().reduced;
        const size_t last = dims.empty() ? 0 : dims.size() - 1;
        if (inner_reduced_)
            run_ = dims.back().size;
        else
            lanes_ = dims.empty() ? 1 : dims.back().size;
        for (size_t k = 0; k < dims.size(); ++k) {
            if (k == last) continue;
            Axes& a = dims[k].reduced ? reduced_axes_ : kept_axes_;
            a.size[a.rank] = dims[k].size;
            a.stride[a.rank] = dims[k].stride;
            a.count *= dims[k].size;
            ++a.rank;
        }
    }

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        if (!ok_) return "internal error: reduction axes do not match the input";
        if (out.numel == 0) return "";
        const T* x = static_cast<const T*>(in[0].data);
        T* o = static_cast<T*>(out.data);
        if (count_ == 0) {
            fill_empty(o, out.numel);
            return "";
        }
        if (inner_reduced_) {
            const int64_t grain = std::max<int64_t>(1, kReduceGrain / count_);
            parallel_for(out.numel, ctx.threads, grain,
                         [&](int64_t lo, int64_t hi) { reduce_runs(x, o, lo, hi); });
        } else {
            const int64_t tiles = (lanes_ + kTileWidth - 1) / kTileWidth;
            const int64_t grain =
                std::max<int64_t>(1, kReduceGrain / (count_ * std::min(lanes_, kTileWidth)));
            parallel_for(kept_axes_.count * tiles, ctx.threads, grain,
                         [&](int64_t lo, int64_t hi) { reduce_lanes(x, o, tiles, lo, hi); });
        }
        return "";
    }

  private:
    // An empty reduction: the sum's identity, the mean's 0/0, and for max
    // (refused by validation) the lowest value.
    void fill_empty(T* o, int64_t n) const {
        T v{};
        if constexpr (K == ReduceKind::Mean) v = std::numeric_limits<T>::quiet_NaN();
        if constexpr (K == ReduceKind::Max)
            v = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                     : std::numeric_limits<T>::lowest();
        std::fill(o, o + n, v);
    }

    T finish(double sum) const {
        if constexpr (K == ReduceKind::Mean)
            return static_cast<T>(sum / static_cast<double>(count_));
        else
            return static_cast<T>(sum);
    }

    // Outputs [lo, hi) when the innermost input axis is reduced.
    void reduce_runs(const T* x, T* o, int64_t lo, int64_t hi) const {
        const int64_t run = run_, runs = reduced_axes_.count;
        Odometer out_pos(kept_axes_, lo);
        for (int64_t i = lo; i < hi; ++i, out_pos.next()) {
            const T* base = x + out_pos.offset;
            Odometer r(reduced_axes_, 0);
            if constexpr (K == ReduceKind::Max) {
                T m = base[0];
                for (int64_t q = 0; q < runs; ++q, r.next()) m = run_max(base + r.offset, run, m);
                o[i] = m;
            } else if constexpr (kIsInt<T>) {
                using U = std::make_unsigned_t<T>;
                U total = 0;
                for (int64_t q = 0; q < runs; ++q, r.next()) {
                    const T* __restrict p = base + r.offset;
                    U s = 0;
                    for (int64_t j = 0; j < run; ++j) s += static_cast<U>(p[j]);
                    total += s;
                }
                o[i] = static_cast<T>(total);
            } else {
                Compensated total;
                for (int64_t q = 0; q < runs; ++q, r.next())
                    total.add(pairwise_sum(base + r.offset, run));
                o[i] = finish(total.value());
            }
        }
    }

    // Work items [lo, hi) when the innermost input axis is kept: item =
    // (output row, tile of up to kTileWidth neighbouring lanes).
    void reduce_lanes(const T* x, T* o, int64_t tiles, int64_t lo, int64_t hi) const {
        using Acc = typename Accumulator<T, K>::type;
        constexpr bool compensate = std::is_same_v<T, double> && K != ReduceKind::Max;
        Acc acc[kTileWidth];
        double comp[kTileWidth];
        for (int64_t item = lo; item < hi; ++item) {
            const int64_t row = item / tiles, j0 = item % tiles * kTileWidth;
            const int64_t w = std::min(kTileWidth, lanes_ - j0);
            const T* base = x + Odometer(kept_axes_, row).offset + j0;
            Odometer r(reduced_axes_, 0);
            if constexpr (K == ReduceKind::Max) {
                for (int64_t j = 0; j < w; ++j) acc[j] = base[j];
            } else {
                for (int64_t j = 0; j < w; ++j) acc[j] = 0, comp[j] = 0;
            }
            for (int64_t q = 0; q < reduced_axes_.count; ++q, r.next()) {
                const T* p = base + r.offset;
                if constexpr (K == ReduceKind::Max) {
                    for (int64_t j = 0; j < w; ++j) acc[j] = nan_max(acc[j], p[j]);
                } else if constexpr (compensate) {
                    for (int64_t j = 0; j < w; ++j) {
                        const double v = p[j], t = acc[j] + v;
                        comp[j] +=
                            std::fabs(acc[j]) >= std::fabs(v) ? (acc[j] - t) + v : (v - t) + acc[j];
                        acc[j] = t;
                    }
                } else {
                    for (int64_t j = 0; j < w; ++j) acc[j] += static_cast<Acc>(p[j]);
                }
            }
            T* dst = o + row * lanes_ + j0;
            for (int64_t j = 0; j < w; ++j) {
                if constexpr (K == ReduceKind::Max)
                    dst[j] = acc[j];
                else if constexpr (kIsInt<T>)
                    dst[j] = static_cast<T>(acc[j]);
                else if constexpr (compensate)
                    dst[j] = finish(acc[j] + comp[j]);
                else
                    dst[j] = finish(acc[j]);
            }
        }
    }

    bool ok_ = true;
    bool inner_reduced_ = false;
    int64_t count_ = 1;  // input elements per output
    int64_t run_ = 1;    // inner_reduced_: length of the contiguous runs
    int64_t lanes_ = 1;  // !inner_reduced_: length of the innermost (kept) axis
    Axes kept_axes_;     // kept axes except the innermost
    Axes reduced_axes_;  // reduced axes except the innermost
};

// --- softmax ---------------------------------------------------------------------

// softmax(x) = exp(x - max) / sum(exp(x - max)) along one axis, in double
// (f32 too: x - max is exact in double, so large logits lose nothing). A NaN,
// or an infinite maximum, makes its whole slice NaN, like the NumPy formula.
template <class T>
class SoftmaxKernel final : public KernelBase {
  public:
    SoftmaxKernel(const Graph& g, const Node& n) : KernelBase(g, n) {
        const Shape& s = in_shapes_[0];
        const int64_t axis = normalize_axis(int_attr(n, "axis", -1), s.size());
        if (axis < 0) {
            ok_ = false;
            return;
        }
        for (size_t d = 0; d < s.size(); ++d) {
            const auto k = static_cast<int64_t>(d);
            if (k < axis)
                outer_ *= s[d];
            else if (k == axis)
                len_ = s[d];
            else
                inner_ *= s[d];
        }
    }

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        if (!ok_) return "internal error: softmax axis does not match the input";
        if (out.numel == 0) return "";
        const T* x = static_cast<const T*>(in[0].data);
        T* o = static_cast<T*>(out.data);
        const int64_t tiles = (inner_ + kTileWidth - 1) / kTileWidth;
        const int64_t grain =
            std::max<int64_t>(1, kReduceGrain / (len_ * std::min(inner_, kTileWidth)));
        parallel_for(outer_ * tiles, ctx.threads, grain, [&](int64_t lo, int64_t hi) {
            for (int64_t item = lo; item < hi; ++item) {
                const int64_t row = item / tiles, j0 = item % tiles * kTileWidth;
                const int64_t off = row * len_ * inner_ + j0;
                slice(x + off, o + off, std::min(kTileWidth, inner_ - j0));
            }
        });
        return "";
    }

  private:
    // `w` neighbouring slices of length len_, element k of slice j at k * inner_ + j.
    void slice(const T* x, T* o, int64_t w) const {
        double m[kTileWidth], sum[kTileWidth];
        for (int64_t j = 0; j < w; ++j) m[j] = x[j], sum[j] = 0;
        for (int64_t k = 1; k < len_; ++k)
            for (int64_t j = 0; j < w; ++j)
                m[j] = nan_max(m[j], static_cast<double>(x[k * inner_ + j]));
        for (int64_t k = 0; k < len_; ++k)
            for (int64_t j = 0; j < w; ++j) {
                const double e = std::exp(static_cast<double>(x[k * inner_ + j]) - m[j]);
                o[k * inner_ + j] = static_cast<T>(e);
                sum[j] += e;
            }
        for (int64_t k = 0; k < len_; ++k)
            for (int64_t j = 0; j < w; ++j)
                o[k * inner_ + j] = static_cast<T>(o[k * inner_ + j] / sum[j]);
    }

    bool ok_ = true;
    int64_t outer_ = 1, len_ = 1, inner_ = 1;
};

template <ReduceKind K>
std::unique_ptr<CpuKernel> make_reduce_typed(const Graph& g, const Node& n) {
    switch (n.dtype) {
        case DType::F32:
            return std::make_unique<ReduceKernel<float, K>>(g, n);
        case DType::F64:
            return std::make_unique<ReduceKernel<double, K>>(g, n);
        case DType::I32:
            if constexpr (K != ReduceKind::Mean)
                return std::make_unique<ReduceKernel<int32_t, K>>(g, n);
            break;
        case DType::I64:
            if constexpr (K != ReduceKind::Mean)
                return std::make_unique<ReduceKernel<int64_t, K>>(g, n);
            break;
        case DType::Bool:
            break;
    }
    return make_error_kernel(std::string("internal error: no CPU kernel for ") + op_name(n.op) +
                             " on " + dtype_name(n.dtype));
}

}  // namespace

std::unique_ptr<CpuKernel> make_reduce_kernel(const Graph& g, const Node& n) {
    if (n.inputs.size() == 1) {
        if (n.op == OpKind::ReduceSum) return make_reduce_typed<ReduceKind::Sum>(g, n);
        if (n.op == OpKind::ReduceMax) return make_reduce_typed<ReduceKind::Max>(g, n);
        if (n.op == OpKind::ReduceMean) return make_reduce_typed<ReduceKind::Mean>(g, n);
    }
    return make_error_kernel(std::string("internal error: no CPU kernel for ") + op_name(n.op));
}

std::unique_ptr<CpuKernel> make_softmax_kernel(const Graph& g, const Node& n) {
    if (n.inputs.size() == 1) {
        if (n.dtype == DType::F32) return std::make_unique<SoftmaxKernel<float>>(g, n);
        if (n.dtype == DType::F64) return std::make_unique<SoftmaxKernel<double>>(g, n);
    }
    return make_error_kernel(std::string("internal error: no CPU kernel for softmax on ") +
                             dtype_name(n.dtype));
}

}  // namespace graphrun::kernels
