// Creation kernels, giving the CPU's values (engine/kernels/create.cpp):
// const copies the literal that the CPU kernel writes at prepare time; zeros,
// ones and fill repeat the one value the CPU kernel gives for a scalar of the
// node; range repeats the CPU's arithmetic with separately rounded double
// operations; random_uniform and random_normal walk the Philox stream of
// engine/kernels/philox.h, the same header as the CPU (uniform bit-exact;
// normal up to the last-place differences of the device's log/cos/sqrt).
#include <cstring>
#include <type_traits>

#include "engine/kernels/common/kernel_common.h"
#include "engine/kernels/common/philox.h"
#include "gpu/kernels/create.cuh"

namespace graphrun::gpu {

namespace {

template <class E>
__global__ void fill_kernel(E* __restrict__ o, int64_t n, E v) {
    for (int64_t i = thread_index(); i < n; i += thread_count()) o[i] = v;
}

// Runs the node's CPU kernel into host memory of numel elements.
std::string run_on_host(const GpuContext& ctx, const Graph& g, const Node& n, int64_t numel,
                        std::vector<uint8_t>& host) {
    host.assign(static_cast<size_t>(numel) * dtype_size(n.dtype), 0);
    if (!ctx.host_kernel) return "internal error: the GPU context has no host kernels";
    std::unique_ptr<Kernel> cpu = ctx.host_kernel(g, n);
    TensorRef t;
    t.data = host.empty() ? nullptr : host.data();
    t.dtype = n.dtype;
    t.shape = &n.shape;
    t.numel = numel;
    KernelContext kc;
    return cpu->run(nullptr, 0, t, kc);
}

// const, zeros, ones, fill: bytes computed on the host at prepare time. A
// const literal of more than one element is uploaded once, when the kernel is
// made (as the session opens), into a device copy that the kernel holds as
// the session's workspace (MemoryStats::workspace: not a tensor, so the
// static plan and the tensor peak do not see it; the memory limit does); each
// pass then copies it device to device. Where the limit leaves no room for
// the copy, each pass uploads the literal from the host instead.
class HostValueKernel final : public GpuKernel {
  public:
    HostValueKernel(const Graph& g, const Node& n, GpuContext& ctx) : GpuKernel(g, n, ctx) {
        if (n.op == OpKind::Input) {  // the run's feed comes with set_feed
            input_ = true;
            name_ = std::string(n.display());
            error_ = "input '" + name_ + "' has no value (no feed was given for it)";
        } else if (n.op == OpKind::Const) {
            error_ = run_on_host(ctx, g, n, out_numel_, bytes_);
            repeat_ = out_numel_ == 1;
            if (error_.empty() && !repeat_ && !bytes_.empty()) keep_on_device();
        } else {
            // The one value, as the CPU converts it: its kernel for a scalar.
            Node scalar = n;
            scalar.shape.clear();
            error_ = run_on_host(ctx, g, scalar, 1, bytes_);
            repeat_ = true;
        }
    }

  protected:
    void compute(const TensorRef*, TensorRef& out) override {
        if (!error_.empty()) throw std::runtime_error(error_);
        if (out.numel == 0) return;
        const size_t elem = dtype_size(out.dtype);
        if (repeat_) {
            if (bytes_.size() != elem)
                throw std::runtime_error("internal error: fill value has the wrong size");
            launch_fill(out.data, out.numel, elem, bytes_.data(), ctx_);
            return;
        }
        const size_t size = static_cast<size_t>(out.numel) * elem;
        if (device_copy_) {
            if (device_bytes_ != size)
                throw std::runtime_error("internal error: const literal has the wrong size");
            GR_CUDA_THROW(cudaMemcpyAsync(out.data, device_copy_, size, cudaMemcpyDeviceToDevice,
                                          ctx_.stream));
            return;
        }
        if (bytes_.size() != size)
            throw std::runtime_error("internal error: const literal has the wrong size");
        // bytes_ lives as long as the kernel; a pageable copy is staged before the call returns.
        GR_CUDA_THROW(cudaMemcpyAsync(out.data, bytes_.data(), bytes_.size(),
                                      cudaMemcpyHostToDevice, ctx_.stream));
    }

  public:
    // An input's feed, uploaded now (once per run, not per pass) into the
    // device copy that it keeps as the session's workspace, like a const.
    std::string set_feed(const void* data, uint64_t bytes) override {
        if (!input_) return GpuKernel::set_feed(data, bytes);
        const uint64_t want = static_cast<uint64_t>(out_numel_) * dtype_size(out_dtype_);
        if (bytes != want)
            return "internal error: the feed of input '" + name_ + "' has " + std::to_string(bytes) +
                   " bytes, expected " + std::to_string(want);
        error_.clear();
        repeat_ = out_numel_ == 1;
        const auto* p = static_cast<const uint8_t*>(data);
        if (device_copy_ && device_bytes_ == bytes) {
            cudaError_t err = cudaSetDevice(ctx_.device);
            if (err == cudaSuccess)
                err = cudaMemcpyAsync(device_copy_, p, bytes, cudaMemcpyHostToDevice, ctx_.stream);
            if (err == cudaSuccess) err = cudaStreamSynchronize(ctx_.stream);
            if (err != cudaSuccess) return cuda_error_text(err) + " (uploading input '" + name_ + "')";
            return "";
        }
        bytes_.assign(p, p + bytes);
        if (!repeat_ && !bytes_.empty()) keep_on_device();
        return error_;
    }

