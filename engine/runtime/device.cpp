// Loading the CUDA plugin (ONNX Runtime's provider library): the engine never
// links CUDA, so graphrun starts on machines without a driver or libraries.
#include "engine/runtime/device.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>

namespace graphrun {

namespace {

#ifdef GRAPHRUN_WITH_CUDA
constexpr bool kBuiltWithCuda = true;
#else
constexpr bool kBuiltWithCuda = false;
#endif

constexpr const char* kPluginFile = "libgraphrun_cuda.so";

std::string executable_dir() {
    std::string buf(4096, '\0');
    ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
    if (n <= 0) return ".";
    buf.resize(static_cast<size_t>(n));
    size_t slash = buf.rfind('/');
    return slash == std::string::npos ? "." : buf.substr(0, slash);
}

struct LoadedPlugin {
    GpuRuntime* runtime = nullptr;
    std::string why;
};

LoadedPlugin load_plugin() {
    LoadedPlugin p;
    std::string path;
    if (const char* env = std::getenv("GRAPHRUN_CUDA_PLUGIN"); env && *env) {
        path = env;
    } else if (!kBuiltWithCuda) {
        p.why = "graphrun was built without CUDA support";
        return p;
    } else {
        std::string dir = executable_dir();
        path = dir + "/" + kPluginFile;
        if (access(path.c_str(), F_OK) != 0 && access((dir + "/../lib/graphrun/" + kPluginFile).c_str(), F_OK) == 0)
            path = dir + "/../lib/graphrun/" + kPluginFile;
    }
    if (access(path.c_str(), F_OK) != 0) {
        p.why = "the CUDA plugin " + path + " is missing";
        return p;
    }
    // The handle stays open for the life of the process: kernels and devices
    // made by the plugin may be destroyed as late as static destruction.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* e = dlerror();
        std::string err = e ? e : "unknown dlopen error";
        if (err.find("libcublas") != std::string::npos || err.find("libcudart") != std::string::npos)
            p.why = "the CUDA libraries are not installed (" + err + ")";
        else
            p.why = "the CUDA plugin could not be loaded (" + err + ")";
        return p;
    }
    auto entry = reinterpret_cast<GpuPluginEntry>(dlsym(handle, GRAPHRUN_GPU_PLUGIN_ENTRY));
    if (!entry) {
        p.why = std::string("the CUDA plugin ") + path + " has no entry point " + GRAPHRUN_GPU_PLUGIN_ENTRY;
        return p;
    }
    p.runtime = entry();
    if (!p.runtime) p.why = "the CUDA plugin failed to start";
    return p;
}

}  // namespace

bool cuda_built_in() { return kBuiltWithCuda; }

GpuRuntime* gpu_runtime(std::string* why) {
    static std::once_flag once;
    static LoadedPlugin plugin;
    std::call_once(once, [] { plugin = load_plugin(); });
    if (!plugin.runtime && why) *why = plugin.why;
    return plugin.runtime;
}

std::string copy_between_devices(Device& to, void* dst, Device& from, const void* src, uint64_t bytes) {
    if (bytes == 0) return {};
    if (from.kind() == DeviceKind::Cpu) return to.copy_from_host(dst, src, bytes);
    if (to.kind() == DeviceKind::Cpu) return from.copy_to_host(dst, src, bytes);
    // GPU to GPU, peer to peer, ordered by events
    if (std::optional<std::string> direct = to.copy_from_device(dst, from, src, bytes)) return std::move(*direct);
    // GPU to GPU where the devices cannot reach each other: through the host
    std::vector<uint8_t> host(bytes);
    std::string err = from.copy_to_host(host.data(), src, bytes);
    if (err.empty()) err = to.copy_from_host(dst, host.data(), bytes);
    return err;
}

}  // namespace graphrun
