// The CPU's range and random streams are the values the GPU repeats with
// separately rounded operations (philox.h, gpu/kernels/create.cu): the host
// code must never contract a*b + c into a fused multiply-add (aarch64 hosts,
// -mfma). The references below multiply and add through volatile doubles, and
// each case checks that std::fma gives different bits for some of its
// elements, so a contracted build of create.cpp fails here on any host with an
// fma instruction. (tests/fp_contract_test.py checks the flag itself.)
#include "tests/unit/kernel_test_helpers.h"

using namespace kernel_test;

namespace {

// fl(a + fl(b * c)), never fused.
double mul_add(double a, double b, double c) {
    volatile double p = b * c;
    volatile double s = a + p;
    return s;
}
float mul_add(float a, float b, float c) {
    volatile float p = b * c;
    volatile float s = a + p;
    return s;
}

}  // namespace

TEST_CASE("fp-contract: range is start + i * delta, separately rounded") {
    const int64_t n = 4096;
    const double start = 0.1, delta = 0.7;
    Result r = run_op(OpKind::Range, {},
                      {{"start", F(start), {}}, {"limit", F(start + n * delta), {}}, {"delta", F(delta), {}}},
                      DType::F64, {n});
    REQUIRE(r.error == "");
    int fused_differs = 0;
    for (int64_t i = 0; i < n; ++i) {
        const double ref = mul_add(start, static_cast<double>(i), delta);
        REQUIRE(r.out.as<double>()[i] == ref);
        fused_differs += std::fma(static_cast<double>(i), delta, start) != ref;
    }
    CHECK(fused_differs > 0);  // the case can tell the two apart
}

TEST_CASE("fp-contract: random_normal is mean + stddev * z, separately rounded") {
    const int64_t n = 4096;
    const double mean = 0.3, stddev = 1.7;
    Result r = run_op(OpKind::RandomNormal, {},
                      {{"shape", Ints({n}), {}}, {"mean", F(mean), {}}, {"stddev", F(stddev), {}}, {"seed", I(11), {}}},
                      DType::F64, {n});
    REQUIRE(r.error == "");
    int fused_differs = 0;
    for (int64_t i = 0; i < n; ++i) {
        double u1, u2;
        philox::normal_uniforms(static_cast<uint64_t>(i), philox::seed_key(11), u1, u2);
        volatile double m2 = -2.0 * std::log(u1);
        volatile double a = philox::kTwoPi * u2;
        volatile double z = std::sqrt(m2) * std::cos(a);
        const double ref = mul_add(mean, stddev, z);
        REQUIRE(r.out.as<double>()[i] == ref);
        fused_differs += std::fma(stddev, z, mean) != ref;
    }
    CHECK(fused_differs > 0);
}

TEST_CASE("fp-contract: random_uniform is lo + d * u, separately rounded") {
    const int64_t n = 4096;
    Result r32 = run_op(OpKind::RandomUniform, {},
                        {{"shape", Ints({n}), {}}, {"low", F(0.1), {}}, {"high", F(3.3), {}}, {"seed", I(5), {}}},
                        DType::F32, {n});
    Result r64 = run_op(OpKind::RandomUniform, {},
                        {{"shape", Ints({n}), {}}, {"low", F(0.1), {}}, {"high", F(3.3), {}}, {"seed", I(5), {}}},
                        DType::F64, {n});
    REQUIRE(r32.error == "");
    REQUIRE(r64.error == "");
    const philox::Key key = philox::seed_key(5);
    const float lo32 = 0.1f, d32 = 3.3f - lo32;
    const double lo64 = 0.1, d64 = 3.3 - 0.1;
    int fused32 = 0, fused64 = 0;
    for (int64_t i = 0; i < n; ++i) {
        const auto u = static_cast<uint64_t>(i);
        const float u32 = philox::unit_f32(philox::block(u / 4, key).v[u % 4]);
        const float ref32 = mul_add(lo32, d32, u32);
        REQUIRE(r32.out.as<float>()[i] == ref32);
        fused32 += std::fma(d32, u32, lo32) != ref32;
        const philox::Counter x = philox::block(u / 2, key);
        const unsigned lane = static_cast<unsigned>(u % 2) * 2;
        const double u64 = philox::unit_f64(x.v[lane], x.v[lane + 1]);
        const double ref64 = mul_add(lo64, d64, u64);
        REQUIRE(r64.out.as<double>()[i] == ref64);
        fused64 += std::fma(d64, u64, lo64) != ref64;
    }
    CHECK(fused32 > 0);
    CHECK(fused64 > 0);
}