    ~HostValueKernel() override {
        // Stream-ordered: after the last pass's copy from it. The device
        // destroys its kernels before it closes (Session::close).
        if (device_copy_ && ctx_.session_free) ctx_.session_free(device_copy_, device_bytes_);
    }
    HostValueKernel(const HostValueKernel&) = delete;
    HostValueKernel& operator=(const HostValueKernel&) = delete;

  private:
    // The device copy of the literal; the host bytes go once it is there.
    void keep_on_device() {
        if (!ctx_.session_alloc) return;
        void* p = ctx_.session_alloc(bytes_.size());
        if (!p) return;  // no room within the limit: uploaded each pass instead
        // Kernels are made while the session opens its devices: another GPU
        // may be the current one.
        cudaError_t err = cudaSetDevice(ctx_.device);
        if (err == cudaSuccess)
            err = cudaMemcpyAsync(p, bytes_.data(), bytes_.size(), cudaMemcpyHostToDevice,
                                  ctx_.stream);
        if (err == cudaSuccess) err = cudaStreamSynchronize(ctx_.stream);
        device_copy_ = p;
        device_bytes_ = bytes_.size();
        if (err != cudaSuccess) {
            // Left to the first pass to report; the copy goes back with the kernel.
            error_ = cuda_error_text(err) + " (uploading the const literal to the device)";
            return;
        }
        std::vector<uint8_t>().swap(bytes_);
    }

    std::string error_;
    std::vector<uint8_t> bytes_;
    bool input_ = false;  // an input node: its bytes come with set_feed
    std::string name_;    // an input's, for messages
    bool repeat_ = false;  // bytes_ is one element, repeated
    void* device_copy_ = nullptr;  // the literal on the device, or nullptr
    size_t device_bytes_ = 0;
};

template <class T>
__global__ void range_kernel(T* __restrict__ o, int64_t n, double start_f, double delta_f,
                             int64_t start_i, int64_t delta_i) {
    for (int64_t i = thread_index(); i < n; i += thread_count()) {
        if constexpr (std::is_floating_point_v<T>) {
            o[i] = static_cast<T>(__dadd_rn(start_f, __dmul_rn(static_cast<double>(i), delta_f)));
        } else {
            const auto s = static_cast<uint64_t>(start_i), d = static_cast<uint64_t>(delta_i);
            o[i] = static_cast<T>(static_cast<int64_t>(s + static_cast<uint64_t>(i) * d));
        }
    }
}

template <class T>
class RangeKernel final : public GpuKernel {
  public:
    RangeKernel(const Graph& g, const Node& n, GpuContext& ctx) : GpuKernel(g, n, ctx) {
        kernels::ScalarAttr zero, one;
        zero.is_int = one.is_int = true;
        one.i = 1;
        one.f = 1;
        const kernels::ScalarAttr start = kernels::scalar_attr(n, "start").value_or(zero);
        const kernels::ScalarAttr delta = kernels::scalar_attr(n, "delta").value_or(one);
        start_f_ = start.as_double();
        delta_f_ = delta.as_double();
        start_i_ = start.as_int();
        delta_i_ = delta.as_int();
    }

  protected:
    void compute(const TensorRef*, TensorRef& out) override {
        if (out.numel == 0) return;
        launch<range_kernel<T>>(ctx_, grid_for(out.numel), kBlock, static_cast<T*>(out.data),
                                out.numel, start_f_, delta_f_, start_i_, delta_i_);
    }

  private:
    double start_f_ = 0, delta_f_ = 1;
    int64_t start_i_ = 0, delta_i_ = 1;
};

// One thread per Philox block: 4 f32 or 2 f64 elements.
template <class T>
__global__ void uniform_kernel(T* __restrict__ o, int64_t n, philox::Key key, T lo, T d) {
    constexpr int64_t per_block = std::is_same_v<T, float> ? 4 : 2;
    const int64_t blocks = (n + per_block - 1) / per_block;
    for (int64_t c = thread_index(); c < blocks; c += thread_count()) {
        const philox::Counter x = philox::block(static_cast<uint64_t>(c), key);
        for (int lane = 0; lane < per_block; ++lane) {
            const int64_t i = c * per_block + lane;
            if (i >= n) break;
            if constexpr (std::is_same_v<T, float>)
                o[i] = philox::add_rn(lo, philox::mul_rn(d, philox::unit_f32(x.v[lane])));
            else
                o[i] = philox::add_rn(
                    lo, philox::mul_rn(d, philox::unit_f64(x.v[2 * lane], x.v[2 * lane + 1])));
        }
    }
}

// Box-Muller in double with separately rounded operations, as the CPU.
template <class T>
__global__ void normal_kernel(T* __restrict__ o, int64_t n, philox::Key key, double mean,
                              double stddev) {
    for (int64_t i = thread_index(); i < n; i += thread_count()) {
        double u1, u2;
        philox::normal_uniforms(static_cast<uint64_t>(i), key, u1, u2);
        const double z =
            __dmul_rn(sqrt(__dmul_rn(-2.0, log(u1))), cos(__dmul_rn(philox::kTwoPi, u2)));
        o[i] = static_cast<T>(__dadd_rn(mean, __dmul_rn(stddev, z)));
    }
}

template <class T>
class RandomKernel final : public GpuKernel {
  public:
    RandomKernel(const Graph& g, const Node& n, GpuContext& ctx)
        : GpuKernel(g, n, ctx), normal_(n.op == OpKind::RandomNormal) {
        key_ = philox::seed_key(static_cast<uint64_t>(kernels::int_attr(n, "seed", 0)));
        a_ = kernels::scalar_attr(n, normal_ ? "mean" : "low")
                 .value_or(kernels::ScalarAttr{})
                 .as_double();
        kernels::ScalarAttr one;
        one.f = 1;
        b_ = kernels::scalar_attr(n, normal_ ? "stddev" : "high").value_or(one).as_double();
    }

