// What npy.cpp, npz.cpp and npy_read.cpp share: an .npy header read on its
// own (the reader stops at the data it declares, the .npz reader checks a
// member before inflating it), and the parser that takes over its buffer.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/frontend/npy.h"

namespace graphrun {

// An .npy header, checked: the array's type and where its data lies.
struct NpyLayout {
    DType dtype = DType::F32;
    bool swap = false;     // big-endian data
    bool fortran = false;  // Fortran order
    Shape shape;
    int64_t numel = 0;
    size_t data_at = 0;       // the data's offset in the file
    uint64_t data_bytes = 0;  // numel * dtype_size, at most limits.array_cap()
    std::string descr;        // as the file spells it, escaped for messages
};

enum class NpyHeaderStatus {
    Ok,
    Bad,        // the header is wrong, whatever follows it
    Truncated,  // the bytes end before the header does
};

// Reads the magic, the version and the header dict of `b`; on a problem,
// `error` as parse_npy gives it.
NpyHeaderStatus parse_npy_layout(std::string_view b, NpyLayout& out, std::string& error, const ArrayLimits& limits);

// parse_npy, where `b` views `*owner` (or owner is null): an array already in
// C order and little-endian takes the owner's buffer instead of a copy.
std::optional<NpyArray> parse_npy_owned(std::string_view b, std::vector<uint8_t>* owner, std::string& error,
                                        const ArrayLimits& limits);

// read_array_file, and read_whole_file without `parse_stop` (every byte up to the bound).
bool read_regular_file(const std::string& path, std::string& out, std::string& error, const ArrayLimits& limits,
                       bool parse_stop);

}  // namespace graphrun
