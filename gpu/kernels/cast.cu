// cast between every pair of dtypes, as the CPU does (engine/kernels/
// shape_ops.cpp): float -> int truncates toward zero and saturates, NaN -> 0;
// integer narrowing wraps; bool is one byte, any non-zero value reads as true
// (NaN too) and is written as 0/1.
#include <cstring>
#include <limits>
#include <type_traits>

#include "engine/kernels/common/kernel_common.h"
#include "gpu/kernels/cast.cuh"

namespace graphrun::gpu {

namespace {

template <class To, class From>
__device__ To convert(From x) {
    constexpr bool to_bool = std::is_same_v<To, uint8_t>, from_bool = std::is_same_v<From, uint8_t>;
    if constexpr (to_bool) {
        return x != 0 ? 1 : 0;
    } else if constexpr (from_bool) {
        return x != 0 ? To(1) : To(0);
    } else if constexpr (std::is_floating_point_v<To>) {
        return static_cast<To>(x);  // round to nearest, as the host's default mode
    } else if constexpr (std::is_floating_point_v<From>) {
        constexpr double lo = static_cast<double>(std::numeric_limits<To>::min());  // exact
        const double t = trunc(static_cast<double>(x));
        if (t != t) return 0;
        if (t < lo) return std::numeric_limits<To>::min();
        if (t >= -lo) return std::numeric_limits<To>::max();
        return static_cast<To>(t);
    } else {
        return static_cast<To>(x);  // two's complement narrowing wraps
    }
}

template <class To, class From>
__global__ void cast_kernel(const From* __restrict__ x, To* __restrict__ o, int64_t n) {
    for (int64_t i = thread_index(); i < n; i += thread_count()) o[i] = convert<To, From>(x[i]);
}

template <class To, class From>
class CastKernel final : public GpuKernel {
  public:
    CastKernel(const Graph& g, const Node& n, GpuContext& ctx) : GpuKernel(g, n, ctx) {}

  protected:
    void compute(const TensorRef* in, TensorRef& out) override {
        if (out.numel == 0) return;
        // The same non-bool type: the bytes unchanged (bool is normalized to 0/1).
        if constexpr (std::is_same_v<To, From> && !std::is_same_v<To, uint8_t>) {
            GR_CUDA_THROW(cudaMemcpyAsync(out.data, in[0].data,
                                          static_cast<size_t>(out.numel) * sizeof(To),
                                          cudaMemcpyDeviceToDevice, ctx_.stream));
        } else {
            launch<cast_kernel<To, From>>(ctx_, grid_for(out.numel), kBlock,
                                          static_cast<const From*>(in[0].data),
                                          static_cast<To*>(out.data), out.numel);
        }
    }
};

}  // namespace

std::unique_ptr<Kernel> make_cast_kernel(const Graph& g, const Node& n, GpuContext& ctx) {
    if (n.inputs.size() != 1)
        return kernels::make_error_kernel("internal error: cast needs one input");
    return kernels::dispatch_dtype(g.node(n.inputs[0].id).dtype, [&](auto from) {
        return kernels::dispatch_dtype(n.dtype, [&](auto to) -> std::unique_ptr<Kernel> {
            return std::make_unique<CastKernel<decltype(to), decltype(from)>>(g, n, ctx);
        });
    });
}

}  // namespace graphrun::gpu
