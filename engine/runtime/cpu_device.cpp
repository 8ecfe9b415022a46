// The CPU device.
#include "engine/runtime/cpu_device.h"

#include <cstring>

#include "engine/kernels/cpu/cpu_kernel.h"

namespace graphrun {

bool CpuDevice::supports(OpKind op, DType) const { return op != OpKind::Invalid && op != OpKind::LoopParam; }

std::unique_ptr<Kernel> CpuDevice::make_kernel(const Graph& g, const Node& n) { return make_cpu_kernel(g, n); }

std::string CpuDevice::copy_from_host(void* dst, const void* src, uint64_t bytes) {
    if (bytes) std::memcpy(dst, src, bytes);
    return {};
}

std::string CpuDevice::copy_to_host(void* dst, const void* src, uint64_t bytes) {
    if (bytes) std::memcpy(dst, src, bytes);
    return {};
}

}  // namespace graphrun
