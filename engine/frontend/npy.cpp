// .npy and .npz reading and writing (NumPy's format.py and numpy.savez).
#include "engine/frontend/npy.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/base/atomic_file.h"
#include "engine/base/limits.h"
#include "engine/frontend/npy_internal.h"

#ifdef GRAPHRUN_HAVE_ZLIB
#include <zlib.h>
#endif

namespace graphrun {

static_assert(std::endian::native == std::endian::little, "graphrun holds arrays little-endian");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

// A printable excerpt of header bytes for messages: 'abc\x00...'.
std::string excerpt(std::string_view s, size_t most = 24) { return quote_bytes(s, most); }

uint64_t read_le(std::string_view b, size_t at, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(b[at + static_cast<size_t>(i)]);
    return v;
}

// ---- the header: a Python dict literal ----------------------------------

struct Header {
    std::string descr;
    bool fortran = false;
    Shape shape;
};

// dict  := '{' [ item { ',' item } [','] ] '}'
// item  := STRING ':' value
// value := STRING | 'True' | 'False' | tuple ;  tuple := '(' [ INT { ',' INT } [','] ] ')'
class HeaderParser {
  public:
    HeaderParser(std::string_view text, size_t base) : s_(text), base_(base) {}

    bool parse(Header& h, std::string& error) {
        bool have_descr = false, have_fortran = false, have_shape = false;
        skip_space();
        if (!expect('{', "the header to start with '{'", error)) return false;
        for (;;) {
            skip_space();
            if (peek() == '}') break;
            const size_t key_at = pos_;
            std::string key;
            if (!string(key, error)) return false;
            skip_space();
            if (!expect(':', "':' after the key " + excerpt(key), error)) return false;
            skip_space();
            const size_t value_at = pos_;
            if (key == "descr") {
                if (peek() == '[') {
                    error = at(value_at) + "header field 'descr' is a list: structured arrays are not supported";
                    return false;
                }
                if (peek() != '\'' && peek() != '"') return field_error("descr", "a dtype string such as '<f4'", error);
                if (!string(h.descr, error)) return false;
                have_descr = true;
            } else if (key == "fortran_order") {
                if (s_.substr(pos_, 4) == "True") {
                    h.fortran = true;
                    pos_ += 4;
                } else if (s_.substr(pos_, 5) == "False") {
                    h.fortran = false;
                    pos_ += 5;
                } else {
                    error = at(value_at) + "header field 'fortran_order': expected True or False, found " +
                            excerpt(s_.substr(pos_), 12);
                    return false;
                }
                have_fortran = true;
            } else if (key == "shape") {
                if (!tuple(h.shape, error)) return false;
                have_shape = true;
            } else {
                error = at(key_at) + "unexpected header field " + excerpt(key) +
                        " (a .npy header has exactly 'descr', 'fortran_order' and 'shape')";
                return false;
            }
            skip_space();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            if (peek() != '}') {
                error = at(pos_) + "expected ',' or '}' in the header dict, found " + excerpt(s_.substr(pos_), 12);
                return false;
            }
        }
        ++pos_;
        const char* missing = !have_descr ? "descr" : !have_fortran ? "fortran_order" : !have_shape ? "shape" : nullptr;
        if (missing) {
            error = at(0) + "the header dict has no '" + missing + "' field";
            return false;
        }
        skip_space();
        if (pos_ != s_.size()) {
            error = at(pos_) + "unexpected " + excerpt(s_.substr(pos_), 12) + " after the header dict";
            return false;
        }
        return true;
    }

