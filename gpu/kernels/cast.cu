// cast between every pair of dtypes, as the CPU does (engine/kernels/
// shape_ops.cpp): float -> int truncates toward zero and saturates, NaN -> 0;
// integer narrowing wraps; bool is one byte, any non-zero value reads as true
// (NaN too) and is written as 0/1.
#include <cstring>
#include <limits>
#include <type_traits>

#include "engine/ir/elements.h"
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

// A cast to or from a storage type (f16, bf16, i8, u8): the host's conversions
// (engine/ir/elements.h, compiled for the device), element by element.
__global__ void storage_cast_kernel(const void* __restrict__ x, DType from, void* __restrict__ o, DType to,
                                    int64_t n) {
    for (int64_t i = thread_index(); i < n; i += thread_count()) elements::cast_element(to, o, from, x, i);
}

class StorageCastKernel final : public GpuKernel {
  public:
    StorageCastKernel(const Graph& g, const Node& n, GpuContext& ctx) : GpuKernel(g, n, ctx) {}

  protected:
    void compute(const TensorRef* in, TensorRef& out) override {
        if (out.numel == 0) return;
        if (in[0].dtype == out.dtype) {
            GR_CUDA_THROW(cudaMemcpyAsync(out.data, in[0].data, static_cast<size_t>(out.numel) * dtype_size(out.dtype),
                                          cudaMemcpyDeviceToDevice, ctx_.stream));
            return;
        }
        launch<storage_cast_kernel>(ctx_, grid_for(out.numel), kBlock, in[0].data, in[0].dtype, out.data, out.dtype,
                                    out.numel);
    }
};

}  // namespace

std::unique_ptr<Kernel> make_cast_kernel(const Graph& g, const Node& n, GpuContext& ctx) {
    if (n.inputs.size() != 1)
        return kernels::make_error_kernel("internal error: cast needs one input");
    if (is_storage(n.dtype) || is_storage(g.node(n.inputs[0].id).dtype))
        return std::make_unique<StorageCastKernel>(g, n, ctx);
    return kernels::dispatch_dtype(g.node(n.inputs[0].id).dtype, [&](auto from) {
        return kernels::dispatch_dtype(n.dtype, [&](auto to) -> std::unique_ptr<Kernel> {
            return std::make_unique<CastKernel<decltype(to), decltype(from)>>(g, n, ctx);
        });
    });
}

}  // namespace graphrun::gpu
