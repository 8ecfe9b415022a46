// Element types and shapes.
#include "engine/ir/dtype.h"

#include <limits>

namespace graphrun {

const char* dtype_name(DType t) {
    switch (t) {
        case DType::F32: return "f32";
        case DType::F64: return "f64";
        case DType::I32: return "i32";
        case DType::I64: return "i64";
        case DType::Bool: return "bool";
    }
    return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
    if (s == "f32" || s == "float32") return DType::F32;
    if (s == "f64" || s == "float64") return DType::F64;
    if (s == "i32" || s == "int32") return DType::I32;
    if (s == "i64" || s == "int64") return DType::I64;
    if (s == "bool") return DType::Bool;
    return std::nullopt;
}

size_t dtype_size(DType t) {
    switch (t) {
        case DType::F32: return 4;
        case DType::F64: return 8;
        case DType::I32: return 4;
        case DType::I64: return 8;
        case DType::Bool: return 1;
    }
    return 1;
}

std::string shape_string(const Shape& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) {
        if (i) out += ",";
        out += std::to_string(s[i]);
    }
    return out + "]";
}

std::string type_string(DType t, const Shape& s) { return dtype_name(t) + shape_string(s); }

std::optional<int64_t> checked_numel(const Shape& s) {
    int64_t n = 1;
    for (int64_t d : s) {
        if (d < 0) return std::nullopt;
        if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return std::nullopt;
        n *= d;
    }
    return n;
}

std::optional<uint64_t> checked_buffer_bytes(int64_t numel, DType t) {
    if (numel < 0) return std::nullopt;
    uint64_t n = static_cast<uint64_t>(numel);
    uint64_t es = dtype_size(t);
    constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max() / 2;
    if (n > kMax / es) return std::nullopt;
    uint64_t bytes = n * es;
    return (bytes + 63) / 64 * 64;
}

}  // namespace graphrun
