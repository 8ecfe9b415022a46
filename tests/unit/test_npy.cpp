// The .npy/.npz reader and writer (engine/frontend/npy.h) and the feeds and
// expected-output checks built on them (engine/api/feeds.h).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "engine/api/feeds.h"
#include "engine/api/load.h"
#include "engine/frontend/npy.h"

using namespace graphrun;

namespace {

// A .npy file by hand: magic, version, header length, the dict, the data.
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
    std::string out = "\x93NUMPY";
    out += static_cast<char>(major);
    out += '\0';
    const size_t n = dict.size();
    for (int i = 0; i < (major == 1 ? 2 : 4); ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
    return out + dict + data;
}

template <class T>
std::string raw(const std::vector<T>& v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

template <class T>
std::vector<T> values(const NpyArray& a) {
    std::vector<T> v(a.data.size() / sizeof(T));
    std::memcpy(v.data(), a.data.data(), a.data.size());
    return v;
}

std::string parse_error(const std::string& bytes) {
    std::string error;
    auto a = parse_npy(bytes, error);
    CHECK_FALSE(a.has_value());
    return error;
}

std::string temp_path(const char* suffix) {
    static int n = 0;
    return "/tmp/graphrun_test_npy_" + std::to_string(getpid()) + "_" + std::to_string(n++) + suffix;
}

HostTensor tensor(const std::string& name, DType t, Shape shape, std::string bytes) {
    HostTensor h;
    h.name = name;
    h.dtype = t;
    h.shape = std::move(shape);
    h.data.assign(bytes.begin(), bytes.end());
    return h;
}

}  // namespace

TEST_CASE("npy: what graphrun writes reads back, for every dtype and rank") {
    const std::vector<float> f{1.5f, -2.25f, 3.0f, 0.1f, 7.0f, -0.0f};
    const std::vector<double> d{1e300, -1.0, 0.5};
    const std::vector<int32_t> i{1, -2, 2147483647, -2147483647 - 1};
    const std::vector<int64_t> l{int64_t{1} << 62, -3};
    const std::vector<uint8_t> b{1, 0, 1};
    struct Case {
        DType t;
        Shape shape;
        std::string bytes;
    } cases[] = {{DType::F32, {2, 3}, raw(f)},          {DType::F64, {3}, raw(d)},
                 {DType::I32, {2, 1, 2}, raw(i)},       {DType::I64, {2}, raw(l)},
                 {DType::Bool, {3}, raw(b)},            {DType::F32, {}, raw(std::vector<float>{4.0f})},
                 {DType::F64, {0, 3}, std::string()},  {DType::F16, {2}, raw(std::vector<uint16_t>{0x3C00, 0x7BFF})},
                 {DType::BF16, {1}, raw(std::vector<uint16_t>{0x3F80})},
                 {DType::I8, {3}, raw(std::vector<int8_t>{-128, 0, 127})},
                 {DType::U8, {2}, raw(std::vector<uint8_t>{0, 255})}};
    for (const Case& c : cases) {
        CAPTURE(type_string(c.t, c.shape));
        const std::string file = encode_npy(c.t, c.shape, c.bytes.data());
        const std::string header = npy_header(c.t, c.shape);
        CHECK(header.size() % 64 == 0);
        CHECK(header.back() == '\n');
        CHECK(file.size() == header.size() + c.bytes.size());
        std::string error;
        auto a = parse_npy(file, error);
        REQUIRE_MESSAGE(a.has_value(), error);
        CHECK(a->dtype == c.t);
        CHECK(a->shape == c.shape);
        CHECK(std::string(a->data.begin(), a->data.end()) == c.bytes);
    }
    CHECK(npy_header(DType::F16, {3}).find("'descr': '<f2'") != std::string::npos);
    CHECK(npy_header(DType::BF16, {3}).find("'descr': '|V2'") != std::string::npos);
    CHECK(npy_header(DType::F32, {3}).find("'shape': (3,)") != std::string::npos);
    CHECK(npy_header(DType::F32, {}).find("'shape': ()") != std::string::npos);
}

TEST_CASE("npy: a file's shape from its header alone") {
    const std::vector<float> f(1000, 1.0f);
    std::string file = encode_npy(DType::F32, {10, 100}, raw(f).data());
    file.resize(file.size() - 3000);  // the data is not read: a truncated file still states its shape
    const std::string path = temp_path(".npy");
    {
        std::FILE* out = std::fopen(path.c_str(), "wb");
        REQUIRE(out);
        std::fwrite(file.data(), 1, file.size(), out);
        std::fclose(out);
    }
    CHECK(npy_file_shape(path) == std::optional<Shape>(Shape{10, 100}));
    {
        std::FILE* out = std::fopen(path.c_str(), "wb");
        REQUIRE(out);
        std::fwrite("not an npy", 1, 10, out);
        std::fclose(out);
    }
    CHECK_FALSE(npy_file_shape(path).has_value());
    std::remove(path.c_str());
    CHECK_FALSE(npy_file_shape(path).has_value());
    CHECK_FALSE(npy_file_shape("/tmp").has_value());
}

TEST_CASE("npy: big-endian and Fortran-order files become little-endian C order") {
    // [[1, 2, 3], [4, 5, 6]] as '>i4' in Fortran order: columns first, bytes swapped.
    std::string data;
    for (int v : {1, 4, 2, 5, 3, 6}) data += std::string{'\0', '\0', '\0', static_cast<char>(v)};
    std::string error;
    auto a = parse_npy(npy_bytes("{'descr': '>i4', 'fortran_order': True, 'shape': (2, 3), }\n", data), error);
    REQUIRE_MESSAGE(a.has_value(), error);
    CHECK(a->dtype == DType::I32);
    CHECK(values<int32_t>(*a) == std::vector<int32_t>{1, 2, 3, 4, 5, 6});

    // Three dimensions, Fortran order, f64 little-endian.
    std::vector<double> fortran(24);
    for (int i0 = 0; i0 < 2; ++i0)
        for (int i1 = 0; i1 < 3; ++i1)
            for (int i2 = 0; i2 < 4; ++i2) fortran[static_cast<size_t>(i0 + 2 * (i1 + 3 * i2))] = i0 * 12 + i1 * 4 + i2;
    a = parse_npy(npy_bytes("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3, 4)}", raw(fortran)), error);
    REQUIRE_MESSAGE(a.has_value(), error);
    auto c = values<double>(*a);
    for (size_t k = 0; k < c.size(); ++k) CHECK(c[k] == static_cast<double>(k));

    // Version 2.0 (a 4-byte header length), bool bytes other than 0/1, '?' descr.
    a = parse_npy(npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", std::string("\x00\x07\x01", 3), 2),
                  error);
    REQUIRE_MESSAGE(a.has_value(), error);
    CHECK(values<uint8_t>(*a) == std::vector<uint8_t>{0, 1, 1});
}

TEST_CASE("npy: bad files are refused with the offset and the field") {
    const std::string good_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
    const std::string good = npy_bytes(good_dict, raw(std::vector<float>{1, 2}));
    CHECK(parse_error("PK\x03\x04 not npy").find("offset 0: bad magic") == 0);
    CHECK(parse_error("PK\x03\x04 not npy").find("an .npz?") != std::string::npos);
    CHECK(parse_error(std::string("\x93NUMPY", 6)).find("offset 6") == 0);
    CHECK(parse_error(std::string("\x93NUMPY\x01\x00\x05", 9)).find("offset 8") == 0);
    CHECK(parse_error(good.substr(0, 20)).find("header length 57 runs past the end") != std::string::npos);
    const std::string truncated = parse_error(good.substr(0, good.size() - 1));
    CHECK(truncated.find("the data is truncated") != std::string::npos);
    CHECK(truncated.find("needs 8 bytes, the file has 7") != std::string::npos);
    CHECK(parse_error(npy_bytes(good_dict, "", 4)).find("unsupported format version 4.0") != std::string::npos);
    CHECK(parse_error(npy_bytes("{'descr': '<f4', 'shape': (2,)}", "12345678")).find("no 'fortran_order'") !=
          std::string::npos);
    CHECK(parse_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", ""))
              .find("unexpected header field 'x'") != std::string::npos);
    CHECK(parse_error(npy_bytes("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", ""))
              .find("'fortran_order': expected True or False") != std::string::npos);
    CHECK(parse_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': [2]}", ""))
              .find("header field 'shape': expected a tuple") != std::string::npos);
    CHECK(parse_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", ""))
              .find("header field 'shape'") != std::string::npos);
    CHECK(parse_error(npy_bytes("{'descr': '<u2', 'fortran_order': False, 'shape': (2,)}", "1234"))
              .find("dtype '<u2' (uint16) is not one graphrun has") != std::string::npos);
    CHECK(parse_error(npy_bytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}", ""))
              .find("structured arrays are not supported") != std::string::npos);
    CHECK(parse_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999)}", ""))
              .find("more elements than graphrun holds") != std::string::npos);
    CHECK(parse_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x", "12345678"))
              .find("after the header dict") != std::string::npos);
    CHECK(parse_error(npy_bytes("{'descr': '<f4", "")).find("unterminated string") != std::string::npos);
    // The offset counts from the start of the file: the dict starts at 10, its 'x' at 66.
    CHECK(parse_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", ""))
              .find("offset 66:") == 0);
}

