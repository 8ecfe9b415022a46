// One function per subcommand; app.cpp parses the options and calls them.
// Each is a thin layer over engine/api: it prints what the API returns and
// maps its Error to an exit code.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "engine/api/convert.h"
#include "engine/api/error.h"
#include "engine/api/prepare.h"
#include "engine/api/run.h"

namespace CLI {
class App;
}

namespace graphrun::cli {

enum class Format { Text, Json };
enum class Toggle { Auto, On, Off };

struct CheckOptions {
    std::string file;
    Format format = Format::Text;
    PrepareOptions engine;  // placement and --fetch; check never refuses a static peak
};

struct RunOptions {
    std::vector<std::string> files;
    Format format = Format::Text;
    RunFileOptions engine;  // everything a run needs but the files
    bool full = false;     // --full: every value, never summarised
    bool no_data = false;  // --no-data: shape, dtype and a summary instead of the values
    Toggle progress = Toggle::Auto;  // --progress / --no-progress; auto: stderr a terminal, text output
    std::string trace;      // --trace=FILE: every file's run in one Chrome trace ("" for none)
    // --test-data=DIR: the one model run once per DIR/test_data_set_N, fed its
    // input_K.pb and compared with its output_K.pb ("" for none).
    std::string test_data;
};

// `graphrun compare` (cli/compare.cpp): the file under every cleanup strategy.
struct CompareOptions {
    std::string file;
    Format format = Format::Text;
    RunFileOptions engine;  // cleanup and series_points are set per run
    std::string plot;       // --plot=FILE.svg ("" for none)
    std::vector<ExecMode> modes{ExecMode::Graph};  // --mode: graph, eager, or both (each strategy in each)
};

int run_command(const RunOptions& opts, std::ostream& out, std::ostream& err);
int compare_command(const CompareOptions& opts, std::ostream& out, std::ostream& err);
int check_command(const CheckOptions& opts, std::ostream& out, std::ostream& err);
// `graphrun dot FILE`: Graphviz DOT of the placed graph (placement options and --fetch as check).
int dot_command(const CheckOptions& opts, std::ostream& out, std::ostream& err);
// `graphrun convert FILE --to=text|json [-o OUT] [--inline-limit=N]` (cli/convert.cpp).
void add_convert_file_options(CLI::App* cmd, ConvertOptions& opts);  // -o, --inline-limit
int convert_command(const std::string& file, const ConvertOptions& opts, const ShapeBindings& shapes, std::ostream& out,
                    std::ostream& err);
int devices_command(std::ostream& out);

// The exit code of SPEC section 6 for an API error.
int exit_code(const Error& e);
std::string version_string();

}  // namespace graphrun::cli
