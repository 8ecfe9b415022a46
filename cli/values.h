// Printing tensors: like NumPy's str() for text, nested lists for JSON.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "engine/api/run.h"  // HostTensor

namespace graphrun::cli {

// NumPy-style text: `[[1. 2.]\n [3. 4.]]`, summarised with `...` when larger
// than 1000 elements.
std::string format_values(const HostTensor& t);
// Full data as nested lists; floats round-trip exactly (f32 as its shortest
// decimal), NaN and infinities as "nan", "inf", "-inf".
nlohmann::ordered_json values_json(const HostTensor& t);

}  // namespace graphrun::cli
