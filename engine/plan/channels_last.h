// The layout pass (issue 25 item 3): run after fusion, before the plan, it
// marks the values that stay channels-last (NHWC) between two convs instead
// of being converted back to NCHW after each (ONNX Runtime's NCHWc
// transformer does the same with its blocked layout). A value is marked
// (Node::channels_last) when the node that writes it and every node that
// reads it run channels-last and every read is in the same block and is a
// conv's input x or fused residual (`runs_channels_last`: oneDNN's conv, which
// the API layer asks the CPU kernels about) or an input of a max_pool or of a
// concat along the channels (4-D f32 on the CPU; our kernels run these on
// NHWC when all their inputs and their output are, all or nothing). A value
// that is an output (the script's or --fetch's), a repeat's carried value,
// read by any other node or a node on another device stays NCHW, so nothing
// but such nodes ever sees the layout; so does the output of a conv whose x,
// larger than that output, comes in NCHW from another op (its conversion
// would cost more than it saves). NHWC has the bytes of NCHW (no padding), so
// the plan's sizes, its static peak and the run's peak are those of the NCHW
// graph. prepare (engine/api/prepare.cpp) runs it after fusion,
// not under --no-fuse or --memory-limit (such a conv has no fallback to our NCHW kernel).
#pragma once
#include <cstddef>

#include "engine/ir/graph.h"

namespace graphrun {

using RunsChannelsLast = bool (*)(const Graph& g, const Node& n);

// Marks the values as above (none with a null runs_channels_last, every
// mark of an earlier call cleared); returns how many were marked.
size_t mark_channels_last(Graph& g, RunsChannelsLast runs_channels_last);

}  // namespace graphrun