  private:
    std::string at(size_t p) const { return "offset " + std::to_string(base_ + p) + ": "; }
    char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
    void skip_space() {
        while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r'))
            ++pos_;
    }
    bool expect(char c, const std::string& what, std::string& error) {
        if (peek() == c) {
            ++pos_;
            return true;
        }
        error = at(pos_) + "expected " + what + ", found " +
                (pos_ < s_.size() ? excerpt(s_.substr(pos_), 12) : std::string("the end of the header"));
        return false;
    }
    bool field_error(const char* field, const char* want, std::string& error) {
        error = at(pos_) + "header field '" + field + "': expected " + want + ", found " + excerpt(s_.substr(pos_), 12);
        return false;
    }
    bool string(std::string& out, std::string& error) {
        const char q = peek();
        if (q != '\'' && q != '"') {
            error = at(pos_) + "expected a quoted string, found " +
                    (pos_ < s_.size() ? excerpt(s_.substr(pos_), 12) : std::string("the end of the header"));
            return false;
        }
        const size_t start = pos_++;
        out.clear();
        while (pos_ < s_.size() && s_[pos_] != q) {
            if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
            out += s_[pos_++];
        }
        if (pos_ >= s_.size()) {
            error = at(start) + "unterminated string in the header";
            return false;
        }
        ++pos_;
        return true;
    }
    bool tuple(Shape& shape, std::string& error) {
        const size_t start = pos_;
        if (peek() != '(') return field_error("shape", "a tuple of integers such as (2, 3)", error);
        ++pos_;
        shape.clear();
        for (;;) {
            skip_space();
            if (peek() == ')') break;
            const size_t num_at = pos_;
            int64_t v = 0;
            bool digits = false;
            while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
                const int d = s_[pos_] - '0';
                if (v > (std::numeric_limits<int64_t>::max() - d) / 10) {
                    error = at(num_at) + "header field 'shape': dimension " + excerpt(s_.substr(num_at), 24) +
                            " is too large";
                    return false;
                }
                v = v * 10 + d;
                digits = true;
                ++pos_;
            }
            if (!digits) return field_error("shape", "a non-negative integer dimension", error);
            if (peek() == 'L') ++pos_;  // Python 2's long suffix, in old files
            if (shape.size() >= static_cast<size_t>(kMaxRank)) {
                error = at(num_at) + "header field 'shape' has more than " + std::to_string(kMaxRank) +
                        " dimensions (graphrun's largest rank)";
                return false;
            }
            shape.push_back(v);
            skip_space();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            if (peek() != ')') return field_error("shape", "',' or ')' in the shape tuple", error);
        }
        ++pos_;
        (void)start;
        return true;
    }

    std::string_view s_;
    size_t base_;
    size_t pos_ = 0;
};

// The dtype a descr names, or nullopt with the reason; `swap` when its byte
// order is the other one.
std::optional<DType> descr_dtype(const std::string& d, bool& swap, std::string& why) {
    swap = false;
    std::string body = d;
    char order = '=';
    if (!body.empty() && (body[0] == '<' || body[0] == '>' || body[0] == '|' || body[0] == '=')) {
        order = body[0];
        body = body.substr(1);
    }
    std::optional<DType> t;
    if (body == "f4") t = DType::F32;
    else if (body == "f8") t = DType::F64;
    else if (body == "i4") t = DType::I32;
    else if (body == "i8") t = DType::I64;
    else if (body == "b1" || body == "?") t = DType::Bool;
    else if (body == "f2") t = DType::F16;
    else if (body == "i1") t = DType::I8;
    else if (body == "u1") t = DType::U8;
    else if (body == "V2") t = DType::BF16;  // NumPy has no bfloat16: ml_dtypes' arrays save as 2-byte voids
    if (!t) {
        const char* name = nullptr;
        static const std::pair<const char*, const char*> known[] = {
            {"f16", "float128"}, {"i2", "int16"},  {"u2", "uint16"},      {"u4", "uint32"},
            {"u8", "uint64"},    {"c8", "complex64"}, {"c16", "complex128"},
            {"O", "object"},   {"V", "void"}};
        for (const auto& [code, n] : known)
            if (body == code) name = n;
        if (!name && !body.empty() && (body[0] == 'U' || body[0] == 'S')) name = "string";
        if (!name && !body.empty() && (body[0] == 'M' || body[0] == 'm')) name = "datetime";
        why = "dtype " + excerpt(d) + (name ? std::string(" (") + name + ")" : std::string()) +
              " is not one graphrun has; it reads f32 ('<f4'), f64 ('<f8'), i32 ('<i4'), i64 ('<i8'), bool "
              "('|b1'), f16 ('<f2'), i8 ('|i1'), u8 ('|u1') and bf16 ('|V2', as ml_dtypes saves it), in either "
              "byte order";
        return std::nullopt;
    }
    swap = order == '>' && dtype_size(*t) > 1;
    return t;
}

// Reorders `src` (Fortran order, possibly byte-swapped) into C order, little-endian.
void to_c_order(const uint8_t* src, uint8_t* dst, const Shape& shape, size_t elem, bool fortran, bool swap,
                int64_t numel) {
    auto copy_elem = [&](const uint8_t* s, uint8_t* d) {
        if (swap)
            for (size_t k = 0; k < elem; ++k) d[k] = s[elem - 1 - k];
        else
            std::memcpy(d, s, elem);
    };
    if (!fortran || shape.size() < 2) {
        if (!swap) {
            std::memcpy(dst, src, static_cast<size_t>(numel) * elem);
            return;
        }
        for (int64_t i = 0; i < numel; ++i) copy_elem(src + static_cast<size_t>(i) * elem, dst + static_cast<size_t>(i) * elem);
        return;
    }
    const size_t rank = shape.size();
    std::vector<int64_t> fstride(rank), index(rank, 0);
    int64_t st = 1;
    for (size_t a = 0; a < rank; ++a) {
        fstride[a] = st;
        st *= shape[a];
    }
    int64_t off = 0;  // Fortran offset of `index`
    for (int64_t i = 0; i < numel; ++i) {
        copy_elem(src + static_cast<size_t>(off) * elem, dst + static_cast<size_t>(i) * elem);
        for (size_t a = rank; a-- > 0;) {  // next C-order index
            if (++index[a] < shape[a]) {
                off += fstride[a];
                break;
            }
            off -= fstride[a] * (shape[a] - 1);
            index[a] = 0;
        }
    }
}

}  // namespace

