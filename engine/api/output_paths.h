// The files a run reads and the files it writes, checked against each other
// before anything runs (SPEC section 7): no file graphrun writes may be one it
// reads (a usage error), two outputs may not be one file (a usage error), and
// a path that cannot be written is a runtime error. The writing itself is
// atomic (engine/base/atomic_file.h, re-exported here for cli/).
#pragma once
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "engine/api/error.h"
#include "engine/api/feeds.h"
#include "engine/api/load.h"
#include "engine/base/atomic_file.h"

namespace graphrun {

// Files by identity (device and inode, symlinks followed), each with the role
// it plays in the run, for messages ("the graph file being run").
class ReadFiles {
public:
    // Adds `path` if it exists ("-", standard input, is no file).
    void add(const std::string& path, std::string role);
    void add_all(const ReadFiles& other);
    // The role of the file `path` resolves to, or null when the run does not read it.
    const std::string* role_of(const std::string& path) const;
    bool empty() const { return files_.empty(); }

private:
    struct Entry {
        uint64_t dev = 0, ino = 0;
        std::string role;
    };
    std::vector<Entry> files_;
};

// Every file a run of `lg` reads: the graph file itself (as `graph_role`:
// "the graph file being run"), its const(file=) arrays, and the --input and
// --expected-output array files (either may be null).
ReadFiles files_read(const LoadedGraph& lg, const std::string& graph_role, const FeedOptions* feeds,
                     const OutputFileOptions* files);

// A file the run will write, and how the command line asked for it.
struct OutputPath {
    std::string path;
    std::string spelled;  // "--trace=m.graph", "-o m.graph", "--save=out (y.npy)"
    // False for a file in a folder made later (--save=DIR): only compared
    // with the files read and the other outputs.
    bool check_writable = true;
    // What the file holds, for messages ("the trace": "cannot write the trace to t.json"); "" for an array file.
    std::string holds = {};
};

// What the runs of one command read and write, gathered for a file written
// after all of them (--trace).
struct FilesSeen {
    ReadFiles reads;
    std::vector<OutputPath> outputs;  // --output and --save
};

// Checks every output before anything runs: none is a file in `reads` or the
// same file as another (Usage: "--trace=m.graph is the graph file being run"),
// and each can be written (Runtime: its folder is missing or not writable, it
// is a directory or not a regular file). Prints the first problem to `err`.
std::optional<Error> check_output_paths(const std::vector<OutputPath>& outputs, const ReadFiles& reads,
                                        std::ostream& err);

// The files --output and --save write for the graph's fetched outputs
// (--save=DIR: DIR/NAME.npy each, named by save_file_names). A Runtime error
// when --save's folder can be neither made nor written into.
std::optional<Error> planned_output_paths(const Graph& g, const OutputFileOptions& o, std::vector<OutputPath>& out,
                                          std::ostream& err);

// --save=DIR's file name for each output named in `names`, in order: the name
// with '/' and '\' as '_' and a leading '.' as '_', plus ".npy". Distinct
// outputs never share a file: a name that is a file name as it stands keeps
// it, and a mapped name that meets a taken one gets the first free suffix
// _2, _3, ... ("a/b" beside "a_b" is a_b_2.npy).
std::vector<std::string> save_file_names(const std::vector<std::string>& names);

// For --save=DIR: why DIR cannot be made or written into ("" when it can).
std::string unwritable_folder_reason(const std::string& dir);

}  // namespace graphrun
