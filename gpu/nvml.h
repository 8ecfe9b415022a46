// NVML, loaded at run time with dlopen("libnvidia-ml.so.1"): the driver's own
// figures (its version, a GPU's used memory), read without creating a CUDA
// context, so that "before the session" means before graphrun touched the GPU.
// No NVML header is needed: the few functions used are declared in nvml.cpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace graphrun::gpu::nvml {

// The driver's version ("580.65.06"), or nullopt with `why` (NVML absent,
// no driver loaded, ...).
std::optional<std::string> driver_version(std::string* why);

// The used memory of the GPU at this PCI bus id, as the driver reports it
// (nvmlDeviceGetMemoryInfo's `used`), or nullopt with `why`. The bus id is
// cudaDeviceGetPCIBusId's ("0000:01:00.0"), so that CUDA's numbering (which
// CUDA_VISIBLE_DEVICES and the order of enumeration change) and NVML's agree.
std::optional<uint64_t> used_bytes(const std::string& pci_bus_id, std::string* why);

}  // namespace graphrun::gpu::nvml
