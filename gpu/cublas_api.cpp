// Loading cuBLAS with dlopen and resolving the entry points the plugin uses.
#include "gpu/cublas_api.h"

#include <dlfcn.h>

#include <stdexcept>

#define GRAPHRUN_STR2(x) #x
#define GRAPHRUN_STR(x) GRAPHRUN_STR2(x)

namespace graphrun::gpu {
namespace {

constexpr const char* kLibrary = "libcublas.so." GRAPHRUN_STR(CUBLAS_VER_MAJOR);

struct Loaded {
    CublasApi api{};
    bool ok = false;
    std::string why;
};

template <class F>
bool resolve(void* lib, const char* name, F& fn, std::string& why) {
    fn = reinterpret_cast<F>(dlsym(lib, name));
    if (!fn && why.empty()) why = std::string("the CUDA libraries are not usable (") + kLibrary + " has no " + name + ")";
    return fn != nullptr;
}

Loaded load() {
    Loaded l;
    void* lib = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
    std::string first_error;
    if (!lib) {
        const char* e = dlerror();
        first_error = e ? e : "unknown dlopen error";
#ifdef GRAPHRUN_CUDA_LIBRARY_DIR  // the toolkit's lib/ at build time
        lib = dlopen((std::string(GRAPHRUN_CUDA_LIBRARY_DIR) + "/" + kLibrary).c_str(), RTLD_NOW | RTLD_LOCAL);
#endif
    }
    if (!lib) {
        l.why = "the CUDA libraries are not installed (" + first_error + ")";
        return l;
    }
    bool ok = true;
    ok &= resolve(lib, "cublasCreate_v2", l.api.create, l.why);
    ok &= resolve(lib, "cublasDestroy_v2", l.api.destroy, l.why);
    ok &= resolve(lib, "cublasSetStream_v2", l.api.set_stream, l.why);
    ok &= resolve(lib, "cublasSetMathMode", l.api.set_math_mode, l.why);
    ok &= resolve(lib, "cublasSetPointerMode_v2", l.api.set_pointer_mode, l.why);
    ok &= resolve(lib, "cublasSetWorkspace_v2", l.api.set_workspace, l.why);
    ok &= resolve(lib, "cublasGetProperty", l.api.get_property, l.why);
    ok &= resolve(lib, "cublasGetStatusName", l.api.get_status_name, l.why);
    ok &= resolve(lib, "cublasSgemmStridedBatched_64", l.api.sgemm_strided_batched, l.why);
    ok &= resolve(lib, "cublasDgemmStridedBatched_64", l.api.dgemm_strided_batched, l.why);
    // On a failure the library stays loaded: unloading code that static
    // initialisers of its own may have registered is riskier than keeping it.
    l.ok = ok;
    return l;
}

const Loaded& loaded() {
    static const Loaded l = load();  // thread-safe, once
    return l;
}

}  // namespace

const CublasApi* cublas_api(std::string* why) {
    const Loaded& l = loaded();
    if (!l.ok && why) *why = l.why;
    return l.ok ? &l.api : nullptr;
}

const CublasApi& cublas() {
    std::string why;
    const CublasApi* api = cublas_api(&why);
    // Devices open only after cublas_api() succeeded (CudaDevice's constructor
    // checks), so this throws only through a bug in the plugin.
    if (!api) throw std::runtime_error(why);
    return *api;
}

}  // namespace graphrun::gpu
