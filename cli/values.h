// Printing tensors: exactly like NumPy 1.24's str(array) for text; streamed
// nested lists for JSON; a summary (min, max, mean, NaN count) for --no-data.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>

#include "engine/api/run.h"  // HostTensor

namespace graphrun::cli {

// NumPy's str(array) (numpy.core.arrayprint, default print options): each
// float as its shortest round-trip digits in its own dtype, at most 8 after
// the point; one notation and one width for the whole array; rows wrapped at
// 75 columns; arrays over 1000 elements summarised with `...` and 3 edge
// items unless `full` (np.set_printoptions(threshold=sys.maxsize)). A 0-d
// tensor prints as NumPy's str() of its scalar. Written as it is formed: the
// text is never held whole.
void write_values(std::ostream& out, const HostTensor& t, bool full = false);
std::string format_values(const HostTensor& t, bool full = false);

// The data as JSON nested lists, written straight to `out` in bounded chunks
// (formatted by several threads when large). Floats as their shortest
// round-trip decimal in their own dtype, in the number form nlohmann::json
// writes (`1.0`, `0.1`, `1e+20`); NaN and infinities as "nan", "inf", "-inf".
void write_values_json(std::ostream& out, const HostTensor& t);

// The summary --no-data prints instead of the data: min, max and mean over
// the values that are not NaN (bool as 0 and 1; the mean in f64), and the
// NaN count. Each figure is a JSON value: a number (an integer for integer
// and bool tensors, otherwise the shortest round-trip decimal of the tensor's
// dtype, or of f64 for the mean), "inf", "-inf" or "nan" as strings (a mean
// of inf and -inf is NaN), or null when there is no value to take it over.
struct ValueSummary {
    std::string min = "null", max = "null", mean = "null";
    uint64_t nan_count = 0;
};
ValueSummary summarize(const HostTensor& t);

}  // namespace graphrun::cli
