// `graphrun run`: one fresh graph and session per file; results, then the
// statistics before and after teardown.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <optional>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "cli/app.h"
#include "cli/bench_output.h"
#include "cli/commands.h"
#include "cli/data_options.h"
#include "cli/progress.h"
#include "cli/run_json.h"
#include "cli/table.h"
#include "cli/observe_output.h"
#include "cli/values.h"
#include "engine/api/output_paths.h"
#include "engine/api/interrupt.h"
#include "engine/api/output_text.h"
#include "engine/api/run.h"
#include "engine/api/units.h"
#include "engine/ir/device_name.h"

namespace graphrun::cli {

namespace {

int signal_exit_code(int sig) { return 128 + sig; }

std::string figure_text(const std::optional<uint64_t>& v) {
    return v ? std::to_string(*v) + " bytes (" + human_bytes(*v) + ")" : std::string("unknown");
}

// The driver-level line for each GPU; after teardown, what stays above the
// figure before the session is the CUDA context and library code, not tensors.
void print_gpu_system(const RunResult& r, bool reset_device, int moment, std::ostream& out) {
    for (const auto& [dev, f] : r.gpu_system) {
        const std::optional<uint64_t>& v = moment == 0 ? f.before_session : moment == 1 ? f.before_teardown : f.after_teardown;
        const char* label = moment == 0 ? "before the session" : moment == 1 ? "before teardown" : "after teardown";
        out << (moment == 0 ? "" : "  ") << "system (" << dev << "): driver-reported used memory " << label << ": ";
        if (!v) {
            out << "unknown (" << f.why << ")\n";
            continue;
        }
        out << figure_text(v);
        if (moment == 2 && f.before_session) {
            uint64_t residue = *v > *f.before_session ? *v - *f.before_session : 0;
            out << "; " << residue << " bytes (" << human_bytes(residue) << ") above the figure before the session "
                << (reset_device ? "remain after the CUDA context was ended (--reset-device)"
                                   : "are the CUDA context and library code, not graph tensors (--reset-device ends the context)");
        }
        out << "\n";
    }
}

void print_table(const std::string& title, const std::map<std::string, MemoryStats>& stats, uint64_t rss,
                 const std::string& rss_label, std::ostream& out) {
    print_memory_table(title, stats, out);
    out << "  system (cpu): process resident memory " << rss_label << ": " << rss << " bytes ("
        << human_bytes(rss) << ")\n";
}

void print_text(const RunResult& r, const RunOptions& ro, std::ostream& out) {
    const RunFileOptions& opts = ro.engine;
    if (ro.files.size() > 1 || !ro.test_data.empty()) out << "== " << terminal_text(r.file) << "\n";
    for (const HostTensor& t : r.outputs) {
        out << terminal_text(t.name) << ": " << type_string(t.dtype, t.shape) << " (" << t.device << ")\n";
        if (ro.no_data) {
            const ValueSummary s = summarize(t);
            auto bare = [](std::string v) { return v.front() == '"' ? v.substr(1, v.size() - 2) : v; };
            out << "min " << bare(s.min) << ", max " << bare(s.max) << ", mean " << bare(s.mean) << ", nan_count "
                << s.nan_count << "\n\n";
        } else {
            write_values(out, t, ro.full);
            out << "\n\n";
        }
    }
    // --expected-output: a line per output that matched (a mismatch was said on stderr).
    bool compared = false;
    for (const ExpectedCheck& c : r.expected) {
        if (!c.matched) continue;
        out << "expected " << terminal_text(c.name) << ": ok, " << check_figures(c, opts.files.rtol, opts.files.atol)
            << "\n";
        compared = true;
    }
    if (compared) out << "\n";
    if (!r.ran) return;
    out << "system (cpu): process resident memory before the session: " << r.rss_session << " bytes ("
        << human_bytes(r.rss_session) << ")\n";
    print_gpu_system(r, opts.reset_device, 0, out);
    print_table("memory before teardown", r.before, r.rss_before, "before teardown", out);
    print_gpu_system(r, opts.reset_device, 1, out);
    print_table("memory after teardown", r.after, r.rss_after, "after teardown", out);
    print_gpu_system(r, opts.reset_device, 2, out);
    std::ostringstream line;
    line << std::fixed << std::setprecision(3) << "session: cleanup=" << cleanup_name(opts.cleanup)
         << (opts.mode == ExecMode::Eager ? " mode=eager" : "") << " iterations=" << opts.iterations << " run " << r.run_ms << " ms, teardown " << r.teardown_ms << " ms";
    out << line.str() << "\n";
    if (opts.bench.passes) print_bench(r.bench, out);
    if (opts.profile) {
        out << "profile (per op, slowest first):\n";
        out << "  " << std::left << std::setw(16) << "op" << std::right << std::setw(10) << "count" << std::setw(14)
            << "time ms" << std::setw(16) << "bytes" << "\n";
        for (const OpProfile& p : r.profile) {
            std::ostringstream ms;
            ms << std::fixed << std::setprecision(3) << p.ms;
            out << "  " << std::left << std::setw(16) << p.op << std::right << std::setw(10) << p.count
                << std::setw(14) << ms.str() << std::setw(16) << p.bytes << "\n";
        }
    }
    if (opts.bench.nodes) print_node_profile(r.bench, opts.bench.passes, out);
    if (opts.timeline_rows) print_timeline(r.timeline, opts.iterations, out);
}

// The progress line: asked for, refused, or by default when stderr is a
// terminal and the output is text.
bool show_progress(const RunOptions& opts) {
    if (opts.progress != Toggle::Auto) return opts.progress == Toggle::On;
    return opts.format == Format::Text && isatty(STDERR_FILENO);
}

int run_files(const RunOptions& opts, RunFileOptions engine, std::ostream& out, std::ostream& err) {
    int code = kExitOk;
    for (const std::string& file : opts.files) {
        if (int sig = interrupted()) {  // interrupted between files: the rest do not run
            err << "graphrun: interrupted by " << signal_name(sig) << "; " << file << " and the files after it did not run\n";
            return code == kExitOk ? signal_exit_code(sig) : code;
        }
        RunResult r;
        if (show_progress(opts)) {
            ProgressLine progress(err, file == "-" ? "<stdin>" : file, engine.iterations);
            engine.progress = progress.counters();
            r = run_file(file, engine, progress.messages());
            engine.progress = nullptr;
        } else {
            r = run_file(file, engine, err);
        }
        if (opts.format == Format::Json) print_run_json(r, engine, opts.no_data, out);
        else print_text(r, opts, out);
        out.flush();
        if (!r.error) continue;
        if (code == kExitOk) code = exit_code(*r.error);
        if (r.error->kind == ErrorKind::Interrupted) break;
    }
    return code;
}

// The test data sets of --test-data=DIR in their number's order: DIR's
// test_data_set_N folders, or DIR itself where it holds input_K.pb files.
std::vector<std::string> test_data_sets(const std::string& dir) {
    std::vector<std::pair<uint64_t, std::string>> sets;
    std::error_code ec;
    bool own_inputs = false;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        const std::string f = e.path().filename().string();
        own_inputs = own_inputs || (f.rfind("input_", 0) == 0 && e.path().extension() == ".pb");
        const std::string prefix = "test_data_set_";
        if (f.rfind(prefix, 0) != 0 || !e.is_directory(ec)) continue;
        uint64_t k = 0;
        const char* end = f.data() + f.size();
        auto [p, err2] = std::from_chars(f.data() + prefix.size(), end, k);
        if (err2 != std::errc() || p != end) continue;
        sets.emplace_back(k, e.path().string());
        if (sets.size() > 10000) break;
    }
    std::sort(sets.begin(), sets.end());
    std::vector<std::string> out;
    for (auto& s : sets) out.push_back(std::move(s.second));
    if (out.empty() && own_inputs) out.push_back(dir);
    return out;
}

int run_test_data(const RunOptions& opts, RunFileOptions engine, std::ostream& out, std::ostream& err) {
    auto usage = [&](const std::string& msg) {
        err << "graphrun: error: --test-data=" << opts.test_data << ": " << msg << "\n";
        return kExitUsage;
    };
    if (opts.files.size() != 1) return usage("runs one model; " + std::to_string(opts.files.size()) + " files are given");
    if (!engine.feeds.inputs.empty() || !engine.files.expected.empty() || engine.feeds.fill != FillMode::None)
        return usage("each set gives the inputs and the expected outputs; --input, --fill and --expected-output "
                     "cannot be given with it");
    std::error_code ec;
    if (!std::filesystem::is_directory(opts.test_data, ec)) return usage("not a folder");
    const std::vector<std::string> sets = test_data_sets(opts.test_data);
    if (sets.empty()) return usage("holds no test_data_set_N folders (nor input_K.pb files)");
    int code = kExitOk;
    size_t passed = 0, compared = 0, ran = 0;
    std::vector<std::string> failed;
    const std::string& file = opts.files.front();
    for (const std::string& set : sets) {
        if (int sig = interrupted()) {
            err << "graphrun: interrupted by " << signal_name(sig) << "; " << set << " and the sets after it did not run\n";
            return code == kExitOk ? signal_exit_code(sig) : code;
        }
        RunFileOptions e = engine;
        e.feeds.inputs = {ArraySource{"--input", "", set, ""}};
        bool has_expected = false;
        for (const auto& f : std::filesystem::directory_iterator(set, ec)) {
            const std::string name = f.path().filename().string();
            has_expected = has_expected || (name.rfind("output_", 0) == 0 && f.path().extension() == ".pb");
        }
        if (has_expected) e.files.expected = {ArraySource{"--expected-output", "", set, ""}};
        RunResult r = run_file(file, e, err);
        r.file = file + " (" + std::filesystem::path(set).filename().string() + ")";
        if (opts.format == Format::Json) print_run_json(r, e, opts.no_data, out);
        else print_text(r, opts, out);
        out.flush();
        ++ran;
        compared += has_expected;
        const bool ok = !r.error;
        passed += ok && has_expected;
        if (!ok) failed.push_back(std::filesystem::path(set).filename().string());
        if (r.error && code == kExitOk) code = exit_code(*r.error);
        if (r.error && r.error->kind == ErrorKind::Interrupted) break;
    }
    // One line for the whole folder: on stdout in text, on stderr in JSON (stdout holds one document per set).
    std::ostream& report = opts.format == Format::Json ? err : out;
    report << "test data " << opts.test_data << ": " << ran << " set" << (ran == 1 ? "" : "s") << " ran, "
        << passed << " of " << compared << " matched their expected outputs";
    if (!failed.empty()) {
        report << "; failed:";
        for (const std::string& f : failed) report << " " << f;
    }
    report << "\n";
    return code;
}

}  // namespace

