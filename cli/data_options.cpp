// --input, --fill, --seed, --output, --save, --expected-output, --rtol, --atol.
#include "cli/data_options.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>

#include "cli/app.h"
#include "cli/commands.h"

namespace graphrun::cli {

namespace {

// What is wrong with `v` as a tolerance ("" when nothing is).
std::string tolerance_problem(const std::string& v) {
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(d) || d < 0)
        return "'" + v + "' is not a tolerance; expected a finite number >= 0 (1e-5, 0.001, 0)";
    return {};
}

}  // namespace

void add_feed_options(CLI::App* run_cmd, DataOptionStrings& s) {
    run_cmd->add_option("--input", s.inputs,
                        "value of a graph input (repeatable): NAME=@FILE.npy, NAME=@FILE.npz (member NAME), "
                        "@FILE.npz (every member by name), or NAME=VALUE inline ([[1,2],[3,4]])");
    run_cmd->add_option("--fill", s.fill, "fill inputs that no --input gives: random (floats in [0,1), integers "
                                          "0..9), zeros or ones (default: a missing input is an error)")
        ->check(CLI::IsMember({"random", "zeros", "ones"}));
    run_cmd->add_option("--seed", s.seed, "seed of --fill=random (default 0)")
        ->check(CLI::Validator(
            [](std::string& v) { return integer_problem(v, 0, INT64_MAX, "2^63-1"); }, ""));
}

void add_data_options(CLI::App* run_cmd, DataOptionStrings& s) {
    add_feed_options(run_cmd, s);
    run_cmd->add_option("--output", s.outputs,
                        "write a fetched output to a file (repeatable): NAME=@FILE.npy, or @FILE.npz for every "
                        "fetched output in one file");
    run_cmd->add_option("--save", s.save, "write every fetched output: DIR/NAME.npy each (DIR is created; '/' in a "
                                          "name is '_', a clash gets _2), or one FILE.npz");
    run_cmd->add_option("--expected-output", s.expected,
                        "compare a fetched output with an expected value (repeatable; NAME=@FILE.npy, @FILE.npz or "
                        "NAME=VALUE); a mismatch exits 5; each output's line gives its errors and the smallest "
                        "--rtol and --atol that pass");
    run_cmd->add_option("--rtol", s.rtol, "relative tolerance of --expected-output (numpy.allclose's rule and default)")
        ->check(CLI::Validator([](std::string& v) { return tolerance_problem(v); }, ""))
        ->default_str("1e-05");
    run_cmd->add_option("--atol", s.atol, "absolute tolerance of --expected-output (numpy.allclose's rule and "
                                          "default; near an expected 0 only atol covers a difference)")
        ->check(CLI::Validator([](std::string& v) { return tolerance_problem(v); }, ""))
        ->default_str("1e-08");
}

bool apply_data_options(const DataOptionStrings& s, RunOptions& run, std::string& error) {
    FeedOptions& feeds = run.engine.feeds;
    OutputFileOptions& files = run.engine.files;
    for (const std::string& v : s.inputs) {
        auto src = parse_array_option("--input", v, true, error);
        if (!src) return false;
        feeds.inputs.push_back(std::move(*src));
    }
    for (const std::string& v : s.outputs) {
        auto src = parse_array_option("--output", v, false, error);
        if (!src) return false;
        files.outputs.push_back(std::move(*src));
    }
    for (const std::string& v : s.expected) {
        auto src = parse_array_option("--expected-output", v, true, error);
        if (!src) return false;
        files.expected.push_back(std::move(*src));
    }
    feeds.fill = s.fill == "random" ? FillMode::Random
                 : s.fill == "zeros" ? FillMode::Zeros
                 : s.fill == "ones"  ? FillMode::Ones
                                     : FillMode::None;
    if (!s.seed.empty()) feeds.seed = std::strtoull(s.seed.c_str(), nullptr, 10);
    files.save = s.save;
    files.rtol = std::strtod(s.rtol.c_str(), nullptr);
    files.atol = std::strtod(s.atol.c_str(), nullptr);
    if ((!files.outputs.empty() || !files.save.empty()) && run.files.size() > 1) {
        error = "--output and --save write one run's outputs; give one graph file (got " +
                std::to_string(run.files.size()) + ")";
        return false;
    }
    return true;
}

nlohmann::ordered_json expected_outputs_json(const RunResult& r, const RunFileOptions& opts) {
    using ojson = nlohmann::ordered_json;
    auto checks = ojson::array();
    size_t matched = 0;
    for (const ExpectedCheck& c : r.expected) {
        matched += c.matched;
        ojson j{{"name", c.name}, {"source", c.source}, {"matched", c.matched}};
        if (!c.problem.empty()) {
            j["problem"] = c.problem;
        } else {
            j["elements"] = c.elements;
            j["mismatched"] = c.mismatched;
            // JSON has no infinity: a relative error against an expected 0 is the string "inf".
            auto num = [](double v) { return std::isfinite(v) ? ojson(v) : ojson("inf"); };
            j["max_abs_error"] = num(c.max_abs_error);
            j["max_rel_error"] = num(c.max_rel_error);
            // The smallest tolerances that pass, each with the other as given; null where none does.
            j["min_rtol"] = c.min_rtol ? ojson(*c.min_rtol) : ojson(nullptr);
            j["min_atol"] = c.min_atol ? ojson(*c.min_atol) : ojson(nullptr);
            if (!c.matched)
                j["first_mismatch"] = ojson{{"index", c.first_index}, {"got", c.got}, {"expected", c.want}};
        }
        checks.push_back(std::move(j));
    }
    return ojson{{"rtol", opts.files.rtol}, {"atol", opts.files.atol}, {"matched", matched}, {"checks", checks}};
}

}  // namespace graphrun::cli
