// argmax and argmin along one axis (ONNX ArgMax/ArgMin): the index of the
// first extreme element, or the last with select_last_index; NaN counts as
// the extreme (numpy.argmax), as on the CPU (engine/kernels/cpu/arg_reduce.cpp).
// The input is [outer, len, inner] around the axis; one thread per (outer,
// inner) column walks the axis, neighbouring threads reading neighbouring
// addresses.
#include <type_traits>

#include "engine/kernels/common/kernel_common.h"
#include "gpu/kernels/arg_reduce.cuh"

namespace graphrun::gpu {

namespace {

template <class T, bool Max>
__device__ inline bool replaces(T v, T b, bool last) {
    if constexpr (std::is_floating_point_v<T>) {
        if (b != b) return last && v != v;
        if (v != v) return true;
    }
    if (last && v == b) return true;
    return Max ? v > b : v < b;
}

template <class T, bool Max>
__global__ void arg_reduce_columns(const T* __restrict__ x, int64_t* __restrict__ o, int64_t outer,
                                   int64_t len, int64_t inner, bool last) {
    const int64_t columns = outer * inner;
    for (int64_t c = thread_index(); c < columns; c += thread_count()) {
        const int64_t b = c / inner, j = c - b * inner;
        const T* xc = x + b * len * inner + j;
        T best = xc[0];
        int64_t idx = 0;
        for (int64_t k = 1; k < len; ++k) {
            const T v = xc[k * inner];
            if (replaces<T, Max>(v, best, last)) best = v, idx = k;
        }
        o[c] = idx;
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
        launch<arg_reduce_columns<T, Max>>(ctx_, grid_for(outer_ * inner_), kBlock,
            static_cast<const T*>(in[0].data), static_cast<int64_t*>(out.data), outer_, len_,
            inner_, last_);
    }

  private:
    bool ok_ = true, last_ = false;
    int64_t outer_ = 1, len_ = 1, inner_ = 1;
};

template <bool Max>
std::unique_ptr<Kernel> make_typed(const Graph& g, const Node& n, GpuContext& ctx) {
    switch (g.node(n.inputs[0].id).dtype) {
        case DType::F32: return std::make_unique<ArgReduceKernel<float, Max>>(g, n, ctx);
        case DType::F64: return std::make_unique<ArgReduceKernel<double, Max>>(g, n, ctx);
        case DType::I32: return std::make_unique<ArgReduceKernel<int32_t, Max>>(g, n, ctx);
        case DType::I64: return std::make_unique<ArgReduceKernel<int64_t, Max>>(g, n, ctx);
        case DType::Bool: break;
    }
    return nullptr;
}

}  // namespace

std::unique_ptr<Kernel> make_arg_reduce_kernel(const Graph& g, const Node& n, GpuContext& ctx) {
    std::unique_ptr<Kernel> k;
    if (n.inputs.size() == 1) {
        if (n.op == OpKind::Argmax) k = make_typed<true>(g, n, ctx);
        if (n.op == OpKind::Argmin) k = make_typed<false>(g, n, ctx);
    }
    if (k) return k;
    return kernels::make_error_kernel(std::string("internal error: no GPU kernel for ") +
                                      op_name(n.op));
}

}  // namespace graphrun::gpu
