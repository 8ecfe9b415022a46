// concat: viewed around the axis, the output is `outer` rows, and row o is
// the inputs' rows o side by side. Each input is copied by one launch into
// its column band of the output (one cudaMemcpyAsync when outer is 1).
#include "engine/kernels/common/kernel_common.h"
#include "gpu/kernels/concat.cuh"

namespace graphrun::gpu {

namespace {

// src is outer x width (contiguous); dst rows are `pitch` elements apart.
template <class E>
__global__ void band_kernel(const E* __restrict__ src, E* __restrict__ dst, int64_t outer,
                            int64_t width, int64_t pitch) {
    const int64_t n = outer * width;
    for (int64_t i = thread_index(); i < n; i += thread_count()) {
        const int64_t o = i / width, j = i - o * width;
        dst[o * pitch + j] = src[i];
    }
}

class ConcatKernel final : public GpuKernel {
  public:
    ConcatKernel(const Graph& g, const Node& n, GpuContext& ctx)
        : GpuKernel(g, n, ctx), split_(kernels::concat_split(n, out_shape_, in_shapes_)) {}

  protected:
    void compute(const TensorRef* in, TensorRef& out) override {
        if (!split_) throw std::runtime_error("internal error: concat inputs do not match the output");
        if (out.numel == 0) return;
        switch (dtype_size(out.dtype)) {
            case 1:
                launch<uint8_t>(in, out.data);
                break;
            case 2:
                launch<uint16_t>(in, out.data);
                break;
            case 4:
                launch<uint32_t>(in, out.data);
                break;
            case 8:
                launch<uint64_t>(in, out.data);
                break;
            default:
                throw std::runtime_error("internal error: concat of an unknown element size");
        }
    }

  private:
    template <class E>
    void launch(const TensorRef* in, void* dst_v) {
        E* dst = static_cast<E*>(dst_v);
        int64_t column = 0;
        for (size_t k = 0; k < split_->widths.size(); ++k) {
            const int64_t width = split_->widths[k];
            if (width == 0) continue;
            const E* src = static_cast<const E*>(in[k].data);
            if (split_->outer == 1) {
                GR_CUDA_THROW(cudaMemcpyAsync(dst + column, src,
                                              static_cast<size_t>(width) * sizeof(E),
                                              cudaMemcpyDeviceToDevice, ctx_.stream));
            } else {
                gpu::launch<band_kernel<E>>(ctx_, grid_for(split_->outer * width), kBlock, src,
                                            dst + column, split_->outer, width, split_->pitch);
            }
            column += width;
        }
    }

    std::optional<kernels::ConcatSplit> split_;  // nullopt: the inputs do not make up the output
};

}  // namespace

std::unique_ptr<Kernel> make_concat_kernel(const Graph& g, const Node& n, GpuContext& ctx) {
    return std::make_unique<ConcatKernel>(g, n, ctx);
}

}  // namespace graphrun::gpu
