// The device interface (STYLE: one small interface per device). The session
// reaches every device, the CPU and the GPUs of the CUDA plugin, through it.
// Nothing here names a CUDA type.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/runtime/allocator.h"
#include "engine/ir/device_name.h"
#include "engine/ir/dtype.h"
#include "engine/ir/graph.h"
#include "engine/kernels/common/kernel.h"
#include "engine/kernels/cpu/cpu_kernel.h"
#include "engine/ir/ops.h"

namespace graphrun {

class Device {
public:
    virtual ~Device() = default;
    // "cpu", "gpu:0" (DeviceName::str()).
    virtual const std::string& name() const = 0;
    virtual DeviceKind kind() const = 0;
    // The counting allocator every tensor buffer of this device comes from.
    virtual Allocator& allocator() = 0;
    // Whether make_kernel can give a kernel for this op and output dtype.
    virtual bool supports(OpKind op, DType dtype) const = 0;
    // The kernel for a validated node placed on this device. Never null: an
    // unsupported node gets a kernel that reports why when run.
    virtual std::unique_ptr<Kernel> make_kernel(const Graph& g, const Node& n) = 0;
    // Copies between host memory and this device's memory, ordered after the
    // device's earlier work. copy_to_host returns when the bytes are on the
    // host. "" or an error message.
    virtual std::string copy_from_host(void* dst, const void* src, uint64_t bytes) = 0;
    virtual std::string copy_to_host(void* dst, const void* src, uint64_t bytes) = 0;
    // Copies `bytes` at `src_ptr` on `src` (another device of the session) to
    // `dst` on this device without waiting on the host: the copy runs after
    // the work queued so far on both devices, and the source's later work (the
    // release of its buffer) after the copy. std::nullopt when this device
    // cannot (the caller then copies through the host); else "" or an error.
    virtual std::optional<std::string> copy_from_device(void* dst, Device& src, const void* src_ptr,
                                                        uint64_t bytes) {
        (void)dst, (void)src, (void)src_ptr, (void)bytes;
        return std::nullopt;
    }
    // Waits for the device's outstanding work. "" or an error message.
    virtual std::string synchronize() = 0;
    // The session's second chance for an allocation that the device makes
    // itself while a kernel runs (GPU scratch): called with the bytes that
    // failed, true when the allocation is worth one more try (the cleanup
    // strategy gave its backlog back: Cleanup::release_for_retry). The CPU's
    // kernels allocate nothing from the allocator: the CPU device ignores it.
    using AllocationRetry = std::function<bool(uint64_t bytes)>;
    virtual void set_allocation_retry(AllocationRetry retry) { (void)retry; }
    // The scratch memory the device's host-side kernels may take while they
    // run (KernelContext::scratch), or nullptr: the CPU device's, from its
    // allocator as workspace, with the retry above.
    virtual ScratchMemory* kernel_scratch() { return nullptr; }
    // Teardown, after every buffer has been released: trims the allocator and
    // destroys streams, pools and library handles. Idempotent; never throws.
    virtual void close() = 0;
};

// Copies `bytes` at `src` on device `from` to `dst` on device `to` (another
// or the same kind): host to device, device to host, GPU to GPU peer to peer
// where the devices can, else through a host buffer. "" or an error message.
std::string copy_between_devices(Device& to, void* dst, Device& from, const void* src, uint64_t bytes);

// What `graphrun devices` shows for one GPU.
struct GpuInfo {
    int index = 0;
    std::string name;
    uint64_t total_memory = 0;
    int cc_major = 0, cc_minor = 0;
    std::string pci_bus_id;
    // Why this build cannot run on it (a compute capability it has no kernels
    // for), or "" when it can. A machine with one usable GPU lists them all,
    // so that gpu:N stays CUDA's device N; placement treats these as unavailable.
    std::string unusable;
};

struct GpuDeviceOptions {
    uint64_t memory_limit = 0;  // 0: the card's free memory when the session opens
    bool allow_tf32 = false;    // --allow-tf32
    bool reset_device = false;  // --reset-device: end the CUDA context at close()
    // The CPU's kernels, for what a GPU kernel computes on the host at prepare
    // time (the bytes of const and fill): gpu/ reaches them only through this.
    std::unique_ptr<Kernel> (*host_kernel)(const Graph& g, const Node& n) = make_cpu_kernel;
};

// The CUDA plugin's entry table (ONNX Runtime's provider library, IREE's
// dynamic symbols): everything the engine and the CLI ask of CUDA.
class GpuRuntime {
public:
    virtual ~GpuRuntime() = default;
    // "CUDA 13.0 (runtime 13000), cuBLAS 13.0.0".
    virtual std::string toolkit_version() const = 0;
    // The driver's version ("580.65.06"), or "" when no driver is loaded.
    virtual std::string driver_version() = 0;
    // Usable GPUs; with none, `why` says exactly why (no driver, no device, ...).
    virtual int device_count(std::string* why) = 0;
    virtual std::optional<GpuInfo> info(int index) = 0;
    virtual bool supports(OpKind op, DType dtype) const = 0;
    // The device's used memory as the driver reports it (NVML, no CUDA context
    // created), or nullopt with `why` when NVML cannot say.
    virtual std::optional<uint64_t> driver_used_bytes(int index, std::string* why) = 0;
    // A session's device: its own stream, memory pool and cuBLAS handle.
    // nullptr with `error` when it cannot be opened.
    virtual std::unique_ptr<Device> open(int index, const GpuDeviceOptions& opts, std::string* error) = 0;
};

// The plugin's one exported symbol (extern "C"); the engine loads it with dlopen.
#define GRAPHRUN_GPU_PLUGIN_ENTRY "graphrun_gpu_runtime_v1"
using GpuPluginEntry = GpuRuntime* (*)();

// The process's GPU runtime: loads the CUDA plugin on first use (beside the
// executable, or $GRAPHRUN_CUDA_PLUGIN). nullptr with `why` when the plugin is
// not built in or cannot be loaded (its CUDA libraries are missing).
GpuRuntime* gpu_runtime(std::string* why);
// Whether this build has CUDA support (the plugin was built with it).
bool cuda_built_in();

}  // namespace graphrun
