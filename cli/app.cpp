// The option table and the mapping of outcomes to exit codes.
#include "cli/app.h"
#include "cli/huge_pages.h"

#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <functional>
#include <iostream>

#include "cli/bench_output.h"
#include "cli/commands.h"
#include "cli/data_options.h"
#include "cli/repl.h"
#include "cli/terminal.h"
#include "engine/api/interrupt.h"
#include "engine/api/output_paths.h"
#include "engine/api/units.h"

namespace graphrun::cli {

namespace {

void add_placement_options(CLI::App* cmd, PlacementOptions& p) {
    cmd->add_option("--device", p.device, "device for nodes that name none: auto, cpu, gpu, gpu:N")
        ->default_val("auto")
        ->check([](const std::string& v) -> std::string {
            if (v == "auto" || parse_device_name(v)) return {};
            return "unknown device '" + v + "' (use auto, cpu, gpu, gpu:N, cuda:N, /GPU:N)";
        });
    cmd->add_flag("--soft-placement,!--no-soft-placement", p.soft,
                  "run a node on the CPU when its device cannot be used (default: on)");
    cmd->add_flag("--log-placement", p.log, "print one line per node with its device to stderr");
}

// --no-fuse (engine/plan/fuse.h): every node its own kernel, as written.
void add_fuse_option(CLI::App* cmd, PrepareOptions& p) {
    cmd->add_flag_function(
        "--no-fuse", [&p](int64_t) { p.fuse = false; },
        "do not fuse conv/matmul/gemm with the batch_norm, bias, residual add and activation after them "
        "(default: fused into one CPU kernel each; graph mode only), nor take apart a concat that only a pool "
        "or conv reads, nor keep conv outputs channels-last between oneDNN convs, nor run an integer conv or matmul in int8");
}

// --dim=NAME=N and --input-shape=NAME=AxBxC bind an ONNX model's free input
// dimensions (SPEC section 2); --input arrays bind them too (run, compare).
void add_shape_options(CLI::App* cmd, ShapeBindings& b) {
    // Each option's values are checked by its validator (binding_problem) and then added to `b`.
    auto add = [cmd, &b](const char* option, const char* type, const char* help) {
        const std::string name = option;
        cmd->add_option_function<std::vector<std::string>>(
               name,
               [&b, name](const std::vector<std::string>& v) {
                   for (const std::string& s : v) add_binding(b, name, s);
               },
               help)
            ->type_name(type)
            ->check(CLI::Validator(
                [name](std::string& v) {
                    ShapeBindings scratch;
                    return add_binding(scratch, name, v);
                },
                ""));
    };
    add("--dim", "NAME=N", "bind a named free dimension of an ONNX model's inputs (repeatable): --dim=batch=16");
    add("--input-shape", "NAME=AxBxC",
        "the shape of an ONNX model's input whose dimensions are free, where no --input array gives it "
        "(repeatable): --input-shape=pixel_values=1x3x224x224");
}

// Edit distance with adjacent transpositions counted as one edit (optimal
// string alignment), so that `rnu` is one edit from `run`.
size_t typo_distance(std::string_view a, std::string_view b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i)
        for (size_t j = 1; j <= b.size(); ++j) {
            d[i][j] = std::min(
                {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

// --full, --no-data, --progress/--no-progress.
void add_output_options(CLI::App* cmd, RunOptions& run) {
    cmd->add_flag("--full", run.full, "print every value (default: like NumPy, over 1000 elements show 3 at each edge)");
    cmd->add_flag("--no-data", run.no_data, "print shape, dtype and min, max, mean, nan_count instead of the values");
    cmd->add_flag_function(
        "--progress,!--no-progress",
        [&run](int64_t n) { run.progress = n > 0 ? Toggle::On : Toggle::Off; },
        "show a progress line on stderr once a run takes over 1 s (default: when stderr is a terminal and "
        "--format=text)");
}

}  // namespace

// The candidate a user most likely meant by `word`: within a third of its
// length in edits (at least one), or the only candidate it is a prefix of
// (three characters or more); "" when none is.
std::string suggest(std::string_view word, const std::vector<std::string>& candidates) {
    if (word.empty() || word.size() > 64) return {};
    std::string best;
    size_t best_d = SIZE_MAX;
    for (const std::string& c : candidates) {
        const size_t d = typo_distance(word, c);
        if (d < best_d) best_d = d, best = c;
    }
    if (best_d <= std::max<size_t>(1, std::max(word.size(), best.size()) / 3)) return best;
    if (word.size() < 3) return {};
    std::string prefixed;
    for (const std::string& c : candidates) {
        if (c.compare(0, word.size(), word) != 0) continue;
        if (!prefixed.empty()) return {};
        prefixed = c;
    }
    return prefixed;
}

std::string integer_problem(const std::string& v, int64_t lo, int64_t hi,
                            const std::string& hi_text) {
    const std::string expected =
        "expected an integer from " + std::to_string(lo) + " to " + hi_text;
    int64_t n = 0;
    const char* end = v.data() + v.size();
    auto [ptr, ec] = std::from_chars(v.data() + (!v.empty() && v[0] == '+'), end, n);
    if (v.empty() || ptr != end || (ec != std::errc() && ec != std::errc::result_out_of_range))
        return "'" + v + "' is not a whole number; " + expected;
    if (ec == std::errc::result_out_of_range || n < lo || n > hi)
        return "'" + v + "' is out of range; " + expected;
    return {};
}

std::string memory_size_problem(const std::string& v) {
    const std::string expected =
        "expected a size above 0: a number of bytes (1048576) or one with a unit "
        "(512MiB, 1.5GiB, 2GB; KB, MB, GB are powers of 1000, K, KiB, M, MiB, G, GiB "
        "of 1024)";
    uint64_t b = 0;
    if (!parse_memory_size(v, b)) return "'" + v + "' is not a memory size; " + expected;
    if (b == 0) return "'" + v + "' is 0 bytes; " + expected;
    return {};
}

// "N=16" (--dim) or "x=1x3x224x224" (--input-shape, `shape`): the name and
// the sizes, or a message saying what is wrong. A size is 0 to 2^40.
std::string binding_problem(const std::string& option, const std::string& v, bool shape, std::string& name,
                            Shape& sizes) {
    const std::string form = shape ? option + "=NAME=AxBxC (1x3x224x224; a scalar: NAME=)" : option + "=NAME=N";
    const size_t eq = v.rfind('=');
    if (eq == std::string::npos || eq == 0) return "'" + v + "' is not " + form;
    name = v.substr(0, eq);
    sizes.clear();
    const std::string rest = v.substr(eq + 1);
    if (shape && rest.empty()) return {};  // a scalar input
    size_t at = 0;
    while (true) {
        const size_t x = shape ? rest.find('x', at) : std::string::npos;
        const std::string part = rest.substr(at, x == std::string::npos ? std::string::npos : x - at);
        if (std::string p = integer_problem(part, 0, int64_t{1} << 40, "2^40"); !p.empty())
            return "'" + v + "': " + p + " (" + form + ")";
        sizes.push_back(std::stoll(part[0] == '+' ? part.substr(1) : part));
        if (x == std::string::npos) break;
        if (sizes.size() == 32) return "'" + v + "' has more than 32 dimensions";
        at = x + 1;
    }
    return {};
}

std::string add_binding(ShapeBindings& b, const std::string& option, const std::string& value) {
    const bool shape = option == "--input-shape";
    std::string name;
    Shape sizes;
    if (std::string p = binding_problem(option, value, shape, name, sizes); !p.empty()) return p;
    if (shape) b.shapes.push_back(GivenShape{std::move(name), std::move(sizes), option + "=" + value, true});
    else b.dims.push_back(DimBinding{std::move(name), sizes.at(0), option + "=" + value});
    return {};
}

int exit_code(const Error& e) {
    switch (e.kind) {
        case ErrorKind::Usage: return kExitUsage;
        case ErrorKind::InvalidGraph: return kExitInvalidGraph;
        case ErrorKind::Runtime: return kExitRuntime;
        case ErrorKind::Interrupted: return 128 + e.signal;
        case ErrorKind::Leak: return kExitLeak;
        case ErrorKind::Mismatch: return kExitMismatch;
    }
    return kExitRuntime;
}

namespace {

// SIGINT and SIGTERM, in every command and every phase: the first one asks
// graphrun to stop (g_interrupt_signal, which loading, planning, running and
// writing poll); a second SIGINT exits at once.
extern "C" void on_stop_signal(int sig) {
    int none = 0;
    if (!g_interrupt_signal.compare_exchange_strong(none, sig) && sig == SIGINT) {
        remove_pending_temporaries();  // a file being written is left as it was, with no temporary beside it
        _exit(128 + SIGINT);
    }
}

void install_stop_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;  // no SA_RESTART: a blocking read of standard input returns
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
}

// A stop requested after the last check of the work (the last node run, the
// last file written) still gives its exit code: the output is complete, and
// the signal is not lost.
int with_late_signal(int code) {
    const int sig = interrupted();
    if (sig == 0 || code != kExitOk) return code;
    std::cout.flush();
    std::cerr << "graphrun: interrupted by " << signal_name(sig)
              << " once the work was done (what was printed and written is complete)\n";
    return 128 + sig;
}

// CLI11's message for a usage error, with a did-you-mean for a misspelt command
// or long option.
std::string usage_error_message(const CLI::App& app, const CLI::ParseError& e) {
    const CLI::App* cmd = &app;
    for (const CLI::App* sub : app.get_subcommands()) cmd = sub;  // the one parsed, if any
    std::vector<std::string> extras = app.remaining(true);
    if (cmd == &app) {
        // No command was recognised: the first word is a misspelt one.
        for (const std::string& word : extras) {
            if (word.empty() || word[0] == '-') continue;
            std::vector<std::string> names;
            for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
            std::string msg = "unknown command '" + word + "'";
            if (auto near = suggest(word, names); !near.empty())
                return msg + "; did you mean '" + near + "'?";
            std::string all;
            for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
            return msg + " (the commands are " + all + ")";
        }
    }
    if (dynamic_cast<const CLI::ExtrasError*>(&e) == nullptr) return e.what();
    std::vector<std::string> options;
    for (const CLI::Option* opt : cmd->get_options())
        for (const std::string& n : opt->get_lnames()) options.push_back("--" + n);
    std::string msg, listed;
    bool any = false;
    for (const std::string& word : extras) {
        listed += (listed.empty() ? "" : " ") + word;
        if (word.size() < 3 || word.compare(0, 2, "--") != 0) continue;
        if (auto near = suggest(word.substr(0, word.find('=')), options); !near.empty()) {
            listed += " (did you mean " + near + "?)";
            any = true;
        }
    }
    if (!any) return e.what();
    return (extras.size() > 1 ? "The following arguments were not expected: "
                              : "The following argument was not expected: ") +
           listed;
}

}  // namespace

namespace {

// The command line parsed and its command run; run_app adds what every
// command shares.
int run_command_line(int argc, char** argv) {
    CLI::App app{"graphrun: run tensor graph scripts and see what they do with memory", "graphrun"};
    // Called only for --version: asking the plugin for its toolkit loads cuBLAS.
    app.set_version_flag("--version", std::function<std::string()>(version_string));
    app.require_subcommand(1);
    app.footer(
        "Exit codes: 0 success, 1 runtime error, 2 usage error, 3 invalid graph, 4 leak found,\n"
        "5 an output differs from --expected-output,\n"
        "130 interrupted by SIGINT, 143 by SIGTERM (after teardown and the statistics).\n"
        "See graphrun(1) for the script language, JSON format and statistics.");

    CheckOptions check;
    std::string check_format = "text";
    auto* check_cmd = app.add_subcommand("check", "parse, validate, place and plan a graph; print its nodes, "
                                                  "outputs and static peak");
    check_cmd->add_option("FILE", check.file, "graph file (.graph text or .json), or - for standard input")
        ->required();
    check_cmd->add_option("--format", check_format, "output format")
        ->check(CLI::IsMember({"text", "json"}))
        ->default_str("text");
    add_placement_options(check_cmd, check.engine.placement);
    check_cmd->add_option("--fetch", check.engine.fetch, "name to fetch instead of the script's outputs (repeatable)");
    add_fuse_option(check_cmd, check.engine);
    add_shape_options(check_cmd, check.engine.shapes);
    check_cmd
        ->add_option("--threads", check.engine.threads,
                     "the run's CPU threads, for which weights are packed (default: all cores)")
        ->check(CLI::Validator([](std::string& v) { return integer_problem(v, 1, 1024, "1024"); }, ""));

    RunOptions run;
    std::string run_cleanup = "background", run_format = "text", run_memory_limit;
    auto* run_cmd = app.add_subcommand("run", "build and run graphs; print outputs and memory statistics before and "
                                              "after the session is torn down");
    run_cmd->add_option("FILE", run.files, "graph files (.graph text or .json), or - for standard input; each runs "
                                           "in a fresh graph and session")
        ->required();
    run_cmd
        ->add_option("--cleanup", run_cleanup,
                     "when unreferenced tensors are released: background (a reclaimer "
                     "thread; the run waits for it when its backlog outgrows the static peak at a pass's "
                     "end, or max(static peak, 4 MiB) within a pass), safepoint (at safe points), close "
                     "(every tensor held until close)")
        ->check(CLI::IsMember({"background", "safepoint", "close"}))
        ->default_str("background");
    add_placement_options(run_cmd, run.engine.prepare.placement);
    CLI::Option* run_iterations = run_cmd
        ->add_option("--iterations", run.engine.iterations,
                     "run the graph N times in the one session (0 to 2^40; with --bench: the measured passes, "
                     "default 10)")
        ->check(CLI::Validator(
            [](std::string& v) { return integer_problem(v, 0, int64_t{1} << 40, "2^40"); }, ""))
        ->default_str("1");
    std::string run_mode = "graph";
    run_cmd
        ->add_option("--mode", run_mode,
                     "graph: one planned program, each value released after its last use; eager: statement by "
                     "statement in a live session, each value held while a name is bound to it (SPEC section 8)")
        ->check(CLI::IsMember({"graph", "eager"}))
        ->default_str("graph");
    run_cmd->add_option("--fetch", run.engine.prepare.fetch, "name to fetch and print instead of the script's outputs (repeatable)");
    add_fuse_option(run_cmd, run.engine.prepare);
    add_shape_options(run_cmd, run.engine.prepare.shapes);
    run_cmd
        ->add_option("--format", run_format,
                     "output format on stdout (json: one JSON document per file per line)")
        ->check(CLI::IsMember({"text", "json"}))
        ->default_str("text");
    run_cmd
        ->add_option(
            "--memory-limit", run_memory_limit,
            "per-device cap on bytes in use (512MiB, 2GB, bytes); default 90% of available memory")
        ->check(CLI::Validator([](std::string& v) { return memory_size_problem(v); }, ""));
    run_cmd->add_flag("--check-leaks", run.engine.check_leaks, "exit 4 if any allocator reports memory left after teardown");
    run_cmd
        ->add_option("--threads", run.engine.threads,
                     "CPU worker threads, 1 to 1024 (default: all cores)")
        ->check(
            CLI::Validator([](std::string& v) { return integer_problem(v, 1, 1024, "1024"); }, ""));
    run_cmd->add_flag("--allow-tf32", run.engine.allow_tf32, "let GPU matmul use TF32 (no effect without a GPU)");
    run_cmd->add_flag("--reset-device", run.engine.reset_device, "end the CUDA context at teardown (no effect without a GPU)");
    std::string run_profile;  // "" (off), "true" (--profile alone), "ops" or "nodes"
    run_cmd
        ->add_flag("--profile", run_profile,
                   "print per-op totals (count, time, bytes) after the run; --profile=nodes adds a table per node "
                   "(op, output, calls, time, share of the pass time), slowest first")
        ->check(CLI::Validator(
            [](std::string& v) -> std::string {
                if (v == "true" || v == "ops" || v == "nodes") return {};  // CLI11 gives a bare flag "true"
                return "'" + v + "' is neither ops nor nodes (--profile alone: per-op totals; --profile=nodes: "
                       "per op and per node)";
            },
            ""))
        ->option_text("[=nodes]");
    DataOptionStrings run_data;
    add_data_options(run_cmd, run_data);
    run_cmd->add_option("--test-data", run.test_data,
                        "run the model once per DIR/test_data_set_N (the ONNX model zoo's layout), fed its "
                        "input_K.pb and compared with its output_K.pb (--rtol, --atol); a report per set")
        ->type_name("DIR");
    add_output_options(run_cmd, run);
    // Watching the run (issue 14): its own block, so that it merges cleanly.
    bool run_timeline = false;
    run_cmd->add_flag("--timeline", run_timeline,
                      "print in_use, peak and pending per device at the end of each pass and repeat pass "
                      "(sampled evenly to at most 50 rows; a `timeline` array in JSON)");
    run_cmd->add_option("--trace", run.trace,
                        "write a Chrome trace-event JSON file (Perfetto, chrome://tracing): a slice per node, the "
                        "reclaimer's release batches, in_use/pending/reserved counters per device (at most 200000 "
                        "events)")
        ->type_name("FILE");

    // The benchmark mode (issue 25): its own block, so that it merges cleanly.
    bool run_bench = false;
    int64_t run_warmup = kDefaultWarmup;
    CLI::Option* run_bench_flag = run_cmd->add_flag(
        "--bench", run_bench,
        "time each pass: after --warmup passes that are not counted, --iterations measured passes (default 10); "
        "prints latency per pass (min, median, mean, p90, p99, max) and passes per second");
    run_cmd
        ->add_option("--warmup", run_warmup,
                     "with --bench: passes run first in the same session and not counted (0 to 2^40, default 2)")
        ->check(CLI::Validator([](std::string& v) { return integer_problem(v, 0, int64_t{1} << 40, "2^40"); }, ""))
        ->needs(run_bench_flag)
        ->default_str(std::to_string(kDefaultWarmup));

    // `graphrun compare` (issue 14): its own block, so that it merges cleanly.
    CompareOptions compare;
    std::string compare_format = "text", compare_memory_limit;
    auto* compare_cmd = app.add_subcommand(
        "compare", "run a graph under all three cleanup strategies (a fresh session each) and print peak, pending at "
                   "the end, allocs, run and teardown time side by side; --plot draws in_use over the executed nodes");
    compare_cmd->add_option("FILE", compare.file, "graph file (.graph text or .json), or - for standard input")
        ->required();
    compare_cmd
        ->add_option("--iterations", compare.engine.iterations, "run the graph N times in each session (0 to 2^40)")
        ->check(CLI::Validator([](std::string& v) { return integer_problem(v, 0, int64_t{1} << 40, "2^40"); }, ""))
        ->default_str("1");
    std::string compare_mode = "graph";
    compare_cmd
        ->add_option("--mode", compare_mode,
                     "graph, eager (statement by statement, as run --mode=eager), or both: each strategy in each "
                     "mode, graph mode's planned peak beside eager's")
        ->check(CLI::IsMember({"graph", "eager", "both"}))
        ->default_str("graph");
    compare_cmd->add_option("--plot", compare.plot,
                            "write an SVG line chart of in_use over executed nodes, one line per strategy "
                            "(at most 2000 points each)")
        ->type_name("FILE.svg");
    compare_cmd->add_option("--format", compare_format, "output format on stdout")
        ->check(CLI::IsMember({"text", "json"}))
        ->default_str("text");
    compare_cmd
        ->add_option("--memory-limit", compare_memory_limit, "per-device cap on bytes in use, as for run")
        ->check(CLI::Validator([](std::string& v) { return memory_size_problem(v); }, ""));
    compare_cmd->add_option("--threads", compare.engine.threads, "CPU worker threads, 1 to 1024 (default: all cores)")
        ->check(CLI::Validator([](std::string& v) { return integer_problem(v, 1, 1024, "1024"); }, ""));
    add_placement_options(compare_cmd, compare.engine.prepare.placement);
    add_fuse_option(compare_cmd, compare.engine.prepare);
    add_shape_options(compare_cmd, compare.engine.prepare.shapes);
    DataOptionStrings compare_data;
    add_feed_options(compare_cmd, compare_data);

    std::string convert_file, convert_to;
    ConvertOptions convert;
    auto* convert_cmd = app.add_subcommand("convert", "write the graph in the other form (text or json) on stdout");
    convert_cmd->add_option("FILE", convert_file, "graph file, or - for standard input")->required();
    convert_cmd->add_option("--to", convert_to, "output form")->required()->check(CLI::IsMember({"text", "json"}));
    add_convert_file_options(convert_cmd, convert);
    ShapeBindings convert_shapes;
    add_shape_options(convert_cmd, convert_shapes);

    app.add_subcommand("devices", "list usable devices, or say why no GPU is usable");

    CheckOptions dot;
    auto* dot_cmd = app.add_subcommand("dot", "write the placed graph as Graphviz DOT on stdout (nodes with name, op, "
                                              "type and bytes, filled by device; repeat bodies as clusters)");
    dot_cmd->add_option("FILE", dot.file, "graph file, or - for standard input")->required();
    add_placement_options(dot_cmd, dot.engine.placement);
    dot_cmd->add_option("--fetch", dot.engine.fetch, "name to fetch instead of the script's outputs (repeatable)");
    add_fuse_option(dot_cmd, dot.engine);
    add_shape_options(dot_cmd, dot.engine.shapes);

    // `graphrun repl` (issue 24): its own block, so that it merges cleanly.
    ReplOptions repl;
    std::string repl_cleanup = "background", repl_memory_limit;
    auto* repl_cmd = app.add_subcommand(
        "repl", "an interactive session: statements run as they are read (a terminal with line editing, history "
                "and completion, or standard input), names stay bound, :help lists the commands; from a pipe the "
                "exit code is the first failed statement's");
    repl_cmd
        ->add_option("--cleanup", repl_cleanup,
                     "when unreferenced values are released: background (a reclaimer thread), safepoint (at the "
                     "next statement), close (held until :close or the end); :cleanup switches it")
        ->check(CLI::IsMember({"background", "safepoint", "close"}))
        ->default_str("background");
    add_placement_options(repl_cmd, repl.live.placement);
    repl_cmd
        ->add_option("--memory-limit", repl_memory_limit, "per-device cap on bytes in use, as for run")
        ->check(CLI::Validator([](std::string& v) { return memory_size_problem(v); }, ""));
    repl_cmd->add_option("--threads", repl.live.threads, "CPU worker threads, 1 to 1024 (default: all cores)")
        ->check(CLI::Validator([](std::string& v) { return integer_problem(v, 1, 1024, "1024"); }, ""));
    repl_cmd->add_flag("--allow-tf32", repl.live.allow_tf32, "let GPU matmul use TF32 (no effect without a GPU)");
    repl_cmd->add_flag("--echo-stats", repl.echo_stats,
                       "after each statement print a line per device: in_use, pending and peak, each with its "
                       "change since the statement before (for CI logs)");

    // A repeatable option takes one value per use (`--fetch=b a.graph` fetches
    // b and runs a.graph), never the positionals after it, as CLI11 would.
    for (CLI::App* cmd : app.get_subcommands({}))
        for (CLI::Option* opt : cmd->get_options())
            if (!opt->get_positional() && opt->get_items_expected_max() > 1)
                opt->allow_extra_args(false)->option_text(opt->get_type_name());  // not "TEXT ..."

    try {
        app.parse(argc, argv);
        if (std::count(run.files.begin(), run.files.end(), "-") > 1)
            throw CLI::ValidationError("FILE", "standard input (-) can be read only once");
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0)
            return app.exit(e) == 0 ? kExitOk : kExitUsage;  // prints help or version
        std::cerr << usage_error_message(app, e) << "\nRun with --help for more information.\n";
        return kExitUsage;
    }
    {
        // A big graph's heap on huge pages (cli/huge_pages.h); nothing read or printed yet.
        std::vector<std::string> sources = run.files;
        for (const std::string* f : {&check.file, &compare.file, &dot.file, &convert_file})
            if (!f->empty()) sources.push_back(*f);
        reexec_with_huge_pages_for(sources, argv);
    }

    if (run_cmd->parsed()) {
        run.engine.cleanup = run_cleanup == "close"       ? CleanupStrategy::Close
                             : run_cleanup == "safepoint" ? CleanupStrategy::Safepoint
                                                          : CleanupStrategy::Background;
        run.format = run_format == "json" ? Format::Json : Format::Text;
        if (!run_memory_limit.empty()) parse_memory_size(run_memory_limit, run.engine.prepare.memory_limit);
        if (std::string data_error; !apply_data_options(run_data, run, data_error)) {
            std::cerr << data_error << "\nRun with --help for more information.\n";
            return kExitUsage;
        }
        if (run_timeline) run.engine.timeline_rows = 50;
        run.engine.profile = !run_profile.empty();
        run.engine.bench.nodes = run_profile == "nodes";
        if (run_bench) {
            if (std::string bench_error = apply_bench_options(run_warmup, run_iterations->count() > 0, run.engine);
                !bench_error.empty()) {
                std::cerr << bench_error << "\nRun with --help for more information.\n";
                return kExitUsage;
            }
        }
        run.engine.mode = run_mode == "eager" ? ExecMode::Eager : ExecMode::Graph;
        return run_command(run, std::cout, std::cerr);
    }
    if (compare_cmd->parsed()) {
        compare.format = compare_format == "json" ? Format::Json : Format::Text;
        compare.modes = compare_mode == "both"    ? std::vector<ExecMode>{ExecMode::Graph, ExecMode::Eager}
                        : compare_mode == "eager" ? std::vector<ExecMode>{ExecMode::Eager}
                                                  : std::vector<ExecMode>{ExecMode::Graph};
        if (!compare_memory_limit.empty()) parse_memory_size(compare_memory_limit, compare.engine.prepare.memory_limit);
        RunOptions feeds_only;  // the inputs' values, parsed as run parses them
        feeds_only.files = {compare.file};
        if (std::string data_error; !apply_data_options(compare_data, feeds_only, data_error)) {
            std::cerr << data_error << "\nRun with --help for more information.\n";
            return kExitUsage;
        }
        compare.engine.feeds = feeds_only.engine.feeds;
        return compare_command(compare, std::cout, std::cerr);
    }
    if (repl_cmd->parsed()) {
        repl.live.cleanup = repl_cleanup == "close"       ? CleanupStrategy::Close
                            : repl_cleanup == "safepoint" ? CleanupStrategy::Safepoint
                                                          : CleanupStrategy::Background;
        if (!repl_memory_limit.empty()) parse_memory_size(repl_memory_limit, repl.live.memory_limit);
        return repl_command(repl);
    }
    stop_compute_workers();  // only `run`, `compare` and `repl` compute
    if (check_cmd->parsed()) {
        check.format = check_format == "json" ? Format::Json : Format::Text;
        return check_command(check, std::cout, std::cerr);
    }
    if (dot_cmd->parsed()) return dot_command(dot, std::cout, std::cerr);
    if (convert_cmd->parsed()) {
        convert.form = convert_to == "json" ? GraphForm::Json : GraphForm::Text;
        return convert_command(convert_file, convert, convert_shapes, std::cout, std::cerr);
    }
    return devices_command(std::cout);
}

}  // namespace

int run_app(int argc, char** argv) {
    install_stop_handlers();
    TerminalSafeStream safe_stderr(std::cerr);  // names and messages may hold any bytes
    return with_late_signal(run_command_line(argc, argv));
}

}  // namespace graphrun::cli
