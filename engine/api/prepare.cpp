// Load, validate, fetch, place, fuse, plan, refuse an over-limit static peak.
#include "engine/api/prepare.h"

#include <algorithm>
#include <thread>

#include "engine/api/devices.h"
#include "engine/api/units.h"
#include "engine/base/diagnostics.h"
#include "engine/base/heap_trim.h"
#include "engine/base/interrupt.h"
#include "engine/base/printable.h"
#include "engine/runtime/allocator.h"
#include "engine/ir/device_name.h"
#include "engine/kernels/cpu/dnnl_kernels.h"
#include "engine/plan/channels_last.h"
#include "engine/plan/fuse.h"
#include "engine/plan/prepack.h"
#include "engine/plan/storage_types.h"

namespace graphrun {

namespace {

// Whether placing g can ask about a GPU: some node, or the default device,
// names one (or a name that does not parse, which placement reports).
// Placement asks nothing about GPUs for a node it puts on the CPU, so when
// none does (--device=cpu and no `with device(gpu…)`) the CUDA plugin, with
// cuBLAS behind it, is not loaded: about 6 ms of each such run's CPU time.
bool placement_may_want_a_gpu(const Graph& g, const PlacementOptions& placement) {
    auto cpu = [](std::string_view name) {
        const std::optional<DeviceName> d = parse_device_name(name);
        return d && d->kind == DeviceKind::Cpu;
    };
    if (!cpu(placement.device)) return true;
    for (const Node& n : g.nodes)
        if (!n.device.empty() && !cpu(n.device)) return true;
    return false;
}

}  // namespace

std::optional<Error> load_error(const LoadedGraph& lg) {
    if (lg.ok()) return std::nullopt;
    std::string first = lg.diag.all().empty() ? "" : lg.diag.format(lg.diag.all().front());
    if (first.find('\n') != std::string::npos) first.resize(first.find('\n'));
    // A file that cannot be read, or holds more than the memory limit, is a
    // runtime error; anything else wrong with it makes an invalid graph.
    // An option binding what the file lacks (--dim, --input-shape) is a usage error.
    const bool runtime = lg.read_failed || lg.diag.over_limit();
    Error e{runtime ? ErrorKind::Runtime : lg.diag.usage() ? ErrorKind::Usage : ErrorKind::InvalidGraph, first, 0};
    if (const int sig = interrupted()) e = Error{ErrorKind::Interrupted, first, sig};  // the load stopped for it
    e.diagnostics = lg.diag.printed();  // as printed: warnings beyond their cap counted, not listed
    return e;
}

std::optional<Error> apply_fetch(Graph& g, const std::vector<std::string>& fetch) {
    if (fetch.empty()) return std::nullopt;
    std::vector<Output> outs;
    for (const std::string& name : fetch) {
        auto id = g.find_fetchable(name);
        if (!id) {
            std::string error = "--fetch=" + name + ": no top-level name or node '" + name + "' in " + g.file;
            if (auto near = nearest_name(name, g.fetchable_names()); !near.empty())
                error += "; did you mean '" + near + "'?";
            return Error{ErrorKind::Usage, std::move(error)};
        }
        outs.push_back(Output{name, *id, {}});
    }
    g.outputs = std::move(outs);
    return std::nullopt;
}

std::string over_limit_message(const std::string& device, uint64_t bytes, uint64_t limit, uint64_t weights) {
    const std::string held = weights ? " (its tensors' peak " + std::to_string(bytes - weights) + " bytes and " +
                                           std::to_string(weights) + " bytes of weights)"
                                     : "";
    return "the static plan needs " + std::to_string(bytes) + " bytes (" + human_bytes(bytes) + ") on " + device +
           " at its peak" + held + ", more than the memory limit of " + std::to_string(limit) + " bytes (" +
           human_bytes(limit) + "); refused before running";
}

uint64_t peak_with_weights(const Plan& plan, const std::string& device) {
    auto p = plan.static_peak.find(device);
    auto w = plan.weights.find(device);
    const uint64_t peak = p == plan.static_peak.end() ? 0 : p->second;
    const uint64_t weights = w == plan.weights.end() ? 0 : w->second;
    return peak + weights < peak ? UINT64_MAX : peak + weights;
}

void add_feed_shapes(PrepareOptions& opts, const FeedOptions& feeds) {
    FeedOptions f = feeds;
    f.memory_limit = opts.memory_limit ? opts.memory_limit : default_cpu_memory_limit();
    for (GivenShape& s : feed_shapes(f)) opts.shapes.shapes.push_back(std::move(s));
}

PrepareResult load_and_place(const std::string& path, const PrepareOptions& opts, std::ostream& err) {
    return load_and_place(load_graph(path, {}, opts.shapes, opts.on_parsed), opts, err);
}

PrepareResult load_and_place(std::unique_ptr<LoadedGraph> loaded, const PrepareOptions& opts, std::ostream& err) {
    PrepareResult r;
    r.prepared.loaded = std::move(loaded);
    LoadedGraph& lg = *r.prepared.loaded;
    r.file = lg.display;
    lg.diag.print(err);  // errors, or warnings only
    if ((r.error = load_error(lg))) return r;
    Graph& g = lg.graph;
    if ((r.error = apply_fetch(g, opts.fetch))) {
        err << "graphrun: error: " << r.error->message << "\n";
        return r;
    }
    std::optional<Error> perr;
    if (opts.devices) perr = place(g, opts.placement, *opts.devices, err);
    else if (placement_may_want_a_gpu(g, opts.placement)) perr = place(g, opts.placement, device_availability(), err);
    else perr = place(g, opts.placement, DeviceAvailability{}, err);
    if (const int sig = interrupted()) {
        if (!perr) perr = runtime_error_at("interrupted by " + signal_name(sig) + " while placing; nothing ran");
        perr->kind = ErrorKind::Interrupted;
        perr->signal = sig;
    }
    if (perr) {
        Diagnostics d(lg.display, lg.source);
        d.set_first_line(lg.diag.first_line());
        d.error(perr->place, perr->message);
        perr->diagnostics.assign(1, d.format(d.all().front()));
        d.print(err);
        r.error = std::move(perr);
        return r;
    }
    // Arithmetic on the storage types runs in their compute types (engine/plan/storage_types.h).
    widen_storage_types(g);
    // The plan, check's listing and the run all see the fused graph.
    // Then the values kept channels-last between oneDNN convs (engine/plan/channels_last.h);
    // --no-fuse (and the live session, where every name holds its value) keeps NCHW, and
    // so does --memory-limit: a conv next to an NHWC value cannot hand over to our kernel
    // (NCHW, less scratch) where the limit has no room for oneDNN's packed filter.
    if (opts.fuse) {
        // The int8 conv has no kernel of ours to hand over to either.
        fuse_graph(g, opts.memory_limit ? nullptr : kernels::dnnl_int8_runs);
        if (!opts.memory_limit) {
            // Winograd's convs are among the marked ones (and a graph without a conv ends here).
            if (mark_channels_last(g, kernels::dnnl_conv_runs_channels_last, kernels::dnnl_free_op_block()) > 0)
                for (Node& n : g.nodes) n.winograd = kernels::dnnl_conv_runs_winograd(g, n);
        }
        // Then each constant weight one oneDNN kernel reads in a layout of its
        // own, packed into it once and held so (engine/plan/prepack.h).
        if (!opts.memory_limit && opts.prepack) {
            const int threads =
                opts.threads > 0 ? opts.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
            prepack_weights(g, kernels::dnnl_pack_weight, threads);
        }
    }
    // What reading a model freed (its parsed form) goes back to the system
    // before a session opens; fusion and pre-packing hand back what they free
    // themselves. Not for a script (nor for each REPL statement, which comes
    // here too): nothing large was freed, and the call walks the heap.
    if (g.from_onnx) return_free_heap();
    return r;
}

std::optional<Error> plan_prepared(Prepared& p, const PrepareOptions& opts, std::ostream& err) {
    const Graph& g = p.graph();
    const std::string& file = p.loaded->display;
    std::vector<NodeId> outputs;
    outputs.reserve(g.outputs.size());
    for (const Output& o : g.outputs) outputs.push_back(o.id);
    std::string plan_error;
    p.plan = compile_plan(g, outputs, &plan_error);
    if (const int sig = interrupted()) {  // compile_plan stops early for it
        p.plan.reset();
        const std::string msg = "interrupted by " + signal_name(sig) + " while planning; nothing ran";
        err << terminal_text(file) << ": error: " << msg << "\n";
        return Error{ErrorKind::Interrupted, msg, sig};
    }
    if (!p.plan) {
        err << file << ": error: " << plan_error << "\n";
        return Error{ErrorKind::InvalidGraph, plan_error, 0};
    }
    if (!opts.refuse_over_limit) return std::nullopt;
    p.cpu_memory_limit = opts.memory_limit ? opts.memory_limit : default_cpu_memory_limit();
    for (const auto& [dev, peak] : p.plan->static_peak) {
        bool gpu = device_kind(dev) == DeviceKind::Gpu;
        // The weights are held beside the tensors, under the same limit.
        const uint64_t bytes = peak_with_weights(*p.plan, dev);
        // A GPU without --memory-limit is checked against its free memory once it is open.
        if (bytes > p.cpu_memory_limit && (!gpu || opts.memory_limit)) {
            std::string msg = over_limit_message(dev, bytes, p.cpu_memory_limit, bytes - peak);
            err << file << ": error: " << msg << "\n";
            return Error{ErrorKind::Runtime, msg, 0};
        }
    }
    return std::nullopt;
}

PrepareResult prepare(const std::string& path, const PrepareOptions& opts, std::ostream& err) {
    // A const's array file is read within the memory limit the run will have.
    InputLimits limits;
    if (opts.refuse_over_limit) limits.memory_limit = opts.memory_limit ? opts.memory_limit : default_cpu_memory_limit();
    return prepare(load_graph(path, limits, opts.shapes, opts.on_parsed), opts, err);
}

PrepareResult prepare(std::unique_ptr<LoadedGraph> lg, const PrepareOptions& opts, std::ostream& err) {
    PrepareResult r = load_and_place(std::move(lg), opts, err);
    if (r.ok()) r.error = plan_prepared(r.prepared, opts, err);
    return r;
}

}  // namespace graphrun
