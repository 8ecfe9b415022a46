// The run options that carry data in and out (--input, --fill, --seed,
// --output, --save, --expected-output, --rtol, --atol): declared on `run`
// and turned into the engine's FeedOptions and OutputFileOptions.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/api/run.h"

namespace CLI {
class App;
}

namespace graphrun::cli {

struct RunOptions;

// The option strings as CLI11 reads them.
struct DataOptionStrings {
    std::vector<std::string> inputs, outputs, expected;
    std::string fill, seed, save, rtol = "1e-05", atol = "1e-08";
};

void add_data_options(CLI::App* run_cmd, DataOptionStrings& s);
// Only the inputs' options (--input, --fill, --seed), for `compare`.
void add_feed_options(CLI::App* cmd, DataOptionStrings& s);
// Fills run.engine.feeds and run.engine.files; false with `error` for a malformed value.
bool apply_data_options(const DataOptionStrings& s, RunOptions& run, std::string& error);

// --format=json's "expected_outputs": {"rtol", "atol", "matched", "checks": [...]}.
nlohmann::ordered_json expected_outputs_json(const RunResult& r, const RunFileOptions& opts);

}  // namespace graphrun::cli
