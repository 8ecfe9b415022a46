// NVML through dlopen: the library is opened and initialised once, on first
// use, and shut down when the process exits. The declarations below follow
// NVML's nvml.h (stable C ABI since the _v2 entry points of CUDA 5).
#include "gpu/nvml.h"

#include <dlfcn.h>

namespace graphrun::gpu::nvml {
namespace {

using nvmlReturn_t = int;  // an enum in nvml.h; 0 is NVML_SUCCESS
constexpr nvmlReturn_t kSuccess = 0;
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
struct nvmlMemory_t {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
};
constexpr unsigned kDriverVersionBufferSize = 80;  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE

// The opened library and its entry points; `error` says why it is unusable.
class Library {
  public:
    static Library& get() {
        static Library lib;  // thread-safe initialisation, destroyed at exit
        return lib;
    }

    bool ok() const { return ok_; }
    const std::string& error() const { return error_; }
    std::string describe(nvmlReturn_t r) const {
        const char* s = error_string_ ? error_string_(r) : nullptr;
        return s ? s : "NVML error " + std::to_string(r);
    }

    nvmlReturn_t (*system_get_driver_version)(char*, unsigned) = nullptr;
    nvmlReturn_t (*device_get_handle_by_pci_bus_id)(const char*, nvmlDevice_t*) = nullptr;
    nvmlReturn_t (*device_get_memory_info)(nvmlDevice_t, nvmlMemory_t*) = nullptr;

  private:
    Library() {
        // RTLD_LOCAL: NVML's symbols stay out of the process's namespace.
        handle_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!handle_) {
            const char* e = dlerror();
            error_ = std::string("NVML is not available (") +
                     (e ? e : "libnvidia-ml.so.1 not found") + ")";
            return;
        }
        if (!load(init_, "nvmlInit_v2") || !load(shutdown_, "nvmlShutdown") ||
            !load(error_string_, "nvmlErrorString") ||
            !load(system_get_driver_version, "nvmlSystemGetDriverVersion") ||
            !load(device_get_handle_by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2") ||
            !load(device_get_memory_info, "nvmlDeviceGetMemoryInfo"))
            return;
        nvmlReturn_t r = init_();
        if (r != kSuccess) {
            error_ = "NVML could not be initialised: " + describe(r);
            return;
        }
        ok_ = true;
    }

    // The library stays loaded (never dlclose'd): unloading a driver library
    // while the process runs on has bitten others, and the OS unmaps it at exit.
    ~Library() {
        if (ok_) shutdown_();
    }

    template <typename Fn>
    bool load(Fn& fn, const char* name) {
        fn = reinterpret_cast<Fn>(dlsym(handle_, name));
        if (!fn) error_ = std::string("NVML is not usable: libnvidia-ml.so.1 has no ") + name;
        return fn != nullptr;
    }

    void* handle_ = nullptr;
    bool ok_ = false;
    std::string error_;
    nvmlReturn_t (*init_)() = nullptr;
    nvmlReturn_t (*shutdown_)() = nullptr;
    const char* (*error_string_)(nvmlReturn_t) = nullptr;
};

void set(std::string* why, std::string text) {
    if (why) *why = std::move(text);
}

}  // namespace

std::optional<std::string> driver_version(std::string* why) {
    Library& lib = Library::get();
    if (!lib.ok()) {
        set(why, lib.error());
        return std::nullopt;
    }
    char buf[kDriverVersionBufferSize] = {};
    nvmlReturn_t r = lib.system_get_driver_version(buf, sizeof buf);
    if (r != kSuccess) {
        set(why, "NVML could not read the driver version: " + lib.describe(r));
        return std::nullopt;
    }
    return std::string(buf);
}

std::optional<uint64_t> used_bytes(const std::string& pci_bus_id, std::string* why) {
    Library& lib = Library::get();
    if (!lib.ok()) {
        set(why, lib.error());
        return std::nullopt;
    }
    nvmlDevice_t dev = nullptr;
    nvmlReturn_t r = lib.device_get_handle_by_pci_bus_id(pci_bus_id.c_str(), &dev);
    if (r != kSuccess) {
        set(why, "NVML has no GPU at PCI bus id " + pci_bus_id + ": " + lib.describe(r));
        return std::nullopt;
    }
    nvmlMemory_t mem{};
    r = lib.device_get_memory_info(dev, &mem);
    if (r != kSuccess) {
        set(why,
            "NVML could not read the memory of the GPU at " + pci_bus_id + ": " + lib.describe(r));
        return std::nullopt;
    }
    return static_cast<uint64_t>(mem.used);
}

}  // namespace graphrun::gpu::nvml
