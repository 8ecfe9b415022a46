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
#include <utility>
#include <vector>

#include "engine/base/limits.h"
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

// The bounds one array file is read under. No size a file states is trusted
// for an allocation: the reader counts the bytes it has read, and the parsers
// check every declared size against these before allocating it. A memory
// limit (run_file sets the CPU's: --memory-limit or its default) lowers both
// bounds, since the file's bytes and its arrays are held in host memory.
struct ArrayLimits {
    uint64_t file_bytes = kMaxArrayFileBytes;     // bytes read from one file at most
    uint64_t array_bytes = kMaxNpzInflatedBytes;  // the file's arrays together (an .npz's members inflated)
    uint64_t memory_limit = 0;                    // 0: none
    // Set (where given) when a read stopped at the memory limit rather than
    // at graphrun's own bounds: the file was not malformed, only too big to
    // hold under the limit (a runtime error, SPEC section 6, not a bad file).
    bool* stopped_at_memory_limit = nullptr;

    uint64_t file_cap() const;
    uint64_t array_cap() const;
    bool memory_limit_binds_file() const { return memory_limit && memory_limit < file_bytes; }
    bool memory_limit_binds_arrays() const { return memory_limit && memory_limit < array_bytes; }
    // Records a stop at file_cap() / array_cap() in stopped_at_memory_limit.
    void note_file_cap_hit() const {
        if (stopped_at_memory_limit && memory_limit_binds_file()) *stopped_at_memory_limit = true;
    }
    void note_array_cap_hit() const {
        if (stopped_at_memory_limit && memory_limit_binds_arrays()) *stopped_at_memory_limit = true;
    }
    // How a message names each bound: "the memory limit of 16777216 bytes (16 MiB)".
    std::string file_cap_text() const;
    std::string array_cap_text() const;
};

// "16777216 bytes (16 MiB)"; "512 bytes": a size as messages give it.
std::string size_text(uint64_t bytes);

// `s` in single quotes for a message, at most `most` bytes of it, every byte
// that is not printable ASCII (and the quote and backslash) escaped as \xNN:
// a file's bytes never reach the terminal raw.
std::string quote_bytes(std::string_view s, size_t most = 64);
// The same without the quotes: "\x1b[31m<f4".
std::string escape_bytes(std::string_view s, size_t most = 64);

// The NumPy descr of a dtype as graphrun writes it: "<f4", "<f8", "<i4", "<i8", "|b1".
const char* npy_descr(DType t);

// Parses the bytes of one .npy file. On failure, nullopt and `error` says what
// is wrong and where ("offset 8: header length 70000 runs past the end of the
// file (120 bytes)"), without the file's name. An array of more bytes than
// `limits.array_cap()` is refused from its header, before it is allocated.
// Messages describe the file by offset and header field; they never quote
// bytes outside the header dict, and escape those they show.
std::optional<NpyArray> parse_npy(std::string_view bytes, std::string& error, const ArrayLimits& limits = {});

// Whether `bytes` look like a zip archive (an .npz) rather than an .npy.
bool looks_like_zip(std::string_view bytes);

// Parses an .npz: every member must be an .npy file, stored or (when graphrun
// was built with zlib) deflated. Errors name the member and the offset.
// Every member is checked before it is inflated: its declared size, added to
// the members before it, must stay within `limits.array_cap()`; two members
// may not share or overlap their bytes, nor a name, and a member's data must
// end before the central directory starts.
std::optional<std::vector<NpzEntry>> parse_npz(std::string_view bytes, std::string& error,
                                               const ArrayLimits& limits = {});

// The header of an .npy file holding `shape` of `t`, C order, little-endian:
// version 1.0 (2.0 for a header over 65535 bytes), padded so that the data
// starts at a multiple of 64 bytes, as NumPy 1.24 writes it.
std::string npy_header(DType t, const Shape& shape);

// The whole .npy file (header and data) in memory.
std::string encode_npy(DType t, const Shape& shape, const void* data);

// The name and shape of every member of an .npz file, from the members'
// .npy headers only (a deflated member inflated as far as its header): the
// file is mapped, not read. nullopt where the file is not a well-formed
// .npz as parse_npz checks it, or a header is bad; what parse_npz alone
// checks (CRCs, data sizes) is left to it. For binding an ONNX model's free
// dimensions from --input files before their data is read once.
std::optional<std::vector<std::pair<std::string, Shape>>> npz_file_shapes(const std::string& path,
                                                                         const ArrayLimits& limits = {});
std::optional<std::vector<std::pair<std::string, Shape>>> npz_member_shapes(std::string_view bytes,
                                                                           std::string& error,
                                                                           const ArrayLimits& limits = {});

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

// Reads an array file (.npy or .npz) for parse_npy/parse_npz; false with
// `error` ("cannot read FILE: reason"). Only a regular file is read: a FIFO,
// a device, a socket or a directory is refused before anything is read (a
// FIFO is opened without waiting for a writer). Reading is bounded by the
// bytes actually read, never by the size the file states (a /proc file states
// 0): past `limits.file_cap()` it stops with an error naming that bound. It
// also stops once the parser has what it needs: an .npy's header and the data
// it declares (or a header the parser will refuse), or the first bytes of a
// file that is neither an .npy nor a zip archive.
bool read_array_file(const std::string& path, std::string& out, std::string& error, const ArrayLimits& limits = {});

// The shape an .npy file's header declares, from its first 64 KiB only (the
// data is not read); nullopt for anything else (not a regular .npy file, a
// header parse_npy refuses or a longer one): read_array_file then says why.
std::optional<Shape> npy_file_shape(const std::string& path, const ArrayLimits& limits = {});

// Reads a whole regular file of at most `max_bytes`, counted as read;
// false with `error` ("cannot read FILE: reason").
bool read_whole_file(const std::string& path, std::string& out, std::string& error,
                     uint64_t max_bytes = kMaxArrayFileBytes);

// The CRC-32 of zip archives (polynomial 0xEDB88320), continuing from `crc`.
uint32_t crc32_update(uint32_t crc, const void* data, size_t size);

// Whether this build reads deflated .npz members (numpy.savez_compressed).
bool npz_deflate_supported();

}  // namespace graphrun
