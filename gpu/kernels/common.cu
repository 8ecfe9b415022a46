// The shared base of the GPU kernels: buffer checks, the non-throwing run(),
// scratch memory and the error flag (common.cuh).
#include "engine/kernels/common/kernel_common.h"
#include "gpu/kernels/common.cuh"

namespace graphrun::gpu {

std::string GpuKernel::run(const TensorRef* inputs, size_t n_inputs, TensorRef& out,
                           const KernelContext&) {
    try {
        std::string problem = check(inputs, n_inputs, out, "GPU kernel");
        if (!problem.empty()) return problem;
        // The session may run nodes on a thread where another device is current.
        GR_CUDA_THROW(cudaSetDevice(ctx_.device));
        compute(inputs, out);
        return "";
    } catch (const std::exception& e) {
        try {
            return e.what();
        } catch (...) {
            return "out of memory";
        }
    } catch (...) {
        return "internal error: unknown exception in a GPU kernel";
    }
}

Scratch::Scratch(GpuContext& ctx, uint64_t bytes, std::nothrow_t) : ctx_(ctx), bytes_(bytes) {
    if (bytes != 0 && ctx.scratch_alloc) p_ = ctx.scratch_alloc(bytes);
}

Scratch::Scratch(GpuContext& ctx, uint64_t bytes, const char* what)
    : Scratch(ctx, bytes, std::nothrow) {
    if (bytes != 0 && !p_)
        throw std::runtime_error("out of GPU memory: " + std::to_string(bytes) +
                                 " bytes of scratch for " + what);
}

Scratch::~Scratch() {
    if (!p_) return;
    try {
        if (ctx_.scratch_free) ctx_.scratch_free(p_, bytes_);
    } catch (...) {
        // A destructor never throws; the allocator reports what it could not free.
    }
}

namespace {
std::vector<const void*>& kernel_list() {
    static std::vector<const void*> list;  // filled while the plugin loads, read-only after
    return list;
}
}  // namespace

bool register_kernel(const void* kernel) {
    kernel_list().push_back(kernel);
    return true;
}

const std::vector<const void*>& registered_kernels() {
    return kernel_list();
}

size_t preload_kernels() {
    for (const void* k : kernel_list()) {
        cudaFuncAttributes attr{};
        GR_CUDA_THROW(cudaFuncGetAttributes(&attr, k));
    }
    return kernel_list().size();
}

int take_error_flag(GpuContext& ctx) {
    if (!ctx.error_flag)
        throw std::runtime_error("internal error: the GPU context has no error flag");
    int flag = 0;
    GR_CUDA_THROW(
        cudaMemcpyAsync(&flag, ctx.error_flag, sizeof flag, cudaMemcpyDeviceToHost, ctx.stream));
    GR_CUDA_THROW(cudaStreamSynchronize(ctx.stream));
    if (flag != 0) GR_CUDA_THROW(cudaMemsetAsync(ctx.error_flag, 0, sizeof flag, ctx.stream));
    return flag;
}

}  // namespace graphrun::gpu
