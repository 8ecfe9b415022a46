// The CUDA plugin's entry table (engine/device.h's GpuRuntime): versions,
// device discovery with the exact reason when no GPU is usable, the driver's
// used-memory figure through NVML, and opening a session's device. The one
// symbol the plugin exports is graphrun_gpu_runtime_v1.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/runtime/device.h"
#include "gpu/cublas_api.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_device.h"
#include "gpu/gpu_context.h"
#include "gpu/nvml.h"

#ifndef GRAPHRUN_CUDA_VERSION  // set by gpu/CMakeLists.txt to the toolkit's version
#define GRAPHRUN_CUDA_STR2(x) #x
#define GRAPHRUN_CUDA_STR(x) GRAPHRUN_CUDA_STR2(x)
#define GRAPHRUN_CUDA_VERSION "runtime " GRAPHRUN_CUDA_STR(CUDART_VERSION)
#endif

namespace graphrun::gpu {
namespace {

// "13.0" for 13000: how CUDA writes its version numbers.
std::string cuda_version_text(int v) {
    return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

// The driver's library, or nullptr. Asked before any CUDA call, so that a
// machine without a driver gets that reason and not the runtime's generic
// one. The handle stays open: the CUDA runtime loads the same library.
void* driver_library() {
    if (void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD)) return h;
    return dlopen("libcuda.so.1", RTLD_LAZY);
}

bool driver_library_present() {
    return driver_library() != nullptr;
}

// The CUDA version the driver supports (13000 for 13.0), or 0. Asked of the
// driver itself: when the runtime refuses an old driver, it may not say.
int driver_cuda_version() {
    int v = 0;
    if (cudaDriverGetVersion(&v) == cudaSuccess && v > 0) return v;
    v = 0;
    void* h = driver_library();
    auto get = h ? reinterpret_cast<int (*)(int*)>(dlsym(h, "cuDriverGetVersion")) : nullptr;
    if (!get || get(&v) != 0) return 0;
    return v;
}

std::string error_text(cudaError_t err) {
    return std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
}

// Why cudaGetDeviceCount failed, in the user's terms.
std::string init_failure_reason(cudaError_t err) {
    switch (err) {
        case cudaErrorInsufficientDriver: {
            // CUDA's minor-version compatibility: any driver of the toolkit's
            // major version runs this build.
            const std::string needs = std::to_string(CUDART_VERSION / 1000) + ".0";
            int driver = driver_cuda_version();
            if (driver == 0)
                return "the CUDA driver is older than this build's toolkit (graphrun needs CUDA " +
                       needs + ")";
            // New enough, yet refused: a broken installation.
            if (driver >= CUDART_VERSION / 1000 * 1000)
                return "the CUDA driver (CUDA " + cuda_version_text(driver) +
                       ") was refused by the CUDA runtime (" + error_text(err) + ")";
            return "the CUDA driver is older than this build's toolkit (driver supports CUDA " +
                   cuda_version_text(driver) + ", graphrun needs " + needs + ")";
        }
        case cudaErrorNoDevice: {
            const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
            if (visible)
                return std::string("no CUDA device (CUDA_VISIBLE_DEVICES=\"") + visible + "\")";
            return "no CUDA device";
        }
        case cudaErrorStubLibrary:
            return "no CUDA driver (the libcuda.so.1 found is the CUDA toolkit's stub, not the "
                   "NVIDIA driver)";
        case cudaErrorInitializationError:
            return "the CUDA driver could not be initialised (" + error_text(err) +
                   "; is the NVIDIA kernel module loaded?)";
        case cudaErrorSystemDriverMismatch:
            return "the CUDA driver library and the NVIDIA kernel module differ in version (" +
                   error_text(err) + ")";
        case cudaErrorCompatNotSupportedOnDevice:
            return "the CUDA forward-compatibility driver in use does not support this GPU (" +
                   error_text(err) + ")";
        case cudaErrorDevicesUnavailable:
            return "every CUDA device is busy or unavailable (" + error_text(err) +
                   "; is the compute mode exclusive or prohibited?)";
        case cudaErrorSystemNotReady:
            return "the system is not yet ready for CUDA (" + error_text(err) +
                   "; is nvidia-fabricmanager running?)";
        default:
            return "CUDA error " + error_text(err);
    }
}

class CudaRuntime final : public GpuRuntime {
  public:
    std::string toolkit_version() const override {
        int runtime = 0, major = 0, minor = 0, patch = 0;
        (void)cudaRuntimeGetVersion(&runtime);
        std::string s = std::string("CUDA ") + GRAPHRUN_CUDA_VERSION + " (runtime " + std::to_string(runtime) + "), ";
        std::string why;
        const CublasApi* api = cublas_api(&why);
        if (!api) return s + "cuBLAS not loadable: " + why;
        (void)api->get_property(MAJOR_VERSION, &major);
        (void)api->get_property(MINOR_VERSION, &minor);
        (void)api->get_property(PATCH_LEVEL, &patch);
        return s + "cuBLAS " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
    }

    std::string driver_version() override {
        std::lock_guard<std::mutex> lock(mu_);
        if (!driver_version_) driver_version_ = probe_driver_version();
        return *driver_version_;
    }

    int device_count(std::string* why) override {
        std::lock_guard<std::mutex> lock(mu_);
        probe_devices_locked();
        if (*count_ == 0 && why) *why = count_why_;
        return *count_;
    }

