// transpose: the output axes with their input strides, size-1 axes dropped
// and neighbours that stay neighbours in the input merged (as the CPU's
// engine/kernels/shape_ops.cpp). When the two innermost output axes are
// swapped in the input, 32x32 tiles go through shared memory so that both
// the reads and the writes are coalesced; otherwise each output element
// gathers its input element. Elements move as 1-, 4- or 8-byte words.
#include "engine/kernels/common/kernel_common.h"
#include "gpu/kernels/transpose.cuh"

namespace graphrun::gpu {

namespace {

constexpr int kTile = 32;
constexpr int kTileRows = 8;  // a tile block is kTile x kTileRows threads

// Output element i (row-major over out.size) reads src[dims_offset(out, i)].
template <class E>
__global__ void transpose_gather_kernel(const E* __restrict__ src, E* __restrict__ dst, int64_t n,
                              const __grid_constant__ Dims out) {
    for (int64_t i = thread_index(); i < n; i += thread_count()) dst[i] = src[dims_offset(out, i)];
}

// Output [batch..., rows, cols] where element (b, i, j) is
// src[dims_offset(batch, b) + i + j * col_stride]. One tile per loop step.
template <class E>
__global__ void tiled_kernel(const E* __restrict__ src, E* __restrict__ dst, int64_t rows,
                             int64_t cols, int64_t col_stride, int64_t tiles_i, int64_t tiles_j,
                             int64_t tiles, const __grid_constant__ Dims batch) {
    __shared__ E tile[kTile][kTile + 1];
    const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const int64_t tj = t % tiles_j;
        const int64_t rest = t / tiles_j;
        const int64_t ti = rest % tiles_i;
        const int64_t b = rest / tiles_i;
        const int64_t i0 = ti * kTile, j0 = tj * kTile;
        const E* s = src + dims_offset(batch, b);
        E* d = dst + b * rows * cols;
        // Read: neighbouring threads take neighbouring i, contiguous in the input.
        for (int jj = ty; jj < kTile; jj += kTileRows) {
            const int64_t i = i0 + tx, j = j0 + jj;
            if (i < rows && j < cols) tile[jj][tx] = s[i + j * col_stride];
        }
        __syncthreads();
        // Write: neighbouring threads take neighbouring j, contiguous in the output.
        for (int ii = ty; ii < kTile; ii += kTileRows) {
            const int64_t i = i0 + ii, j = j0 + tx;
            if (i < rows && j < cols) d[i * cols + j] = tile[tx][ii];
        }
        __syncthreads();
    }
}

class TransposeKernel final : public GpuKernel {
  public:
    TransposeKernel(const Graph& g, const Node& n, GpuContext& ctx) : GpuKernel(g, n, ctx) {
        if (in_shapes_.size() != 1) {
            ok_ = false;
            return;
        }
        auto dims = kernels::transpose_dims(n, in_shapes_[0]);
        if (!dims || dims->size() > static_cast<size_t>(kMaxRank)) {
            ok_ = false;
            return;
        }
        out_.rank = static_cast<int>(dims->size());
        for (int k = 0; k < out_.rank; ++k) {
            out_.size[k] = (*dims)[static_cast<size_t>(k)].size;
            out_.stride[k] = (*dims)[static_cast<size_t>(k)].stride;
        }
    }

  protected:
    void compute(const TensorRef* in, TensorRef& out) override {
        if (!ok_)
            throw std::runtime_error("internal error: transpose perm does not match the input");
        if (out.numel == 0) return;
        switch (dtype_size(out.dtype)) {
            case 1:
                launch<uint8_t>(in[0].data, out.data, out.numel);
                break;
            case 2:
                launch<uint16_t>(in[0].data, out.data, out.numel);
                break;
            case 4:
                launch<uint32_t>(in[0].data, out.data, out.numel);
                break;
            case 8:
                launch<uint64_t>(in[0].data, out.data, out.numel);
                break;
            default:
                throw std::runtime_error("internal error: transpose of an unknown element size");
        }
    }

  private:
    template <class E>
    void launch(const void* src_v, void* dst_v, int64_t n) {
        const E* src = static_cast<const E*>(src_v);
        E* dst = static_cast<E*>(dst_v);
        const int r = out_.rank;
        if (r <= 1) {  // only size-1 axes moved: the bytes are unchanged
            GR_CUDA_THROW(cudaMemcpyAsync(dst, src, static_cast<size_t>(n) * sizeof(E),
                                          cudaMemcpyDeviceToDevice, ctx_.stream));
            return;
        }
        if (out_.stride[r - 2] == 1) {
            Dims batch;
            batch.rank = r - 2;
            for (int k = 0; k < r - 2; ++k) {
                batch.size[k] = out_.size[k];
                batch.stride[k] = out_.stride[k];
            }
            const int64_t rows = out_.size[r - 2], cols = out_.size[r - 1];
            const int64_t tiles_i = (rows + kTile - 1) / kTile,
                          tiles_j = (cols + kTile - 1) / kTile;
            const int64_t tiles = n / (rows * cols) * tiles_i * tiles_j;
            const unsigned blocks = static_cast<unsigned>(tiles < kMaxGrid ? tiles : kMaxGrid);
            gpu::launch<tiled_kernel<E>>(ctx_, blocks, dim3(kTile, kTileRows), src, dst, rows, cols,
                                         out_.stride[r - 1], tiles_i, tiles_j, tiles, batch);
        } else {
            gpu::launch<transpose_gather_kernel<E>>(ctx_, grid_for(n), kBlock, src, dst, n, out_);
        }
    }

    bool ok_ = true;
    Dims out_;  // output axes, outermost first, with their input strides
};

}  // namespace

std::unique_ptr<Kernel> make_transpose_kernel(const Graph& g, const Node& n, GpuContext& ctx) {
    return std::make_unique<TransposeKernel>(g, n, ctx);
}

}  // namespace graphrun::gpu
