// What the kernel families share: reading a validated node's attributes, the
// run-time checks of a kernel's buffers (NodeKernel, the base of the CPU's and
// the GPU's kernels), the host-side plans both devices' kernels walk
// (broadcast, transpose, reduce, softmax, matmul, concat), and for the CPU
// dtype dispatch and the blocked loop that lets the compiler vectorize at -O2
// on the x86-64 baseline.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/small_vector.h"
#include "engine/ir/dtype.h"
#include "engine/ir/graph.h"
#include "engine/kernels/common/kernel.h"
#include "engine/ir/ops.h"

namespace graphrun::kernels {

// Odometers live on the stack; validation caps ranks at 32 (kMaxRank).
constexpr int kMaxDims = 64;

// A scalar attribute as written: a number, a bool, or (JSON) "nan"/"inf"/"-inf".
struct ScalarAttr {
    bool is_bool = false;
    bool b = false;
    bool is_int = false;
    int64_t i = 0;
    double f = 0;  // always set

    double as_double() const { return is_bool ? (b ? 1.0 : 0.0) : f; }
    // Integral in range where validation checked it; otherwise (a range of
    // f32 whose start is 1e30 still builds its integer start) saturated, NaN 0,
    // never the undefined behaviour of an out-of-range cast.
    int64_t as_int() const {
        if (is_bool) return b ? 1 : 0;
        if (is_int) return i;
        if (!(f == f)) return 0;
        if (f >= 9223372036854775807.0) return INT64_MAX;
        if (f <= -9223372036854775808.0) return INT64_MIN;
        return static_cast<int64_t>(f);
    }
};

std::optional<ScalarAttr> scalar_attr(const Node& n, std::string_view name);
int64_t int_attr(const Node& n, std::string_view name, int64_t def);
bool bool_attr(const Node& n, std::string_view name, bool def);
// An IntList attribute (a single integer counts as a one-entry list); nullopt when absent.
std::optional<std::vector<int64_t>> ints_attr(const Node& n, std::string_view name);
std::optional<DType> dtype_attr(const Node& n, std::string_view name);

// The broadcast of operands a and b onto `out` (NumPy's rules), innermost
// dimension first, with dimensions of size 1 dropped and neighbours that stay
// contiguous in all three merged: equal shapes give one dimension, a scalar
// operand stride 0. Strides are in elements of a and b; the output is dense.
// Shared by the CPU's and the GPU's elementwise kernels.
struct BroadcastDim {
    int64_t size, sa, sb;
};
std::vector<BroadcastDim> broadcast_dims(const Shape& a, const Shape& b, const Shape& out);

// The host-side plans shared by the CPU's and the GPU's kernels. Each gives
// the dimensions a kernel walks over a contiguous input, outermost first,
// with size-1 axes dropped and neighbours merged where one stride serves both.
struct StridedDim {
    int64_t size, stride;  // stride in elements of the input
};
// transpose: the output's axes with their input strides; nullopt when the
// node's perm (default: reversed) is not a permutation of the input's axes.
std::optional<std::vector<StridedDim>> transpose_dims(const Node& n, const Shape& in);

struct ReduceDim {
    int64_t size, stride;
    bool reduced;
};
struct ReduceDims {
    std::vector<ReduceDim> dims;  // neighbours of one kind merged
    int64_t count = 1;            // input elements per output
};
// reduce_*: the input's axes, reduced or kept per the node's axes (default:
// all); nullopt for an axis out of range.
std::optional<ReduceDims> reduce_dims(const Node& n, const Shape& in);

// softmax: the input as [outer, len, inner] around the node's axis (default
// -1); nullopt for an axis out of range.
struct AxisSplit {
    int64_t outer = 1, len = 1, inner = 1;
};
std::optional<AxisSplit> softmax_split(const Node& n, const Shape& in);

// matmul (numpy.matmul): a 1-D a is promoted to a row, a 1-D b to a column;
// one product is m x k by k x n of row-major matrices (lda, ldb as gemm
// takes them, transposed per the node's transpose_a/transpose_b); the batch
// dims broadcast right-aligned and are merged as broadcast_dims merges them,
// with strides counted in matrices. nullopt when the shapes do not match
// each other or the output's element count.
struct MatmulPlan {
    bool ta = false, tb = false;
    int64_t m = 0, n = 0, k = 0, lda = 1, ldb = 1;
    int64_t mat_a = 0, mat_b = 0;  // elements per matrix of a and of b
    int64_t batch = 1;             // matrices in the output
    std::vector<BroadcastDim> batch_dims;
};
std::optional<MatmulPlan> matmul_plan(const Node& n, const Shape& a, const Shape& b,
                                      int64_t out_numel);

// concat: the output viewed around the node's axis as `outer` rows of `pitch`
// elements, input k filling a band of widths[k] elements of each row, after
// the bands of the inputs before it. nullopt when the inputs do not make up
// the output.
struct ConcatSplit {
    int64_t outer = 1, pitch = 0;
    std::vector<int64_t> widths;
};
// The shapes of a node's inputs as a kernel keeps them: references to the
// graph's own (the graph outlives every kernel made from it), so that a
// million kernels copy no shape. Indexes and iterates as a vector of shapes.
class InputShapes {
  public:
    void push_back(const Shape& s) { p_.push_back(&s); }
    void reserve(size_t n) { p_.reserve(n); }
    size_t size() const { return p_.size(); }
    bool empty() const { return p_.empty(); }
    const Shape& operator[](size_t i) const { return *p_[i]; }
    const Shape& at(size_t i) const {
        if (i >= p_.size()) throw std::out_of_range("InputShapes::at");
        return *p_[i];
    }
    const Shape& front() const { return *p_.front(); }
    const Shape& back() const { return *p_.back(); }
    struct Iterator {
        const Shape* const* p;
        const Shape& operator*() const { return **p; }
        Iterator& operator++() {
            ++p;
            return *this;
        }
        bool operator!=(const Iterator& o) const { return p != o.p; }
        bool operator==(const Iterator& o) const { return p == o.p; }
    };
    Iterator begin() const { return Iterator{p_.data()}; }
    Iterator end() const { return Iterator{p_.data() + p_.size()}; }

