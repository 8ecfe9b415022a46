// Constant folding for the ONNX front end (onnx_fold.h).
#include "engine/frontend/onnx_fold.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/base/interrupt.h"
#include "engine/base/limits.h"
#include "engine/frontend/onnx_external.h"

namespace graphrun::onnx_fold {

// ONNX's element types graphrun has.
std::optional<DType> dtype_of(int32_t t) {
    switch (t) {
        case onnx::TensorProto::FLOAT: return DType::F32;
        case onnx::TensorProto::DOUBLE: return DType::F64;
        case onnx::TensorProto::INT32: return DType::I32;
        case onnx::TensorProto::INT64: return DType::I64;
        case onnx::TensorProto::BOOL: return DType::Bool;
        case onnx::TensorProto::FLOAT16: return DType::F16;
        case onnx::TensorProto::BFLOAT16: return DType::BF16;
        case onnx::TensorProto::INT8: return DType::I8;
        case onnx::TensorProto::UINT8: return DType::U8;
        default: return std::nullopt;
    }
}

std::string onnx_type_name(int32_t t) {
    if (onnx::TensorProto_DataType_IsValid(t))
        return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t));
    return "type " + std::to_string(t);
}

// A tensor's values from its proto: raw_data or the typed fields.
std::optional<HostValue> tensor_value(const onnx::TensorProto& t, std::string& why) {
    auto dt = dtype_of(t.data_type());
    if (!dt) {
        why = "its element type " + onnx_type_name(t.data_type()) + " is not one graphrun has (f32, f64, i32, i64, bool, f16, bf16, i8, u8)";
        return std::nullopt;
    }
    if (t.data_location() == onnx::TensorProto::EXTERNAL) {
        why = "its data is in an external file, which graphrun does not read";
        return std::nullopt;
    }
    HostValue v;
    v.dtype = *dt;
    if (t.dims_size() > kMaxRank) {
        why = "it has " + std::to_string(t.dims_size()) + " dimensions; at most " + std::to_string(kMaxRank) +
              " are supported";
        return std::nullopt;
    }
    v.shape.assign(t.dims().begin(), t.dims().end());
    // The declared size is checked, and compared with what the proto really
    // holds, before anything is allocated for it.
    const std::optional<int64_t> count = element_count(v.shape, why);
    if (!count) return std::nullopt;
    const int64_t n = *count;
    const size_t size = dtype_size(v.dtype);
    const uint64_t want = static_cast<uint64_t>(n) * size;  // n <= kMaxElements: no wrap
    auto wrong_count = [&](int64_t got) {
        why = "it has " + std::to_string(got) + " values for shape " + shape_string(v.shape) + " (" +
              std::to_string(n) + " elements)";
    };
    if (t.has_raw_data()) {
        if (t.raw_data().size() != want) {
            why = "its raw data has " + std::to_string(t.raw_data().size()) + " bytes where shape " +
                  shape_string(v.shape) + " of " + dtype_name(v.dtype) + " needs " + std::to_string(want);
            return std::nullopt;
        }
        v.bytes.assign(t.raw_data().begin(), t.raw_data().end());
        return v;
    }
    auto fill = [&](const auto& field, auto convert) -> bool {
        if (field.size() != n) {
            wrong_count(field.size());
            return false;
        }
        v.bytes.resize(static_cast<size_t>(want));
        for (int64_t i = 0; i < n; ++i) {
            if ((i & 4095) == 0 && interrupted()) {
                why = "interrupted while reading its values";
                return false;
            }
            convert(static_cast<size_t>(i), field.Get(static_cast<int>(i)));
        }
        return true;
    };
    bool ok = true;
    switch (v.dtype) {
        case DType::F32:
            ok = fill(t.float_data(), [&](size_t i, float x) { std::memcpy(&v.bytes[i * 4], &x, 4); });
            break;
        case DType::F64:
            ok = fill(t.double_data(), [&](size_t i, double x) { std::memcpy(&v.bytes[i * 8], &x, 8); });
            break;
        case DType::I32:
            ok = fill(t.int32_data(), [&](size_t i, int32_t x) { std::memcpy(&v.bytes[i * 4], &x, 4); });
            break;
        case DType::I64:
            ok = fill(t.int64_data(), [&](size_t i, int64_t x) { std::memcpy(&v.bytes[i * 8], &x, 8); });
            break;
        case DType::Bool:
            ok = fill(t.int32_data(), [&](size_t i, int32_t x) { v.bytes[i] = x != 0; });
            break;
        case DType::F16:
        case DType::BF16:  // the 16 bits in the low half of each int32
            ok = fill(t.int32_data(), [&](size_t i, int32_t x) {
                const auto bits = static_cast<uint16_t>(x);
                std::memcpy(&v.bytes[i * 2], &bits, 2);
            });
            break;
        case DType::I8:
        case DType::U8:
            ok = fill(t.int32_data(), [&](size_t i, int32_t x) { v.bytes[i] = static_cast<uint8_t>(x); });
            break;
    }
    if (!ok) return std::nullopt;
    return v;
}

