// The index ops (family Index), ONNX's semantics:
//   top_k             the k largest (or smallest) along an axis, largest first
//                     (smallest first), ties to the lower index, NaN above
//                     every number (PyTorch's and NumPy's sort order); as
//                     values or as i64 indices (indices=true). Always
//                     sorted (sorted=false allows any order: this one).
//   scatter_elements  a copy of data with updates[p] written at data's element
//                     p with coordinate `axis` replaced by indices[p];
//   scatter_nd        a copy of data with the slices updates[j, ...] written at
//                     data[indices[j, 0], ..., indices[j, m-1], ...];
//   gather_elements   data read at element p with coordinate `axis` replaced by
//                     indices[p] (the result has the indices' shape).
// The scatters check every index before writing anything; an index outside
// [-len, len) stops the run naming its entry (negative ones count from the
// end). Entries are applied in order, so with reduction "none" a repeated
// index keeps the last update (ONNX leaves that undefined); "add", "mul",
// "max" and "min" combine each update with what is there. Integer sums and
// products wrap, as NumPy's do.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/base/limits.h"
#include "engine/kernels/common/kernel_common.h"
#include "engine/kernels/cpu/kernel_families.h"
#include "engine/kernels/cpu/parallel.h"

namespace graphrun::kernels {

namespace {

// x as [outer, len, inner] around `axis`.
struct AxisSplit {
    int64_t outer = 1, len = 1, inner = 1;
};

AxisSplit split_at(const Shape& s, int64_t axis) {
    const auto r = static_cast<int64_t>(s.size());
    axis = normalize_axis(axis, s.size());  // validated: in range
    AxisSplit p;
    for (int64_t d = 0; d < r; ++d) {
        const int64_t v = s[static_cast<size_t>(d)];
        if (d < axis)
            p.outer *= v;
        else if (d == axis)
            p.len = v;
        else
            p.inner *= v;
    }
    return p;
}

std::string index_error(const char* op, int64_t value, int64_t entry, int64_t len, const std::string& what) {
    return std::string(op) + ": index " + std::to_string(value) + " (entry " + std::to_string(entry) +
           " of the indices) is out of range for " + what + " of length " + std::to_string(len);
}

// --- top_k -----------------------------------------------------------------------

template <class T>
bool is_nan(T v) {
    if constexpr (std::is_floating_point_v<T>)
        return std::isnan(v);
    else
        return false;
}

// a comes strictly before b in descending order, NaN first.
template <class T>
bool above(T a, T b) {
    if (is_nan(a)) return !is_nan(b);
    if (is_nan(b)) return false;
    return a > b;
}

// Row r of x (as [outer, len, inner]): its k first indices in top_k's order
// (sorted in idx, the axis' length of scratch), written as values or indices.
template <class T>
void top_k_row(const T* x, const AxisSplit& p, int64_t r, int64_t k, bool largest, bool indices, int64_t* idx,
               void* out) {
    const int64_t o = r / p.inner, i = r - o * p.inner;
    const T* row = x + o * p.len * p.inner + i;
    const int64_t s = p.inner;
    for (int64_t j = 0; j < p.len; ++j) idx[j] = j;
    auto before = [&](int64_t a, int64_t b) {
        const T va = row[a * s], vb = row[b * s];
        if (largest) {
            if (above(va, vb)) return true;
            if (above(vb, va)) return false;
        } else {  // ascending, NaN last
            if (above(vb, va)) return true;
            if (above(va, vb)) return false;
        }
        return a < b;  // ties (and NaN with NaN): the lower index first
    };
    std::partial_sort(idx, idx + k, idx + p.len, before);
    const int64_t base = o * k * p.inner + i;
    if (indices) {
        auto* dst = static_cast<int64_t*>(out);
        for (int64_t j = 0; j < k; ++j) dst[base + j * s] = idx[j];
    } else {
        auto* dst = static_cast<T*>(out);
        for (int64_t j = 0; j < k; ++j) dst[base + j * s] = row[idx[j] * s];
    }
}

class TopKKernel final : public KernelBase {
  public:
    TopKKernel(const Graph& g, const Node& n) : KernelBase(g, n) {
        axis_ = n.find_attr("axis") ? n.find_attr("axis")->value.i : -1;
        k_ = n.find_attr("k") ? n.find_attr("k")->value.i : 0;
        if (const NamedAttr* a = n.find_attr("largest")) largest_ = a->value.b;
        if (const NamedAttr* a = n.find_attr("indices")) indices_ = a->value.b;
    }

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        if (in_shapes_.size() > 1) {  // K fed now: the k the output's shape was built for
            const int64_t fed = in[1].dtype == DType::I32 ? *static_cast<const int32_t*>(in[1].data)
                                                          : *static_cast<const int64_t*>(in[1].data);
            if (fed != k_)
                return "top_k: K is " + std::to_string(fed) + ", but the graph was built for k=" +
                       std::to_string(k_) + " (its output's shape " + shape_string(out_shape_) + ")";
        }
        if (out.numel == 0) return "";
        const AxisSplit p = split_at(in_shapes_.at(0), axis_);
        const int64_t rows = p.outer * p.inner;
        // One index buffer of the axis' length per worker, counted as
        // workspace; one buffer, on one thread, when the limit has no room for more.
        int64_t parts = std::max<int64_t>(1, std::min<int64_t>(rows, ctx.threads));
        const uint64_t row_bytes = static_cast<uint64_t>(p.len) * sizeof(int64_t);
        uint64_t bytes = static_cast<uint64_t>(parts) * row_bytes;
        void* scratch = ctx.scratch ? ctx.scratch->allocate(bytes) : nullptr;
        if (!scratch && ctx.scratch && parts > 1) {
            parts = 1;
            bytes = row_bytes;
            scratch = ctx.scratch->allocate(bytes);
        }
        if (!scratch)
            return "top_k: no memory for its " + std::to_string(bytes) + "-byte index workspace" +
                   (ctx.scratch ? " under the memory limit" : "");
        auto* order = static_cast<int64_t*>(scratch);
        std::string problem = dispatch_dtype(in[0].dtype, [&](auto tag) -> std::string {
            using T = decltype(tag);
            const T* x = static_cast<const T*>(in[0].data);
            parallel_for(ctx, parts, 1, [&](int64_t b, int64_t e) {
                for (int64_t part = b; part < e; ++part) {
                    int64_t* idx = order + part * p.len;
                    for (int64_t r = rows * part / parts; r < rows * (part + 1) / parts; ++r)
                        top_k_row(x, p, r, k_, largest_, indices_, idx, out.data);
                }
            });
            return "";
        });
        ctx.scratch->release(scratch, bytes);
        return problem;
    }