const char* npy_descr(DType t) {
    switch (t) {
        case DType::F32: return "<f4";
        case DType::F64: return "<f8";
        case DType::I32: return "<i4";
        case DType::I64: return "<i8";
        case DType::Bool: return "|b1";
        case DType::F16: return "<f2";
        case DType::BF16: return "|V2";
        case DType::I8: return "|i1";
        case DType::U8: return "|u1";
    }
    return "|b1";
}

NpyHeaderStatus parse_npy_layout(std::string_view b, NpyLayout& out, std::string& error, const ArrayLimits& limits) {
    if (b.size() < kMagicSize || b.substr(0, kMagicSize) != std::string_view(kMagic, kMagicSize)) {
        // What the file is instead, without quoting it: the bytes may be anything (/etc/passwd).
        const std::string_view head = b.substr(0, std::min<size_t>(b.size(), 64));
        const bool text = !head.empty() && std::all_of(head.begin(), head.end(), [](char c) {
            const auto u = static_cast<unsigned char>(c);
            return (u >= 0x20 && u < 0x7f) || c == '\n' || c == '\r' || c == '\t';
        });
        if (!b.empty() && b.size() < kMagicSize && std::string_view(kMagic, b.size()) == b) {
            error = "offset " + std::to_string(b.size()) + ": the file ends inside NumPy's magic string (" +
                    std::to_string(b.size()) + " bytes)";
            return NpyHeaderStatus::Truncated;
        }
        error = "offset 0: bad magic: not a .npy file (a .npy file starts with the bytes '\\x93NUMPY')";
        if (b.empty()) error += "; the file is empty";
        else if (looks_like_zip(b)) error += "; it is a zip archive: an .npz?";
        else if (text) error += "; it starts with text";
        return NpyHeaderStatus::Bad;
    }
    if (b.size() < 8) {
        error = "offset 6: the file ends inside the format version (" + std::to_string(b.size()) + " bytes)";
        return NpyHeaderStatus::Truncated;
    }
    const int major = static_cast<unsigned char>(b[6]), minor = static_cast<unsigned char>(b[7]);
    if (major < 1 || major > 3 || minor != 0) {
        error = "offset 6: unsupported format version " + std::to_string(major) + "." + std::to_string(minor) +
                " (graphrun reads 1.0, 2.0 and 3.0)";
        return NpyHeaderStatus::Bad;
    }
    const size_t len_size = major == 1 ? 2 : 4;
    if (b.size() < 8 + len_size) {
        error = "offset 8: the file ends inside the header length (" + std::to_string(b.size()) + " bytes)";
        return NpyHeaderStatus::Truncated;
    }
    const uint64_t header_len = read_le(b, 8, static_cast<int>(len_size));
    const size_t header_at = 8 + len_size;
    if (header_len > kMaxNpyHeaderBytes) {
        error = "offset 8: header length " + std::to_string(header_len) + " is more than graphrun reads (" +
                std::to_string(kMaxNpyHeaderBytes) + " bytes; NumPy writes a few hundred)";
        return NpyHeaderStatus::Bad;
    }
    if (header_len > b.size() - header_at) {
        error = "offset 8: header length " + std::to_string(header_len) + " runs past the end of the file (" +
                std::to_string(b.size()) + " bytes): the file is truncated";
        return NpyHeaderStatus::Truncated;
    }
    std::string_view text = b.substr(header_at, static_cast<size_t>(header_len));
    // Version 3.0 allows UTF-8 in the header; the fields graphrun reads are ASCII either way.
    Header h;
    if (!HeaderParser(text, header_at).parse(h, error)) return NpyHeaderStatus::Bad;
    std::string why;
    auto dtype = descr_dtype(h.descr, out.swap, why);
    if (!dtype) {
        error = "offset " + std::to_string(header_at) + ": header field 'descr': " + why;
        return NpyHeaderStatus::Bad;
    }
    auto numel = checked_numel(h.shape);
    if (!numel || *numel > kMaxElements) {
        error = "offset " + std::to_string(header_at) + ": header field 'shape' " + shape_string(h.shape) +
                " has more elements than graphrun holds (at most " + std::to_string(kMaxElements) + ")";
        return NpyHeaderStatus::Bad;
    }
    out.dtype = *dtype;
    out.fortran = h.fortran;
    out.shape = std::move(h.shape);
    out.numel = *numel;
    out.descr = escape_bytes(h.descr, 24);
    out.data_at = header_at + static_cast<size_t>(header_len);
    out.data_bytes = static_cast<uint64_t>(*numel) * dtype_size(*dtype);
    if (out.data_bytes > limits.array_cap()) {
        limits.note_array_cap_hit();
        error = "offset " + std::to_string(header_at) + ": header fields 'shape' " + shape_string(out.shape) +
                " and 'descr' '" + out.descr + "' declare " + size_text(out.data_bytes) + " of data, more than " +
                limits.array_cap_text();
        return NpyHeaderStatus::Bad;
    }
    return NpyHeaderStatus::Ok;
}

