// argmax and argmin along one axis (ONNX ArgMax/ArgMin): the index of the
// first extreme element, or the last with select_last_index; NaN counts as
// the extreme (numpy.argmax), as on the CPU (engine/kernels/cpu/arg_reduce.cpp).
// The input is [outer, len, inner] around the axis. Two kernels, as in
// reduce.cu:
//  - block: when the axis is innermost (inner == 1) and long, a block of 256
//    threads reads consecutive k (coalesced) and combines them in a
//    shared-memory tree;
//  - columns: otherwise one thread per (outer, inner) column walks the axis,
//    neighbouring threads reading neighbouring addresses.
// With few columns and a long axis each column is split into `splits` chunks:
// the best (value, index) of each chunk goes to scratch memory and a second
// kernel combines them. Every step keeps the first element of one strict
// total order on (value, index) pairs (`before`), whose first element over
// the whole axis is the CPU's sequential answer; so the result does not
// depend on how the axis is split or in which order the tree combines.
#include <algorithm>
#include <type_traits>

#include "engine/kernels/common/kernel_common.h"
#include "gpu/kernels/arg_reduce.cuh"

namespace graphrun::gpu {

namespace {

constexpr int kArgBlock = kReduceBlock;  // threads of the block kernel

// Whether (v, i) comes before (b, j), i != j, in the order whose first
// element is the CPU's answer: any NaN before any number, NaNs by index;
// numbers by value (greatest first for argmax, least for argmin), equal ones
// (== : -0.0 and 0.0 are equal) by index. "By index" is ascending, or
// descending with select_last_index. Lexicographic on (NaN or not, value,
// index), so a strict total order: the first element of any set is found
// by combining its parts in any grouping and order.
// For i > j it is the CPU's replaces(v, b) case by case, so the CPU's walk
// along the axis keeps the first element of this order too.
template <class T, bool Max>
__device__ inline bool before(T v, int64_t i, T b, int64_t j, bool last) {
    if constexpr (std::is_floating_point_v<T>) {
        const bool vn = v != v, bn = b != b;
        if (vn || bn) return vn != bn ? vn : (last ? i > j : i < j);
    }
    if (v != b) return Max ? v > b : v < b;
    return last ? i > j : i < j;
}

// Folds the pair (v, i) into the best so far (b, j); an index < 0 marks an
// empty pair (a thread or chunk that read nothing), which every pair beats.
template <class T, bool Max>
__device__ inline void fold(T& b, int64_t& j, T v, int64_t i, bool last) {
    if (i >= 0 && (j < 0 || before<T, Max>(v, i, b, j, last))) b = v, j = i;
}

// Where a kernel puts its result: the index into out when splits == 1, else
// the chunk's best pair into part_val/part_idx[s * columns + c].
template <class T>
struct ArgOut {
    int64_t* out;
    T* part_val;
    int64_t* part_idx;
};

template <class T>
__device__ inline void put(const ArgOut<T>& o, int64_t columns, int64_t c, int64_t s, T v,
                           int64_t i) {
    if (o.part_idx) {
        o.part_val[s * columns + c] = v;
        o.part_idx[s * columns + c] = i;
    } else {
        o.out[c] = i;
    }
}

// Work item t = (chunk s, column c), c fastest: walks k in [s * chunk,
// min(len, (s + 1) * chunk)) of column c.
template <class T, bool Max>
__global__ void arg_reduce_columns(const T* __restrict__ x, const ArgOut<T> o, int64_t outer,
                                   int64_t len, int64_t inner, int64_t chunk, int64_t splits,
                                   bool last) {
    const int64_t columns = outer * inner, items = columns * splits;
    for (int64_t t = thread_index(); t < items; t += thread_count()) {
        const int64_t c = t % columns, s = t / columns;
        const int64_t b = c / inner, jn = c - b * inner;
        const T* xc = x + b * len * inner + jn;
        const int64_t lo = s * chunk, hi = min(len, lo + chunk);
        T best = xc[lo * inner];
        int64_t idx = lo;
        for (int64_t k = lo + 1; k < hi; ++k) {
            const T v = xc[k * inner];
            if (before<T, Max>(v, k, best, idx, last)) best = v, idx = k;
        }
        put(o, columns, c, s, best, idx);
    }
}

// As arg_reduce_columns, one block per work item, for inner == 1.
template <class T, bool Max>
__global__ void arg_reduce_block(const T* __restrict__ x, const ArgOut<T> o, int64_t columns,
                                 int64_t len, int64_t chunk, int64_t splits, bool last) {
    __shared__ T val[kArgBlock];
    __shared__ int64_t pos[kArgBlock];
    const int tid = static_cast<int>(threadIdx.x);
    const int64_t items = columns * splits;
    for (int64_t t = blockIdx.x; t < items; t += gridDim.x) {
        const int64_t c = t % columns, s = t / columns;
        const T* xc = x + c * len;
        const int64_t lo = s * chunk, hi = min(len, lo + chunk);
        T best{};
        int64_t idx = -1;  // empty until the thread reads an element
        for (int64_t k = lo + tid; k < hi; k += kArgBlock) fold<T, Max>(best, idx, xc[k], k, last);
        val[tid] = best;
        pos[tid] = idx;
        __syncthreads();
        for (int w = kArgBlock / 2; w > 0; w >>= 1) {
            if (tid < w) {
                T b = val[tid];
                int64_t j = pos[tid];
                fold<T, Max>(b, j, val[tid + w], pos[tid + w], last);
                val[tid] = b;
                pos[tid] = j;
            }
            __syncthreads();
        }
        if (tid == 0) put(o, columns, c, s, val[0], pos[0]);
        __syncthreads();  // val[0] is read before the next item overwrites val
    }
}

// Combines the chunks of each column (each non-empty: splits is derived from
// the chunk length).
template <class T, bool Max>
__global__ void arg_reduce_finish(const T* __restrict__ part_val,
                                  const int64_t* __restrict__ part_idx, int64_t* __restrict__ out,
                                  int64_t columns, int64_t splits, bool last) {
    for (int64_t c = thread_index(); c < columns; c += thread_count()) {
        T best = part_val[c];
        int64_t idx = part_idx[c];
        for (int64_t s = 1; s < splits; ++s)
            fold<T, Max>(best, idx, part_val[s * columns + c], part_idx[s * columns + c], last);
        out[c] = idx;
    }
}

template <class T, bool Max>
class ArgReduceKernel final : public GpuKernel {
  public:
    ArgReduceKernel(const Graph& g, const Node& n, GpuContext& ctx)
        : GpuKernel(g, n, ctx), last_(kernels::bool_attr(n, "select_last_index", false)) {
        const Shape& in = in_shapes_[0];
        const int64_t axis = kernels::normalize_axis(kernels::int_attr(n, "axis", 0), in.size());
        ok_ = axis >= 0;
        for (size_t d = 0; d < in.size(); ++d) {
            const auto k = static_cast<int64_t>(d);
            if (k < axis) outer_ *= in[d];
            else if (k == axis) len_ = in[d];
            else inner_ *= in[d];
        }
        ok_ = ok_ && len_ > 0;
    }

