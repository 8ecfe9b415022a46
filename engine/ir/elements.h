// One element of any dtype, read or written through a double or an int64, on
// the host and (compiled by nvcc) on the device: the conversions `cast` makes
// where a storage type (f16, bf16, i8, u8) is involved, and that printing,
// .npy, literals and comparisons share. Floats round to nearest (ties to
// even); float -> integer truncates toward zero and saturates, NaN -> 0;
// integer -> integer wraps (NumPy's astype); -> bool is x != 0.
#pragma once
#include <math.h>

#include <cstdint>
#include <cstring>
#include <limits>

#include "engine/ir/dtype.h"
#include "engine/ir/half.h"

namespace graphrun::elements {

template <class T>
GR_HD inline T load(const void* data, int64_t i) {
    T v;
    memcpy(&v, static_cast<const unsigned char*>(data) + static_cast<size_t>(i) * sizeof(T), sizeof(T));
    return v;
}

template <class T>
GR_HD inline void put(void* data, int64_t i, T v) {
    memcpy(static_cast<unsigned char*>(data) + static_cast<size_t>(i) * sizeof(T), &v, sizeof(T));
}

template <class I>
GR_HD inline I saturate(double v) {
    if (v != v) return 0;
    const double t = ::trunc(v);
    const double lo = static_cast<double>(std::numeric_limits<I>::min());
    const double hi = static_cast<double>(std::numeric_limits<I>::max());
    if (t <= lo) return std::numeric_limits<I>::min();
    if (t >= hi) return std::numeric_limits<I>::max();
    return static_cast<I>(t);
}

GR_HD inline bool integral(DType t) {
    return t != DType::F32 && t != DType::F64 && t != DType::F16 && t != DType::BF16;
}

GR_HD inline double load_double(DType t, const void* data, int64_t i) {
    switch (t) {
        case DType::F32: return load<float>(data, i);
        case DType::F64: return load<double>(data, i);
        case DType::I32: return load<int32_t>(data, i);
        case DType::I64: return static_cast<double>(load<int64_t>(data, i));
        case DType::Bool: return load<uint8_t>(data, i) != 0 ? 1 : 0;
        case DType::F16: return half_to_double(Half{load<uint16_t>(data, i)});
        case DType::BF16: return bf16_to_double(BFloat16{load<uint16_t>(data, i)});
        case DType::I8: return load<int8_t>(data, i);
        case DType::U8: return load<uint8_t>(data, i);
    }
    return 0;
}

GR_HD inline int64_t load_int(DType t, const void* data, int64_t i) {
    switch (t) {
        case DType::I32: return load<int32_t>(data, i);
        case DType::I64: return load<int64_t>(data, i);
        case DType::Bool: return load<uint8_t>(data, i) != 0 ? 1 : 0;
        case DType::I8: return load<int8_t>(data, i);
        case DType::U8: return load<uint8_t>(data, i);
        case DType::F32:
        case DType::F64:
        case DType::F16:
        case DType::BF16: return saturate<int64_t>(elements::load_double(t, data, i));
    }
    return 0;
}

GR_HD inline void store_double(DType t, void* data, int64_t i, double v) {
    switch (t) {
        case DType::F32: put(data, i, static_cast<float>(v)); return;
        case DType::F64: put(data, i, v); return;
        case DType::I32: put(data, i, saturate<int32_t>(v)); return;
        case DType::I64: put(data, i, saturate<int64_t>(v)); return;
        case DType::Bool: put(data, i, static_cast<uint8_t>(v != 0 ? 1 : 0)); return;  // NaN: true
        case DType::F16: put(data, i, half_from_double(v).bits); return;
        case DType::BF16: put(data, i, bf16_from_double(v).bits); return;
        case DType::I8: put(data, i, saturate<int8_t>(v)); return;
        case DType::U8: put(data, i, saturate<uint8_t>(v)); return;
    }
}

GR_HD inline void store_int(DType t, void* data, int64_t i, int64_t v) {
    switch (t) {
        case DType::I32: put(data, i, static_cast<int32_t>(v)); return;
        case DType::I64: put(data, i, v); return;
        case DType::Bool: put(data, i, static_cast<uint8_t>(v != 0 ? 1 : 0)); return;
        case DType::I8: put(data, i, static_cast<int8_t>(v)); return;
        case DType::U8: put(data, i, static_cast<uint8_t>(v)); return;
        case DType::F32:
        case DType::F64:
        case DType::F16:
        case DType::BF16: elements::store_double(t, data, i, static_cast<double>(v)); return;
    }
}

// Element i of `from` cast to `to` into element i of `out`: integers and bools
// move through an int64 (exact, wrapping), anything else through a double
// (an i64 beyond 2^53 rounds twice on its way to a float).
GR_HD inline void cast_element(DType to, void* out, DType from, const void* in, int64_t i) {
    if (integral(from) && integral(to)) elements::store_int(to, out, i, elements::load_int(from, in, i));
    else elements::store_double(to, out, i, elements::load_double(from, in, i));
}

}  // namespace graphrun::elements