TEST_CASE("npz: the CRC-32 of zip, and an archive that reads back") {
    CHECK(crc32_update(0, "123456789", 9) == 0xCBF43926u);
    const std::vector<float> f{1, 2, 3, 4};
    const std::vector<int64_t> l{7};
    const std::string path = temp_path(".npz");
    std::string error;
    REQUIRE(write_npz_file(path, {{"a", DType::F32, {2, 2}, f.data()}, {"b#2", DType::I64, {}, l.data()}}, error));
    std::string bytes;
    REQUIRE(read_whole_file(path, bytes, error));
    std::remove(path.c_str());
    CHECK(looks_like_zip(bytes));
    auto entries = parse_npz(bytes, error);
    REQUIRE_MESSAGE(entries.has_value(), error);
    REQUIRE(entries->size() == 2);
    CHECK((*entries)[0].name == "a");
    CHECK((*entries)[0].array.shape == Shape{2, 2});
    CHECK(values<float>((*entries)[0].array) == f);
    CHECK((*entries)[1].name == "b#2");
    CHECK(values<int64_t>((*entries)[1].array) == l);

    // A flipped data byte fails the CRC; a cut archive has no end record.
    std::string corrupt = bytes;
    corrupt[120] ^= 0x40;
    CHECK_FALSE(parse_npz(corrupt, error).has_value());
    CHECK(error.find("CRC-32 mismatch") != std::string::npos);
    CHECK_FALSE(parse_npz(bytes.substr(0, bytes.size() - 30), error).has_value());
    CHECK(error.find("no zip end-of-central-directory record") != std::string::npos);
    CHECK_FALSE(parse_npz(bytes.substr(bytes.size() - 22), error).has_value());
    CHECK(error.find("lies past the end of the file") != std::string::npos);
}