    std::optional<GpuInfo> info(int index) override {
        if (!valid_index(index, nullptr)) return std::nullopt;
        cudaDeviceProp p{};
        if (cudaGetDeviceProperties(&p, index) != cudaSuccess) {
            (void)cudaGetLastError();
            return std::nullopt;
        }
        GpuInfo info;
        info.index = index;
        info.name = p.name;
        info.total_memory = p.totalGlobalMem;
        info.cc_major = p.major;
        info.cc_minor = p.minor;
        info.pci_bus_id = pci_bus_id(index);
        if (p.major < kMinComputeCapabilityMajor) info.unusable = unsupported_reason(p.major, p.minor);
        return info;
    }

    bool supports(OpKind op, DType dtype) const override { return gpu_runs(op, dtype); }

    std::optional<uint64_t> driver_used_bytes(int index, std::string* why) override {
        if (!valid_index(index, why)) return std::nullopt;
        std::string bus = pci_bus_id(index);
        if (bus.empty()) {
            if (why) *why = "the PCI bus id of gpu:" + std::to_string(index) + " is unknown";
            return std::nullopt;
        }
        return nvml::used_bytes(bus, why);
    }

    std::unique_ptr<Device> open(int index, const GpuDeviceOptions& opts,
                                 std::string* error) override {
        std::string why;
        if (!valid_index(index, &why)) {
            if (error) *error = why;
            return nullptr;
        }
        try {
            return std::make_unique<CudaDevice>(index, opts);
        } catch (const std::exception& e) {  // CudaError, or std::bad_alloc
            // The call that failed left its error as this thread's last one:
            // the next session of the process (the next FILE) would read it
            // at its first launch() or synchronize() as a failure of its own.
            (void)cudaGetLastError();
            if (error) *error = e.what();
            return nullptr;
        }
    }

  private:
    // cudaGetDeviceCount and the checks around it, once per process: the
    // answer does not change while graphrun runs.
    void probe_devices_locked() {
        if (count_) return;
        count_ = 0;
        if (!driver_library_present()) {
            count_why_ = "no CUDA driver";
            return;
        }
        int n = 0;
        cudaError_t err = cudaGetDeviceCount(&n);
        if (err != cudaSuccess) {
            (void)cudaGetLastError();
            count_why_ = init_failure_reason(err);
            return;
        }
        if (n == 0) {
            count_why_ = "no CUDA device";
            return;
        }
        // Usable means this build has kernels for it. With at least one such
        // GPU all are listed, so that gpu:N stays CUDA's device N; opening an
        // older one then says why it cannot run.
        std::string too_old;
        int usable = 0;
        for (int i = 0; i < n; ++i) {
            cudaDeviceProp p{};
            if (cudaGetDeviceProperties(&p, i) != cudaSuccess) {
                (void)cudaGetLastError();
                continue;
            }
            if (p.major >= kMinComputeCapabilityMajor) {
                ++usable;
            } else {
                too_old += std::string(too_old.empty() ? "" : ", ") + p.name +
                           " (compute capability " + std::to_string(p.major) + "." +
                           std::to_string(p.minor) + ")";
            }
        }
        if (usable == 0) {
            count_why_ = "no CUDA device that this build supports: found " +
                         (too_old.empty() ? std::string("none that could be queried") : too_old) +
                         "; graphrun has kernels for compute capability " +
                         std::to_string(kMinComputeCapabilityMajor) + ".0 and newer";
            return;
        }
        // cuBLAS is loaded only now, where there is a GPU to use it on.
        if (!cublas_api(&count_why_)) return;
        count_why_.clear();
        count_ = n;
        bus_ids_.assign(static_cast<size_t>(n), std::string());
    }

    bool valid_index(int index, std::string* why) {
        std::string reason;
        int n = device_count(&reason);
        if (n == 0) {
            if (why) *why = reason;
            return false;
        }
        if (index < 0 || index >= n) {
            if (why)
                *why = "no such GPU: gpu:" + std::to_string(index) + " (this machine has " +
                       std::to_string(n) +
                       (n == 1 ? " GPU, gpu:0)"
                               : " GPUs, gpu:0 to gpu:" + std::to_string(n - 1) + ")");
            return false;
        }
        return true;
    }

    // cudaDeviceGetPCIBusId needs the driver initialised but no context.
    std::string pci_bus_id(int index) {
        std::lock_guard<std::mutex> lock(mu_);
        std::string& id = bus_ids_.at(static_cast<size_t>(index));
        if (id.empty()) {
            char buf[32] = {};
            if (cudaDeviceGetPCIBusId(buf, sizeof buf, index) == cudaSuccess)
                id = buf;
            else
                (void)cudaGetLastError();
        }
        return id;
    }

    std::string probe_driver_version() {
        std::string why;
        if (auto v = nvml::driver_version(&why)) return *v;
        // No NVML: the CUDA version the driver supports is the next best.
        int driver = driver_library_present() ? driver_cuda_version() : 0;
        return driver > 0 ? cuda_version_text(driver) : "";
    }

    std::mutex mu_;
    std::optional<int> count_;
    std::string count_why_;
    std::vector<std::string> bus_ids_;
    std::optional<std::string> driver_version_;
};

}  // namespace
}  // namespace graphrun::gpu

extern "C" __attribute__((visibility("default"))) graphrun::GpuRuntime* graphrun_gpu_runtime_v1() {
    // Process lifetime: devices and kernels made through it may live until
    // static destruction, and it holds no CUDA resource of its own.
    static graphrun::gpu::CudaRuntime runtime;
    return &runtime;
}
