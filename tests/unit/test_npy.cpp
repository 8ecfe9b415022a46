// The .npy/.npz reader and writer (engine/frontend/npy.h) and the feeds and
// expected-output checks built on them (engine/api/feeds.h).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
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
                 {DType::F64, {0, 3}, std::string()}};
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
    CHECK(npy_header(DType::F32, {3}).find("'shape': (3,)") != std::string::npos);
    CHECK(npy_header(DType::F32, {}).find("'shape': ()") != std::string::npos);
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
}

TEST_CASE("feeds: inline values, missing inputs, unknown names, fill") {
    auto lg = load_graph_source("m.graph", "x = input([2, 2], dtype=i32)\nb = input([], dtype=bool)\ny = x + 1\n", false);
    REQUIRE(lg->ok());
    Graph& g = lg->graph;
    CHECK(graph_inputs(g).size() == 2);
    std::ostringstream err;
    std::string error;
    FeedOptions feeds;
    feeds.inputs.push_back(*parse_array_option("--input", "x=[[1,2],[3,4]]", true, error));
    auto e = apply_feeds(g, feeds, "m.graph", err);
    REQUIRE(e);
    CHECK(e->kind == ErrorKind::Usage);
    CHECK(err.str().find("input 'b' (bool[]) has no value") != std::string::npos);
    CHECK(err.str().find("input 'x'") == std::string::npos);

    feeds.inputs.push_back(*parse_array_option("--input", "b=true", true, error));
    err.str("");
    CHECK_FALSE(apply_feeds(g, feeds, "m.graph", err));
    const Node& x = *graph_inputs(g)[0];
    REQUIRE(x.literal.size() == 16);
    int32_t v[4];
    std::memcpy(v, x.literal.data(), 16);
    CHECK(v[3] == 4);

    auto problem = [&](const char* opt) {
        FeedOptions f;
        f.fill = FillMode::Zeros;
        f.inputs.push_back(*parse_array_option("--input", opt, true, error));
        std::ostringstream e2;
        CHECK(apply_feeds(g, f, "m.graph", e2));
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
    CHECK_FALSE(apply_feeds(g, ones, "m.graph", err));
    std::memcpy(v, x.literal.data(), 16);
    CHECK(v[0] == 1);
    FeedOptions rnd;
    rnd.fill = FillMode::Random;
    rnd.seed = 5;
    CHECK_FALSE(apply_feeds(g, rnd, "m.graph", err));
    const std::vector<uint8_t> first = x.literal;
    CHECK_FALSE(apply_feeds(g, rnd, "m.graph", err));
    CHECK(x.literal == first);
    for (int k = 0; k < 4; ++k) {
        std::memcpy(v, x.literal.data(), 16);
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
