// Reductions (reduce_sum, reduce_max, reduce_mean, reduce_min, reduce_prod
// over any set of axes) and softmax, log_softmax. Products accumulate in
// double (floats) or wrap (integers), in order. Float sums accumulate in double; f64 sums also pairwise along
// contiguous runs and compensated (Kahan) across them, so results stay within
// 1e-5 relative of a float64 reference. Integer sums wrap; NaN propagates
// through reduce_max and softmax. Work is split over the session's workers in
// pieces fixed by the shape alone, so the result never depends on --threads.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>

#include "engine/kernels/common/kernel_common.h"
#include "engine/kernels/cpu/kernel_families.h"
#include "engine/kernels/cpu/parallel.h"
#include "engine/kernels/cpu/simd.h"

namespace graphrun::kernels {

namespace {

constexpr int64_t kReduceGrain = int64_t{1} << 15;  // input elements per thread, at least
constexpr int64_t kTileWidth = 64;                  // softmax: slices handled side by side
// A long contiguous reduction is cut into blocks of at least this many
// elements, reduced in parallel and combined in order.
constexpr int64_t kSplitBlock = int64_t{1} << 15;
constexpr int64_t kMaxPartials = 2048;  // block results held on the stack
// Innermost axis kept: lanes accumulated side by side, at most this many.
constexpr int64_t kMaxLaneTile = 1024;
constexpr int64_t kSoftmaxGrain = int64_t{1} << 13;  // elements per thread, at least

enum class ReduceKind { Sum, Max, Mean, Min, Prod };
// Max and Min keep a value of T; the others accumulate.
template <ReduceKind K>
constexpr bool kExtreme = K == ReduceKind::Max || K == ReduceKind::Min;

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

template <class T>
T nan_min(T m, T x) {
    if constexpr (kIsInt<T>)
        return x < m ? x : m;
    else
        return (x < m || x != x) ? x : m;  // once m is NaN it stays NaN
}

// Max's or min's choice between m and x (NaN wins); the product otherwise.
template <ReduceKind K, class T>
T pick(T m, T x) {
    if constexpr (K == ReduceKind::Min)
        return nan_min(m, x);
    else
        return nan_max(m, x);
}

// The max (min) of m and x[0, n), in independent lanes so that it vectorizes.
template <ReduceKind K, class T>
T run_extreme(const T* x, int64_t n, T m) {
    int64_t i = 0;
    if (n >= kVectorBlock) {
        T acc[kVectorBlock];
        for (int j = 0; j < kVectorBlock; ++j) acc[j] = x[j];
        for (i = kVectorBlock; i + kVectorBlock <= n; i += kVectorBlock)
            for (int j = 0; j < kVectorBlock; ++j) acc[j] = pick<K>(acc[j], x[i + j]);
        for (int j = 0; j < kVectorBlock; ++j) m = pick<K>(m, acc[j]);
    }
    for (; i < n; ++i) m = pick<K>(m, x[i]);
    return m;
}

// What a lane accumulates in: the value (max), wrapping unsigned (integer
// sums), double (float sums).
template <class T, ReduceKind K, class = void>
struct Accumulator {
    using type = double;
};
template <class T, ReduceKind K>
struct Accumulator<T, K, std::enable_if_t<kExtreme<K>>> {
    using type = T;
};
template <class T, ReduceKind K>
struct Accumulator<T, K, std::enable_if_t<!kExtreme<K> && std::is_integral_v<T>>> {
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
        auto rd = reduce_dims(n, in_shapes_[0]);
        if (!rd) {
            ok_ = false;
            return;
        }
        count_ = rd->count;
        const std::vector<ReduceDim>& dims = rd->dims;  // outermost first
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
        // Few long contiguous runs (reduce over everything, or over a long
        // last axis): each run is cut into blocks reduced in parallel.
        if (inner_reduced_ && reduced_axes_.rank == 0 && out_numel_ > 0 &&
            run_ >= 2 * kSplitBlock && out_numel_ <= kMaxPartials / 2) {
            const int64_t blocks =
                std::min((run_ + kSplitBlock - 1) / kSplitBlock, kMaxPartials / out_numel_);
            block_len_ = (run_ + blocks - 1) / blocks;
            blocks_ = (run_ + block_len_ - 1) / block_len_;
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
        if (blocks_ > 1) {
            reduce_blocks(x, o, ctx);
        } else if (inner_reduced_) {
            const int64_t grain = std::max<int64_t>(1, kReduceGrain / count_);
            parallel_for(ctx, out.numel, grain,
                         [&](int64_t lo, int64_t hi) { reduce_runs(x, o, lo, hi); });
        } else {
            // Tiles of neighbouring lanes; their width only spreads the work
            // (each lane sums its own elements in order), so it may follow the pool.
            const int64_t threads = ctx.pool ? ctx.pool->size() : 1;
            int64_t width = std::min(lanes_, kMaxLaneTile);
            if (kept_axes_.count < 2 * threads)
                width = std::min(width, std::max<int64_t>(64, (lanes_ + 2 * threads - 1) / (2 * threads)));
            const int64_t tiles = (lanes_ + width - 1) / width;
            const int64_t grain = std::max<int64_t>(1, kReduceGrain / (count_ * width));
            parallel_for(ctx, kept_axes_.count * tiles, grain, [&](int64_t lo, int64_t hi) {
                with_isa([&] { reduce_lanes(x, o, tiles, width, lo, hi); });
            });
        }
        return "";
    }