  private:
    int64_t axis_ = -1, k_ = 0;
    bool largest_ = true, indices_ = false;
};

// --- scatter_elements, scatter_nd --------------------------------------------------

enum class Reduction { None, Add, Mul, Max, Min };

Reduction reduction_of(const Node& n) {
    const NamedAttr* a = n.find_attr("reduction");
    if (!a || a->value.s == "none") return Reduction::None;
    if (a->value.s == "add") return Reduction::Add;
    if (a->value.s == "mul") return Reduction::Mul;
    if (a->value.s == "max") return Reduction::Max;
    return Reduction::Min;
}

// dst = dst (op) v; integers wrap (done unsigned: no signed overflow).
template <class T>
void combine(Reduction r, T& dst, T v) {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, uint8_t>) {
        using U = std::make_unsigned_t<T>;
        switch (r) {
            case Reduction::None: dst = v; return;
            case Reduction::Add: dst = static_cast<T>(static_cast<U>(static_cast<U>(dst) + static_cast<U>(v))); return;
            case Reduction::Mul: dst = static_cast<T>(static_cast<U>(static_cast<U>(dst) * static_cast<U>(v))); return;
            case Reduction::Max: dst = std::max(dst, v); return;
            case Reduction::Min: dst = std::min(dst, v); return;
        }
    } else {
        // floats (NaN propagates through max and min, as NumPy's maximum), and
        // bool, which validation allows only with "none".
        switch (r) {
            case Reduction::None: dst = v; return;
            case Reduction::Add: dst = static_cast<T>(dst + v); return;
            case Reduction::Mul: dst = static_cast<T>(dst * v); return;
            case Reduction::Max: dst = (is_nan(dst) || is_nan(v)) ? (is_nan(dst) ? dst : v) : std::max(dst, v); return;
            case Reduction::Min: dst = (is_nan(dst) || is_nan(v)) ? (is_nan(dst) ? dst : v) : std::min(dst, v); return;
        }
    }
}

