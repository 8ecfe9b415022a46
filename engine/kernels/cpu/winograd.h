// A 3x3 convolution by Winograd's minimal filtering, F(4x4, 3x3) (Lavin and
// Gray, "Fast Algorithms for Convolutional Neural Networks", 2015): each 4x4
// block of the output ("tile") is A^T [(G g G^T) . (B^T d B)] A from the 6x6
// input patch d around it, so the 36 products of a tile replace 144 of the
// direct conv's, and the products over the channels are 36 matrix products
// (the "positions" p of the 6x6 transform), one per position, of the
// transformed input [tiles x C] by the transformed filter [C x M].
//
// Where: a conv of stride 1, dilation 1, one group, padding 1 on every side,
// in f32, whose x, output and fused residual are held in one channels-last
// layout: oneDNN's blocked nChw8c (the layout pass's choice on a CPU with
// AVX2 and no AVX-512: [N][C/8][H][W][8]), nChw16c, or NHWC (an Intel CPU
// with AVX-512, or a group with a max_pool there). Eight channels of a pixel
// are side by side in each, so every transform is eight lanes of one AVX2
// register and needs no shuffles. On a CPU without AVX-512 oneDNN 2.6 has no
// Winograd conv (its own is AVX-512 only) and its direct conv reaches about
// 65-70% of the FMA peak; this conv does a quarter of the multiplies. With
// AVX-512 oneDNN's direct conv is twice as fast and this one pays only for
// at least 256 tiles that the image mostly fills (winograd_fits).
// dnnl_kernels.cpp chooses it. The matrix products are our own register-
// blocked kernels (AVX-512: 12 tiles by 32 output channels; AVX2: 6 by 16),
// one worker per block of tiles, reading the filter's transform in panels of
// 16 output channels: oneDNN's sgemm, called per position, packed both
// operands on every call and ran at half speed for 64 output channels.
//
// Numerics: the transforms add and scale by small constants (1/4, 1/6,
// 1/24, 2, 4, 5, 8) and the products sum in f32 over chunks of 128
// channels, so results differ from the direct conv's in the last bits:
// against a double-precision reference, up to about 7e-6 of the largest sum
// at 8-512 channels (tests/unit/test_winograd.cpp). The order of every sum
// is fixed, so the bits are the same with AVX2 and AVX-512 and any number of
// workers.
//
// Memory, all of it the run's scratch (workspace, given back before it
// returns): the transformed filter for a part of the output channels at a
// time (at most about 6 MB: kFilterPartBytes), and per worker the transformed
// input of a block of tiles and the block's products. The constant filter
// itself stays as the graph holds it (OIHW); a filter four times its size
// would be held for the session's life otherwise.
// GRAPHRUN_NO_WINOGRAD set (to anything) in the environment turns it off.
#pragma once
#include <cstdint>

#include "engine/ir/epilogue.h"
#include "engine/kernels/common/kernel.h"

namespace graphrun::kernels {

struct WinogradConv {
    int64_t batch = 0, channels = 0, height = 0, width = 0, out_channels = 0;
    int64_t block = 8;                  // x's and y's layout: nChw8c (8), nChw16c (16) or NHWC (0)
    Activation act = Activation::None;  // None, Relu or Clip
    float lo = 0, hi = 0;               // Clip's bounds
};

// Whether the conv may run so: shape (channels multiples of 8 and of the
// block, the sizes within int32), activation, a CPU with AVX2 and FMA in use
// (active_isa), and GRAPHRUN_NO_WINOGRAD unset; and whether it pays: at
// least 32 input channels (fewer make products too short) and 32 tiles
// (fewer leave the filter's transform, made on every run, too large a part
// of the work); with AVX-512 in use, 128 channels and 256 tiles.
bool winograd_fits(const WinogradConv& s);

// The scratch one run takes with `threads` workers, in bytes.
uint64_t winograd_scratch_bytes(const WinogradConv& s, int threads);

// y = act(conv(x, w) + bias + residual): x [N][C/b][H][W][b] (b: s.block,
// C for NHWC), w [M][C][3][3] (OIHW), bias [M] or null, residual in y's
// layout or null (it may be y itself), y [N][M/b][H][W][b]. scratch: winograd_scratch_bytes(s,
// ctx.threads) bytes, 64-byte aligned. Call only where winograd_fits(s).
void winograd_conv3x3(const WinogradConv& s, const float* x, const float* w, const float* bias, const float* residual,
                      float* y, void* scratch, const KernelContext& ctx);

}  // namespace graphrun::kernels
