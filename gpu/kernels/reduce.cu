// Reductions over any set of axes. The input's axes are merged as on the CPU
// (engine/kernels/reduce.cpp) into kept and reduced runs; output o and
// reduced index r read x[kept(o) + reduced(r)]. Two kernels:
//  - block: when the innermost axis is reduced and long, a block of 256
//    threads reads consecutive r (coalesced) and combines them in a
//    shared-memory tree (reduce last axis, reduce everything);
//  - serial: otherwise one thread per output walks r, and neighbouring
//    threads read neighbouring addresses (reduce leading axes, short rows).
// With few outputs and many inputs each output is split into `splits`
// chunks: partial results go to scratch memory and a second kernel combines
// them in order. Float sums and products accumulate in double (as the CPU
// does), integer ones wrap in unsigned, max and min propagate NaN. Deterministic: the order of the
// additions depends on the shapes only.
#include <algorithm>
#include <limits>
#include <type_traits>

#include "engine/kernels/common/kernel_common.h"
#include "gpu/kernels/create.cuh"
#include "gpu/kernels/reduce.cuh"

namespace graphrun::gpu {

namespace {


enum class ReduceKind { Sum, Max, Mean, Min, Prod };

// What a sum accumulates in: wrapping unsigned for integers, double for floats.
template <class T, class = void>
struct SumAcc {
    using type = double;
};
template <class T>
struct SumAcc<T, std::enable_if_t<std::is_integral_v<T>>> {
    using type = std::make_unsigned_t<T>;
};

template <class T, ReduceKind K>
struct Reducer {
    using Acc = typename SumAcc<T>::type;  // sum and mean
    __device__ static Acc identity() { return Acc(0); }
    __device__ static Acc load(T x) { return static_cast<Acc>(x); }
    __device__ static Acc combine(Acc a, Acc b) { return a + b; }
    __device__ static T finish(Acc a, int64_t count) {
        if constexpr (K == ReduceKind::Mean)
            return static_cast<T>(a / static_cast<double>(count));
        else
            return static_cast<T>(a);
    }
};

template <class T>
struct Reducer<T, ReduceKind::Max> {
    using Acc = T;
    __device__ static Acc identity() {
        if constexpr (std::is_floating_point_v<T>)
            return -std::numeric_limits<T>::infinity();
        else
            return std::numeric_limits<T>::lowest();
    }
    __device__ static Acc load(T x) { return x; }
    // Once either side is NaN the result is NaN.
    __device__ static Acc combine(Acc m, Acc x) {
        if constexpr (std::is_floating_point_v<T>)
            return (x > m || x != x) ? x : m;
        else
            return x > m ? x : m;
    }
    __device__ static T finish(Acc a, int64_t) { return a; }
};

template <class T>
struct Reducer<T, ReduceKind::Min> {
    using Acc = T;
    __device__ static Acc identity() {
        if constexpr (std::is_floating_point_v<T>)
            return std::numeric_limits<T>::infinity();
        else
            return std::numeric_limits<T>::max();
    }
    __device__ static Acc load(T x) { return x; }
    __device__ static Acc combine(Acc m, Acc x) {
        if constexpr (std::is_floating_point_v<T>)
            return (x < m || x != x) ? x : m;
        else
            return x < m ? x : m;
    }
    __device__ static T finish(Acc a, int64_t) { return a; }
};

// Products: floats in double, integers wrapping in unsigned (as the CPU).
template <class T>
struct Reducer<T, ReduceKind::Prod> {
    using Acc = typename SumAcc<T>::type;
    __device__ static Acc identity() { return Acc(1); }
    __device__ static Acc load(T x) { return static_cast<Acc>(x); }
    __device__ static Acc combine(Acc a, Acc b) { return a * b; }
    __device__ static T finish(Acc a, int64_t) { return static_cast<T>(a); }
};

struct ReducePlan {
    Dims kept;     // output flat index -> input offset
    Dims reduced;  // reduced flat index -> input offset
};

// Work item t = (split s, output o), o fastest. Writes the finished value to
// out when partial is null, else the partial result to partial[s * nout + o].
template <class T, class R>
__global__ void reduce_serial(const T* __restrict__ x, T* __restrict__ out,
                              typename R::Acc* __restrict__ partial, int64_t nout, int64_t count,
                              int64_t chunk, int64_t splits, const __grid_constant__ ReducePlan p) {
    const int64_t items = nout * splits;
    for (int64_t t = thread_index(); t < items; t += thread_count()) {
        const int64_t o = t % nout, s = t / nout;
        const T* base = x + dims_offset(p.kept, o);
        const int64_t lo = s * chunk, hi = min(count, lo + chunk);
        typename R::Acc acc = R::identity();
        for (int64_t r = lo; r < hi; ++r)
            acc = R::combine(acc, R::load(base[dims_offset(p.reduced, r)]));
        if (partial)
            partial[s * nout + o] = acc;
        else
            out[o] = R::finish(acc, count);
    }
}

// As reduce_serial, one block per work item.
template <class T, class R>
__global__ void reduce_block(const T* __restrict__ x, T* __restrict__ out,
                             typename R::Acc* __restrict__ partial, int64_t nout, int64_t count,
                             int64_t chunk, int64_t splits, const __grid_constant__ ReducePlan p) {
    __shared__ typename R::Acc buf[kReduceBlock];
    const int tid = static_cast<int>(threadIdx.x);
    const int64_t items = nout * splits;
    for (int64_t t = blockIdx.x; t < items; t += gridDim.x) {
        const int64_t o = t % nout, s = t / nout;
        const T* base = x + dims_offset(p.kept, o);
        const int64_t lo = s * chunk, hi = min(count, lo + chunk);
        typename R::Acc acc = R::identity();
        for (int64_t r = lo + tid; r < hi; r += kReduceBlock)
            acc = R::combine(acc, R::load(base[dims_offset(p.reduced, r)]));
        buf[tid] = acc;
        __syncthreads();
        for (int w = kReduceBlock / 2; w > 0; w >>= 1) {
            if (tid < w) buf[tid] = R::combine(buf[tid], buf[tid + w]);
            __syncthreads();
        }
        if (tid == 0) {
            if (partial)
                partial[s * nout + o] = buf[0];
            else
                out[o] = R::finish(buf[0], count);
        }
        __syncthreads();  // buf[0] is read before the next item overwrites buf
    }
}

// Combines the splits of each output in order.
template <class T, class R>
__global__ void reduce_finish(const typename R::Acc* __restrict__ partial, T* __restrict__ out,
                              int64_t nout, int64_t splits, int64_t count) {
    for (int64_t o = thread_index(); o < nout; o += thread_count()) {
        typename R::Acc acc = R::identity();
        for (int64_t s = 0; s < splits; ++s) acc = R::combine(acc, partial[s * nout + o]);
        out[o] = R::finish(acc, count);
    }
}

template <class T, ReduceKind K>
class ReduceKernel final : public GpuKernel {
    using R = Reducer<T, K>;
    using Acc = typename R::Acc;