namespace {

// A zip archive by hand: local headers and data, then the central directory,
// whose entries may lie (a shared offset, sizes that overlap the next member).
struct ZipBuilder {
    struct Entry {
        std::string name;
        uint32_t crc = 0, csize = 0, usize = 0, offset = 0;
        uint16_t method = 0;
    };
    std::string body;
    std::vector<Entry> entries;

    static void put(std::string& s, uint64_t v, int n) {
        for (int i = 0; i < n; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
    }
    void add(const std::string& name, const std::string& data) {
        Entry e{name, crc32_update(0, data.data(), data.size()), static_cast<uint32_t>(data.size()),
                static_cast<uint32_t>(data.size()), static_cast<uint32_t>(body.size()), 0};
        put(body, 0x04034b50, 4), put(body, 20, 2), put(body, 0, 2), put(body, 0, 2), put(body, 0, 2);
        put(body, 33, 2), put(body, e.crc, 4), put(body, e.csize, 4), put(body, e.usize, 4);
        put(body, name.size(), 2), put(body, 0, 2);
        body += name + data;
        entries.push_back(e);
    }
    std::string bytes() const {
        std::string cd;
        for (const Entry& e : entries) {
            put(cd, 0x02014b50, 4), put(cd, 20, 2), put(cd, 20, 2), put(cd, 0, 2), put(cd, e.method, 2);
            put(cd, 0, 2), put(cd, 33, 2), put(cd, e.crc, 4), put(cd, e.csize, 4), put(cd, e.usize, 4);
            put(cd, e.name.size(), 2), put(cd, 0, 2), put(cd, 0, 2), put(cd, 0, 2), put(cd, 0, 2), put(cd, 0, 4);
            put(cd, e.offset, 4);
            cd += e.name;
        }
        std::string out = body + cd;
        put(out, 0x06054b50, 4), put(out, 0, 2), put(out, 0, 2), put(out, entries.size(), 2);
        put(out, entries.size(), 2), put(out, cd.size(), 4), put(out, body.size(), 4), put(out, 0, 2);
        return out;
    }
};

std::string npz_error(const std::string& bytes, const ArrayLimits& limits = {}) {
    std::string error;
    CHECK_FALSE(parse_npz(bytes, error, limits).has_value());
    return error;
}

}  // namespace

TEST_CASE("npz: members' names and shapes from their headers alone, the file mapped") {
    const std::vector<float> f{1, 2, 3, 4};
    const std::vector<int64_t> l{7};
    const std::string path = temp_path(".npz");
    std::string error;
    REQUIRE(write_npz_file(path, {{"a", DType::F32, {2, 2}, f.data()}, {"b#2", DType::I64, {}, l.data()}}, error));
    auto shapes = npz_file_shapes(path);
    REQUIRE(shapes.has_value());
    REQUIRE(shapes->size() == 2);
    CHECK((*shapes)[0] == std::pair<std::string, Shape>{"a", {2, 2}});
    CHECK((*shapes)[1] == std::pair<std::string, Shape>{"b#2", {}});
    std::remove(path.c_str());
    CHECK_FALSE(npz_file_shapes(path).has_value());
    CHECK_FALSE(npz_file_shapes("/tmp").has_value());

    // A member whose data stops after its header: its shape is known (the data
    // is not read), while the full reader refuses it.
    const std::vector<float> big(1000, 1.0f);
    std::string npy = encode_npy(DType::F32, {10, 100}, big.data());
    npy.resize(npy.size() - 3000);
    ZipBuilder zip;
    zip.add("x.npy", npy);
    const std::string bytes = zip.bytes();
    auto cut = npz_member_shapes(bytes, error);
    REQUIRE_MESSAGE(cut.has_value(), error);
    CHECK((*cut)[0] == std::pair<std::string, Shape>{"x", {10, 100}});
    CHECK_FALSE(parse_npz(bytes, error).has_value());
    // Not an archive, or a member that is not an .npy: no shapes, and why.
    CHECK_FALSE(npz_member_shapes("PK\x05\x06", error).has_value());
    ZipBuilder text;
    text.add("t.npy", "not an npy file at all");
    CHECK_FALSE(npz_member_shapes(text.bytes(), error).has_value());
    CHECK(error.find("t.npy") != std::string::npos);
}

TEST_CASE("npz: members that share, overlap or repeat, and sizes past the bounds, are refused before inflating") {
    const std::string member = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                                         raw(std::vector<float>{1, 2}));
    ZipBuilder ok;
    ok.add("a.npy", member);
    ok.add("b.npy", member);
    std::string error;
    auto entries = parse_npz(ok.bytes(), error);
    REQUIRE_MESSAGE(entries.has_value(), error);
    CHECK(entries->size() == 2);

