// One function per subcommand; app.cpp parses the options and calls them.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/check/placement.h"
#include "engine/runtime/session.h"

namespace graphrun::cli {

enum class Format { Text, Json };

struct CheckOptions {
    std::string file;
    Format format = Format::Text;
    PlacementOptions placement;
    std::vector<std::string> fetch;
};

struct RunOptions {
    std::vector<std::string> files;
    CleanupStrategy cleanup = CleanupStrategy::Background;
    PlacementOptions placement;
    int64_t iterations = 1;
    std::vector<std::string> fetch;
    Format format = Format::Text;
    uint64_t memory_limit = 0;  // 0: the default (90% of available memory)
    bool check_leaks = false;
    int threads = 0;            // 0: all cores
    bool allow_tf32 = false;
    bool reset_device = false;
    bool profile = false;
};

int run_command(const RunOptions& opts, std::ostream& out, std::ostream& err);
// Replaces the graph's outputs by --fetch names; false (with a message) for an unknown name.
bool apply_fetch(Graph& g, const std::vector<std::string>& fetch, std::string& error);

int check_command(const CheckOptions& opts, std::ostream& out, std::ostream& err);
int convert_command(const std::string& file, Format to, std::ostream& out, std::ostream& err);
int devices_command(std::ostream& out);

// What this build and machine offer: the CUDA plugin's GPUs, or why there are none.
DeviceAvailability device_availability();
std::string version_string();

// "1216 B", "1.19 KiB", "3.00 MiB" ...
std::string human_bytes(uint64_t bytes);

}  // namespace graphrun::cli