  public:
    ReduceKernel(const Graph& g, const Node& n, GpuContext& ctx) : GpuKernel(g, n, ctx) {
        if (in_shapes_.size() != 1) {
            ok_ = false;
            return;
        }
        auto rd = kernels::reduce_dims(n, in_shapes_[0]);
        if (!rd) {
            ok_ = false;
            return;
        }
        count_ = rd->count;
        const std::vector<kernels::ReduceDim>& dims = rd->dims;  // outermost first
        inner_reduced_ = !dims.empty() && dims.back().reduced;
        for (const kernels::ReduceDim& d : dims) {
            Dims& walk = d.reduced ? plan_.reduced : plan_.kept;
            if (walk.rank == kMaxRank) {
                ok_ = false;
                return;
            }
            walk.size[walk.rank] = d.size;
            walk.stride[walk.rank] = d.stride;
            ++walk.rank;
        }
    }

  protected:
    void compute(const TensorRef* in, TensorRef& out) override {
        if (!ok_) throw std::runtime_error("internal error: reduction axes do not match the input");
        const int64_t nout = out.numel;
        if (nout == 0) return;
        T* o = static_cast<T*>(out.data);
        if (count_ == 0) {
            fill_empty(o, nout);
            return;
        }
        const T* x = static_cast<const T*>(in[0].data);
        const bool block = inner_reduced_ && count_ >= kReduceBlock;
        const auto [chunk, splits] = split_reduction(nout, count_, block);

        const char* what = op_name(op_);
        Scratch partial(ctx_, splits > 1 ? static_cast<uint64_t>(nout * splits) * sizeof(Acc) : 0,
                        what);
        Acc* part = static_cast<Acc*>(partial.get());
        const int64_t items = nout * splits;
        if (block) {
            const unsigned blocks = static_cast<unsigned>(std::min(items, kMaxGrid));
            launch<reduce_block<T, R>>(ctx_, blocks, kReduceBlock, x, o, part, nout, count_, chunk,
                                       splits, plan_);
        } else {
            launch<reduce_serial<T, R>>(ctx_, grid_for(items), kBlock, x, o, part, nout, count_,
                                        chunk, splits, plan_);
        }
        if (splits > 1)
            launch<reduce_finish<T, R>>(ctx_, grid_for(nout), kBlock, part, o, nout, splits, count_);
    }

