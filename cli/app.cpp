// The option table and the mapping of outcomes to exit codes.
#include "cli/app.h"

#include <CLI/CLI.hpp>
#include <functional>
#include <iostream>

#include "cli/commands.h"
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

}  // namespace

int exit_code(const Error& e) {
    switch (e.kind) {
        case ErrorKind::Usage: return kExitUsage;
        case ErrorKind::InvalidGraph: return kExitInvalidGraph;
        case ErrorKind::Runtime: return kExitRuntime;
        case ErrorKind::Interrupted: return 128 + e.signal;
        case ErrorKind::Leak: return kExitLeak;
    }
    return kExitRuntime;
}

int run_app(int argc, char** argv) {
    CLI::App app{"graphrun: run tensor graph scripts and see what they do with memory", "graphrun"};
    // Called only for --version: asking the plugin for its toolkit loads cuBLAS.
    app.set_version_flag("--version", std::function<std::string()>(version_string));
    app.require_subcommand(1);
    app.footer("Exit codes: 0 success, 1 runtime error, 2 usage error, 3 invalid graph, 4 leak found.\n"
               "See graphrun(1) for the script language, JSON format and statistics.");

    CheckOptions check;
    std::string check_format = "text";
    auto* check_cmd = app.add_subcommand("check", "parse, validate, place and plan a graph; print its nodes, "
                                                  "outputs and static peak");
    check_cmd->add_option("FILE", check.file, "graph file (.graph text or .json), or - for standard input")
        ->required();
    check_cmd->add_option("--format", check_format, "output format")->check(CLI::IsMember({"text", "json"}));
    add_placement_options(check_cmd, check.engine.placement);
    check_cmd->add_option("--fetch", check.engine.fetch, "name to fetch instead of the script's outputs (repeatable)");

    RunOptions run;
    std::string run_cleanup = "background", run_format = "text", run_memory_limit;
    auto* run_cmd = app.add_subcommand("run", "build and run graphs; print outputs and memory statistics before and "
                                              "after the session is torn down");
    run_cmd->add_option("FILE", run.files, "graph files (.graph text or .json), or - for standard input; each runs "
                                           "in a fresh graph and session")
        ->required();
    run_cmd->add_option("--cleanup", run_cleanup, "when unreferenced tensors are released: background (a reclaimer "
                                                  "thread), safepoint (at safe points), close (only at close)")
        ->check(CLI::IsMember({"background", "safepoint", "close"}));
    add_placement_options(run_cmd, run.engine.prepare.placement);
    run_cmd->add_option("--iterations", run.engine.iterations, "run the graph N times in the one session")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
    run_cmd->add_option("--fetch", run.engine.prepare.fetch, "name to fetch and print instead of the script's outputs (repeatable)");
    run_cmd->add_option("--format", run_format, "output format on stdout (json: one JSON document per file per line)")
        ->check(CLI::IsMember({"text", "json"}));
    run_cmd->add_option("--memory-limit", run_memory_limit,
                        "per-device cap on bytes in use (512MiB, 2GB, bytes); default 90% of available memory")
        ->check([](const std::string& v) -> std::string {
            uint64_t b;
            if (parse_memory_size(v, b) && b > 0) return {};
            return "not a memory size: '" + v + "' (use e.g. 512MiB, 2GB, 1048576)";
        });
    run_cmd->add_flag("--check-leaks", run.engine.check_leaks, "exit 4 if any allocator reports memory left after teardown");
    run_cmd->add_option("--threads", run.engine.threads, "CPU worker threads (default: all cores)")
        ->check(CLI::Range(1, 1024));
    run_cmd->add_flag("--allow-tf32", run.engine.allow_tf32, "let GPU matmul use TF32 (no effect without a GPU)");
    run_cmd->add_flag("--reset-device", run.engine.reset_device, "end the CUDA context at teardown (no effect without a GPU)");
    run_cmd->add_flag("--profile", run.engine.profile, "print per-op totals (count, time, bytes) after the run");

    std::string convert_file, convert_to;
    auto* convert_cmd = app.add_subcommand("convert", "write the graph in the other form (text or json) on stdout");
    convert_cmd->add_option("FILE", convert_file, "graph file, or - for standard input")->required();
    convert_cmd->add_option("--to", convert_to, "output form")->required()->check(CLI::IsMember({"text", "json"}));

    app.add_subcommand("devices", "list usable devices, or say why no GPU is usable");

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        int code = app.exit(e);  // prints help, version or the error
        return code == 0 ? kExitOk : kExitUsage;
    }

    if (run_cmd->parsed()) {
        run.engine.cleanup = run_cleanup == "close"       ? CleanupStrategy::Close
                             : run_cleanup == "safepoint" ? CleanupStrategy::Safepoint
                                                          : CleanupStrategy::Background;
        run.format = run_format == "json" ? Format::Json : Format::Text;
        if (!run_memory_limit.empty()) parse_memory_size(run_memory_limit, run.engine.prepare.memory_limit);
        return run_command(run, std::cout, std::cerr);
    }
    stop_compute_workers();  // only `run` computes
    if (check_cmd->parsed()) {
        check.format = check_format == "json" ? Format::Json : Format::Text;
        return check_command(check, std::cout, std::cerr);
    }
    if (convert_cmd->parsed())
        return convert_command(convert_file, convert_to == "json" ? GraphForm::Json : GraphForm::Text, std::cout, std::cerr);
    return devices_command(std::cout);
}

}  // namespace graphrun::cli