std::optional<int64_t> element_count(const Shape& s, std::string& why) {
    if (s.size() > static_cast<size_t>(kMaxRank)) {
        why = "shape " + shape_string(s) + " has " + std::to_string(s.size()) + " dimensions; at most " +
              std::to_string(kMaxRank) + " are supported";
        return std::nullopt;
    }
    for (int64_t d : s)
        if (d < 0) {
            why = "shape " + shape_string(s) + " has a negative dimension " + std::to_string(d);
            return std::nullopt;
        }
    // The product of the nonzero dimensions is bounded too, so that every
    // partial product (outer and inner extents) of a checked shape fits.
    int64_t n = 1;
    bool empty = false;
    for (int64_t d : s) {
        empty = empty || d == 0;
        if (d != 0 && (__builtin_mul_overflow(n, d, &n) || n > kMaxElements)) {
            why = "shape " + shape_string(s) + " has more elements than graphrun holds (at most " +
                  std::to_string(kMaxElements) + ")";
            return std::nullopt;
        }
    }
    return empty ? 0 : n;
}

std::optional<int64_t> numel(const Shape& s) {
    std::string why;
    return element_count(s, why);
}

std::string tensor_size_problem(const onnx::TensorProto& t) {
    if (t.data_location() == onnx::TensorProto::EXTERNAL) {  // read before the checker: its entries checked here
        uint64_t bytes = 0;
        return onnx_external::entry_problem(t, bytes);
    }
    if (t.dims_size() > kMaxRank)
        return "it has " + std::to_string(t.dims_size()) + " dimensions; at most " + std::to_string(kMaxRank) +
               " are supported";
    std::string why;
    const std::optional<int64_t> count = element_count(Shape(t.dims().begin(), t.dims().end()), why);
    if (!count) return why;
    const auto n = static_cast<uint64_t>(*count);
    using T = onnx::TensorProto;
    uint64_t size = 0;        // bytes per element in raw_data
    int64_t field = -1;       // values in the typed field that holds this type
    uint64_t per = 1;         // typed values per element (complex: 2)
    switch (t.data_type()) {
        case T::FLOAT: size = 4; field = t.float_data_size(); break;
        case T::COMPLEX64: size = 8; field = t.float_data_size(); per = 2; break;
        case T::DOUBLE: size = 8; field = t.double_data_size(); break;
        case T::COMPLEX128: size = 16; field = t.double_data_size(); per = 2; break;
        case T::INT64: size = 8; field = t.int64_data_size(); break;
        case T::UINT32: size = 4; field = t.uint64_data_size(); break;
        case T::UINT64: size = 8; field = t.uint64_data_size(); break;
        case T::INT32: size = 4; field = t.int32_data_size(); break;
        case T::INT8: case T::UINT8: case T::BOOL: size = 1; field = t.int32_data_size(); break;
        case T::INT16: case T::UINT16: case T::FLOAT16: case T::BFLOAT16: size = 2; field = t.int32_data_size(); break;
        case T::STRING:
            if (static_cast<uint64_t>(t.string_data_size()) != n)
                return "it has " + std::to_string(t.string_data_size()) + " strings for " + std::to_string(n) + " elements";
            return "";
        default: return "its element type " + onnx_type_name(t.data_type()) + " is not an ONNX tensor type";
    }
    if (t.has_raw_data()) {
        if (t.raw_data().size() != n * size)
            return "its raw data has " + std::to_string(t.raw_data().size()) + " bytes where shape " +
                   shape_string(Shape(t.dims().begin(), t.dims().end())) + " of " + onnx_type_name(t.data_type()) +
                   " needs " + std::to_string(n * size);
        return "";
    }
    if (static_cast<uint64_t>(field) != n * per)
        return "it has " + std::to_string(field) + " values for shape " +
               shape_string(Shape(t.dims().begin(), t.dims().end())) + " (" + std::to_string(n) + " elements)";
    return "";
}

