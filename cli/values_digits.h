// The decimal digits of a float, shared by the text and JSON printers.
#pragma once
#include <string>

#include "engine/ir/dtype.h"

namespace graphrun::cli {

// |v| = 0.DIGITS x 10^point, DIGITS the shortest that reads back as the same
// value of its float dtype ft (f32, f64, f16, bf16), without trailing zeros ("0" for 0).
// std::to_chars' shortest form: the same digits as NumPy's Dragon4 in unique mode.
struct Digits {
    bool neg = false;
    std::string digits;
    int point = 0;
};
Digits shortest_digits(double v, DType ft);

// A finite float as a JSON number in nlohmann::json's form (shortest
// round-trip digits of its dtype; `1.0`, `0.001`, `1e-05`, `1.5e+20`); writes
// at most 32 characters at `out` and returns the end.
char* json_number(char* out, double v, DType ft);

}  // namespace graphrun::cli
