// Element types and shapes: the vocabulary every other part of the engine speaks.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace graphrun {

// F16, BF16, I8 and U8 are storage types (issue 27): values are held in them,
// read and written, cast and moved; arithmetic on them runs in their compute
// type (compute_dtype) and rounds back, as NumPy computes float16 in float32.
enum class DType : uint8_t { F32, F64, I32, I64, Bool, F16, BF16, I8, U8 };
constexpr int kDTypeCount = 9;

using Shape = std::vector<int64_t>;

// Canonical name: "f32", "f64", "i32", "i64", "bool", "f16", "bf16", "i8", "u8".
const char* dtype_name(DType t);
// Accepts canonical names and the aliases float32, float64, int32, int64,
// float16, bfloat16, int8, uint8.
std::optional<DType> parse_dtype(std::string_view s);
size_t dtype_size(DType t);
inline bool is_float(DType t) {
    return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16;
}
inline bool is_int(DType t) { return t == DType::I32 || t == DType::I64 || t == DType::I8 || t == DType::U8; }
// The storage types' case labels, for a switch over dtypes whose storage
// cases a kernel never sees: `case DType::Bool: GR_STORAGE_DTYPE_CASES: break;`.
#define GR_STORAGE_DTYPE_CASES \
    case DType::F16:           \
    case DType::BF16:          \
    case DType::I8:            \
    case DType::U8
// A type values are stored in but not computed in (see DType).
inline bool is_storage(DType t) { return t == DType::F16 || t == DType::BF16 || t == DType::I8 || t == DType::U8; }
// The type arithmetic on t runs in: f32 for f16/bf16, i32 for i8/u8, t itself otherwise.
inline DType compute_dtype(DType t) {
    if (t == DType::F16 || t == DType::BF16) return DType::F32;
    if (t == DType::I8 || t == DType::U8) return DType::I32;
    return t;
}

// "f32[2,3]" — the form every message and listing uses.
std::string type_string(DType t, const Shape& s);
std::string shape_string(const Shape& s);  // "[2,3]"

// Element count, or nullopt when it overflows int64 (or a dimension is negative).
std::optional<int64_t> checked_numel(const Shape& s);
// Bytes a buffer of n elements of t takes, rounded up to 64 (SPEC section 4); nullopt on overflow.
std::optional<uint64_t> checked_buffer_bytes(int64_t numel, DType t);

}  // namespace graphrun

namespace graphrun {

// Element i of a dense buffer of dtype t as a double (bool: 0 or 1; i64 rounded
// to the nearest double), for the printers, comparisons and folds that handle
// every dtype alike.
double element_as_double(DType t, const void* data, int64_t i);
// Element i as an integer: integers exactly, floats truncated toward zero
// (saturated; NaN gives 0), bool 0 or 1.
int64_t element_as_int(DType t, const void* data, int64_t i);
// Writes v into element i as `cast` converts an f64 to t: floats rounded to
// nearest (ties to even; out of range ±inf), integers truncated toward zero
// and saturated (NaN 0), bool v != 0.
void store_double(DType t, void* data, int64_t i, double v);
// Writes the integer v into element i of an integer or bool buffer (integers
// wrap as NumPy's astype does; bool v != 0), or as store_double for a float type.
void store_int(DType t, void* data, int64_t i, int64_t v);
// For f16 and bf16: the fewest digits after the point, p, with which
// std::to_chars(v, scientific, p) reads back as the same 16-bit value (the
// shortest round trip, as std::to_chars gives for float and double).
int half_shortest_precision(DType t, double v);
// Whether every value of `from` is exactly a value of `to` (i8 -> f16, f16 -> f32, ...).
bool holds_exactly(DType to, DType from);

}  // namespace graphrun