// Index j of an indices tensor (i32 or i64).
int64_t index_at(const TensorRef& t, int64_t j) {
    if (t.dtype == DType::I32) return static_cast<const int32_t*>(t.data)[j];
    return static_cast<const int64_t*>(t.data)[j];
}

class ScatterKernel final : public KernelBase {
  public:
    ScatterKernel(const Graph& g, const Node& n)
        : KernelBase(g, n), nd_(n.op == OpKind::ScatterND), reduction_(reduction_of(n)) {
        // What every run uses, from the shapes (validation checked them).
        const Shape& ds = in_shapes_.at(0);
        const Shape& is = in_shapes_.at(1);
        const auto rank = static_cast<int64_t>(ds.size());
        if (nd_) {
            const auto m = static_cast<size_t>(is.back());
            for (size_t d = m; d < ds.size(); ++d) slice_ *= ds[d];
            for (size_t d = 0; d + 1 < is.size(); ++d) count_ *= is[d];
        } else {
            const int64_t axis = n.find_attr("axis") ? n.find_attr("axis")->value.i : 0;
            axis_ = axis < 0 ? axis + rank : axis;
            stride_.assign(static_cast<size_t>(rank), 1);
            for (int64_t d = rank - 1; d > 0; --d)
                stride_[static_cast<size_t>(d - 1)] = stride_[static_cast<size_t>(d)] * ds[static_cast<size_t>(d)];
            for (int64_t d : is) count_ *= d;
        }
    }

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        // Every position first, into workspace (nothing is written when one
        // is out of range): 8 bytes an update slice.
        const uint64_t bytes = static_cast<uint64_t>(count_) * sizeof(int64_t);
        void* scratch = bytes != 0 && ctx.scratch ? ctx.scratch->allocate(bytes) : nullptr;
        if (bytes != 0 && !scratch)
            return std::string(nd_ ? "scatter_nd" : "scatter_elements") + ": no memory for its " +
                   std::to_string(bytes) + "-byte position workspace" + (ctx.scratch ? " under the memory limit" : "");
        auto* target = static_cast<int64_t*>(scratch);
        std::string problem = nd_ ? nd_targets(in[1], target) : element_targets(in[1], target);
        if (problem.empty() && out.numel != 0) {
            const auto size = dtype_size(out.dtype);
            std::memcpy(out.data, in[0].data, static_cast<size_t>(out.numel) * size);
            problem = dispatch_dtype(out.dtype, [&](auto tag) -> std::string {
                using T = decltype(tag);
                T* dst = static_cast<T*>(out.data);
                const T* upd = static_cast<const T*>(in[2].data);
                for (int64_t j = 0; j < count_; ++j)
                    for (int64_t s = 0; s < slice_; ++s)
                        combine(reduction_, dst[target[j] + s], upd[j * slice_ + s]);
                return "";
            });
        }
        if (scratch) ctx.scratch->release(scratch, bytes);
        return problem;
    }

  private:
    // scatter_elements: the flat position in data of each entry of the indices.
    std::string element_targets(const TensorRef& indices, int64_t* target) const {
        const Shape& ds = in_shapes_.at(0);
        const Shape& is = in_shapes_.at(1);
        const auto rank = static_cast<int64_t>(ds.size());
        const int64_t a = axis_;
        const int64_t len = ds[static_cast<size_t>(a)];
        if (rank > kMaxRank) return "internal error: scatter_elements of rank " + std::to_string(rank);
        int64_t coord[kMaxRank] = {};  // the indices' coordinate of entry j
        for (int64_t j = 0; j < count_; ++j) {
            int64_t v = index_at(indices, j);
            if (v < -len || v >= len)
                return index_error("scatter_elements", v, j, len,
                                   "axis " + std::to_string(a) + " of the data " + shape_string(ds));
            if (v < 0) v += len;
            int64_t pos = 0;
            for (int64_t d = 0; d < rank; ++d)
                pos += (d == a ? v : coord[static_cast<size_t>(d)]) * stride_[static_cast<size_t>(d)];
            target[j] = pos;
            for (int64_t d = rank - 1; d >= 0; --d) {  // the next coordinate of the indices
                if (++coord[static_cast<size_t>(d)] < is[static_cast<size_t>(d)]) break;
                coord[static_cast<size_t>(d)] = 0;
            }
        }
        return "";
    }

    // scatter_nd: the flat position in data of each indexed slice.
    std::string nd_targets(const TensorRef& indices, int64_t* target) const {
        const Shape& ds = in_shapes_.at(0);
        const auto m = static_cast<size_t>(in_shapes_.at(1).back());
        for (int64_t j = 0; j < count_; ++j) {
            int64_t pos = 0;  // empty index tuples (m = 0): each update is the whole data
            for (size_t d = 0; d < m; ++d) {
                const int64_t len = ds[d];
                const int64_t at = j * static_cast<int64_t>(m) + static_cast<int64_t>(d);
                int64_t v = index_at(indices, at);
                if (v < -len || v >= len)
                    return index_error("scatter_nd", v, at, len,
                                       "axis " + std::to_string(d) + " of the data " + shape_string(ds));
                if (v < 0) v += len;
                pos = pos * len + v;
            }
            target[j] = pos * slice_;
        }
        return "";
    }

    bool nd_;
    Reduction reduction_;
    int64_t axis_ = 0;    // scatter_elements: the axis, normalised
    int64_t slice_ = 1;   // elements an update writes at each position (scatter_nd: the data's trailing dims)
    int64_t count_ = 1;   // positions: the indices' elements, or scatter_nd's index tuples
    std::vector<int64_t> stride_;  // scatter_elements: the data's strides, in elements
};