uint64_t tensor_bytes(const onnx::TensorProto& t) {
    if (t.dims_size() > kMaxRank) return 0;
    std::string why;
    const std::optional<int64_t> count = element_count(Shape(t.dims().begin(), t.dims().end()), why);
    if (!count) return 0;
    using T = onnx::TensorProto;
    uint64_t size = 0;
    switch (t.data_type()) {
        case T::INT8: case T::UINT8: case T::BOOL: size = 1; break;
        case T::INT16: case T::UINT16: case T::FLOAT16: case T::BFLOAT16: size = 2; break;
        case T::FLOAT: case T::INT32: case T::UINT32: size = 4; break;
        case T::DOUBLE: case T::INT64: case T::UINT64: case T::COMPLEX64: size = 8; break;
        case T::COMPLEX128: size = 16; break;
        default: return 0;
    }
    return static_cast<uint64_t>(*count) * size;  // count <= kMaxElements: no wrap
}

const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const char* name) {
    for (const auto& a : n.attribute())
        if (a.name() == name) return &a;
    return nullptr;
}

int64_t attr_int(const onnx::NodeProto& n, const char* name, int64_t dflt) {
    const auto* a = find_attr(n, name);
    return a ? a->i() : dflt;
}

float attr_float(const onnx::NodeProto& n, const char* name, float dflt) {
    const auto* a = find_attr(n, name);
    return a ? a->f() : dflt;
}