int run_command(const RunOptions& opts, std::ostream& out, std::ostream& err) {
    // SIGINT/SIGTERM (app.cpp's handler): the first one stops the run at the
    // next node boundary (the session still tears down and the statistics are
    // printed); a second SIGINT exits at once.
    RunFileOptions engine = opts.engine;
    engine.interrupt = &g_interrupt_signal;
    std::optional<TraceRecorder> trace;
    FilesSeen seen;  // by every file's run: the trace, written last, spares them all
    if (!opts.trace.empty()) {
        // Said before anything runs, without touching the file: the trace is
        // no graph file and can be written (each run checks it against the
        // other files it reads, run_file).
        const OutputPath path{opts.trace, "--trace=" + opts.trace, true, "the trace"};
        ReadFiles graphs;
        for (const std::string& file : opts.files) graphs.add(file, "the graph file being run");
        if (std::optional<Error> e = check_output_paths({path}, graphs, err)) return exit_code(*e);
        engine.trace = &trace.emplace();
        engine.other_outputs.push_back(path);
        engine.seen = &seen;
    }
    int code = opts.test_data.empty() ? run_files(opts, engine, out, err) : run_test_data(opts, engine, out, err);
    // The trace holds what ran, also when a file failed or a signal stopped the rest.
    if (trace) {
        // A file a run read or wrote (that run was refused, and said why) keeps what it holds.
        std::vector<OutputPath> written = seen.outputs;
        written.push_back({opts.trace, "--trace=" + opts.trace, true, "the trace"});
        std::ostringstream why;
        if (std::optional<Error> e = check_output_paths(written, seen.reads, why)) {
            err << "graphrun: error: the trace is not written: " << e->message << "\n";
            if (code == kExitOk) code = exit_code(*e);
        } else if (!write_trace(*trace, opts.trace, err) && code == kExitOk) {
            code = kExitRuntime;
        }
    }
    return code;
}

}  // namespace graphrun::cli
