// reshape and identity when they cannot alias: the bytes, copied on the stream.
#include "gpu/kernels/copy.cuh"

namespace graphrun::gpu {

namespace {

class CopyKernel final : public GpuKernel {
  public:
    CopyKernel(const Graph& g, const Node& n, GpuContext& ctx) : GpuKernel(g, n, ctx) {}

  protected:
    void compute(const TensorRef* in, TensorRef& out) override {
        if (in[0].dtype != out.dtype || in[0].numel != out.numel)
            throw std::runtime_error("internal error: copy between different tensors");
        if (out.numel == 0 || in[0].data == out.data) return;
        GR_CUDA_THROW(cudaMemcpyAsync(out.data, in[0].data,
                                      static_cast<size_t>(out.numel) * dtype_size(out.dtype),
                                      cudaMemcpyDeviceToDevice, ctx_.stream));
    }
};

}  // namespace

std::unique_ptr<Kernel> make_copy_kernel(const Graph& g, const Node& n, GpuContext& ctx) {
    return std::make_unique<CopyKernel>(g, n, ctx);
}

}  // namespace graphrun::gpu