// --- gather_elements ----------------------------------------------------------------

// out[p] = data[p with coordinate `axis` replaced by indices[p]]; an index
// outside [-len, len) stops the run naming its entry.
class GatherElementsKernel final : public KernelBase {
  public:
    GatherElementsKernel(const Graph& g, const Node& n) : KernelBase(g, n) {
        const Shape& ds = in_shapes_.at(0);
        const auto rank = static_cast<int64_t>(ds.size());
        const int64_t axis = n.find_attr("axis") ? n.find_attr("axis")->value.i : 0;
        axis_ = axis < 0 ? axis + rank : axis;
        stride_.assign(static_cast<size_t>(rank), 1);
        for (int64_t d = rank - 1; d > 0; --d)
            stride_[static_cast<size_t>(d - 1)] = stride_[static_cast<size_t>(d)] * ds[static_cast<size_t>(d)];
    }

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext&) override {
        const Shape& ds = in_shapes_.at(0);
        const Shape& is = in_shapes_.at(1);
        const auto rank = static_cast<int64_t>(ds.size());
        if (rank > kMaxRank) return "internal error: gather_elements of rank " + std::to_string(rank);
        const int64_t a = axis_;
        const int64_t len = ds[static_cast<size_t>(a)];
        const int64_t step = stride_[static_cast<size_t>(a)];
        return dispatch_dtype(out.dtype, [&](auto tag) -> std::string {
            using T = decltype(tag);
            const T* src = static_cast<const T*>(in[0].data);
            T* dst = static_cast<T*>(out.data);
            int64_t coord[kMaxRank] = {};  // the indices' coordinate of entry j
            int64_t base = 0;              // its offset in data along the other axes
            for (int64_t j = 0; j < out.numel; ++j) {
                int64_t v = index_at(in[1], j);
                if (v < -len || v >= len)
                    return index_error("gather_elements", v, j, len,
                                       "axis " + std::to_string(a) + " of the data " + shape_string(ds));
                if (v < 0) v += len;
                dst[j] = src[base + v * step];
                for (int64_t d = rank - 1; d >= 0; --d) {  // the next coordinate of the indices
                    const auto k = static_cast<size_t>(d);
                    if (++coord[k] < is[k]) {
                        if (d != a) base += stride_[k];
                        break;
                    }
                    if (d != a) base -= (coord[k] - 1) * stride_[k];
                    coord[k] = 0;
                }
            }
            return "";
        });
    }

  private:
    int64_t axis_ = 0;
    std::vector<int64_t> stride_;  // the data's strides, in elements
};

}  // namespace

std::unique_ptr<Kernel> make_index_kernel(const Graph& g, const Node& n) {
    switch (n.op) {
        case OpKind::TopK: return std::make_unique<TopKKernel>(g, n);
        case OpKind::ScatterElements:
        case OpKind::ScatterND: return std::make_unique<ScatterKernel>(g, n);
        case OpKind::GatherElements: return std::make_unique<GatherElementsKernel>(g, n);
        default: return make_error_kernel(std::string("internal error: ") + op_name(n.op) + " is not an index op");
    }
}

}  // namespace graphrun::kernels