  protected:
    void compute(const TensorRef*, TensorRef& out) override {
        if (out.numel == 0) return;
        T* o = static_cast<T*>(out.data);
        if (normal_) {
            launch<normal_kernel<T>>(ctx_, grid_for(out.numel), kBlock, o, out.numel, key_, a_, b_);
        } else {
            const T lo = static_cast<T>(a_);
            const T d = static_cast<T>(static_cast<T>(b_) - lo);  // host arithmetic, as the CPU
            const int64_t per_block = std::is_same_v<T, float> ? 4 : 2;
            launch<uniform_kernel<T>>(ctx_, grid_for((out.numel + per_block - 1) / per_block),
                                      kBlock, o, out.numel, key_, lo, d);
        }
    }

  private:
    bool normal_;
    philox::Key key_{};
    double a_ = 0, b_ = 1;  // low/high or mean/stddev
};

std::unique_ptr<Kernel> make_create_for_op(const Graph& g, const Node& n, GpuContext& ctx) {
    switch (n.op) {
        case OpKind::Const:
        case OpKind::Input:
        case OpKind::Zeros:
        case OpKind::Ones:
        case OpKind::Fill:
            return std::make_unique<HostValueKernel>(g, n, ctx);
        case OpKind::Range:
            switch (n.dtype) {
                case DType::F32:
                    return std::make_unique<RangeKernel<float>>(g, n, ctx);
                case DType::F64:
                    return std::make_unique<RangeKernel<double>>(g, n, ctx);
                case DType::I32:
                    return std::make_unique<RangeKernel<int32_t>>(g, n, ctx);
                case DType::I64:
                    return std::make_unique<RangeKernel<int64_t>>(g, n, ctx);
                case DType::Bool:
                GR_STORAGE_DTYPE_CASES:  // widened before any kernel (engine/plan/storage_types.h)
                    break;
            }
            break;
        case OpKind::RandomUniform:
        case OpKind::RandomNormal:
            if (n.dtype == DType::F32) return std::make_unique<RandomKernel<float>>(g, n, ctx);
            if (n.dtype == DType::F64) return std::make_unique<RandomKernel<double>>(g, n, ctx);
            break;
        default:
            break;
    }
    return nullptr;
}

}  // namespace

void launch_fill(void* dst, int64_t n, size_t elem_size, const void* value, GpuContext& ctx) {
    if (n <= 0) return;
    switch (elem_size) {
        case 1: {
            uint8_t v;
            std::memcpy(&v, value, 1);
            launch<fill_kernel<uint8_t>>(ctx, grid_for(n), kBlock, static_cast<uint8_t*>(dst), n, v);
            break;
        }
        case 2: {
            uint16_t v;
            std::memcpy(&v, value, 2);
            launch<fill_kernel<uint16_t>>(ctx, grid_for(n), kBlock, static_cast<uint16_t*>(dst), n, v);
            break;
        }
        case 4: {
            uint32_t v;
            std::memcpy(&v, value, 4);
            launch<fill_kernel<uint32_t>>(ctx, grid_for(n), kBlock, static_cast<uint32_t*>(dst), n, v);
            break;
        }
        case 8: {
            uint64_t v;
            std::memcpy(&v, value, 8);
            launch<fill_kernel<uint64_t>>(ctx, grid_for(n), kBlock, static_cast<uint64_t*>(dst), n, v);
            break;
        }
        default:
            throw std::runtime_error("internal error: fill of an unknown element size");
    }
}

std::unique_ptr<Kernel> make_creation_kernel(const Graph& g, const Node& n, GpuContext& ctx) {
    if (std::unique_ptr<Kernel> k = make_create_for_op(g, n, ctx)) return k;
    return kernels::make_error_kernel(std::string("internal error: no GPU kernel for ") +
                                      op_name(n.op) + " on " + dtype_name(n.dtype));
}

}  // namespace graphrun::gpu