std::optional<NpyArray> parse_npy(std::string_view b, std::string& error, const ArrayLimits& limits) {
    return parse_npy_owned(b, nullptr, error, limits);
}

std::optional<NpyArray> parse_npy_owned(std::string_view b, std::vector<uint8_t>* owner, std::string& error,
                                        const ArrayLimits& limits) {
    NpyLayout h;
    if (parse_npy_layout(b, h, error, limits) != NpyHeaderStatus::Ok) return std::nullopt;
    const size_t elem = dtype_size(h.dtype);
    const uint64_t want = h.data_bytes;
    if (want > b.size() - h.data_at) {
        error = "offset " + std::to_string(h.data_at) + ": the data is truncated: shape " + shape_string(h.shape) +
                " of " + h.descr + " needs " + std::to_string(want) + " bytes, the file has " +
                std::to_string(b.size() - h.data_at) + " after the header";
        return std::nullopt;
    }
    NpyArray a;
    a.dtype = h.dtype;
    a.shape = h.shape;
    if (owner && (!h.fortran || h.shape.size() < 2) && !h.swap) {
        // Already C order and little-endian: the owner's buffer becomes the array, without a second copy.
        std::memmove(owner->data(), owner->data() + h.data_at, static_cast<size_t>(want));
        owner->resize(static_cast<size_t>(want));
        a.data = std::move(*owner);
    } else {
        a.data.resize(static_cast<size_t>(want));
        const auto* src = reinterpret_cast<const uint8_t*>(b.data() + h.data_at);
        if (want) to_c_order(src, a.data.data(), a.shape, elem, h.fortran, h.swap, h.numel);
    }
    if (a.dtype == DType::Bool)
        for (uint8_t& v : a.data) v = v != 0;
    return a;
}

std::string npy_header(DType t, const Shape& shape) {
    std::string dict = std::string("{'descr': '") + npy_descr(t) + "', 'fortran_order': False, 'shape': (";
    for (size_t i = 0; i < shape.size(); ++i) dict += (i ? ", " : "") + std::to_string(shape[i]);
    dict += shape.size() == 1 ? ",), }" : "), }";
    // Padded with spaces and a newline so that magic + version + length + dict is a multiple of 64.
    const bool v2 = dict.size() + 1 + 10 > 65535;
    const size_t prefix = v2 ? 12 : 10;
    const size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
    dict.append(total - prefix - dict.size() - 1, ' ');
    dict += '\n';
    std::string out(kMagic, kMagicSize);
    out += static_cast<char>(v2 ? 2 : 1);
    out += '\0';
    const size_t n = dict.size();
    for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
    return out + dict;
}

std::string encode_npy(DType t, const Shape& shape, const void* data) {
    std::string out = npy_header(t, shape);
    const size_t bytes = static_cast<size_t>(checked_numel(shape).value_or(0)) * dtype_size(t);
    if (bytes) out.append(static_cast<const char*>(data), bytes);
    return out;
}

bool read_whole_file(const std::string& path, std::string& out, std::string& error, uint64_t max_bytes) {
    ArrayLimits limits;
    limits.file_bytes = max_bytes;
    return read_regular_file(path, out, error, limits, false);
}

bool write_npy_file(const std::string& path, DType t, const Shape& shape, const void* data, std::string& error) {
    AtomicFile f;  // whole or not at all: an error leaves what was at `path`
    if (!f.open(path, error)) return false;
    const size_t bytes = static_cast<size_t>(checked_numel(shape).value_or(0)) * dtype_size(t);
    if (f.write(npy_header(t, shape)) && bytes) f.write(data, bytes);
    return f.commit(error);
}

uint32_t crc32_update(uint32_t crc, const void* data, size_t size) {
    static const auto table = [] {
        std::array<uint32_t, 256> t{};
        for (uint32_t i = 0; i < 256; ++i) {
            uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            t[i] = c;
        }
        return t;
    }();
    const auto* p = static_cast<const uint8_t*>(data);
    crc = ~crc;
    for (size_t i = 0; i < size; ++i) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

bool npz_deflate_supported() {
#ifdef GRAPHRUN_HAVE_ZLIB
    return true;
#else
    return false;
#endif
}

}  // namespace graphrun