    ZipBuilder shared = ok;
    shared.entries[1].offset = shared.entries[0].offset;
    CHECK(npz_error(shared.bytes()).find("member 'b.npy' starts at offset 0, as member 'a.npy' does") !=
          std::string::npos);

    ZipBuilder overlap = ok;
    overlap.entries[0].csize = overlap.entries[0].usize += 40;
    CHECK(npz_error(overlap.bytes()).find("member 'b.npy''s local header overlaps the bytes of member 'a.npy'") !=
          std::string::npos);

    ZipBuilder past = ok;
    past.entries[1].csize = past.entries[1].usize += 20;
    CHECK(npz_error(past.bytes()).find("run into the central directory") != std::string::npos);

    ZipBuilder same_name;
    same_name.add("a.npy", member);
    same_name.add("a", member);
    CHECK(npz_error(same_name.bytes()).find("member 'a' has the name of member 'a.npy'") != std::string::npos);

    // The members' declared sizes together, against the bound on one file's arrays and the memory limit.
    ArrayLimits small;
    small.array_bytes = member.size() + 10;
    const std::string total = npz_error(ok.bytes(), small);
    CHECK(total.find("member 'b.npy' brings the members' declared sizes to " + std::to_string(2 * member.size()) +
                     " bytes uncompressed, more than graphrun's limit of " + std::to_string(member.size() + 10) +
                     " bytes on the arrays of one file; nothing was inflated") != std::string::npos);
    ArrayLimits memory;
    memory.memory_limit = 50;
    CHECK(npz_error(ok.bytes(), memory).find("member 'a.npy' declares " + std::to_string(member.size()) +
                                             " bytes uncompressed, more than the memory limit of 50 bytes") !=
          std::string::npos);