std::optional<std::vector<int64_t>> attr_ints(const onnx::NodeProto& n, const char* name) {
    const auto* a = find_attr(n, name);
    if (!a) return std::nullopt;
    return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

namespace {

// A double as an integer without undefined behaviour: NaN and values out of
// int64's range give INT64_MIN, as x86's conversion does.
int64_t to_int64(double d) {
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(d);
}

double get(const HostValue& v, size_t i) {
    const uint8_t* p = v.bytes.data() + i * dtype_size(v.dtype);
    switch (v.dtype) {
        case DType::F32: { float x; std::memcpy(&x, p, 4); return x; }
        case DType::F64: { double x; std::memcpy(&x, p, 8); return x; }
        case DType::I32: { int32_t x; std::memcpy(&x, p, 4); return x; }
        case DType::I64: { int64_t x; std::memcpy(&x, p, 8); return static_cast<double>(x); }
        case DType::Bool: return *p ? 1 : 0;
        case DType::F16:
        case DType::BF16:
        case DType::I8:
        case DType::U8: return element_as_double(v.dtype, p, 0);
    }
    return 0;
}

int64_t get_int(const HostValue& v, size_t i) {
    const uint8_t* p = v.bytes.data() + i * dtype_size(v.dtype);
    switch (v.dtype) {
        case DType::I32: { int32_t x; std::memcpy(&x, p, 4); return x; }
        case DType::I64: { int64_t x; std::memcpy(&x, p, 8); return x; }
        case DType::Bool: return *p ? 1 : 0;
        default: return to_int64(get(v, i));
    }
}

void put(HostValue& v, size_t i, double x, int64_t xi, bool integral) {
    uint8_t* p = v.bytes.data() + i * dtype_size(v.dtype);
    switch (v.dtype) {
        case DType::F32: { float f = static_cast<float>(x); std::memcpy(p, &f, 4); break; }
        case DType::F64: std::memcpy(p, &x, 8); break;
        case DType::I32: { int32_t k = static_cast<int32_t>(integral ? xi : to_int64(x)); std::memcpy(p, &k, 4); break; }
        case DType::I64: { int64_t k = integral ? xi : to_int64(x); std::memcpy(p, &k, 8); break; }
        case DType::Bool: *p = integral ? xi != 0 : x != 0; break;
        case DType::F16:
        case DType::BF16: store_double(v.dtype, p, 0, x); break;
        case DType::I8:
        case DType::U8: store_int(v.dtype, p, 0, integral ? xi : to_int64(x)); break;
    }
}

// A value of a shape whose element count `count` was checked (at most kMaxFoldElements).
HostValue make(DType t, Shape shape, int64_t count) {
    HostValue v;
    v.dtype = t;
    v.shape = std::move(shape);
    v.bytes.resize(static_cast<size_t>(count) * dtype_size(t));
    return v;
}

// Elements a value holds (its bytes are its shape's count, always).
size_t count_of(const HostValue& v) { return v.bytes.size() / dtype_size(v.dtype); }

HostValue i64(const std::vector<int64_t>& xs, Shape shape) {
    HostValue v = make(DType::I64, std::move(shape), static_cast<int64_t>(xs.size()));
    if (!xs.empty()) std::memcpy(v.bytes.data(), xs.data(), xs.size() * 8);
    return v;
}

bool normalize_axis(int64_t& axis, int64_t rank, std::string& why) {
    if (axis < -rank || axis >= rank) {
        why = "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank);
        return false;
    }
    if (axis < 0) axis += rank;
    return true;
}

std::optional<HostValue> constant(const onnx::NodeProto& n, std::string& why) {
    if (const auto* a = find_attr(n, "value")) return tensor_value(a->t(), why);
    if (const auto* a = find_attr(n, "value_float")) return scalar(a->f(), DType::F32);
    if (const auto* a = find_attr(n, "value_int")) return i64({a->i()}, {});
    if (const auto* a = find_attr(n, "value_floats")) {
        HostValue v = make(DType::F32, {a->floats_size()}, a->floats_size());
        for (int i = 0; i < a->floats_size(); ++i) put(v, static_cast<size_t>(i), a->floats(i), 0, false);
        return v;
    }
    if (const auto* a = find_attr(n, "value_ints"))
        return i64(std::vector<int64_t>(a->ints().begin(), a->ints().end()), {a->ints_size()});
    why = "its value (sparse or string) is not supported";
    return std::nullopt;
}

// Squeeze/Unsqueeze axes: in range for `rank`, each once; nullopt with `why`.
std::optional<std::vector<bool>> axis_set(const std::vector<int64_t>& axes, int64_t rank, std::string& why) {
    std::vector<bool> set(static_cast<size_t>(rank), false);
    for (int64_t a : axes) {
        const int64_t given = a;
        if (!normalize_axis(a, rank, why)) return std::nullopt;
        if (set[static_cast<size_t>(a)]) {
            why = "axis " + std::to_string(given) + " is given twice in " + shape_string(axes);
            return std::nullopt;
        }
        set[static_cast<size_t>(a)] = true;
    }
    return set;
}

}  // namespace

HostValue scalar(double x, DType t) {
    HostValue v = make(t, {}, 1);
    put(v, 0, x, to_int64(x), is_int(t));
    return v;
}

std::vector<int64_t> ints(const HostValue& v) {
    std::vector<int64_t> r(count_of(v));
    for (size_t i = 0; i < r.size(); ++i) r[i] = get_int(v, i);
    return r;
}

std::vector<double> doubles(const HostValue& v) {
    std::vector<double> r(count_of(v));
    for (size_t i = 0; i < r.size(); ++i) r[i] = get(v, i);
    return r;
}

std::optional<Shape> reshape_target(const onnx::NodeProto& n, const std::optional<Shape>& in, const HostValue* second,
                                    int64_t opset, std::string& why) {
    if (!in) return std::nullopt;
    const std::string& op = n.op_type();
    const auto rank = static_cast<int64_t>(in->size());
    const std::optional<int64_t> in_count = element_count(*in, why);
    if (!in_count) return std::nullopt;
    if (op == "Flatten") {
        int64_t axis = attr_int(n, "axis", 1);
        if (axis < -rank || axis > rank) {
            why = "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank);
            return std::nullopt;
        }
        if (axis < 0) axis += rank;
        int64_t outer = 1, inner = 1;  // each at most in_count: no wrap
        for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : inner) *= (*in)[static_cast<size_t>(d)];
        return Shape{outer, inner};
    }
    if (op == "Reshape") {
        if (!second) return std::nullopt;
        std::vector<int64_t> target = ints(*second);
        if (target.size() > static_cast<size_t>(kMaxRank)) {
            why = "its target shape has " + std::to_string(target.size()) + " dimensions; at most " +
                  std::to_string(kMaxRank) + " are supported";
            return std::nullopt;
        }
        const bool allowzero = attr_int(n, "allowzero", 0) != 0;
        const std::string given = shape_string(target);
        int64_t infer_at = -1;
        for (size_t i = 0; i < target.size(); ++i) {
            if (target[i] == 0 && !allowzero) {
                if (static_cast<int64_t>(i) >= rank) {
                    why = "its target shape " + given + " copies dimension " + std::to_string(i) +
                          " of an input of rank " + std::to_string(rank);
                    return std::nullopt;
                }
                target[i] = (*in)[i];
            }
            if (target[i] == -1 && infer_at < 0) {
                infer_at = static_cast<int64_t>(i);
            } else if (target[i] < 0) {
                why = "its target shape " + given + " has " +
                      (target[i] == -1 ? std::string("more than one -1") : "a negative dimension " + std::to_string(target[i]));
                return std::nullopt;
            }
        }
        if (infer_at >= 0) {
            Shape known = target;
            known[static_cast<size_t>(infer_at)] = 1;
            const std::optional<int64_t> k = checked_numel(known);
            if (!k || *k == 0 || *in_count % *k != 0) {
                why = "its target shape " + given + " cannot hold the " + std::to_string(*in_count) +
                      " elements of its input " + shape_string(*in);
                return std::nullopt;
            }
            target[static_cast<size_t>(infer_at)] = *in_count / *k;
        }
        const std::optional<int64_t> out_count = checked_numel(target);
        if (!out_count || *out_count != *in_count) {
            why = "its target shape " + given + " has " +
                  (out_count ? std::to_string(*out_count) : std::string("more than 2^63")) +
                  " elements where its input " + shape_string(*in) + " has " + std::to_string(*in_count);
            return std::nullopt;
        }
        return target;
    }
    std::optional<std::vector<int64_t>> axes = opset >= 13 ? (second ? std::optional(ints(*second)) : std::nullopt)
                                                           : attr_ints(n, "axes");
    if (op == "Squeeze") {
        std::vector<bool> drop(static_cast<size_t>(rank), false);
        if (axes) {
            auto set = axis_set(*axes, rank, why);
            if (!set) return std::nullopt;
            drop = *set;
        }
        Shape out;
        for (int64_t d = 0; d < rank; ++d) {
            const int64_t dim = (*in)[static_cast<size_t>(d)];
            if (!axes) drop[static_cast<size_t>(d)] = dim == 1;
            if (drop[static_cast<size_t>(d)] && dim != 1) {
                why = "it squeezes dimension " + std::to_string(d) + " of " + shape_string(*in) + ", which is not 1";
                return std::nullopt;
            }
            if (!drop[static_cast<size_t>(d)]) out.push_back(dim);
        }
        return out;
    }
    if (op == "Unsqueeze") {
        if (!axes) return std::nullopt;
        if (axes->size() > static_cast<size_t>(kMaxRank) || rank + static_cast<int64_t>(axes->size()) > kMaxRank) {
            why = "the result would have " + std::to_string(rank + static_cast<int64_t>(axes->size())) +
                  " dimensions; at most " + std::to_string(kMaxRank) + " are supported";
            return std::nullopt;
        }
        const int64_t out_rank = rank + static_cast<int64_t>(axes->size());
        auto is_new = axis_set(*axes, out_rank, why);
        if (!is_new) return std::nullopt;
        Shape out;
        size_t k = 0;
        for (int64_t d = 0; d < out_rank; ++d) out.push_back((*is_new)[static_cast<size_t>(d)] ? 1 : (*in)[k++]);
        return out;
    }
    return std::nullopt;
}

