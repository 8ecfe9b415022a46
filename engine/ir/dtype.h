// Element types and shapes: the vocabulary every other part of the engine speaks.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace graphrun {

enum class DType : uint8_t { F32, F64, I32, I64, Bool };

using Shape = std::vector<int64_t>;

// Canonical name: "f32", "f64", "i32", "i64", "bool".
const char* dtype_name(DType t);
// Accepts canonical names and the aliases float32, float64, int32, int64.
std::optional<DType> parse_dtype(std::string_view s);
size_t dtype_size(DType t);
inline bool is_float(DType t) { return t == DType::F32 || t == DType::F64; }
inline bool is_int(DType t) { return t == DType::I32 || t == DType::I64; }

// "f32[2,3]" — the form every message and listing uses.
std::string type_string(DType t, const Shape& s);
std::string shape_string(const Shape& s);  // "[2,3]"

// Element count, or nullopt when it overflows int64 (or a dimension is negative).
std::optional<int64_t> checked_numel(const Shape& s);
// Bytes a buffer of n elements of t takes, rounded up to 64 (SPEC section 4); nullopt on overflow.
std::optional<uint64_t> checked_buffer_bytes(int64_t numel, DType t);

}  // namespace graphrun
