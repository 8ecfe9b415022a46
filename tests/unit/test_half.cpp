// The 16-bit float conversions (engine/ir/half.h) and the storage-type element
// access (engine/ir/elements.h): every half and bfloat16 pattern round-trips,
// ties go to even, overflow and subnormals are IEEE's, and the F16C row path
// gives the scalar path's bits.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "engine/ir/elements.h"
#include "engine/ir/half.h"
#include "engine/kernels/cpu/simd.h"

using namespace graphrun;

namespace {

bool is_nan_half(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0; }
bool is_nan_bf16(uint16_t h) { return (h & 0x7F80) == 0x7F80 && (h & 0x007F) != 0; }

// bfloat16 by the usual bit trick on a float: round to nearest even.
uint16_t bf16_reference(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40);
    return static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}

}  // namespace

TEST_CASE("every half and bfloat16 value converts to double and back unchanged") {
    for (uint32_t b = 0; b < 65536; ++b) {
        const auto h = static_cast<uint16_t>(b);
        const double v = half_to_double(Half{h});
        if (is_nan_half(h)) {
            CHECK(std::isnan(v));
            CHECK(is_nan_half(half_from_double(v).bits));
        } else {
            CHECK(half_from_double(v).bits == h);
        }
        const double w = bf16_to_double(BFloat16{h});
        if (is_nan_bf16(h)) CHECK(is_nan_bf16(bf16_from_double(w).bits));
        else CHECK(bf16_from_double(w).bits == h);
    }
}

TEST_CASE("half rounding: ties to even, overflow to infinity, subnormals, signed zero") {
    CHECK(half_from_double(1.0).bits == 0x3C00);
    CHECK(half_from_double(65504.0).bits == 0x7BFF);
    CHECK(half_from_double(65519.99).bits == 0x7BFF);  // below the midpoint to 65536
    CHECK(half_from_double(65520.0).bits == 0x7C00);   // the midpoint rounds to even: infinity
    CHECK(half_from_double(1e300).bits == 0x7C00);
    CHECK(half_from_double(-INFINITY).bits == 0xFC00);
    CHECK(half_from_double(-0.0).bits == 0x8000);
    CHECK(half_from_double(std::ldexp(1.0, -24)).bits == 0x0001);        // least subnormal
    CHECK(half_from_double(std::ldexp(1.0, -25)).bits == 0x0000);        // half of it: ties to even (0)
    CHECK(half_from_double(std::ldexp(3.0, -25)).bits == 0x0002);        // 1.5 quanta: to even (2)
    CHECK(half_from_double(1.0 + std::ldexp(1.0, -11)).bits == 0x3C00);  // tie between 1 and 1+2^-10: even
    CHECK(half_from_double(1.0 + std::ldexp(3.0, -11)).bits == 0x3C02);
    CHECK(half_from_double(std::ldexp(1023.5, -24)).bits == 0x0400);  // largest subnormal rounds up to the least normal
    // Straight from the double, not through float: this value is just above a
    // half tie, but rounds to the tie as a float.
    const double above_tie = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
    CHECK(half_from_double(above_tie).bits == 0x3C01);
}

TEST_CASE("bfloat16 rounding matches the float bit trick") {
    std::mt19937 rng(7);
    for (int i = 0; i < 200000; ++i) {
        uint32_t u = rng();
        float f;
        std::memcpy(&f, &u, 4);
        const uint16_t got = bf16_from_double(f).bits;
        if (std::isnan(f)) CHECK(is_nan_bf16(got));
        else CHECK(got == bf16_reference(f));
    }
}

TEST_CASE("storage element access: casts wrap, saturate and round as cast does") {
    std::vector<uint8_t> b(8);
    elements::store_int(DType::I8, b.data(), 0, 200);  // wraps
    CHECK(elements::load_int(DType::I8, b.data(), 0) == -56);
    elements::store_double(DType::I8, b.data(), 0, 300.7);  // saturates
    CHECK(elements::load_int(DType::I8, b.data(), 0) == 127);
    elements::store_double(DType::U8, b.data(), 0, -3.5);
    CHECK(elements::load_int(DType::U8, b.data(), 0) == 0);
    elements::store_double(DType::U8, b.data(), 0, NAN);
    CHECK(elements::load_int(DType::U8, b.data(), 0) == 0);
    int32_t big = 1000;
    uint8_t out = 0;
    elements::cast_element(DType::U8, &out, DType::I32, &big, 0);
    CHECK(out == static_cast<uint8_t>(1000 % 256));
    float f = 0.1f;
    uint16_t h = 0;
    elements::cast_element(DType::F16, &h, DType::F32, &f, 0);
    CHECK(h == 0x2E66);  // numpy.float16(numpy.float32(0.1)).view(numpy.uint16)
    CHECK(holds_exactly(DType::F32, DType::F16));
    CHECK(holds_exactly(DType::F16, DType::I8));
    CHECK(!holds_exactly(DType::F16, DType::BF16));
    CHECK(!holds_exactly(DType::I8, DType::U8));
    CHECK(holds_exactly(DType::I32, DType::U8));
}

TEST_CASE("f32 <-> f16 rows: the F16C path gives the scalar path's bits") {
    std::mt19937 rng(3);
    std::vector<float> x(100003);
    for (size_t i = 0; i < x.size(); ++i) {
        uint32_t u = rng();
        if (i % 3 == 0) u = (u & 0x8FFFFFFF) | 0x38000000;  // near the half range
        std::memcpy(&x[i], &u, 4);
    }
    x[0] = 65520.0f, x[1] = 65519.0f, x[2] = std::ldexp(1.0f, -25), x[3] = -0.0f, x[4] = INFINITY;
    std::vector<uint16_t> fast(x.size()), slow(x.size());
    kernels::f32_to_f16_row(x.data(), fast.data(), static_cast<int64_t>(x.size()));
    const kernels::Isa saved = kernels::limit_isa(kernels::Isa::Baseline);
    kernels::f32_to_f16_row(x.data(), slow.data(), static_cast<int64_t>(x.size()));
    std::vector<float> back_slow(x.size()), back_fast(x.size());
    kernels::f16_to_f32_row(slow.data(), back_slow.data(), static_cast<int64_t>(x.size()));
    kernels::limit_isa(saved);
    kernels::f16_to_f32_row(slow.data(), back_fast.data(), static_cast<int64_t>(x.size()));
    size_t differ = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        if (std::isnan(x[i])) {
            CHECK((is_nan_half(fast[i]) && is_nan_half(slow[i])));
            continue;
        }
        differ += fast[i] != slow[i];
        differ += std::memcmp(&back_slow[i], &back_fast[i], 4) != 0;
    }
    CHECK(differ == 0);
}
