// The CPU's math policy for activation_ops.h's unary formulas: floats are
// evaluated in double (an f32 result is rounded once); integers stay. Shared
// by the activation kernels (activation.cpp) and the fused epilogues
// (epilogue.h), so that a fused gelu gives the unfused one's bits.
#pragma once
#include <cmath>
#include <type_traits>

namespace graphrun::kernels {

// The CPU's math policy: floats widened to double; integers stay.
struct CpuMath {
    template <class T>
    using Wide = std::conditional_t<std::is_floating_point_v<T>, double, T>;
    template <class T>
    static T floor(T x) { return std::floor(x); }
    template <class T>
    static T ceil(T x) { return std::ceil(x); }
    template <class T>
    static T rint(T x) { return std::rint(x); }
    static double exp(double x) { return std::exp(x); }
    static double expm1(double x) { return std::expm1(x); }
    static double log1p(double x) { return std::log1p(x); }
    static double erf(double x) { return std::erf(x); }
    static double erfc(double x) { return std::erfc(x); }
};

}  // namespace graphrun::kernels
