// Device placement (SPEC section 5): which device each node runs on, with soft
// fallback to the CPU and the --log-placement lines.
#pragma once
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "engine/base/error.h"
#include "engine/ir/device_name.h"
#include "engine/ir/graph.h"

namespace graphrun {

struct PlacementOptions {
    std::string device = "auto";  // for nodes that name none: auto, cpu, gpu, gpu:N ...
    bool soft = true;             // fall back to the CPU where a GPU cannot be used
    bool log = false;             // print one line per node to the log stream
};

// What the process can use. Without CUDA support every GPU request has `why_no_gpu`
// as its cause.
struct DeviceAvailability {
    int gpu_count = 0;
    std::string why_no_gpu = "graphrun was built without CUDA support";
    // Whether a usable GPU has a kernel for this op and dtype (optional).
    std::function<bool(OpKind, DType)> gpu_supports;
    // Per GPU index, why it cannot be used though listed ("" or missing: it
    // can): a GPU older than this build's kernels on a machine with a newer one.
    std::vector<std::string> gpu_unusable;
};

// Sets Node::placed for every node of a validated graph. Warnings (one per
// cause) and log lines go to `log`. Returns an error (exit 1) only without soft
// placement: ErrorKind::Runtime, naming the node, the device and the cause,
// at the node's place.
std::optional<Error> place(Graph& g, const PlacementOptions& opts,
                           const DeviceAvailability& avail, std::ostream& log);

}  // namespace graphrun
