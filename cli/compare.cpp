// `graphrun compare FILE`: the file under the three cleanup strategies, a
// fresh session each, side by side; with --plot, in_use over the executed
// nodes of each as an SVG line chart.
#include <iomanip>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <vector>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/svg.h"
#include "cli/table.h"
#include "engine/api/output_paths.h"
#include "engine/api/interrupt.h"
#include "engine/api/output_text.h"

namespace graphrun::cli {

namespace {

using ojson = nlohmann::ordered_json;

constexpr CleanupStrategy kStrategies[] = {CleanupStrategy::Background, CleanupStrategy::Safepoint,
                                           CleanupStrategy::Close};
constexpr size_t kPlotPoints = 2000;  // per series, at most about

const char* color_of(CleanupStrategy s) {
    switch (s) {
        case CleanupStrategy::Background: return "#1f77b4";
        case CleanupStrategy::Safepoint: return "#2ca02c";
        case CleanupStrategy::Close: return "#d62728";
    }
    return "black";
}

std::string ms_text(double ms) {
    std::ostringstream s;
    s << std::fixed << std::setprecision(3) << ms;
    return s.str();
}

// One run of the comparison: a strategy in a mode.
struct Variant {
    CleanupStrategy strategy;
    ExecMode mode;
};

// "background", or "background (eager)" when the comparison is not of graph mode alone.
std::string label(const Variant& v, bool modes_shown) {
    std::string s = cleanup_name(v.strategy);
    if (modes_shown) s += std::string(" (") + exec_mode_name(v.mode) + ")";
    return s;
}

void print_text(const std::string& file, int64_t iterations, const std::vector<Variant>& variants, bool modes_shown,
                const std::vector<RunResult>& runs, std::ostream& out) {
    out << "compare: " << terminal_text(file) << ", iterations=" << iterations
        << (modes_shown ? ", a fresh session per strategy and mode" : ", a fresh session per strategy")
        << " (bytes; pending at the end of the run, before teardown)\n";
    TextTable table({"strategy", "device", "peak", "pending_peak", "pending_at_end", "allocs", "run_ms", "teardown_ms"},
                    2);
    for (size_t i = 0; i < runs.size(); ++i) {
        const RunResult& r = runs[i];
        for (const auto& [dev, s] : r.before)
            table.add({label(variants[i], modes_shown), dev, std::to_string(s.peak), std::to_string(s.pending_peak),
                       std::to_string(s.pending), std::to_string(s.allocs), ms_text(r.run_ms), ms_text(r.teardown_ms)},
                      {{2, s.peak}, {3, s.pending_peak}, {4, s.pending}});
    }
    table.print(out);
    for (size_t i = 0; i < runs.size(); ++i)
        if (runs[i].error) out << "  " << label(variants[i], modes_shown) << ": error: " << terminal_text(runs[i].error->message, kMaxShownLine)
                << "\n";
}

void print_json(const std::string& file, int64_t iterations, const std::vector<Variant>& variants, bool modes_shown,
                const std::vector<RunResult>& runs, std::ostream& out) {
    ojson doc{{"file", file}, {"iterations", iterations}};
    auto list = ojson::array();
    for (size_t i = 0; i < runs.size(); ++i) {
        const RunResult& r = runs[i];
        ojson mem = ojson::object();
        for (const auto& [dev, s] : r.before)
            mem[dev] = ojson{{"peak", s.peak}, {"pending_peak", s.pending_peak}, {"pending_at_end", s.pending},
                             {"allocs", s.allocs}, {"frees", s.frees}};
        auto series = ojson::array();
        for (const SeriesPoint& p : r.series) series.push_back(ojson{{"node", p.node}, {"in_use", p.in_use}});
        ojson one{{"cleanup", cleanup_name(variants[i].strategy)}};
        if (modes_shown) one["mode"] = exec_mode_name(variants[i].mode);
        one["memory"] = std::move(mem);
        one["run_ms"] = r.run_ms;
        one["teardown_ms"] = r.teardown_ms;
        one["executed_nodes"] = r.executed_nodes;
        one["series"] = std::move(series);
        if (r.error) one["error"] = ojson{{"code", exit_code(*r.error)}, {"message", r.error->message}};
        list.push_back(std::move(one));
    }
    doc["strategies"] = std::move(list);
    out << dump_json(doc) << "\n";
}

LineChart chart_of(const std::string& file, int64_t iterations, const std::vector<Variant>& variants,
                   bool modes_shown, const std::vector<RunResult>& runs) {
    LineChart c;
    c.title = "in_use of " + file + ", " + std::to_string(iterations) + " iteration" + (iterations == 1 ? "" : "s") +
              ", by cleanup strategy";
    c.x_label = "executed nodes";
    c.y_label = "in_use";
    std::vector<std::string> devices;
    for (const RunResult& r : runs)
        for (const auto& [dev, s] : r.before)
            if (std::find(devices.begin(), devices.end(), dev) == devices.end()) devices.push_back(dev);
    for (size_t i = 0; i < runs.size(); ++i) {
        for (size_t d = 0; d < devices.size(); ++d) {
            ChartSeries s;
            s.name = label(variants[i], modes_shown) + (devices.size() > 1 ? " (" + devices[d] + ")" : "");
            s.color = color_of(variants[i].strategy);
            s.dashed = d > 0 || variants[i].mode == ExecMode::Eager;
            for (const SeriesPoint& p : runs[i].series) {
                auto it = p.in_use.find(devices[d]);
                if (it != p.in_use.end()) s.points.emplace_back(static_cast<double>(p.node), static_cast<double>(it->second));
            }
            c.series.push_back(std::move(s));
        }
    }
    return c;
}

}  // namespace

int compare_command(const CompareOptions& opts, std::ostream& out, std::ostream& err) {
    // Loaded, placed and planned once (its warnings said once); each strategy
    // runs it in a fresh session.
    PrepareOptions po = opts.engine.prepare;
    // Eager mode binds every name to its own value: with it, both modes run the unfused graph.
    for (ExecMode m : opts.modes) po.fuse = po.fuse && m != ExecMode::Eager;
    po.threads = opts.engine.threads;  // the weights are packed for the runs' threads
    if (looks_like_onnx(opts.file)) add_feed_shapes(po, opts.engine.feeds);  // they bind its free dimensions
    PrepareResult pr = prepare(opts.file, po, err);
    if (!pr.ok()) return exit_code(*pr.error);
    // The inputs' values (--input, --fill), once for the three runs; their
    // array files are read within the CPU's memory limit, as run reads them.
    FeedOptions feeds = opts.engine.feeds;
    feeds.memory_limit = pr.prepared.cpu_memory_limit;
    InputValues values;
    if (std::optional<Error> e = read_feeds(pr.prepared.graph(), feeds, pr.file, values, err)) return exit_code(*e);
    // The plot is no file the runs read and can be written: said before they run.
    if (!opts.plot.empty()) {
        const ReadFiles reads = files_read(*pr.prepared.loaded, "the graph file being compared", &opts.engine.feeds,
                                           nullptr);
        if (std::optional<Error> e = check_output_paths({{opts.plot, "--plot=" + opts.plot, true, "the plot"}}, reads, err))
            return exit_code(*e);
    }
    std::vector<Variant> variants;
    for (CleanupStrategy s : kStrategies)
        for (ExecMode m : opts.modes) variants.push_back(Variant{s, m});
    const bool modes_shown = opts.modes.size() != 1 || opts.modes[0] != ExecMode::Graph;
    std::vector<RunResult> runs;
    int code = kExitOk;
    for (const Variant& v : variants) {
        if (interrupted()) break;  // a signal stopped the run before: the other strategies do not run
        RunFileOptions engine = opts.engine;
        engine.interrupt = &g_interrupt_signal;
        engine.cleanup = v.strategy;
        engine.mode = v.mode;
        engine.series_points = kPlotPoints;
        runs.push_back(run_prepared(pr.prepared, values, engine, err));
        const RunResult& r = runs.back();
        if (r.error && code == kExitOk) code = exit_code(*r.error);
    }
    if (runs.empty()) {  // the signal came before the first run
        err << terminal_text(pr.file) << ": interrupted by " << signal_name(interrupted()) << "; nothing ran\n";
        return 128 + interrupted();
    }
    const std::string& file = runs[0].file;
    if (opts.format == Format::Json) print_json(file, opts.engine.iterations, variants, modes_shown, runs, out);
    else print_text(file, opts.engine.iterations, variants, modes_shown, runs, out);
    if (!opts.plot.empty()) {
        std::string why;
        if (!write_file_atomically(opts.plot, line_chart_svg(chart_of(file, opts.engine.iterations, variants, modes_shown, runs)), why)) {
            err << "graphrun: error: --plot=" << opts.plot << ": the plot: " << why << "\n";
            if (code == kExitOk) code = kExitRuntime;
        }
    }
    return code;
}

}  // namespace graphrun::cli
