// Memory sizes as people write and read them.
#pragma once
#include <cstdint>
#include <string>

#include "engine/runtime/allocator.h"  // parse_memory_size: "512MiB", "2GB", "1048576"

namespace graphrun {

// "1216 B", "1.19 KiB", "3.00 MiB" ...
std::string human_bytes(uint64_t bytes);

// The process's resident memory in bytes (/proc/self/statm), or 0 where it cannot be read.
uint64_t resident_bytes();

}  // namespace graphrun
