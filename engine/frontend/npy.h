// NumPy's array files: .npy (one array: magic, a Python-dict header, the raw
// data) and .npz (a zip of .npy files), read and written for graph inputs,
// outputs and expected outputs. Any byte order, C or Fortran order, format
// versions 1.0 to 3.0, for every dtype graphrun has; other dtypes, structured
// arrays and object arrays are refused by name. Reading never trusts a field:
// every size and offset is checked against the bytes there are, and a problem
// is reported with the byte offset and the header field involved.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/ir/dtype.h"

namespace graphrun {

// An array as graphrun holds it: row-major (C order), little-endian, bools as 0/1.
struct NpyArray {
    DType dtype = DType::F32;
    Shape shape;
    std::vector<uint8_t> data;  // numel * dtype_size(dtype) bytes
};

// One member of an .npz: its name without ".npy" and its array.
struct NpzEntry {
    std::string name;
    NpyArray array;
};

// The NumPy descr of a dtype as graphrun writes it: "<f4", "<f8", "<i4", "<i8", "|b1".
const char* npy_descr(DType t);

// Parses the bytes of one .npy file. On failure, nullopt and `error` says what
// is wrong and where ("offset 8: header length 70000 runs past the end of the
// file (120 bytes)"), without the file's name.
std::optional<NpyArray> parse_npy(std::string_view bytes, std::string& error);

// Whether `bytes` look like a zip archive (an .npz) rather than an .npy.
bool looks_like_zip(std::string_view bytes);

// Parses an .npz: every member must be an .npy file, stored or (when graphrun
// was built with zlib) deflated. Errors name the member and the offset.
std::optional<std::vector<NpzEntry>> parse_npz(std::string_view bytes, std::string& error);

// The header of an .npy file holding `shape` of `t`, C order, little-endian:
// version 1.0 (2.0 for a header over 65535 bytes), padded so that the data
// starts at a multiple of 64 bytes, as NumPy 1.24 writes it.
std::string npy_header(DType t, const Shape& shape);

// The whole .npy file (header and data) in memory.
std::string encode_npy(DType t, const Shape& shape, const void* data);

// A member to write into an .npz: `data` holds numel * dtype_size bytes.
struct NpzMember {
    std::string name;  // without ".npy"
    DType dtype = DType::F32;
    Shape shape;
    const void* data = nullptr;
};

// Writes `path` as an .npy file; false with `error` ("cannot write FILE: reason").
bool write_npy_file(const std::string& path, DType t, const Shape& shape, const void* data, std::string& error);
// Writes `path` as an .npz of stored (uncompressed) members NAME.npy, as
// numpy.savez does; an archive over 4 GiB is refused (no zip64 writer).
bool write_npz_file(const std::string& path, const std::vector<NpzMember>& members, std::string& error);

// Reads a whole file; false with `error` ("cannot read FILE: reason").
bool read_whole_file(const std::string& path, std::string& out, std::string& error);

// The CRC-32 of zip archives (polynomial 0xEDB88320), continuing from `crc`.
uint32_t crc32_update(uint32_t crc, const void* data, size_t size);

// Whether this build reads deflated .npz members (numpy.savez_compressed).
bool npz_deflate_supported();

}  // namespace graphrun