    // Names from the file are escaped in messages.
    ZipBuilder esc;
    esc.add(std::string("\x1b[2J\x07.npy"), member);
    esc.entries[0].crc ^= 1;
    const std::string e = npz_error(esc.bytes());
    CHECK(e.find("member '\\x1b[2J\\x07.npy'") != std::string::npos);
    CHECK(e.find('\x1b') == std::string::npos);
}

TEST_CASE("npy: an array over the bounds is refused from its header; messages quote no file contents") {
    ArrayLimits limits;
    limits.memory_limit = 1000;
    std::string error;
    const std::string big = npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (200,), }", "");
    CHECK_FALSE(parse_npy(big, error, limits).has_value());
    CHECK(error == "offset 10: header fields 'shape' [200] and 'descr' '<f8' declare 1600 bytes (1.6 KiB) of data, "
                   "more than the memory limit of 1000 bytes");
    // A text file: what it is, not what it says.
    const std::string text = parse_error("root:x:0:0:root:/root:/bin/bash\n");
    CHECK(text.find("root") == std::string::npos);
    CHECK(text.find("it starts with text") != std::string::npos);
    CHECK(parse_error(npy_bytes("{'descr': '\x1b[31m', 'fortran_order': False, 'shape': (2,)}", ""))
              .find("dtype '\\x1b[31m'") != std::string::npos);
    CHECK(parse_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", "", 2).replace(8, 4,
                                                                                                       "\xff\xff\xff\x7f"))
              .find("header length 2147483647 is more than graphrun reads") != std::string::npos);
    CHECK(quote_bytes("a'b\\c\n", 64) == "'a\\x27b\\x5cc\\x0a'");
    CHECK(quote_bytes("abcdef", 3) == "'abc...'");
}

TEST_CASE("read_array_file: regular files only, bounded by the bytes read") {
    std::string out, error;
    const std::string fifo = temp_path(".fifo");
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    CHECK_FALSE(read_array_file(fifo, out, error));  // opened without waiting for a writer
    CHECK(error == "cannot read " + fifo + ": it is a FIFO (named pipe); array files are read from regular files only");
    std::remove(fifo.c_str());
    CHECK_FALSE(read_array_file("/tmp", out, error));
    CHECK(error.find("it is a directory") != std::string::npos);
    CHECK_FALSE(read_array_file("/dev/zero", out, error));
    CHECK(error.find("it is a character device") != std::string::npos);
    // /proc files state a size of 0: read only until the first bytes show no array file.
    REQUIRE(read_array_file("/proc/self/pagemap", out, error));
    CHECK(out.size() <= (size_t{1} << 20));

    // A file over the bound stops there, and the message names the bound.
    const std::string path = temp_path(".npz");
    FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f);
    const std::string zip = "PK\x03\x04" + std::string(4000, 'z');
    std::fwrite(zip.data(), 1, zip.size(), f);
    std::fclose(f);
    ArrayLimits limits;
    limits.file_bytes = 1000;
    CHECK_FALSE(read_array_file(path, out, error, limits));
    CHECK(error == "cannot read " + path + ": it holds more than graphrun's limit of 1000 bytes on an array file; "
                   "reading stopped there");
    limits.memory_limit = 500;
    CHECK_FALSE(read_array_file(path, out, error, limits));
    CHECK(error.find("more than the memory limit of 500 bytes") != std::string::npos);
    // An .npy is read up to the end of the data its header declares (in reads of 1 MiB).
    const std::string npy = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                                      raw(std::vector<float>{1, 2})) +
                            std::string(size_t{3} << 20, 't');
    f = std::fopen(path.c_str(), "wb");
    std::fwrite(npy.data(), 1, npy.size(), f);
    std::fclose(f);
    REQUIRE(read_array_file(path, out, error));
    CHECK(out.size() <= (size_t{1} << 20));
    auto a = parse_npy(out, error);
    REQUIRE_MESSAGE(a.has_value(), error);
    CHECK(values<float>(*a) == std::vector<float>{1, 2});
    std::remove(path.c_str());
}

