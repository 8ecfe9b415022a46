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
        case DType::F16: return "f16";
        case DType::BF16: return "bf16";
        case DType::I8: return "i8";
        case DType::U8: return "u8";
    }
    return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
    if (s == "f32" || s == "float32") return DType::F32;
    if (s == "f64" || s == "float64") return DType::F64;
    if (s == "i32" || s == "int32") return DType::I32;
    if (s == "i64" || s == "int64") return DType::I64;
    if (s == "bool") return DType::Bool;
    if (s == "f16" || s == "float16") return DType::F16;
    if (s == "bf16" || s == "bfloat16") return DType::BF16;
    if (s == "i8" || s == "int8") return DType::I8;
    if (s == "u8" || s == "uint8") return DType::U8;
    return std::nullopt;
}

size_t dtype_size(DType t) {
    switch (t) {
        case DType::F32: return 4;
        case DType::F64: return 8;
        case DType::I32: return 4;
        case DType::I64: return 8;
        case DType::Bool: return 1;
        case DType::F16: return 2;
        case DType::BF16: return 2;
        case DType::I8: return 1;
        case DType::U8: return 1;
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

// --- element access for every dtype -----------------------------------------------

#include <charconv>

#include "engine/ir/elements.h"

namespace graphrun {

double element_as_double(DType t, const void* data, int64_t i) { return elements::load_double(t, data, i); }
int64_t element_as_int(DType t, const void* data, int64_t i) { return elements::load_int(t, data, i); }
void store_double(DType t, void* data, int64_t i, double v) { elements::store_double(t, data, i, v); }
void store_int(DType t, void* data, int64_t i, int64_t v) { elements::store_int(t, data, i, v); }

int half_shortest_precision(DType t, double v) {
    uint16_t want = 0, got = 0;
    elements::store_double(t, &want, 0, v);
    char buf[64];
    for (int p = 0; p < 17; ++p) {
        const std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific, p);
        double back = 0;
        std::from_chars(buf, r.ptr, back);
        elements::store_double(t, &got, 0, back);
        if (got == want) return p;
    }
    return 17;
}

bool holds_exactly(DType to, DType from) {
    if (to == from) return true;
    auto mantissa = [](DType t) {  // significant bits of a float type
        return t == DType::F64 ? 53 : t == DType::F32 ? 24 : t == DType::F16 ? 11 : 8;
    };
    auto int_bits = [](DType t) {  // magnitude bits of an integer type (sign apart)
        return t == DType::I64 ? 63 : t == DType::I32 ? 31 : t == DType::I8 ? 7 : 8;
    };
    if (from == DType::Bool) return true;
    if (to == DType::Bool) return false;
    if (is_float(to) && is_float(from)) {
        if (to == DType::F16 && from == DType::BF16) return false;  // bf16's range
        if (to == DType::BF16 && from != DType::BF16) return false;  // f16's, f32's precision
        return mantissa(to) >= mantissa(from);
    }
    if (is_float(to)) return mantissa(to) >= int_bits(from);
    if (is_float(from)) return false;
    if (to == DType::U8) return false;
    if (from == DType::U8) return int_bits(to) >= 8;
    return int_bits(to) >= int_bits(from);
}

}  // namespace graphrun
