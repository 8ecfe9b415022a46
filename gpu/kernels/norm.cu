// layer_norm and batch_norm (inference) on the GPU, in double as on the CPU
// (engine/kernels/cpu/norm.cpp; an f32 result is rounded once), the products
// and sums written with __dmul_rn/__dadd_rn so that none is contracted into
// an FMA (gpu/CMakeLists.txt).
//
// layer_norm: one block per row (the dimensions from axis on), blocks taking
// rows blockIdx.x, blockIdx.x + gridDim.x, ...: the mean and then the
// variance of the deviations, each a shared-memory tree, then the output.
// scale and bias are read at the row's index, or through their broadcast
// strides (norm_plan.h) when they are smaller than a row.
// batch_norm: elementwise over [N, C, inner], the channel's factor
// scale / sqrt(var + epsilon) computed per element from its four parameters.
#include <algorithm>

#include "engine/kernels/common/kernel_common.h"
#include "engine/kernels/common/norm_plan.h"
#include "gpu/kernels/norm.cuh"

namespace graphrun::gpu {

namespace {

constexpr int kNormRowBlock = 256;  // threads of the row kernel, at most (a power of two)

// A parameter of layer_norm as the kernel reads it: null, dense (element j
// of a row), or through `dims`.
struct Param {
    bool dense = true;
    Dims dims;
};

template <class T>
__device__ inline double param_at(const T* p, const Param& d, int64_t j) {
    return static_cast<double>(p[d.dense ? j : dims_offset(d.dims, j)]);
}

// The block's sum of v (blockDim.x a power of two); every thread gets it.
__device__ inline double block_sum(double* buf, double v) {
    const int tid = static_cast<int>(threadIdx.x);
    buf[tid] = v;
    __syncthreads();
    for (int w = static_cast<int>(blockDim.x) / 2; w > 0; w >>= 1) {
        if (tid < w) buf[tid] = __dadd_rn(buf[tid], buf[tid + w]);
        __syncthreads();
    }
    const double s = buf[0];
    __syncthreads();
    return s;
}

template <class T>
__global__ void layer_norm_rows(const T* __restrict__ x, const T* __restrict__ scale,
                                const T* __restrict__ bias, T* __restrict__ o, int64_t rows,
                                int64_t len, double eps, const __grid_constant__ Param ps,
                                const __grid_constant__ Param pb) {
    __shared__ double buf[kNormRowBlock];
    const int tid = static_cast<int>(threadIdx.x), width = static_cast<int>(blockDim.x);
    const double n = static_cast<double>(len);
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* xr = x + row * len;
        T* orow = o + row * len;
        double s = 0;
        for (int64_t j = tid; j < len; j += width) s = __dadd_rn(s, static_cast<double>(xr[j]));
        const double mean = block_sum(buf, s) / n;
        double sq = 0;
        for (int64_t j = tid; j < len; j += width) {
            const double d = static_cast<double>(xr[j]) - mean;
            sq = __dadd_rn(sq, __dmul_rn(d, d));
        }
        const double inv = 1.0 / sqrt(block_sum(buf, sq) / n + eps);
        for (int64_t j = tid; j < len; j += width) {
            double y = __dmul_rn(__dmul_rn(static_cast<double>(xr[j]) - mean, inv), param_at(scale, ps, j));
            if (bias) y = __dadd_rn(y, param_at(bias, pb, j));
            orow[j] = static_cast<T>(y);
        }
    }
}

template <class T>
__global__ void batch_norm_elements(const T* __restrict__ x, const T* __restrict__ scale,
                                    const T* __restrict__ bias, const T* __restrict__ mean,
                                    const T* __restrict__ var, T* __restrict__ o, int64_t n,
                                    int64_t channels, int64_t inner, double eps) {
    for (int64_t i = thread_index(); i < n; i += thread_count()) {
        const int64_t c = (i / inner) % channels;
        const double a = static_cast<double>(scale[c]) / sqrt(static_cast<double>(var[c]) + eps);
        const double d = static_cast<double>(x[i]) - static_cast<double>(mean[c]);
        o[i] = static_cast<T>(__dadd_rn(__dmul_rn(d, a), static_cast<double>(bias[c])));
    }
}

Param make_param(const kernels::LayerNormParam& p) {
    Param d;
    d.dense = p.dense;
    if (p.dense) return d;
    d.dims.rank = static_cast<int>(p.dims.size());
    for (size_t k = 0; k < p.dims.size() && k < static_cast<size_t>(kMaxRank); ++k) {
        d.dims.size[k] = p.dims[k].size;
        d.dims.stride[k] = p.dims[k].stride;
    }
    return d;
}

template <class T>
class LayerNormKernel final : public GpuKernel {
  public:
    LayerNormKernel(const Graph& g, const Node& n, GpuContext& ctx)
        : GpuKernel(g, n, ctx), plan_(kernels::layer_norm_plan(n, in_shapes_)),
          eps_(static_cast<double>(kernels::float_attr_or<T>(n, "epsilon", 1e-5))) {}

