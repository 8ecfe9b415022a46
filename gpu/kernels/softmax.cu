// softmax(x) = exp(x - max) / sum(exp(x - max)) along one axis, in double as
// the CPU does (engine/kernels/reduce.cpp), including its rounding of
// exp(x - max) to the dtype before the division. The input is viewed as
// [outer, len, inner]. Along the last axis (inner == 1) one block per row
// reduces max and sum in shared-memory trees; otherwise one thread per
// (outer, inner) column walks the axis, neighbouring threads reading
// neighbouring addresses. A NaN, or an infinite maximum, makes the slice NaN.
// log_softmax is (x - max) - log(sum) in double, as on the CPU.
#include <algorithm>
#include <limits>

#include "engine/kernels/common/kernel_common.h"
#include "gpu/kernels/softmax.cuh"

namespace graphrun::gpu {

namespace {

constexpr int kSoftmaxRowBlock = 256;  // threads of the row kernel, at most (a power of two)

__device__ inline double nan_max(double m, double x) {
    return (x > m || x != x) ? x : m;  // once m is NaN it stays NaN
}

// Each block takes rows blockIdx.x, blockIdx.x + gridDim.x, ...; blockDim.x
// is a power of two <= kSoftmaxRowBlock.
template <class T>
__global__ void softmax_rows(const T* __restrict__ x, T* __restrict__ o, int64_t rows,
                             int64_t len, bool log_softmax) {
    __shared__ double buf[kSoftmaxRowBlock];
    const int tid = static_cast<int>(threadIdx.x), width = static_cast<int>(blockDim.x);
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* xr = x + row * len;
        T* orow = o + row * len;
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t k = tid; k < len; k += width) m = nan_max(m, static_cast<double>(xr[k]));
        buf[tid] = m;
        __syncthreads();
        for (int w = width / 2; w > 0; w >>= 1) {
            if (tid < w) buf[tid] = nan_max(buf[tid], buf[tid + w]);
            __syncthreads();
        }
        m = buf[0];
        __syncthreads();
        double sum = 0;
        for (int64_t k = tid; k < len; k += width) sum += exp(static_cast<double>(xr[k]) - m);
        buf[tid] = sum;
        __syncthreads();
        for (int w = width / 2; w > 0; w >>= 1) {
            if (tid < w) buf[tid] += buf[tid + w];
            __syncthreads();
        }
        sum = buf[0];
        __syncthreads();
        if (log_softmax) {
            const double lse = log(sum);
            for (int64_t k = tid; k < len; k += width)
                orow[k] = static_cast<T>((static_cast<double>(xr[k]) - m) - lse);
            continue;
        }
        for (int64_t k = tid; k < len; k += width) {
            const T e = static_cast<T>(exp(static_cast<double>(xr[k]) - m));
            orow[k] = static_cast<T>(static_cast<double>(e) / sum);
        }
    }
}

// One thread per column (outer index, inner index); element k of the column
// is at (outer * len + k) * inner + j.
template <class T>
__global__ void softmax_columns(const T* __restrict__ x, T* __restrict__ o, int64_t outer,
                                int64_t len, int64_t inner, bool log_softmax) {
    const int64_t columns = outer * inner;
    for (int64_t c = thread_index(); c < columns; c += thread_count()) {
        const int64_t b = c / inner, j = c - b * inner;
        const T* xc = x + b * len * inner + j;
        T* oc = o + b * len * inner + j;
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t k = 0; k < len; ++k) m = nan_max(m, static_cast<double>(xc[k * inner]));
        double sum = 0;
        for (int64_t k = 0; k < len; ++k) sum += exp(static_cast<double>(xc[k * inner]) - m);
        if (log_softmax) {
            const double lse = log(sum);
            for (int64_t k = 0; k < len; ++k)
                oc[k * inner] = static_cast<T>((static_cast<double>(xc[k * inner]) - m) - lse);
            continue;
        }
        for (int64_t k = 0; k < len; ++k) {
            const T e = static_cast<T>(exp(static_cast<double>(xc[k * inner]) - m));
            oc[k * inner] = static_cast<T>(static_cast<double>(e) / sum);
        }
    }
}

template <class T>
class SoftmaxKernel final : public GpuKernel {
  public:
    SoftmaxKernel(const Graph& g, const Node& n, GpuContext& ctx)
        : GpuKernel(g, n, ctx), split_(kernels::softmax_split(n, in_shapes_[0])),
          log_(n.op == OpKind::LogSoftmax) {}

  protected:
    void compute(const TensorRef* in, TensorRef& out) override {
        if (!split_) throw std::runtime_error("internal error: softmax axis does not match the input");
        if (out.numel == 0) return;
        const kernels::AxisSplit& s = *split_;
        const T* x = static_cast<const T*>(in[0].data);
        T* o = static_cast<T*>(out.data);
        if (s.inner == 1) {
            int width = 32;  // the smallest power of two >= len, within [32, kSoftmaxRowBlock]
            while (width < kSoftmaxRowBlock && width < s.len) width *= 2;
            const unsigned blocks = static_cast<unsigned>(std::min(s.outer, kMaxGrid));
            launch<softmax_rows<T>>(ctx_, blocks, width, x, o, s.outer, s.len, log_);
        } else {
            launch<softmax_columns<T>>(ctx_, grid_for(s.outer * s.inner), kBlock, x, o, s.outer,
                                       s.len, s.inner, log_);
        }
    }

  private:
    std::optional<kernels::AxisSplit> split_;  // nullopt: the axis does not match the input
    bool log_ = false;                         // log_softmax: (x - max) - log(sum)
};

}  // namespace

std::unique_ptr<Kernel> make_softmax_kernel(const Graph& g, const Node& n, GpuContext& ctx) {
    if (n.inputs.size() == 1) {
        if (n.dtype == DType::F32) return std::make_unique<SoftmaxKernel<float>>(g, n, ctx);
        if (n.dtype == DType::F64) return std::make_unique<SoftmaxKernel<double>>(g, n, ctx);
    }
    return kernels::make_error_kernel(std::string("internal error: no GPU kernel for softmax on ") +
                                      dtype_name(n.dtype));
}

}  // namespace graphrun::gpu