  private:
    using Acc = typename Accumulator<T, K>::type;

    // An empty reduction: the sum's identity, the mean's 0/0, and for max
    // (refused by validation) the lowest value.
    void fill_empty(T* o, int64_t n) const {
        T v{};
        if constexpr (K == ReduceKind::Mean) v = std::numeric_limits<T>::quiet_NaN();
        if constexpr (K == ReduceKind::Max)
            v = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                     : std::numeric_limits<T>::lowest();
        if constexpr (K == ReduceKind::Min)
            v = std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                     : std::numeric_limits<T>::max();
        if constexpr (K == ReduceKind::Prod) v = T(1);  // the empty product
        std::fill(o, o + n, v);
    }

    T finish(double sum) const {
        if constexpr (K == ReduceKind::Mean)
            return static_cast<T>(sum / static_cast<double>(count_));
        else
            return static_cast<T>(sum);
    }

    // The reduction of one contiguous run: its max, its wrapped integer sum,
    // or its float sum in double.
    static Acc reduce_run(const T* p, int64_t n) {
        if constexpr (kExtreme<K>) {
            if constexpr (std::is_same_v<T, float> && K == ReduceKind::Max)
                return max_f32(p, n);
            else
                return run_extreme<K>(p, n, p[0]);
        } else if constexpr (K == ReduceKind::Prod) {
            // Wrapping integers, or floats in double; in order, one lane.
            Acc s = 1;
            for (int64_t j = 0; j < n; ++j) s *= static_cast<Acc>(p[j]);
            return s;
        } else if constexpr (kIsInt<T>) {
            Acc s = 0;
            with_isa([&] { blocked_loop(n, [&](int64_t j) { s += static_cast<Acc>(p[j]); }); });
            return s;
        } else if constexpr (std::is_same_v<T, float>) {
            return sum_f32(p, n);
        } else {
            double s = 0;
            with_isa([&] { s = pairwise_sum(p, n); });
            return s;
        }
    }

    // Outputs one by one, each combining its blocks of length block_len_ in order.
    void reduce_blocks(const T* x, T* o, const KernelContext& ctx) const {
        const int64_t blocks = blocks_, items = out_numel_ * blocks;
        Acc part[kMaxPartials];
        parallel_for(ctx, items, 1, [&](int64_t lo, int64_t hi) {
            for (int64_t item = lo; item < hi; ++item) {
                const int64_t i = item / blocks, b = item % blocks;
                const int64_t begin = b * block_len_, len = std::min(block_len_, run_ - begin);
                part[item] = reduce_run(x + Odometer(kept_axes_, i).offset + begin, len);
            }
        });
        for (int64_t i = 0; i < out_numel_; ++i) {
            const Acc* p = part + i * blocks;
            if constexpr (kExtreme<K>) {
                T m = p[0];
                for (int64_t b = 1; b < blocks; ++b) m = pick<K>(m, p[b]);
                o[i] = m;
            } else if constexpr (K == ReduceKind::Prod) {
                Acc s = 1;
                for (int64_t b = 0; b < blocks; ++b) s *= p[b];
                o[i] = static_cast<T>(s);
            } else if constexpr (kIsInt<T>) {
                Acc s = 0;
                for (int64_t b = 0; b < blocks; ++b) s += p[b];
                o[i] = static_cast<T>(s);
            } else {
                Compensated total;
                for (int64_t b = 0; b < blocks; ++b) total.add(p[b]);
                o[i] = finish(total.value());
            }
        }
    }

