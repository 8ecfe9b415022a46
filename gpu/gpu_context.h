// What a GPU kernel gets from the session's device: the stream it runs on,
// the cuBLAS handle, and scratch memory from the session's counting allocator
// (no buffer bypasses it). Shared by gpu/cuda_device.cpp and the kernels.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>

#include "engine/ir/graph.h"
#include "engine/kernels/common/kernel.h"
#include "engine/ir/ops.h"

namespace graphrun::gpu {

struct GpuContext {
    int device = 0;
    cudaStream_t stream = nullptr;
    cublasHandle_t cublas = nullptr;
    bool allow_tf32 = false;
    // Stream-ordered scratch memory, counted as the session's GPU workspace
    // (MemoryStats::workspace, not tensor memory). scratch_alloc returns
    // nullptr when the memory limit is reached even after the session's
    // second chance (the strategy's backlog given back).
    std::function<void*(uint64_t bytes)> scratch_alloc;
    std::function<void(void* p, uint64_t bytes)> scratch_free;
    // Workspace a kernel holds for the whole session (a const literal's device
    // copy, made when the kernel is made): never refused by the failure-
    // injection hook; nullptr when the memory limit has no room for it.
    // session_free gives it back (stream-ordered) when the kernel is destroyed.
    std::function<void*(uint64_t bytes)> session_alloc;
    std::function<void(void* p, uint64_t bytes)> session_free;
    // Waits for the stream and gives the pool's cached blocks back to the
    // driver: before one more try of a library call that ran out of device
    // memory of its own (cuBLAS's CUBLAS_STATUS_ALLOC_FAILED).
    std::function<void()> trim_memory;
    // One device int, zeroed at open, that a kernel sets to report a data
    // error (integer division by zero); the kernel checks it after its launch.
    int* error_flag = nullptr;
    // The CPU's kernel factory (GpuDeviceOptions::host_kernel), for values
    // computed on the host at prepare time.
    std::unique_ptr<Kernel> (*host_kernel)(const Graph& g, const Node& n) = nullptr;
};

// Loads every kernel of the plugin on the current device (cudaFuncGetAttributes
// loads a lazily loaded kernel; the list is gpu/kernels/common.cuh's
// registered_kernels()), for CudaDevice to call when it opens, before it reads
// the free memory. Throws CudaError when one cannot be loaded; returns how many
// there are.
size_t preload_kernels();

// The GPU kernel for a validated node placed on the GPU. Inputs and output
// are device pointers. run() enqueues work on ctx.stream and returns "" or an
// error message naming what failed (a CudaError's text, a data error); it
// never throws. A node the GPU does not run (gpu_runs, the op table's G
// column) gets a kernel that reports why.
std::unique_ptr<Kernel> make_gpu_kernel(const Graph& g, const Node& n, GpuContext& ctx);

}  // namespace graphrun::gpu
