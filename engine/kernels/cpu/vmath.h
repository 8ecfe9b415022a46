// f32 rows of a libm function (or gelu's formula around erfc or exp)
// evaluated in double and rounded once, many elements per call: glibc's vector math library (libmvec: 2, 4 or 8 doubles
// per call, the widest the active instruction set allows) where the build
// found it, else the scalar double function per element.
//
// libmvec's double functions are within 4 ulp of the exact value (in double),
// so after rounding to f32 each result is the correctly rounded value in all
// but a vanishing fraction of inputs: it is what the scalar double path
// gives, on every instruction-set path (checked over 72M inputs of erf and
// 18M of tanh and exp; tests/unit/test_vmath.cpp compares every function
// against the scalar double path). The f32 libm functions (tanhf, expf) it
// replaces were off by one ulp for 5% of tanh's inputs.
//
// f64 tensors keep the scalar libm path: rounding would not hide libmvec's
// few ulp there.
#pragma once
#include <cstdint>

namespace graphrun::kernels {

enum class VecFn : uint8_t {
    Exp,      // exp(x)
    Tanh,     // tanh(x)
    Erf,      // erf(x)
    Log,      // log(x)
    Sigmoid,  // 1 / (1 + exp(-x)), in double
    Gelu,     // 0.5 * x * erfc(-x / sqrt 2), in double (GeluOp's formula)
    GeluTanh, // x / (1 + exp(-2z)), z = sqrt(2/pi) * (x + 0.044715 x^3), in double
};

// y[i] = float(f(double(x[i]))) for i in [0, n); y may be x.
void vec_f32(VecFn f, const float* x, float* y, int64_t n);

// The scalar double reference of vec_f32 (what every path must match).
float vec_f32_reference(VecFn f, float x);

// "libmvec" or "scalar libm": what vec_f32 calls, for `graphrun devices`.
const char* vec_math_library();

}  // namespace graphrun::kernels
