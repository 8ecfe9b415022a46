// Data in and out of a run: the values of a graph's `input` nodes (--input,
// --fill), the outputs written to .npy/.npz files (--output, --save), and the
// outputs compared with expected values (--expected-output, --rtol, --atol).
// The CLI splits its option strings (parse_array_option) and hands them here;
// run_file() applies them around the session.
#pragma once
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "engine/api/error.h"
#include "engine/frontend/npy.h"  // NpyArray
#include "engine/ir/free_dims.h"
#include "engine/ir/graph.h"
#include "engine/runtime/session_options.h"  // HostTensor

namespace graphrun {

// One array named on the command line: NAME=@FILE (.npy, or .npz member NAME),
// @FILE.npz (every member, by its name), NAME=VALUE (a JSON number or nested
// list), or, for --output, NAME=@FILE / @FILE.npz to write.
struct ArraySource {
    std::string option;  // "--input", "--output", "--expected-output": for messages
    std::string name;    // "" with an .npz file: every member, by its name
    std::string file;    // set for @FILE
    std::string value;   // otherwise: the inline JSON value
    // "--input=x=@a.npy" as written, for messages.
    std::string spelled() const;
};

// Splits "NAME=@FILE", "@FILE" or "NAME=VALUE" (an inline value only where
// `inline_ok`); nullopt with `error` saying what is expected.
std::optional<ArraySource> parse_array_option(const std::string& option, const std::string& text, bool inline_ok,
                                              std::string& error);

enum class FillMode { None, Zeros, Ones, Random };

struct FeedOptions {
    std::vector<ArraySource> inputs;  // --input
    FillMode fill = FillMode::None;   // for the inputs no --input gives
    uint64_t seed = 0;                // --fill=random
    uint64_t memory_limit = 0;        // the CPU's: bounds each file read (ArrayLimits); 0: limits.h's alone
};

struct OutputFileOptions {
    std::vector<ArraySource> outputs;   // --output=NAME=@FILE.npy, --output=@FILE.npz
    std::string save;                   // --save=DIR (NAME.npy each) or --save=FILE.npz
    std::vector<ArraySource> expected;  // --expected-output
    double rtol = 1e-5, atol = 1e-8;    // numpy.allclose: |got - expected| <= atol + rtol * |expected|
    uint64_t memory_limit = 0;          // the CPU's: bounds each --expected-output file read; 0: limits.h's alone
};

// The result of comparing one fetched output with its expected value.
struct ExpectedCheck {
    std::string name;    // the output
    std::string source;  // the file, or "inline value"
    bool matched = false;
    std::string problem;          // shape or dtype differ: the message (then no element counts)
    uint64_t elements = 0;        // compared
    uint64_t mismatched = 0;      // beyond the tolerance
    double max_abs_error = 0;     // over the elements where both are finite
    double max_rel_error = 0;     // |got - expected| / |expected|, likewise (inf where expected is 0)
    std::vector<int64_t> first_index;  // of the first mismatch (C order)
    std::string got, want;             // its two values, as text
    // The smallest --rtol that passes with the given --atol, and the smallest
    // --atol that passes with the given --rtol, exactly as numpy.allclose
    // decides (float32 outputs in float32, the rest in float64): the value
    // itself passes, the next lower double does not. nullopt where no finite
    // value passes; then `no_rtol_at` / `no_atol_at` name the first element
    // that none passes ("[3]: got nan, expected 1").
    std::optional<double> min_rtol, min_atol;
    std::string no_rtol_at, no_atol_at;
};

// Every `input` node of the graph in program order, by display name.
std::vector<const Node*> graph_inputs(const Graph& g);

// The value of one `input` node, on the host: what a run feeds it. The graph
// holds no feeds (an Executable is the same for every run).
struct InputValue {
    NodeId id = kNoNode;
    std::vector<uint8_t> bytes;
};
using InputValues = std::vector<InputValue>;

// The session's views of the values (Session::run's feeds).
std::vector<FeedView> feed_views(const InputValues& values);

// Reads and checks the feeds' values for the graph's input nodes (--input,
// --fill) into `out`, one per input. Every problem is printed to `err`
// ("graphrun: error: ..."); the returned error (Usage, exit 2) repeats the
// first. `display` names the graph file in messages.
std::optional<Error> read_feeds(const Graph& g, const FeedOptions& feeds, const std::string& display,
                                InputValues& out, std::ostream& err);

// The shapes of the arrays --input gives, by input name: what binds an ONNX
// model's free dimensions before it is read (PrepareOptions::shapes). An
// array that cannot be read is left out here; read_feeds reports it.
std::vector<GivenShape> feed_shapes(const FeedOptions& feeds);

// The expected values, read and checked against the fetched outputs' names
// before anything runs. Errors as apply_feeds.
struct ExpectedValue {
    std::string name, source;
    NpyArray array;
};
std::optional<Error> load_expected(const Graph& g, const OutputFileOptions& o, const std::string& display,
                                   std::vector<ExpectedValue>& out, std::ostream& err);
// Checks --output names against the fetched outputs (before the run).
std::optional<Error> check_output_names(const Graph& g, const OutputFileOptions& o, const std::string& display,
                                        std::ostream& err);

// Writes --output and --save files; a Runtime error (exit 1) when one cannot be written.
std::optional<Error> write_output_files(const std::vector<HostTensor>& outputs, const OutputFileOptions& o,
                                        std::ostream& err);

// Compares one output with its expected value (numpy.allclose with equal_nan).
ExpectedCheck compare_expected(const HostTensor& got, const ExpectedValue& want, double rtol, double atol);
// "output 'y' differs from y.npy: ..." for a failed check, with the smallest
// tolerances that would pass.
std::string mismatch_message(const ExpectedCheck& c, double rtol, double atol);
// A compared check's figures, for a passed one's line: "6 elements, max abs
// error 2.38419e-07, max rel error 1.19e-07; passes with rtol >= 1.2e-07 (atol
// 1e-08) or atol >= 2.3e-07 (rtol 1e-05)". "" for a check with a problem.
std::string check_figures(const ExpectedCheck& c, double rtol, double atol);

// An element of `data` (dtype t) as the shortest text that reads back to it in t.
std::string element_text(DType t, const void* data, int64_t index);

}  // namespace graphrun
