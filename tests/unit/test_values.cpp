// Printing values (cli/values.h): JSON numbers in nlohmann's form from the
// shortest digits of the dtype, NumPy's text for a few shapes, the summary.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>

#include "cli/values.h"
#include "cli/values_digits.h"

using namespace graphrun;
using namespace graphrun::cli;

namespace {

template <class T>
HostTensor tensor(DType dt, Shape shape, std::vector<T> values) {
    HostTensor t{"t", dt, std::move(shape), "cpu", {}};
    t.data.resize(values.size() * sizeof(T));
    if (!values.empty()) std::memcpy(t.data.data(), values.data(), t.data.size());
    return t;
}

std::string json_of(double v, bool f32) {
    char buf[40];
    return std::string(buf, json_number(buf, v, f32 ? DType::F32 : DType::F64));
}

std::string streamed(const HostTensor& t) {
    std::ostringstream s;
    write_values_json(s, t);
    return s.str();
}

}  // namespace

TEST_CASE("values: a JSON number is written as nlohmann::json writes the double") {
    std::mt19937_64 rng(15);
    std::uniform_int_distribution<uint64_t> bits;
    const double fixed[] = {0.0, -0.0, 1.0, -1.0, 0.1, 1e-4, 1e-5, 0.00012, 1e15, 1e16, 123456789012345.0,
                            1234567890123456.0, 1e20, 1e-300, 5e-324, 1.7976931348623157e308, 2.5, 1e100, 1.5e-7};
    for (double v : fixed) CHECK(json_of(v, false) == nlohmann::json(v).dump());
    int differ = 0;
    for (int i = 0; i < 100000; ++i) {
        uint64_t b = bits(rng);
        double v;
        std::memcpy(&v, &b, 8);
        if (!std::isfinite(v)) continue;
        // nlohmann's Grisu2 is not always the shortest; where they differ both must read back.
        const std::string mine = json_of(v, false), theirs = nlohmann::json(v).dump();
        if (mine != theirs) {
            ++differ;
            CHECK(std::strtod(mine.c_str(), nullptr) == v);
            CHECK(mine.size() <= theirs.size());
        }
    }
    CHECK(differ < 1000);
    // f32: the shortest digits that read back as the same f32.
    CHECK(json_of(0.78867513f, true) == "0.7886751");
    CHECK(json_of(0.1f, true) == "0.1");
    CHECK(json_of(16777216.0f, true) == "16777216.0");
    CHECK(json_of(3.4028235e38f, true) == "3.4028235e+38");
    CHECK(json_of(1e-45f, true) == "1e-45");
}

TEST_CASE("values: streamed JSON nests, and names NaN and infinities") {
    CHECK(streamed(tensor<float>(DType::F32, {}, {1.5f})) == "1.5");
    CHECK(streamed(tensor<float>(DType::F32, {2, 0}, {})) == "[[],[]]");
    CHECK(streamed(tensor<float>(DType::F32, {0, 3}, {})) == "[]");
    CHECK(streamed(tensor<int64_t>(DType::I64, {2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, -8})) ==
          "[[[1,2],[3,4]],[[5,6],[7,-8]]]");
    CHECK(streamed(tensor<double>(DType::F64, {4}, {NAN, INFINITY, -INFINITY, 1.0})) ==
          "[\"nan\",\"inf\",\"-inf\",1.0]");
    CHECK(streamed(tensor<uint8_t>(DType::Bool, {1, 2}, {1, 0})) == "[[true,false]]");
    // Every element its own row at every depth: the most brackets per element.
    std::vector<double> deep(40000, -1.7976931348623157e308);
    const std::string nested = streamed(tensor<double>(DType::F64, {40000, 1, 1, 1, 1, 1, 1, 1, 1, 1}, deep));
    CHECK(nlohmann::json::parse(nested).size() == 40000);
    CHECK(nested.substr(0, 55) == "[[[[[[[[[[-1.7976931348623157e+308]]]]]]]]],[[[[[[[[[-1");
    // Large enough for several chunks formatted side by side: still one valid document.
    std::vector<int32_t> many(300000);
    for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<int32_t>(i);
    const std::string text = streamed(tensor<int32_t>(DType::I32, {3, 1000, 100}, many));
    nlohmann::json parsed = nlohmann::json::parse(text);
    REQUIRE(parsed.size() == 3);
    CHECK(parsed[2][999][99] == 299999);
    CHECK(parsed[1][0][0] == 100000);
}

TEST_CASE("values: NumPy's text") {
    CHECK(format_values(tensor<float>(DType::F32, {3}, {1.5f, -2.25f, 0.78867513f})) == "[ 1.5       -2.25       0.7886751]");
    CHECK(format_values(tensor<double>(DType::F64, {2}, {1e-5, 1e100})) == "[1.e-005 1.e+100]");
    CHECK(format_values(tensor<float>(DType::F32, {}, {67108872.0f})) == "67108870.0");
    // An f32 over 2^24 shows its own integer digits (43391232, not the unique 43391230).
    CHECK(format_values(tensor<float>(DType::F32, {2}, {43391232.0f, 50000.5f})) == "[43391232.     50000.5]");
    CHECK(format_values(tensor<int32_t>(DType::I32, {2, 2}, {-5, 100, 7, 8})) == "[[ -5 100]\n [  7   8]]");
    CHECK(format_values(tensor<uint8_t>(DType::Bool, {2}, {1, 0})) == "[ True False]");
    CHECK(format_values(tensor<float>(DType::F32, {2, 0, 3}, {})) == "[]");
    std::vector<float> big(2000);
    for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i);
    CHECK(format_values(tensor<float>(DType::F32, {2000}, big)) ==
          "[0.000e+00 1.000e+00 2.000e+00 ... 1.997e+03 1.998e+03 1.999e+03]");
    const std::string full = format_values(tensor<float>(DType::F32, {2000}, big), true);
    CHECK(full.find("...") == std::string::npos);
    CHECK(full.find("1.234e+03") != std::string::npos);
}

TEST_CASE("values: the --no-data summary") {
    ValueSummary s = summarize(tensor<float>(DType::F32, {4}, {1.5f, NAN, -2.0f, 0.5f}));
    CHECK(s.min == "-2.0");
    CHECK(s.max == "1.5");
    CHECK(s.mean == "0.0");
    CHECK(s.nan_count == 1);
    s = summarize(tensor<double>(DType::F64, {2}, {NAN, NAN}));
    CHECK(s.min == "null");
    CHECK(s.mean == "null");
    CHECK(s.nan_count == 2);
    s = summarize(tensor<int64_t>(DType::I64, {2}, {INT64_MIN, INT64_MAX}));
    CHECK(s.min == "-9223372036854775808");
    CHECK(s.max == "9223372036854775807");
    s = summarize(tensor<float>(DType::F32, {2}, {INFINITY, -INFINITY}));
    CHECK(s.min == "\"-inf\"");
    CHECK(s.max == "\"inf\"");
    CHECK(s.mean == "\"nan\"");
    s = summarize(tensor<uint8_t>(DType::Bool, {3}, {1, 0, 1}));
    CHECK(s.min == "0");
    CHECK(s.max == "1");
    s = summarize(tensor<float>(DType::F32, {0}, {}));
    CHECK(s.min == "null");
}
