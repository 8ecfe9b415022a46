// The layout pass (issue 25 item 3): run after fusion, before the plan, it
// marks the values that stay channels-last between two convs instead of being
// converted back to NCHW after each (ONNX Runtime's NCHWc transformer does the
// same with its blocked layout). A value is marked (Node::channels_last) when
// the node that writes it and every node that reads it run channels-last and
// every read is in the same block and is a conv's input x or fused residual
// (`runs_channels_last`: oneDNN's conv, which the API layer asks the CPU
// kernels about) or an input of a max_pool or of a concat along the channels
// (4-D f32 on the CPU; our kernels run these on NHWC when all their inputs and
// their output are, all or nothing), or the input of a global_avg_pool or
// global_max_pool (our kernel reads any of the layouts below; its [N, C, 1, 1]
// output has NCHW's bytes in all of them and is never marked). A value that is an output (the script's
// or --fetch's), a repeat's carried value, read by any other node or a node on
// another device stays NCHW, so nothing but such nodes ever sees the layout;
// so does the output of a conv whose x, larger than that output, comes in NCHW
// from another op (its conversion would cost more than it saves).
//
// Which channels-last layout (Node::channel_block): the marked values joined
// by a conv (its x, residual and output) or by a max_pool or concat (its
// inputs and output) form a group that one layout must serve, since oneDNN's
// fast convs read and write one layout (a conv from nChw8c to NHWC is its
// reference code). A group with no max_pool or concat is held in oneDNN's
// blocked nChw16c where every value's channels are a multiple of 16, else
// nChw8c where they are of 8, provided every conv of the group runs fast in
// it (runs_channels_last: oneDNN's nChw8c code is AVX2 only, and on an Intel
// CPU with AVX-512 its NHWC code is faster, so it refuses 8 there); otherwise
// NHWC. A group our max_pool or concat reads or writes is
// blocked only in `free_block` (the caller's choice: 8 where oneDNN has no
// AVX-512, so that its windowed convs on NHWC would reorder into nChw8c and
// back around each run; 0, NHWC only, elsewhere), else NHWC: our max_pool
// reads a block as an NHWC image of `block` channels, our concat copies each
// image's blocks of each input in turn. On a 2-core AVX2 EPYC that took
// ResNet-18's and SqueezeNet's reorders out of every 3x3 conv (batch 16:
// reserved 71 -> 65 MB and 69 -> 63 MB; SqueezeNet 84 -> 72-78 ms a pass).
// On a 2-core Zen 4 (AVX-512), MobileNet-v2's batch-16 convs ran 1.3 to 1.9x
// faster blocked than on NHWC (a depthwise 144-channel 3x3 at 56x56: 2.4 ->
// 1.4 ms; the 144 -> 24 projection with its residual: 2.9 -> 1.7 ms), and
// ResNet-18's as fast. Every layout has the bytes of NCHW (no padding: the
// channels are a multiple of the block), so the plan's sizes, its static peak
// and the run's peak are those of the NCHW graph. prepare
// (engine/api/prepare.cpp) runs it after fusion, not under --no-fuse or
// --memory-limit (such a conv has no fallback to our NCHW kernel).
#pragma once
#include <cstddef>

#include "engine/ir/graph.h"

namespace graphrun {

// Whether oneDNN's conv n runs fast with its x, residual and output in the
// channels-last layout `block` (0 NHWC, 8 nChw8c, 16 nChw16c).
using RunsChannelsLast = bool (*)(const Graph& g, const Node& n, int block);

// Marks the values as above (none with a null runs_channels_last, every
// mark of an earlier call cleared); returns how many were marked. free_block:
// the blocked layout (8 or 16) a group with a max_pool or concat may be held
// in; 0 keeps such groups NHWC.
size_t mark_channels_last(Graph& g, RunsChannelsLast runs_channels_last, int free_block = 0);

}  // namespace graphrun