std::optional<std::vector<HostValue>> evaluate(const onnx::NodeProto& n, const std::optional<Shape>& in_shape,
                                               std::string& why) {
    const std::string& op = n.op_type();
    auto one = [](std::optional<HostValue> v) -> std::optional<std::vector<HostValue>> {
        if (!v) return std::nullopt;
        std::vector<HostValue> r;
        r.push_back(std::move(*v));
        return r;
    };
    if (op == "Constant") return one(constant(n, why));
    if (op == "Shape" || op == "Size") {
        const std::optional<int64_t> count = element_count(*in_shape, why);
        if (!count) return std::nullopt;
        if (op == "Size") return one(i64({*count}, {}));  // a scalar: the element count
        const auto rank = static_cast<int64_t>(in_shape->size());
        int64_t start = attr_int(n, "start", 0), end = attr_int(n, "end", rank);
        start = std::clamp<int64_t>(start, -rank, rank);
        end = std::clamp<int64_t>(end, -rank, rank);
        if (start < 0) start += rank;
        if (end < 0) end += rank;
        end = std::max(end, start);
        std::vector<int64_t> dims(in_shape->begin() + start, in_shape->begin() + end);
        return one(i64(dims, {static_cast<int64_t>(dims.size())}));
    }
    return std::nullopt;
}

}  // namespace graphrun::onnx_fold