TEST_CASE("feeds: option forms") {
    std::string error;
    auto s = parse_array_option("--input", "x=@a.npy", true, error);
    REQUIRE(s);
    CHECK(s->name == "x");
    CHECK(s->file == "a.npy");
    CHECK(s->spelled() == "--input=x=@a.npy");
    s = parse_array_option("--input", "@all.npz", true, error);
    REQUIRE(s);
    CHECK(s->name.empty());
    CHECK(s->file == "all.npz");
    s = parse_array_option("--input", "x=[[1,2],[3,4]]", true, error);
    REQUIRE(s);
    CHECK(s->value == "[[1,2],[3,4]]");
    CHECK_FALSE(parse_array_option("--output", "x=[1]", false, error));
    CHECK(error.find("expected NAME=@FILE.npy or @FILE.npz") != std::string::npos);
    CHECK_FALSE(parse_array_option("--input", "x", true, error));
    CHECK_FALSE(parse_array_option("--input", "=@a.npy", true, error));
    CHECK_FALSE(parse_array_option("--input", "@", true, error));
    CHECK_FALSE(parse_array_option("--input", "x=", true, error));
    CHECK_FALSE(parse_array_option("--input", "x=@", true, error));
    CHECK(error.find("'@' must be followed by a file name") != std::string::npos);
    s = parse_array_option("--input", "x=[" + std::string(100, '1') + "]", true, error);
    REQUIRE(s);
    CHECK(s->spelled() == "--input=x=[" + std::string(59, '1') + "...");
}

TEST_CASE("feeds: inline values, missing inputs, unknown names, fill") {
    auto lg = load_graph_source("m.graph", "x = input([2, 2], dtype=i32)\nb = input([], dtype=bool)\ny = x + 1\n", false);
    REQUIRE(lg->ok());
    const Graph& g = lg->graph;
    InputValues values;
    // The value read for input node n (the graph itself holds no feeds).
    auto value_of = [&](const Node& n) -> const std::vector<uint8_t>& {
        for (const InputValue& v : values)
            if (v.id == static_cast<NodeId>(&n - g.nodes.data())) return v.bytes;
        static const std::vector<uint8_t> none;
        return none;
    };
    CHECK(graph_inputs(g).size() == 2);
    std::ostringstream err;
    std::string error;
    FeedOptions feeds;
    feeds.inputs.push_back(*parse_array_option("--input", "x=[[1,2],[3,4]]", true, error));
    auto e = read_feeds(g, feeds, "m.graph", values, err);
    CHECK(values.empty());
    REQUIRE(e);
    CHECK(e->kind == ErrorKind::Usage);
    CHECK(err.str().find("input 'b' (bool[]) has no value") != std::string::npos);
    CHECK(err.str().find("input 'x'") == std::string::npos);

    feeds.inputs.push_back(*parse_array_option("--input", "b=true", true, error));
    err.str("");
    CHECK_FALSE(read_feeds(g, feeds, "m.graph", values, err));
    CHECK(values.size() == 2);
    const Node& x = *graph_inputs(g)[0];
    CHECK(x.literal.empty());  // nothing written into the graph
    REQUIRE(value_of(x).size() == 16);
    int32_t v[4];
    std::memcpy(v, value_of(x).data(), 16);
    CHECK(v[3] == 4);

    auto problem = [&](const char* opt) {
        FeedOptions f;
        f.fill = FillMode::Zeros;
        f.inputs.push_back(*parse_array_option("--input", opt, true, error));
        std::ostringstream e2;
        InputValues ignored;
        CHECK(read_feeds(g, f, "m.graph", ignored, e2));
        return e2.str();
    };
    CHECK(problem("x=[1,2,3,4]").find("holds i32[4], but input 'x' is i32[2,2] (the shapes differ)") !=
          std::string::npos);
    CHECK(problem("x=[[1,2],[3]]").find("ragged") != std::string::npos);
    CHECK(problem("x=[[1,2.5],[3,4]]").find("(2.5) is not an integer") != std::string::npos);
    CHECK(problem("x=[[1,2],[3,4]").find("not a JSON number or nested list") != std::string::npos);
    CHECK(problem("x=[[1,2],[3,5000000000]]").find("out of range for i32") != std::string::npos);
    CHECK(problem("b=2").find("is not true, false, 0 or 1") != std::string::npos);
    CHECK(problem("xx=[1]").find("m.graph has no input 'xx'; did you mean 'x'?") != std::string::npos);
    CHECK(problem("x=@/nonexistent/a.npy").find("cannot read /nonexistent/a.npy") != std::string::npos);

    // --fill=ones fills every input no option gives; random is the same for the same seed.
    FeedOptions ones;
    ones.fill = FillMode::Ones;
    CHECK_FALSE(read_feeds(g, ones, "m.graph", values, err));
    std::memcpy(v, value_of(x).data(), 16);
    CHECK(v[0] == 1);
    FeedOptions rnd;
    rnd.fill = FillMode::Random;
    rnd.seed = 5;
    CHECK_FALSE(read_feeds(g, rnd, "m.graph", values, err));
    const std::vector<uint8_t> first = value_of(x);
    CHECK_FALSE(read_feeds(g, rnd, "m.graph", values, err));
    CHECK(value_of(x) == first);
    for (int k = 0; k < 4; ++k) {
        std::memcpy(v, value_of(x).data(), 16);
        CHECK(v[k] >= 0);
        CHECK(v[k] <= 9);
    }
}