  protected:
    void compute(const TensorRef* in, TensorRef& out) override {
        if (!plan_ || plan_->scale.dims.size() > static_cast<size_t>(kMaxRank) ||
            plan_->bias.dims.size() > static_cast<size_t>(kMaxRank))
            throw std::runtime_error("internal error: layer_norm shapes do not match");
        if (out.numel == 0) return;
        const kernels::LayerNormPlan& p = *plan_;
        const T* x = static_cast<const T*>(in[0].data);
        const T* scale = static_cast<const T*>(in[1].data);
        const T* bias = p.bias.present ? static_cast<const T*>(in[2].data) : nullptr;
        int width = 32;  // the smallest power of two >= len, within [32, kNormRowBlock]
        while (width < kNormRowBlock && width < p.len) width *= 2;
        const unsigned blocks = static_cast<unsigned>(std::min(p.rows, kMaxGrid));
        launch<layer_norm_rows<T>>(ctx_, blocks, width, x, scale, bias, static_cast<T*>(out.data), p.rows,
                                   p.len, eps_, make_param(p.scale), make_param(p.bias));
    }

  private:
    std::optional<kernels::LayerNormPlan> plan_;  // nullopt: the shapes do not match
    double eps_;
};

template <class T>
class BatchNormKernel final : public GpuKernel {
  public:
    BatchNormKernel(const Graph& g, const Node& n, GpuContext& ctx)
        : GpuKernel(g, n, ctx), plan_(kernels::batch_norm_plan(in_shapes_[0])),
          eps_(static_cast<double>(kernels::float_attr_or<T>(n, "epsilon", 1e-5))) {}

  protected:
    void compute(const TensorRef* in, TensorRef& out) override {
        for (size_t i = 1; i < 5; ++i)
            if (in[i].numel != plan_.channels)
                throw std::runtime_error("internal error: batch_norm parameters do not match x");
        if (out.numel == 0) return;
        auto p = [&](size_t i) { return static_cast<const T*>(in[i].data); };
        launch<batch_norm_elements<T>>(ctx_, grid_for(out.numel), kBlock, p(0), p(1), p(2), p(3), p(4),
                                       static_cast<T*>(out.data), out.numel, plan_.channels,
                                       std::max<int64_t>(plan_.inner, 1), eps_);
    }

  private:
    kernels::BatchNormPlan plan_;
    double eps_;
};

}  // namespace

std::unique_ptr<Kernel> make_norm_kernel(const Graph& g, const Node& n, GpuContext& ctx) {
    if (n.op == OpKind::LayerNorm && (n.inputs.size() == 2 || n.inputs.size() == 3)) {
        if (n.dtype == DType::F32) return std::make_unique<LayerNormKernel<float>>(g, n, ctx);
        if (n.dtype == DType::F64) return std::make_unique<LayerNormKernel<double>>(g, n, ctx);
    }
    if (n.op == OpKind::BatchNorm && n.inputs.size() == 5) {
        if (n.dtype == DType::F32) return std::make_unique<BatchNormKernel<float>>(g, n, ctx);
        if (n.dtype == DType::F64) return std::make_unique<BatchNormKernel<double>>(g, n, ctx);
    }
    return kernels::make_error_kernel(std::string("internal error: no GPU kernel for ") + op_name(n.op) +
                                      " on " + dtype_name(n.dtype));
}

}  // namespace graphrun::gpu