  private:
    // An empty reduction, as the CPU: the sum's 0, the mean's 0/0, and for max
    // (refused by validation) the lowest value.
    void fill_empty(T* o, int64_t n) {
        T v{};
        if constexpr (K == ReduceKind::Mean) v = std::numeric_limits<T>::quiet_NaN();
        if constexpr (K == ReduceKind::Max)
            v = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                     : std::numeric_limits<T>::lowest();
        if constexpr (K == ReduceKind::Min)
            v = std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                     : std::numeric_limits<T>::max();
        if constexpr (K == ReduceKind::Prod) v = T(1);
        launch_fill(o, n, sizeof(T), &v, ctx_);
    }

    bool ok_ = true;
    bool inner_reduced_ = false;
    int64_t count_ = 1;  // input elements per output
    ReducePlan plan_;
};

template <ReduceKind K>
std::unique_ptr<Kernel> make_reduce_typed(const Graph& g, const Node& n, GpuContext& ctx) {
    switch (n.dtype) {
        case DType::F32:
            return std::make_unique<ReduceKernel<float, K>>(g, n, ctx);
        case DType::F64:
            return std::make_unique<ReduceKernel<double, K>>(g, n, ctx);
        case DType::I32:
            if constexpr (K != ReduceKind::Mean)
                return std::make_unique<ReduceKernel<int32_t, K>>(g, n, ctx);
            break;
        case DType::I64:
            if constexpr (K != ReduceKind::Mean)
                return std::make_unique<ReduceKernel<int64_t, K>>(g, n, ctx);
            break;
        case DType::Bool:
        GR_STORAGE_DTYPE_CASES:  // widened before any kernel (engine/plan/storage_types.h)
            break;
    }
    return nullptr;
}

}  // namespace

std::unique_ptr<Kernel> make_reduce_kernel(const Graph& g, const Node& n, GpuContext& ctx) {
    std::unique_ptr<Kernel> k;
    if (n.inputs.size() == 1) {
        if (n.op == OpKind::ReduceSum) k = make_reduce_typed<ReduceKind::Sum>(g, n, ctx);
        if (n.op == OpKind::ReduceMax) k = make_reduce_typed<ReduceKind::Max>(g, n, ctx);
        if (n.op == OpKind::ReduceMean) k = make_reduce_typed<ReduceKind::Mean>(g, n, ctx);
        if (n.op == OpKind::ReduceMin) k = make_reduce_typed<ReduceKind::Min>(g, n, ctx);
        if (n.op == OpKind::ReduceProd) k = make_reduce_typed<ReduceKind::Prod>(g, n, ctx);
    }
    if (k) return k;
    return kernels::make_error_kernel(std::string("internal error: no GPU kernel for ") +
                                      op_name(n.op) + " on " + dtype_name(n.dtype));
}

}  // namespace graphrun::gpu
