// The CPU device.
#include "engine/runtime/cpu_device.h"

#include <cstring>

#include "engine/base/heap_trim.h"
#include "engine/kernels/cpu/cpu_kernel.h"

namespace graphrun {

void CpuDevice::close() {
    alloc_.trim();
    // What trim() freed goes back to the system, not only to glibc's heap
    // (heap_trim.h): MobileNet-v2 at batch 16 held 163 MiB resident after
    // teardown without it, against 60 before the session.
    return_free_heap();
}

bool CpuDevice::supports(OpKind op, DType) const { return op != OpKind::Invalid && op != OpKind::LoopParam; }

std::unique_ptr<Kernel> CpuDevice::make_kernel(const Graph& g, const Node& n) { return make_cpu_kernel(g, n); }

std::string CpuDevice::copy_from_host(void* dst, const void* src, uint64_t bytes) {
    if (bytes) std::memcpy(dst, src, bytes);
    return {};
}

void* CpuDevice::Scratch::allocate(uint64_t bytes) {
    const uint64_t rounded = round_up_64(bytes);
    void* p = alloc.allocate_workspace(rounded, true);
    if (!p && retry && retry(rounded)) p = alloc.allocate_workspace(rounded, true);
    return p;
}

void CpuDevice::Scratch::release(void* p, uint64_t bytes) { alloc.release_workspace(p, round_up_64(bytes)); }

std::string CpuDevice::copy_to_host(void* dst, const void* src, uint64_t bytes) {
    if (bytes) std::memcpy(dst, src, bytes);
    return {};
}

}  // namespace graphrun