    // Outputs [lo, hi) when the innermost input axis is reduced.
    void reduce_runs(const T* x, T* o, int64_t lo, int64_t hi) const {
        const int64_t run = run_, runs = reduced_axes_.count;
        Odometer out_pos(kept_axes_, lo);
        for (int64_t i = lo; i < hi; ++i, out_pos.next()) {
            const T* base = x + out_pos.offset;
            Odometer r(reduced_axes_, 0);
            if constexpr (kExtreme<K>) {
                T m = base[0];
                for (int64_t q = 0; q < runs; ++q, r.next()) m = pick<K>(m, reduce_run(base + r.offset, run));
                o[i] = m;
            } else if constexpr (K == ReduceKind::Prod) {
                Acc total = 1;
                for (int64_t q = 0; q < runs; ++q, r.next()) total *= reduce_run(base + r.offset, run);
                o[i] = static_cast<T>(total);
            } else if constexpr (kIsInt<T>) {
                Acc total = 0;
                for (int64_t q = 0; q < runs; ++q, r.next()) total += reduce_run(base + r.offset, run);
                o[i] = static_cast<T>(total);
            } else {
                Compensated total;
                for (int64_t q = 0; q < runs; ++q, r.next()) total.add(reduce_run(base + r.offset, run));
                o[i] = finish(total.value());
            }
        }
    }