  protected:
    void compute(const TensorRef* in, TensorRef& out) override {
        if (!ok_) throw std::runtime_error("internal error: argmax/argmin axis does not match the input");
        if (out.numel == 0) return;
        const int64_t columns = outer_ * inner_;
        const bool block = inner_ == 1 && len_ >= kArgBlock;
        const auto [chunk, splits] = split_reduction(columns, len_, block);

        // Indices first: the values after them stay aligned for any T.
        const uint64_t parts = splits > 1 ? static_cast<uint64_t>(columns * splits) : 0;
        Scratch scratch(ctx_, parts * (sizeof(int64_t) + sizeof(T)), op_name(op_));
        auto* part_idx = static_cast<int64_t*>(scratch.get());
        const ArgOut<T> o{static_cast<int64_t*>(out.data),
                          parts ? reinterpret_cast<T*>(part_idx + parts) : nullptr,
                          parts ? part_idx : nullptr};
        const T* x = static_cast<const T*>(in[0].data);
        const int64_t items = columns * splits;
        if (block) {
            const unsigned blocks = static_cast<unsigned>(std::min(items, kMaxGrid));
            launch<arg_reduce_block<T, Max>>(ctx_, blocks, kArgBlock, x, o, columns, len_, chunk,
                                             splits, last_);
        } else {
            launch<arg_reduce_columns<T, Max>>(ctx_, grid_for(items), kBlock, x, o, outer_, len_,
                                               inner_, chunk, splits, last_);
        }
        if (parts)
            launch<arg_reduce_finish<T, Max>>(ctx_, grid_for(columns), kBlock, o.part_val,
                                              o.part_idx, o.out, columns, splits, last_);
    }

  private:
    bool ok_ = true, last_ = false;
    int64_t outer_ = 1, len_ = 1, inner_ = 1;
};

template <bool Max>
std::unique_ptr<Kernel> make_arg_reduce_typed(const Graph& g, const Node& n, GpuContext& ctx) {
    switch (g.node(n.inputs[0].id).dtype) {
        case DType::F32: return std::make_unique<ArgReduceKernel<float, Max>>(g, n, ctx);
        case DType::F64: return std::make_unique<ArgReduceKernel<double, Max>>(g, n, ctx);
        case DType::I32: return std::make_unique<ArgReduceKernel<int32_t, Max>>(g, n, ctx);
        case DType::I64: return std::make_unique<ArgReduceKernel<int64_t, Max>>(g, n, ctx);
        case DType::Bool:
        GR_STORAGE_DTYPE_CASES:  // widened before any kernel (engine/plan/storage_types.h)
            break;
    }
    return nullptr;
}

}  // namespace

std::unique_ptr<Kernel> make_arg_reduce_kernel(const Graph& g, const Node& n, GpuContext& ctx) {
    std::unique_ptr<Kernel> k;
    if (n.inputs.size() == 1) {
        if (n.op == OpKind::Argmax) k = make_arg_reduce_typed<true>(g, n, ctx);
        if (n.op == OpKind::Argmin) k = make_arg_reduce_typed<false>(g, n, ctx);
    }
    if (k) return k;
    return kernels::make_error_kernel(std::string("internal error: no GPU kernel for ") +
                                      op_name(n.op));
}

}  // namespace graphrun::gpu