  private:
    SmallVector<const Shape*, 3> p_;
};

std::optional<ConcatSplit> concat_split(const Node& n, const Shape& out, const InputShapes& in);

// `axis` in [-rank, rank) made non-negative, or -1 when out of range.
int64_t normalize_axis(int64_t axis, size_t rank);
int64_t numel_of(const Shape& s);  // 0 for an overflowing shape (validation refuses those)

// What every kernel, CPU or GPU, records of its node: the dtypes and sizes of
// its inputs and output, to check the executor's buffers against before
// touching memory. The base of the CPU's KernelBase and the GPU's GpuKernel.
class NodeKernel : public Kernel {
  protected:
    NodeKernel(const Graph& g, const Node& n);
    // As many inputs as the node has, each of its validated dtype and element
    // count, data non-null when numel > 0; likewise the output: "" or
    // "internal error: <op> <what>: ...".
    std::string check(const TensorRef* inputs, size_t n_inputs, const TensorRef& out,
                      const char* what) const;

    OpKind op_;
    SmallVector<DType, 3> in_dtypes_;
    InputShapes in_shapes_;  // the graph's shapes, referred to
    SmallVector<int64_t, 3> in_numel_;
    DType out_dtype_;
    const Shape& out_shape_;  // the graph's
    int64_t out_numel_;
};

// The base of every CPU kernel: checks the executor's buffers before
// compute() first touches memory. run() never throws: an escaping exception
// (only std::bad_alloc could) becomes an error message.
class KernelBase : public NodeKernel {
  public:
    KernelBase(const Graph& g, const Node& n) : NodeKernel(g, n) {}
    std::string run(const TensorRef* inputs, size_t n_inputs, TensorRef& out,
                    const KernelContext& ctx) final;