    // Work items [lo, hi) when the innermost input axis is kept: item =
    // (output row, tile of up to `width` neighbouring lanes). Each lane adds
    // its elements in input order.
    void reduce_lanes(const T* x, T* o, int64_t tiles, int64_t width, int64_t lo, int64_t hi) const {
        constexpr bool compensate = std::is_same_v<T, double> && !kExtreme<K> && K != ReduceKind::Prod;
        Acc acc[kMaxLaneTile];
        double comp[compensate ? kMaxLaneTile : 1];
        for (int64_t item = lo; item < hi; ++item) {
            const int64_t row = item / tiles, j0 = item % tiles * width;
            const int64_t w = std::min(width, lanes_ - j0);
            const T* base = x + Odometer(kept_axes_, row).offset + j0;
            Odometer r(reduced_axes_, 0);
            if constexpr (kExtreme<K>) {
                for (int64_t j = 0; j < w; ++j) acc[j] = base[j];
            } else if constexpr (K == ReduceKind::Prod) {
                for (int64_t j = 0; j < w; ++j) acc[j] = 1;
            } else {
                for (int64_t j = 0; j < w; ++j) acc[j] = 0;
                if constexpr (compensate)
                    for (int64_t j = 0; j < w; ++j) comp[j] = 0;
            }
            int64_t q = 0;
            if constexpr (!compensate) {
                // Four input rows per pass over the lanes: the same additions in
                // the same order, a quarter of the accumulator traffic.
                for (; q + 4 <= reduced_axes_.count; q += 4) {
                    const T* __restrict p0 = base + r.offset;
                    r.next();
                    const T* __restrict p1 = base + r.offset;
                    r.next();
                    const T* __restrict p2 = base + r.offset;
                    r.next();
                    const T* __restrict p3 = base + r.offset;
                    r.next();
                    Acc* __restrict a = acc;
                    if constexpr (kExtreme<K>)
                        blocked_loop(w, [=](int64_t j) {
                            a[j] = pick<K>(pick<K>(pick<K>(pick<K>(a[j], p0[j]), p1[j]), p2[j]), p3[j]);
                        });
                    else if constexpr (K == ReduceKind::Prod)
                        blocked_loop(w, [=](int64_t j) {
                            a[j] = (((a[j] * static_cast<Acc>(p0[j])) * static_cast<Acc>(p1[j])) *
                                    static_cast<Acc>(p2[j])) *
                                   static_cast<Acc>(p3[j]);
                        });
                    else
                        blocked_loop(w, [=](int64_t j) {
                            a[j] = (((a[j] + static_cast<Acc>(p0[j])) + static_cast<Acc>(p1[j])) +
                                    static_cast<Acc>(p2[j])) +
                                   static_cast<Acc>(p3[j]);
                        });
                }
            }
            for (; q < reduced_axes_.count; ++q, r.next()) {
                const T* __restrict p = base + r.offset;
                Acc* __restrict a = acc;
                if constexpr (kExtreme<K>) {
                    blocked_loop(w, [=](int64_t j) { a[j] = pick<K>(a[j], p[j]); });
                } else if constexpr (K == ReduceKind::Prod) {
                    blocked_loop(w, [=](int64_t j) { a[j] *= static_cast<Acc>(p[j]); });
                } else if constexpr (compensate) {
                    double* __restrict c = comp;
                    blocked_loop(w, [=](int64_t j) {
                        const double v = p[j], t = a[j] + v;
                        c[j] += std::fabs(a[j]) >= std::fabs(v) ? (a[j] - t) + v : (v - t) + a[j];
                        a[j] = t;
                    });
                } else {
                    blocked_loop(w, [=](int64_t j) { a[j] += static_cast<Acc>(p[j]); });
                }
            }
            T* dst = o + row * lanes_ + j0;
            for (int64_t j = 0; j < w; ++j) {
                if constexpr (kExtreme<K>)
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
    int64_t count_ = 1;      // input elements per output
    int64_t run_ = 1;        // inner_reduced_: length of the contiguous runs
    int64_t lanes_ = 1;      // !inner_reduced_: length of the innermost (kept) axis
    int64_t blocks_ = 0;     // > 1: each output's single run is cut into this many blocks
    int64_t block_len_ = 0;  //      of this length (the last one shorter)
    Axes kept_axes_;         // kept axes except the innermost
    Axes reduced_axes_;      // reduced axes except the innermost
};

// --- softmax ---------------------------------------------------------------------

// softmax(x) = exp(x - max) / sum(exp(x - max)) along one axis, in double
// (f32 too: x - max is exact in double, so large logits lose nothing). A NaN,
// or an infinite maximum, makes its whole slice NaN, like the NumPy formula.
template <class T>
class SoftmaxKernel final : public KernelBase {
  public:
    SoftmaxKernel(const Graph& g, const Node& n) : KernelBase(g, n), log_(n.op == OpKind::LogSoftmax) {
        if (auto split = softmax_split(n, in_shapes_[0])) s_ = *split;
        else ok_ = false;
    }

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        if (!ok_) return "internal error: softmax axis does not match the input";
        if (out.numel == 0) return "";
        const T* x = static_cast<const T*>(in[0].data);
        T* o = static_cast<T*>(out.data);
        if constexpr (std::is_same_v<T, float>) {
            if (s_.inner == 1) {
                const int64_t len = s_.len;
                const bool log = log_;
                parallel_for(ctx, s_.outer, std::max<int64_t>(1, kSoftmaxGrain / len),
                             [=](int64_t lo, int64_t hi) {
                                 for (int64_t row = lo; row < hi; ++row)
                                     contiguous_slice(x + row * len, o + row * len, len, log);
                             }, cold_rows(in[0], s_.outer));
                return "";
            }
        }
        const int64_t tiles = (s_.inner + kTileWidth - 1) / kTileWidth;
        const int64_t grain =
            std::max<int64_t>(1, kReduceGrain / (s_.len * std::min(s_.inner, kTileWidth)));
        parallel_for(ctx, s_.outer * tiles, grain, [&](int64_t lo, int64_t hi) {
            for (int64_t item = lo; item < hi; ++item) {
                const int64_t row = item / tiles, j0 = item % tiles * kTileWidth;
                const int64_t off = row * s_.len * s_.inner + j0;
                slice(x + off, o + off, std::min(kTileWidth, s_.inner - j0));
            }
        });
        return "";
    }

  private:
    // One contiguous f32 slice: softmax_row_f32 (simd.h), the exponential
    // evaluated in double (x - max is exact there), and the sum in double;
    // log_softmax: x - max - log(sum), in double.
    static void contiguous_slice(const float* x, float* o, int64_t len, bool log) {
        if (!log) {
            softmax_row_f32(x, o, len);
            return;
        }
        const float m = max_f32(x, len);
        if (!std::isfinite(m)) {  // NaN inside, or an infinite max: NaN, as exp(x - m) / sum gives
            std::fill(o, o + len, std::numeric_limits<float>::quiet_NaN());
            return;
        }
        const double sum = exp_shifted_f32(x, o, len, m);  // >= 1: the max contributes exp(0)
        // (x - max) - log(sum): x - max is exact in double
        const double lse = std::log(sum), md = m;
        for (int64_t i = 0; i < len; ++i) o[i] = static_cast<float>((static_cast<double>(x[i]) - md) - lse);
    }

    // `w` neighbouring slices of length s_.len, element k of slice j at k * s_.inner + j.
    void slice(const T* x, T* o, int64_t w) const {
        double m[kTileWidth], sum[kTileWidth];
        for (int64_t j = 0; j < w; ++j) m[j] = x[j], sum[j] = 0;
        for (int64_t k = 1; k < s_.len; ++k)
            for (int64_t j = 0; j < w; ++j)
                m[j] = nan_max(m[j], static_cast<double>(x[k * s_.inner + j]));
        for (int64_t k = 0; k < s_.len; ++k)
            for (int64_t j = 0; j < w; ++j) {
                const double e = std::exp(static_cast<double>(x[k * s_.inner + j]) - m[j]);
                o[k * s_.inner + j] = static_cast<T>(e);
                sum[j] += e;
            }
        if (log_) {
            // (x - max) - log(sum); a NaN or infinite max makes the slice NaN, as in softmax.
            for (int64_t j = 0; j < w; ++j)
                sum[j] = std::isfinite(m[j]) ? std::log(sum[j]) : std::numeric_limits<double>::quiet_NaN();
            for (int64_t k = 0; k < s_.len; ++k)
                for (int64_t j = 0; j < w; ++j)
                    o[k * s_.inner + j] =
                        static_cast<T>((static_cast<double>(x[k * s_.inner + j]) - m[j]) - sum[j]);
            return;
        }
        for (int64_t k = 0; k < s_.len; ++k)
            for (int64_t j = 0; j < w; ++j)
                o[k * s_.inner + j] = static_cast<T>(o[k * s_.inner + j] / sum[j]);
    }

    bool log_ = false;
    bool ok_ = true;
    AxisSplit s_;
};

template <ReduceKind K>
std::unique_ptr<Kernel> make_reduce_typed(const Graph& g, const Node& n) {
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
        GR_STORAGE_DTYPE_CASES:  // widened before any kernel (engine/plan/storage_types.h)
            break;
    }
    return make_error_kernel(std::string("internal error: no CPU kernel for ") + op_name(n.op) +
                             " on " + dtype_name(n.dtype));
}

}  // namespace

std::unique_ptr<Kernel> make_reduce_kernel(const Graph& g, const Node& n) {
    if (n.inputs.size() == 1) {
        if (n.op == OpKind::ReduceSum) return make_reduce_typed<ReduceKind::Sum>(g, n);
        if (n.op == OpKind::ReduceMax) return make_reduce_typed<ReduceKind::Max>(g, n);
        if (n.op == OpKind::ReduceMin) return make_reduce_typed<ReduceKind::Min>(g, n);
        if (n.op == OpKind::ReduceProd) return make_reduce_typed<ReduceKind::Prod>(g, n);
        if (n.op == OpKind::ReduceMean) return make_reduce_typed<ReduceKind::Mean>(g, n);
    }
    return make_error_kernel(std::string("internal error: no CPU kernel for ") + op_name(n.op));
}

std::unique_ptr<Kernel> make_softmax_kernel(const Graph& g, const Node& n) {
    if (n.inputs.size() == 1) {
        if (n.dtype == DType::F32) return std::make_unique<SoftmaxKernel<float>>(g, n);
        if (n.dtype == DType::F64) return std::make_unique<SoftmaxKernel<double>>(g, n);
    }
    return make_error_kernel(std::string("internal error: no CPU kernel for softmax on ") +
                             dtype_name(n.dtype));
}

}  // namespace graphrun::kernels