TEST_CASE("expected outputs: numpy.allclose with NaN equal to NaN") {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    auto check = [](std::vector<float> got, std::vector<float> want, double rtol = 1e-5, double atol = 1e-8) {
        ExpectedValue w{"y", "y.npy", NpyArray{DType::F32, {static_cast<int64_t>(want.size())}, {}}};
        w.array.data.resize(want.size() * 4);
        std::memcpy(w.array.data.data(), want.data(), want.size() * 4);
        return compare_expected(tensor("y", DType::F32, {static_cast<int64_t>(got.size())}, raw(got)), w, rtol, atol);
    };
    CHECK(check({1, nan, inf, -inf}, {1, nan, inf, -inf}).matched);
    CHECK_FALSE(check({inf}, {-inf}).matched);
    CHECK_FALSE(check({nan}, {1}).matched);
    CHECK(check({1.000001f}, {1}).matched);
    CHECK_FALSE(check({1.0001f}, {1}).matched);
    CHECK(check({1.0001f}, {1}, 1e-3).matched);
    CHECK(check({0.5f}, {0}, 0, 0.5).matched);
    // |a - b| <= atol + rtol * |b|: b is the expected value (not symmetric).
    CHECK(check({2}, {1}, 1.0, 0).matched);
    CHECK_FALSE(check({1}, {2}, 0.4, 0).matched);

    ExpectedCheck c = check({1, 2, 3.5f, 4}, {1, 2, 3, 5});
    CHECK(c.mismatched == 2);
    CHECK(c.first_index == std::vector<int64_t>{2});
    CHECK(c.got == "3.5");
    CHECK(c.want == "3");
    CHECK(c.max_abs_error == 1);
    CHECK(c.max_rel_error == doctest::Approx(0.2));
    const std::string msg = mismatch_message(c, 1e-5, 1e-8);
    CHECK(msg.find("2 of 4 elements") != std::string::npos);
    CHECK(msg.find("the first at [2]: got 3.5, expected 3") != std::string::npos);

    ExpectedValue w{"y", "y.npy", NpyArray{DType::F32, {2}, std::vector<uint8_t>(8)}};
    c = compare_expected(tensor("y", DType::F32, {1, 2}, std::string(8, '\0')), w, 1e-5, 1e-8);
    CHECK_FALSE(c.matched);
    CHECK(c.problem == "output 'y' is f32[1,2], y.npy holds f32[2] (the shapes differ)");
    w.array.dtype = DType::I32;
    c = compare_expected(tensor("y", DType::F32, {2}, std::string(8, '\0')), w, 1e-5, 1e-8);
    CHECK(c.problem.find("the dtypes differ") != std::string::npos);

    // i64 compares exactly beyond 2^53.
    const std::vector<int64_t> big{(int64_t{1} << 60) + 1};
    const std::vector<int64_t> big2{int64_t{1} << 60};
    ExpectedValue wi{"y", "y.npy", NpyArray{DType::I64, {1}, {}}};
    wi.array.data.assign(reinterpret_cast<const uint8_t*>(big2.data()), reinterpret_cast<const uint8_t*>(big2.data()) + 8);
    CHECK_FALSE(compare_expected(tensor("y", DType::I64, {1}, raw(big)), wi, 0, 0).matched);
    CHECK(compare_expected(tensor("y", DType::I64, {1}, raw(big2)), wi, 0, 0).matched);
}
