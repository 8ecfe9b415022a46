// One fresh session per graph: open, run, take the statistics, tear down.
#include "engine/api/run.h"
#include "engine/base/heap_trim.h"

#include "engine/api/trace.h"
#include "engine/api/units.h"

#include <algorithm>
#include <cstdio>
#include <thread>
#include <unistd.h>

#include "engine/base/diagnostics.h"
#include "engine/base/interrupt.h"
#include "engine/ir/device_name.h"
#include "engine/kernels/cpu/cpu_kernel.h"
#include "engine/runtime/device.h"
#include "engine/runtime/eager_session.h"

namespace graphrun {

namespace {

// The host memory a run holds outside every allocator, beside the CPU's
// tensors: each fetched output's copy on the host (made for printing, saving
// and comparing, from whichever device it lives on) and each input's value
// (copied into a counted buffer every pass, and kept for the next). Both sizes
// are known from the plan, so a run whose CPU static peak and these together
// exceed the CPU's memory limit is refused before anything is filled, read or
// run, instead of growing past the limit (and, at the default limit, into the
// kernel's OOM killer). The statistics do not count these bytes: they are no
// allocator's tensors.
std::optional<Error> check_host_copies(const Prepared& p, int64_t iterations, std::ostream& err) {
    if (!p.cpu_memory_limit || !p.plan) return std::nullopt;  // nothing to refuse against (check, dot)
    const Graph& g = p.graph();
    auto bytes_of = [](const Node& n) {
        const auto numel = static_cast<uint64_t>(checked_numel(n.shape).value_or(0));
        return numel * dtype_size(n.dtype);  // numel is at most kMaxElements: no wrap
    };
    uint64_t outputs = 0, inputs = 0;
    if (iterations > 0)
        for (const Output& o : g.outputs) outputs += bytes_of(g.node(o.id));
    for (const Node& n : g.nodes)
        if (n.op == OpKind::Input && n.valid) inputs += bytes_of(n);
    const uint64_t peak = peak_with_weights(*p.plan, "cpu");
    const uint64_t total = peak + outputs + inputs;
    if (total <= p.cpu_memory_limit) return std::nullopt;
    auto figure = [](uint64_t b) { return std::to_string(b) + " bytes (" + human_bytes(b) + ")"; };
    std::string msg = "the run needs " + figure(total) + " of host memory, more than the memory limit of " +
                      figure(p.cpu_memory_limit) + ": the static plan's peak on cpu " +
                      (p.plan->weights.count("cpu") && p.plan->weights.at("cpu") ? "with its weights " : "") + figure(peak);
    if (outputs) msg += ", the outputs' host copies " + figure(outputs);
    if (inputs) msg += ", the inputs' values " + figure(inputs);
    msg += "; refused before running";
    err << p.loaded->display << ": error: " << msg << "\n";
    return Error{ErrorKind::Runtime, msg, 0};
}

}  // namespace

RunResult run_file(const std::string& path, const RunFileOptions& opts, std::ostream& err) {
    PrepareOptions po = opts.prepare;
    // Eager mode binds every name of the program to its own value: nothing fuses away.
    if (opts.mode == ExecMode::Eager) po.fuse = false;
    po.threads = opts.threads;  // the weights are packed for the run's threads
    // The arrays fed to an ONNX model's inputs bind its free dimensions.
    if (looks_like_onnx(path)) add_feed_shapes(po, opts.feeds);
    PrepareResult pr = prepare(path, po, err);
    auto failed = [&](std::optional<Error> e) {
        RunResult r;
        r.file = pr.file;
        r.error = std::move(e);
        return r;
    };
    // Every file this run reads, also when it fails to load (a file written after all runs must spare them).
    const ReadFiles reads = files_read(*pr.prepared.loaded, "the graph file being run", &opts.feeds, &opts.files);
    if (opts.seen) opts.seen->reads.add_all(reads);
    if (!pr.ok()) return failed(std::move(pr.error));
    if (auto e = check_host_copies(pr.prepared, opts.iterations, err)) return failed(std::move(e));
    // Feeds, expected values, output names and output files are checked before
    // anything runs; the array files are read within the CPU's memory limit.
    const Graph& g = pr.prepared.graph();
    FeedOptions feeds = opts.feeds;
    feeds.memory_limit = pr.prepared.cpu_memory_limit;
    InputValues values;
    std::optional<Error> e = read_feeds(g, feeds, pr.file, values, err);
    std::vector<ExpectedValue> expected;
    OutputFileOptions files = opts.files;
    files.memory_limit = pr.prepared.cpu_memory_limit;
    if (auto e2 = load_expected(g, files, pr.file, expected, err); !e) e = std::move(e2);
    if (auto e3 = check_output_names(g, opts.files, pr.file, err); !e) e = std::move(e3);
    if (e) return failed(std::move(e));
    std::vector<OutputPath> outputs;
    e = planned_output_paths(g, opts.files, outputs, err);
    if (opts.seen) opts.seen->outputs.insert(opts.seen->outputs.end(), outputs.begin(), outputs.end());
    outputs.insert(outputs.end(), opts.other_outputs.begin(), opts.other_outputs.end());
    if (!e) e = check_output_paths(outputs, reads, err);
    if (e) return failed(std::move(e));
    // Reading arrays from files freed their buffers (the file's bytes, a
    // member's): back to the system before the session's peak, where that
    // was a MiB or more. (MobileNet-v2 at batch 16: 2 MiB of its 9.2 MiB feed.)
    uint64_t fed = 0;
    for (const InputValue& v : values) fed += v.bytes.size();
    for (const ExpectedValue& x : expected) fed += x.array.data.size();
    if (fed >= (uint64_t{1} << 20)) return_free_heap();
    RunResult r = run_prepared(pr.prepared, values, opts, err);
    if (r.error) return r;
    r.error = write_output_files(r.outputs, opts.files, err);
    if (r.error) return r;
    for (const ExpectedValue& want : expected) {
        auto got = std::find_if(r.outputs.begin(), r.outputs.end(),
                                [&](const HostTensor& t) { return t.name == want.name; });
        if (got == r.outputs.end()) {  // --iterations=0: nothing to compare is a failed comparison
            ExpectedCheck c;
            c.name = want.name;
            c.source = want.source;
            c.problem = "output '" + want.name + "' was not produced" +
                        (opts.iterations == 0 ? std::string(" (--iterations=0 runs no pass)") : std::string()) +
                        ", so it cannot be compared with " + want.source;
            r.expected.push_back(std::move(c));
        } else {
            r.expected.push_back(compare_expected(*got, want, opts.files.rtol, opts.files.atol));
        }
        const ExpectedCheck& c = r.expected.back();
        if (c.matched) continue;
        const std::string msg = mismatch_message(c, opts.files.rtol, opts.files.atol);
        err << r.file << ": error: " << msg << "\n";
        if (!r.error) r.error = Error{ErrorKind::Mismatch, msg, 0};
    }
    return r;
}

RunResult run_prepared(const Prepared& p, const InputValues& feeds, const RunFileOptions& opts, std::ostream& err) {
    RunResult r;
    const LoadedGraph& lg = *p.loaded;
    const Graph& g = lg.graph;
    const Plan& plan = *p.plan;
    r.file = lg.display;
    // An input without a value (a caller that skipped read_feeds) is refused before the session opens.
    for (const Node& n : g.nodes) {
        if (n.op != OpKind::Input || !n.valid) continue;
        const auto bytes = static_cast<uint64_t>(checked_numel(n.shape).value_or(0)) * dtype_size(n.dtype);
        const NodeId id = static_cast<NodeId>(&n - g.nodes.data());
        if (std::any_of(feeds.begin(), feeds.end(),
                        [&](const InputValue& v) { return v.id == id && v.bytes.size() == bytes; }))
            continue;
        const std::string msg = "input '" + std::string(n.display()) + "' (" + type_string(n.dtype, n.shape) +
                                ") has no value";
        err << lg.display << ": error: " << msg << "\n";
        r.error = Error{ErrorKind::Usage, msg, 0};
        return r;
    }
    if ((r.error = check_host_copies(p, opts.iterations, err))) return r;

    SessionOptions so;
    so.cleanup = opts.cleanup;
    so.threads = opts.threads ? opts.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    so.cpu_memory_limit = p.cpu_memory_limit;  // 0: the session's default
    so.profile = opts.profile;
    so.interrupt = opts.interrupt ? opts.interrupt : &g_interrupt_signal;  // the process's stop request by default
    so.progress = opts.progress;
    so.gpu.memory_limit = opts.prepare.memory_limit;
    so.gpu.allow_tf32 = opts.allow_tf32;
    so.gpu.reset_device = opts.reset_device;
    // The driver's figures for each GPU the plan uses, taken before the session opens.
    GpuRuntime* rt = nullptr;
    for (const auto& [dev, bytes] : plan.static_peak) {
        auto dn = parse_device_name(dev);
        if (!dn || dn->kind != DeviceKind::Gpu) continue;
        if (!rt) rt = gpu_runtime(nullptr);
        DriverFigures& f = r.gpu_system[dev];
        if (rt) f.before_session = rt->driver_used_bytes(dn->index, &f.why);
    }
    so.gpu_runtime = rt;
    auto driver_figures = [&](bool after_teardown) {
        for (auto& [dev, f] : r.gpu_system) {
            if (!rt) continue;
            auto v = rt->driver_used_bytes(parse_device_name(dev)->index, &f.why);
            (after_teardown ? f.after_teardown : f.before_teardown) = v;
        }
    };
    // The run's observers: declared before the session, which calls them until it closes.
    std::optional<TimelineRecorder> timeline;
    std::optional<SeriesRecorder> series;
    std::unique_ptr<RunObserver> traced;
    ObserverFanout observers;
    if (opts.timeline_rows) observers.add(&timeline.emplace(g, opts.iterations, opts.timeline_rows));
    if (opts.series_points)
        observers.add(&series.emplace(expected_node_runs(g, plan, opts.iterations), opts.series_points));
    if (opts.trace) observers.add((traced = opts.trace->begin_run(lg.display)).get());
    std::optional<BenchRecorder> bench;  // --bench, --profile=nodes (bench.h)
    if (opts.bench.passes || opts.bench.nodes) observers.add(&bench.emplace(g, opts.bench));
    so.observer = observers.empty() ? nullptr : observers.single() ? observers.single() : &observers;
    r.rss_session = resident_bytes();
    r.ran = true;
    std::optional<Error> run_error;
    std::string refused;
    // The same steps for either executor: the GPU limit check, the run, the
    // figures before teardown, the teardown, the figures after.
    auto drive = [&](auto& session, auto&& run) {
    refused = gpu_over_limit(plan, session.stats(), session.limits());
    if (!refused.empty()) err << lg.display << ": error: " << refused << "\n";
    if (refused.empty()) run_error = run();
    r.run_ms = session.run_ms();
    r.profile = session.profile();
    r.before = session.stats();
    if (traced) opts.trace->end_run(*traced, r.before);
    if (timeline) r.timeline = timeline->finish(refused.empty() && !run_error);
    if (series) {
        r.executed_nodes = series->executed();
        r.series = series->finish();
    }
    r.rss_before = resident_bytes();
    driver_figures(false);
    session.close();
    r.teardown_ms = session.teardown_ms();
    r.after = session.stats();
    r.rss_after = resident_bytes();
    driver_figures(true);
    };
    if (opts.mode == ExecMode::Eager) {
        EagerSession session(so);
        EagerRun spec;
        spec.iterations = opts.iterations;
        for (const Output& o : g.outputs) spec.fetch.push_back(o.id);
        // The program's names stay bound, holding their values, until teardown.
        for (const auto& [name, id] : g.bindings) spec.bind.emplace_back(std::string(name), id);
        spec.feeds = feed_views(feeds);
        drive(session, [&]() -> std::optional<Error> {
            std::optional<Error> e = session.run(g, spec);
            if (!e && opts.iterations > 0) e = session.fetch(g, g.outputs, r.outputs);
            return e;
        });
    } else {
        Session session(g, plan, so);
        drive(session, [&] { return session.run(feed_views(feeds), opts.iterations, g.outputs, r.outputs); });
    }
    if (bench) r.bench = bench->finish();  // the session has closed: nothing calls the recorder now
    if (!refused.empty()) {
        r.error = Error{ErrorKind::Runtime, refused, 0};
        return r;
    }
    if (run_error) {
        if (run_error->kind == ErrorKind::Interrupted) {
            err << lg.display << ": " << run_error->message << "; the session was torn down\n";
            r.error = std::move(run_error);
            return r;
        }
        r.error = describe(std::move(*run_error), lg);
        for (const std::string& d : r.error->diagnostics) err << d;
        return r;
    }
    if (opts.check_leaks) {
        std::string leaks = leak_report(r.after);
        if (!leaks.empty()) {
            err << r.file << ": error: memory left after teardown: " << leaks << "\n";
            r.error = Error{ErrorKind::Leak, "memory left after teardown: " + leaks, 0};
        }
    }
    return r;
}

std::string gpu_over_limit(const Plan& plan, const std::map<std::string, MemoryStats>& opened,
                           const std::map<std::string, uint64_t>& limits) {
    // A GPU's limit (its free memory by default) is known once its device is
    // open, and so is the workspace it holds for the session (cuBLAS, the
    // error flag, const literals), which the limit covers as well.
    for (const auto& [dev, lim] : limits) {
        auto it = plan.static_peak.find(dev);
        auto st = opened.find(dev);
        const uint64_t workspace = st == opened.end() ? 0 : st->second.workspace;
        if (device_kind(dev) != DeviceKind::Gpu || it == plan.static_peak.end()) continue;
        // The weights are placed already (load), so they are checked as part of the plan, not as held.
        const uint64_t bytes = peak_with_weights(plan, dev), weights = bytes - it->second;
        if (bytes > lim || (workspace > 0 && bytes + workspace > lim))
            return bytes > lim ? over_limit_message(dev, bytes, lim, weights)
                               : over_limit_message(dev, bytes, lim - workspace, weights) + " (the limit of " +
                                     std::to_string(lim) + " bytes less the " + std::to_string(workspace) +
                                     " bytes of workspace " + dev + " holds for the session)";
    }
    return "";
}

Error describe(Error e, const LoadedGraph& lg) {
    Diagnostics d(lg.display, lg.source);
    d.error(e.place, e.message);
    e.diagnostics.assign(1, d.format(d.all().front()));
    return e;
}

const char* exec_mode_name(ExecMode m) { return m == ExecMode::Eager ? "eager" : "graph"; }

std::string leak_report(const std::map<std::string, MemoryStats>& after) {
    std::string out;
    for (const auto& [dev, s] : after) {
        if (s.in_use || s.pending || s.reserved || s.live || s.allocs != s.frees || s.workspace || s.weights)
            out += dev + ": in_use " + std::to_string(s.in_use) + ", pending " + std::to_string(s.pending) +
                   ", reserved " + std::to_string(s.reserved) + ", live " + std::to_string(s.live) + ", allocs " +
                   std::to_string(s.allocs) + " vs frees " + std::to_string(s.frees) +
                   (s.workspace ? ", workspace " + std::to_string(s.workspace) : std::string()) +
                   (s.weights ? ", weights " + std::to_string(s.weights) : std::string()) + "; ";
    }
    return out;
}

void stop_compute_workers() { stop_blas_workers(); }

}  // namespace graphrun