  protected:
    // Inputs and output are checked.
    virtual std::string compute(const TensorRef* inputs, TensorRef& out,
                                const KernelContext& ctx) = 0;

  private:
    // The executor hands a kernel buffers of the same dtypes and sizes on
    // every run (they come from the same validated node), so the check runs
    // on the first: later runs skip the walk over the inputs' records.
    bool checked_ = false;
};

// A kernel that only reports an error when run (unsupported op or dtype).
std::unique_ptr<Kernel> make_error_kernel(std::string message);

// Calls f(tag) with tag a value of the C++ type for t (bool as uint8_t). For
// the compute types only: a storage type reaches no kernel that dispatches so
// (make_family_kernel refuses it; cast handles it apart).
template <class F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
    switch (t) {
        case DType::F32:
            return f(float{});
        case DType::F64:
            return f(double{});
        case DType::I32:
            return f(int32_t{});
        case DType::I64:
            return f(int64_t{});
        case DType::Bool:
        GR_STORAGE_DTYPE_CASES:
            break;
    }
    return f(uint8_t{});
}

// The next loop's iterations touch no memory another writes (GCC's ivdep),
// for loops whose pointers lost __restrict (through a lambda's capture) and
// that GCC's -O2 cost model, which adds no run-time alias checks, would
// otherwise leave scalar. Nothing for clang: its vectorizer checks aliasing
// at run time, and its assume_safety hint is an error (-Werror=pass-failed)
// wherever it cannot vectorize, as in the fuzz build.
#if defined(__GNUC__) && !defined(__clang__)
#define GRAPHRUN_NO_ALIAS_LOOP _Pragma("GCC ivdep")
#else
#define GRAPHRUN_NO_ALIAS_LOOP
#endif

// for (i = 0; i < n; ++i) f(i), written as fixed-size blocks: GCC's -O2 cost
// model ("very cheap") vectorizes only loops whose trip count is a known
// multiple of the vector length, so the block is what gets vectorized.
constexpr int kVectorBlock = 16;
template <class F>
inline void blocked_loop(int64_t n, F f) {
    int64_t i = 0;
    for (; i + kVectorBlock <= n; i += kVectorBlock)
        for (int j = 0; j < kVectorBlock; ++j) f(i + j);
    for (; i < n; ++i) f(i);
}

// blocked_loop for a body whose iterations touch no memory another writes,
// told so to the compiler (GRAPHRUN_NO_ALIAS_LOOP): for bodies that reach
// their buffers through a lambda's captures, which lose __restrict.
template <class F>
inline void noalias_blocked_loop(int64_t n, F f) {
    int64_t i = 0;
    for (; i + kVectorBlock <= n; i += kVectorBlock)
        GRAPHRUN_NO_ALIAS_LOOP
        for (int j = 0; j < kVectorBlock; ++j) f(i + j);
    for (; i < n; ++i) f(i);
}

// conv's scratch on both devices (im2col's columns, conv_transpose's): tiles
// of about kConvTileBytes, cut to a quarter while the memory limit has no room
// for one, down to a least tile.
constexpr uint64_t kConvTileBytes = uint64_t{8} << 20;
constexpr int64_t kConvMinTile = 16;  // output pixels of a conv tile, at least

// Units of `unit` elements of T per tile: about kConvTileBytes, at most `n`,
// at least `min_tile` (and 1).
template <class T>
int64_t conv_tile_for(int64_t unit, int64_t n, int64_t min_tile = kConvMinTile) {
    const int64_t fit = static_cast<int64_t>(kConvTileBytes / sizeof(T)) / std::max<int64_t>(unit, 1);
    return std::max<int64_t>(std::min(n, std::max(fit, min_tile)), 1);
}

}  // namespace graphrun::kernels
