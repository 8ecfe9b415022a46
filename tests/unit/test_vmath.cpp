// vec_f32 (engine/kernels/cpu/vmath.h): libmvec's double functions, rounded
// to f32, against the scalar double function rounded once, on every
// instruction-set path, and both against a long-double reference.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "engine/kernels/cpu/simd.h"
#include "engine/kernels/cpu/vmath.h"

using namespace graphrun::kernels;

namespace {

struct IsaCap {
    Isa saved;
    explicit IsaCap(Isa cap) : saved(limit_isa(cap)) {}
    ~IsaCap() { limit_isa(saved); }
};

bool same(float a, float b) { return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) || (a != a && b != b); }

long double exact(VecFn f, long double x) {
    switch (f) {
        case VecFn::Exp: return std::exp(x);
        case VecFn::Tanh: return std::tanh(x);
        case VecFn::Erf: return std::erf(x);
        case VecFn::Log: return std::log(x);
        case VecFn::Sigmoid: return 1.0L / (1.0L + std::exp(-x));
        case VecFn::Gelu: return 0.5L * x * std::erfc(-x / std::sqrt(2.0L));
        case VecFn::GeluTanh: {
            const long double z = std::sqrt(2.0L / 3.14159265358979323846264338327950288L) * (x + 0.044715L * x * x * x);
            return x / (1.0L + std::exp(-2.0L * z));
        }
    }
    return x;
}

const char* name(VecFn f) {
    switch (f) {
        case VecFn::Exp: return "exp";
        case VecFn::Tanh: return "tanh";
        case VecFn::Erf: return "erf";
        case VecFn::Log: return "log";
        case VecFn::Sigmoid: return "sigmoid";
        case VecFn::Gelu: return "gelu";
        case VecFn::GeluTanh: return "gelu (tanh)";
    }
    return "?";
}

// Inputs over each function's whole range: special values, denormals, the
// overflow edges, and random floats of every exponent.
std::vector<float> inputs() {
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> x = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -0.5f, 1e-45f, -1e-45f, 1e-38f, 88.72f, 88.73f,
                            -87.3f, -103.9f, -104.0f, 9.0f, -9.0f, 3.9f, 1e30f, -1e30f, inf, -inf,
                            std::numeric_limits<float>::quiet_NaN()};
    std::mt19937 g(11);
    std::uniform_int_distribution<uint32_t> bits(0, 0xffffffffu);
    std::uniform_real_distribution<float> near(-12.0f, 12.0f);
    for (int i = 0; i < 40000; ++i) {
        x.push_back(std::bit_cast<float>(bits(g)));
        x.push_back(near(g));
    }
    return x;
}

}  // namespace

TEST_CASE("vmath: every path gives the scalar double function's f32 result, within 1 ulp of exact") {
    INFO("library ", vec_math_library(), ", detected ", isa_name(detected_isa()));
    const std::vector<float> x = inputs();
    for (VecFn f : {VecFn::Exp, VecFn::Tanh, VecFn::Erf, VecFn::Log, VecFn::Sigmoid, VecFn::Gelu, VecFn::GeluTanh}) {
        std::vector<float> ref(x.size());
        for (size_t i = 0; i < x.size(); ++i) ref[i] = vec_f32_reference(f, x[i]);
        // The reference itself: the double function rounded once is the
        // exact value's f32 neighbour at worst.
        int64_t far = 0;
        for (size_t i = 0; i < x.size(); ++i) {
            const long double e = exact(f, x[i]);
            if (!std::isfinite(static_cast<double>(e)) || std::fabs(e) < 1e-30L) continue;
            const float lo = std::nextafter(static_cast<float>(e), -INFINITY), hi = std::nextafter(static_cast<float>(e), INFINITY);
            if (ref[i] < lo || ref[i] > hi) ++far;
        }
        CHECK_MESSAGE(far == 0, name(f), ": ", far, " results more than 1 ulp from exact");
        for (int cap = 0; cap <= static_cast<int>(detected_isa()); ++cap) {
            IsaCap scope(static_cast<Isa>(cap));
            for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{8}, int64_t{9}, int64_t{255}, int64_t{256}, int64_t{257},
                              static_cast<int64_t>(x.size())}) {
                std::vector<float> y(static_cast<size_t>(n));
                vec_f32(f, x.data(), y.data(), n);
                int64_t differ = 0;
                size_t first = 0;
                for (size_t i = 0; i < y.size(); ++i)
                    if (!same(y[i], ref[i]) && differ++ == 0) first = i;
                CHECK_MESSAGE(differ == 0, name(f), " on ", isa_name(static_cast<Isa>(cap)), " n=", n, ": ", differ,
                              " differ, the first at x=", x[first], ": ", y[first], " vs ", ref[first]);
            }
            // In place.
            std::vector<float> y = x;
            vec_f32(f, y.data(), y.data(), static_cast<int64_t>(y.size()));
            int64_t differ = 0;
            for (size_t i = 0; i < y.size(); ++i) differ += !same(y[i], ref[i]);
            CHECK_MESSAGE(differ == 0, name(f), " in place: ", differ, " differ");
        }
    }
}
