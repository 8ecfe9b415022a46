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

// Stops a fold's loop, every 4096 steps, once a signal asked graphrun to stop.
bool stop_requested(int64_t step, std::string& why) {
    if ((step & 4095) != 0 || !interrupted()) return false;
    why = "interrupted while folding constants";
    return true;
}

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

// The element count of a fold's result, if it is one folding makes: nullopt
// with `why` empty when it is too large to fold (left to the graph), with
// `why` set when the shape is wrong.
std::optional<int64_t> fold_count(const Shape& s, std::string& why) {
    std::optional<int64_t> n = element_count(s, why);
    if (n && *n > kMaxFoldElements) return std::nullopt;
    return n;
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

// Integer arithmetic of a fold, wrapping as the machine does (never undefined).
int64_t wrap_add(int64_t x, int64_t y) { return static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y)); }
int64_t wrap_sub(int64_t x, int64_t y) { return static_cast<int64_t>(static_cast<uint64_t>(x) - static_cast<uint64_t>(y)); }
int64_t wrap_mul(int64_t x, int64_t y) { return static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y)); }

// The elements of a broadcast result of shape `out`, in C order: seek(k)
// to the k-th, then offset(v) is the element of input v it reads (NumPy
// broadcasting: v's shape aligned to the right, a dimension of 1 repeated).
class BroadcastIndex {
  public:
    explicit BroadcastIndex(const Shape& out) : out_(out), idx_(out.size(), 0) {}
    void seek(int64_t k) {
        for (size_t i = out_.size(); i-- > 0;) {
            idx_[i] = out_[i] ? k % out_[i] : 0;
            k = out_[i] ? k / out_[i] : 0;
        }
    }
    size_t offset(const HostValue& v) const {
        const size_t rank = out_.size(), lead = rank - v.shape.size();
        size_t off = 0;
        for (size_t i = lead; i < rank; ++i) {
            const int64_t d = v.shape[i - lead];
            off = off * static_cast<size_t>(d) + static_cast<size_t>(d == 1 ? 0 : idx_[i]);
        }
        return off;
    }

  private:
    const Shape& out_;
    std::vector<int64_t> idx_;
};

// Elementwise binary op on constants with NumPy broadcasting.
std::optional<HostValue> binary(const std::string& op, const HostValue& a, const HostValue& b, std::string& why) {
    const size_t rank = std::max(a.shape.size(), b.shape.size());
    Shape out(rank);
    for (size_t i = 0; i < rank; ++i) {
        int64_t da = i + a.shape.size() >= rank ? a.shape[i + a.shape.size() - rank] : 1;
        int64_t db = i + b.shape.size() >= rank ? b.shape[i + b.shape.size() - rank] : 1;
        if (da != db && da != 1 && db != 1) {
            why = "shapes " + shape_string(a.shape) + " and " + shape_string(b.shape) + " do not broadcast";
            return std::nullopt;
        }
        out[i] = da == 1 ? db : da;
    }
    const std::optional<int64_t> total = fold_count(out, why);
    if (!total) return std::nullopt;
    HostValue r = make(a.dtype, out, *total);
    const bool integral = is_int(a.dtype) || a.dtype == DType::Bool;
    BroadcastIndex at(out);
    for (int64_t k = 0; k < *total; ++k) {
        if (stop_requested(k, why)) return std::nullopt;
        at.seek(k);
        const size_t ia = at.offset(a), ib = at.offset(b);
        if (integral) {
            int64_t x = get_int(a, ia), y = get_int(b, ib), z = 0;
            if (op == "Add") z = wrap_add(x, y);
            else if (op == "Sub") z = wrap_sub(x, y);
            else if (op == "Mul") z = wrap_mul(x, y);
            else if (op == "Mod" || op == "FMod") {
                if (y == 0) {
                    why = "integer modulo by zero in a constant";
                    return std::nullopt;
                }
                z = y == -1 ? 0 : x % y;  // C's sign: fmod=1's
                if (op == "Mod" && z != 0 && ((z < 0) != (y < 0))) z += y;  // the divisor's sign (Python's %)
            } else {
                if (y == 0) {
                    why = "integer division by zero in a constant";
                    return std::nullopt;
                }
                z = y == -1 ? wrap_sub(0, x) : x / y;  // INT64_MIN / -1 wraps
            }
            put(r, static_cast<size_t>(k), 0, z, true);
        } else {
            double x = get(a, ia), y = get(b, ib);
            double z = op == "Add" ? x + y : op == "Sub" ? x - y : op == "Mul" ? x * y : x / y;
            if (op == "Mod" || op == "FMod") {
                z = std::fmod(x, y);
                if (op == "Mod" && z != 0 && ((z < 0) != (y < 0))) z += y;
            }
            put(r, static_cast<size_t>(k), z, 0, false);
        }
    }
    return r;
}

// Where(cond, x, y), Equal(a, b) (and Less, Greater, LessOrEqual,
// GreaterOrEqual: a Loop's exit test) and Expand(x, shape) (in: x and a value
// of the target shape, whose bytes are not read) on constants, NumPy
// broadcasting: the
// shape computations exporters write around a reshape's -1 (torchvision's
// ViT: Where(Equal(shape, -1), ones, shape) before an Expand).
std::optional<HostValue> select_or_equal(const std::string& op, const std::vector<const HostValue*>& in,
                                         std::string& why) {
    size_t rank = 0;
    for (const HostValue* v : in) rank = std::max(rank, v->shape.size());
    Shape out(rank, 1);
    for (const HostValue* v : in)
        for (size_t i = 0; i < v->shape.size(); ++i) {
            int64_t& o = out[rank - v->shape.size() + i];
            const int64_t d = v->shape[i];
            if (d != o && d != 1 && o != 1) {
                why = "the shapes of its inputs do not broadcast";
                return std::nullopt;
            }
            if (o == 1) o = d;
        }
    const std::optional<int64_t> total = fold_count(out, why);
    if (!total) return std::nullopt;
    const bool equal = op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
                       op == "GreaterOrEqual",
               expand = op == "Expand";
    // -1, 0 or 1 as a is below, equal to or above b: what each comparison asks of it.
    const auto wanted = [&op](int order) {
        if (op == "Equal") return order == 0;
        if (op == "Less") return order < 0;
        if (op == "Greater") return order > 0;
        if (op == "LessOrEqual") return order <= 0;
        return order >= 0;
    };
    HostValue r = make(equal ? DType::Bool : expand ? in[0]->dtype : in[1]->dtype, out, *total);
    BroadcastIndex at(out);
    auto offset = [&at](const HostValue& v) { return at.offset(v); };
    for (int64_t k = 0; k < *total; ++k) {
        if (stop_requested(k, why)) return std::nullopt;
        at.seek(k);
        if (equal) {
            const HostValue &a = *in[0], &b = *in[1];
            bool holds = false;
            if (!is_float(a.dtype)) {
                const int64_t x = get_int(a, offset(a)), y = get_int(b, offset(b));
                holds = wanted(x < y ? -1 : x > y ? 1 : 0);
            } else {
                const double x = get(a, offset(a)), y = get(b, offset(b));
                holds = x == x && y == y && wanted(x < y ? -1 : x > y ? 1 : 0);  // NaN: every comparison false
            }
            put(r, static_cast<size_t>(k), 0, holds, true);
            continue;
        }
        const HostValue& pick = expand ? *in[0] : get_int(*in[0], offset(*in[0])) ? *in[1] : *in[2];
        const size_t size = dtype_size(r.dtype);
        std::memcpy(r.bytes.data() + static_cast<size_t>(k) * size, pick.bytes.data() + offset(pick) * size, size);
    }
    return r;
}

// ScatterND (reduction "none") on constants: data with the slices that
// indices name replaced by updates' (torchvision's Swin builds its attention
// mask so, from shapes).
std::optional<HostValue> scatter_nd(const HostValue& data, const HostValue& indices, const HostValue& updates,
                                    std::string& why) {
    if (!is_int(indices.dtype) || indices.shape.empty() || updates.dtype != data.dtype) {
        why = "its indices must be integers of at least one dimension and its updates of its data's dtype";
        return std::nullopt;
    }
    const auto k = static_cast<size_t>(indices.shape.back());
    if (k == 0 || k > data.shape.size()) {
        why = "its indices' last dimension (" + std::to_string(indices.shape.back()) + ") must be 1 to the data's rank " +
              std::to_string(data.shape.size());
        return std::nullopt;
    }
    Shape want(indices.shape.begin(), indices.shape.end() - 1);
    want.insert(want.end(), data.shape.begin() + static_cast<std::ptrdiff_t>(k), data.shape.end());
    if (updates.shape != want) {
        why = "its updates are " + shape_string(updates.shape) + " where its indices and data need " + shape_string(want);
        return std::nullopt;
    }
    size_t slice = 1;  // elements per index tuple
    for (size_t i = k; i < data.shape.size(); ++i) slice *= static_cast<size_t>(data.shape[i]);
    size_t tuples = 1;
    for (size_t i = 0; i + 1 < indices.shape.size(); ++i) tuples *= static_cast<size_t>(indices.shape[i]);
    HostValue r = data;
    const size_t size = dtype_size(data.dtype);
    for (size_t t = 0; t < tuples; ++t) {
        if (stop_requested(static_cast<int64_t>(t), why)) return std::nullopt;
        size_t at = 0;
        for (size_t j = 0; j < k; ++j) {
            const int64_t d = data.shape[j];
            int64_t i = get_int(indices, t * k + j);
            if (i < 0) i += d;
            if (i < 0 || i >= d) {
                why = "index " + std::to_string(get_int(indices, t * k + j)) + " is out of range for dimension " +
                      std::to_string(j) + " of size " + std::to_string(d);
                return std::nullopt;
            }
            at = at * static_cast<size_t>(d) + static_cast<size_t>(i);
        }
        std::memcpy(r.bytes.data() + at * slice * size, updates.bytes.data() + t * slice * size, slice * size);
    }
    return r;
}

// Transpose on a constant (torch's F.pad writes its pads through one).
std::optional<HostValue> transpose(const HostValue& x, const std::optional<std::vector<int64_t>>& perm_attr,
                                   std::string& why) {
    const size_t rank = x.shape.size();
    std::vector<int64_t> perm;
    if (perm_attr) perm = *perm_attr;
    else
        for (size_t a = rank; a-- > 0;) perm.push_back(static_cast<int64_t>(a));
    std::vector<bool> seen(rank, false);
    if (perm.size() != rank) {
        why = "its perm has " + std::to_string(perm.size()) + " axes for an input of rank " + std::to_string(rank);
        return std::nullopt;
    }
    for (int64_t a : perm) {
        if (a < 0 || static_cast<size_t>(a) >= rank || seen[static_cast<size_t>(a)]) {
            why = "its perm is not a permutation of the input's axes";
            return std::nullopt;
        }
        seen[static_cast<size_t>(a)] = true;
    }
    Shape out(rank);
    for (size_t i = 0; i < rank; ++i) out[i] = x.shape[static_cast<size_t>(perm[i])];
    const std::optional<int64_t> total = fold_count(out, why);
    if (!total) return std::nullopt;
    HostValue r = make(x.dtype, out, *total);
    std::vector<size_t> stride(rank, 1);  // of the input
    for (size_t i = rank; i-- > 1;) stride[i - 1] = stride[i] * static_cast<size_t>(x.shape[i]);
    const size_t size = dtype_size(x.dtype);
    std::vector<int64_t> idx(rank, 0);
    for (int64_t k = 0; k < *total; ++k) {
        if (stop_requested(k, why)) return std::nullopt;
        int64_t rem = k;
        size_t from = 0;
        for (size_t i = rank; i-- > 0;) {
            idx[i] = out[i] ? rem % out[i] : 0;
            rem = out[i] ? rem / out[i] : 0;
            from += static_cast<size_t>(idx[i]) * stride[static_cast<size_t>(perm[i])];
        }
        std::memcpy(r.bytes.data() + static_cast<size_t>(k) * size, x.bytes.data() + from * size, size);
    }
    return r;
}

// Gathers along `axis` (ONNX Gather; negative indices count from the end).
std::optional<HostValue> gather(const HostValue& data, const HostValue& indices, int64_t axis, std::string& why) {
    const auto rank = static_cast<int64_t>(data.shape.size());
    if (rank == 0) {
        why = "its data is a scalar";
        return std::nullopt;
    }
    if (!normalize_axis(axis, rank, why)) return std::nullopt;
    Shape out(data.shape.begin(), data.shape.begin() + axis);
    out.insert(out.end(), indices.shape.begin(), indices.shape.end());
    out.insert(out.end(), data.shape.begin() + axis + 1, data.shape.end());
    const std::optional<int64_t> total = fold_count(out, why);
    if (!total) return std::nullopt;
    // data's shape was checked when it was made, so these products hold.
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= data.shape[static_cast<size_t>(d)];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= data.shape[static_cast<size_t>(d)];
    const int64_t dim = data.shape[static_cast<size_t>(axis)];
    const size_t es = dtype_size(data.dtype);
    HostValue r = make(data.dtype, out, *total);
    const auto n_idx = static_cast<int64_t>(count_of(indices));
    if (*total == 0) return r;
    size_t w = 0;
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < n_idx; ++j) {
            if (stop_requested(o * n_idx + j, why)) return std::nullopt;
            int64_t k = get_int(indices, static_cast<size_t>(j));
            if (k < -dim || k >= dim) {
                why = "index " + std::to_string(k) + " is out of range for a dimension of " + std::to_string(dim);
                return std::nullopt;
            }
            if (k < 0) k += dim;
            const size_t src = static_cast<size_t>((o * dim + k) * inner) * es;
            const size_t len = static_cast<size_t>(inner) * es;
            if (len) std::memcpy(r.bytes.data() + w, data.bytes.data() + src, len);
            w += len;
        }
    return r;
}

std::optional<HostValue> concat(const std::vector<const HostValue*>& ins, int64_t axis, std::string& why) {
    if (ins.empty() || !ins[0]) return std::nullopt;
    const auto rank = static_cast<int64_t>(ins[0]->shape.size());
    if (rank == 0) {
        why = "its inputs are scalars";
        return std::nullopt;
    }
    if (!normalize_axis(axis, rank, why)) return std::nullopt;
    const auto ax = static_cast<size_t>(axis);
    Shape out = ins[0]->shape;
    out[ax] = 0;
    for (const HostValue* v : ins) {
        if (!v || v->dtype != ins[0]->dtype) return std::nullopt;
        bool same = v->shape.size() == out.size();
        for (size_t d = 0; same && d < out.size(); ++d) same = d == ax || v->shape[d] == out[d];
        if (!same) {
            why = "shapes " + shape_string(ins[0]->shape) + " and " + shape_string(v->shape) +
                  " differ outside axis " + std::to_string(axis);
            return std::nullopt;
        }
        if (__builtin_add_overflow(out[ax], v->shape[ax], &out[ax])) {
            why = "the result's dimension " + std::to_string(axis) + " overflows";
            return std::nullopt;
        }
    }
    const std::optional<int64_t> total = fold_count(out, why);
    if (!total) return std::nullopt;
    HostValue r = make(ins[0]->dtype, out, *total);
    if (*total == 0) return r;
    int64_t outer = 1;
    for (size_t d = 0; d < ax; ++d) outer *= out[d];
    size_t w = 0;
    for (int64_t o = 0; o < outer; ++o) {
        if (stop_requested(o, why)) return std::nullopt;
        for (const HostValue* v : ins) {
            const size_t chunk = v->bytes.size() / static_cast<size_t>(outer);
            if (chunk)  // an empty input (a 0 in its shape) has no bytes, and memcpy no null source
                std::memcpy(r.bytes.data() + w, v->bytes.data() + static_cast<size_t>(o) * chunk, chunk);
            w += chunk;
        }
    }
    return r;
}

// Slice of a constant: the shape vectors exporters slice, and the small
// tables they reverse (torch's F.pad: pads reshaped to [-1, 2] and flipped).
std::optional<HostValue> slice(const onnx::NodeProto& n, const std::vector<const HostValue*>& ins, std::string& why) {
    const HostValue& data = *ins[0];
    const auto rank = static_cast<int64_t>(data.shape.size());
    if (rank == 0) return std::nullopt;
    std::vector<int64_t> starts, ends, axes, steps;
    if (ins.size() >= 3) {
        if (!ins[1] || !ins[2]) return std::nullopt;
        starts = ints(*ins[1]);
        ends = ints(*ins[2]);
        if (ins.size() >= 4 && ins[3]) axes = ints(*ins[3]);
        if (ins.size() >= 5 && ins[4]) steps = ints(*ins[4]);
    } else {
        auto s = attr_ints(n, "starts"), e = attr_ints(n, "ends");
        if (!s || !e) return std::nullopt;
        starts = *s;
        ends = *e;
        if (auto a = attr_ints(n, "axes")) axes = *a;
    }
    if (axes.empty())
        for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (starts.size() != ends.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
        why = "its starts, ends, axes and steps differ in length";
        return std::nullopt;
    }
    // Per axis: the first position, the step, the count (the whole axis where not sliced).
    std::vector<int64_t> first(static_cast<size_t>(rank), 0), step(static_cast<size_t>(rank), 1);
    Shape out = data.shape;
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (size_t k = 0; k < axes.size(); ++k) {
        int64_t a = axes[k];
        if (!normalize_axis(a, rank, why)) return std::nullopt;
        if (seen[static_cast<size_t>(a)]) {
            why = "axis " + std::to_string(axes[k]) + " is sliced twice";
            return std::nullopt;
        }
        seen[static_cast<size_t>(a)] = true;
        const int64_t dim = data.shape[static_cast<size_t>(a)], st = steps[k];
        if (st == 0) {
            why = "a step of 0";
            return std::nullopt;
        }
        // ONNX's clamping: negative positions count from the end (dim <= 2^40,
        // so adding it never wraps a position that can matter).
        auto clamp = [&](int64_t v, int64_t lo, int64_t hi) {
            if (v < 0) v = v < -dim ? -dim - 1 : v + dim;
            return std::clamp(v, lo, hi);
        };
        const int64_t b = st > 0 ? clamp(starts[k], 0, dim) : clamp(starts[k], -1, dim - 1);
        const int64_t e = st > 0 ? clamp(ends[k], 0, dim) : clamp(ends[k], -1, dim - 1);
        // The count of picks, without stepping past int64 (a step of -2^63 is legal).
        const uint64_t span = st > 0 ? (e > b ? static_cast<uint64_t>(e - b) : 0) : (b > e ? static_cast<uint64_t>(b - e) : 0);
        const uint64_t stride = st > 0 ? static_cast<uint64_t>(st) : uint64_t{0} - static_cast<uint64_t>(st);
        const uint64_t count = span == 0 ? 0 : (span - 1) / stride + 1;
        first[static_cast<size_t>(a)] = b;
        step[static_cast<size_t>(a)] = st;
        out[static_cast<size_t>(a)] = static_cast<int64_t>(count);
    }
    const std::optional<int64_t> total = fold_count(out, why);
    if (!total) return std::nullopt;
    HostValue r = make(data.dtype, out, *total);
    std::vector<uint64_t> stride_in(static_cast<size_t>(rank), 1);
    for (size_t i = static_cast<size_t>(rank); i-- > 1;) stride_in[i - 1] = stride_in[i] * static_cast<uint64_t>(data.shape[i]);
    const size_t es = dtype_size(data.dtype);
    for (int64_t k = 0; k < *total; ++k) {
        if (stop_requested(k, why)) return std::nullopt;
        int64_t rem = k;
        uint64_t from = 0;
        for (size_t i = static_cast<size_t>(rank); i-- > 0;) {
            const int64_t idx = out[i] ? rem % out[i] : 0;
            rem = out[i] ? rem / out[i] : 0;
            // first + idx * step stays within [0, dim): idx < count.
            const auto pos = static_cast<uint64_t>(first[i]) + static_cast<uint64_t>(idx) * static_cast<uint64_t>(step[i]);
            from += pos * stride_in[i];
        }
        std::memcpy(r.bytes.data() + static_cast<size_t>(k) * es, data.bytes.data() + from * es, es);
    }
    return r;
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

// DequantizeLinear of constant 8-bit values (a QDQ model's weights): f32,
// as the graph computes it (onnx_ops_quant.cpp): (x - zp) exact, then one f32
// multiply by the scale, per tensor or along `axis`. A weight is folded
// whatever its size (up to the model's fold budget, which the importer
// checks): it is then one constant, placed once, that the conv or matmul
// reads as weights, instead of a dequantization on every pass. nullopt
// (built as nodes) for anything else: another x or scale type, a scale or
// zero point that is not a scalar or one per element along the axis.
std::optional<HostValue> dequantize(const onnx::NodeProto& n, const std::vector<const HostValue*>& ins,
                                    std::string& why) {
    if (ins.size() < 2 || !ins[0] || !ins[1]) return std::nullopt;
    const HostValue& x = *ins[0];
    const HostValue& scale = *ins[1];
    const HostValue* zp = ins.size() > 2 ? ins[2] : nullptr;
    if ((x.dtype != DType::U8 && x.dtype != DType::I8) || scale.dtype != DType::F32) return std::nullopt;
    if (zp && zp->dtype != x.dtype) return std::nullopt;
    const int64_t count = static_cast<int64_t>(x.bytes.size());
    if (count > static_cast<int64_t>(kMaxFoldTotalBytes / 4)) return std::nullopt;
    const auto rank = static_cast<int64_t>(x.shape.size());
    int64_t axis = attr_int(n, "axis", 1);
    if (axis < 0) axis += rank;
    const int64_t scales = static_cast<int64_t>(count_of(scale)), zps = zp ? static_cast<int64_t>(count_of(*zp)) : 1;
    int64_t len = 1, inner = 1;
    if (scales > 1 || zps > 1) {
        if (axis < 0 || axis >= rank) return std::nullopt;
        len = x.shape[static_cast<size_t>(axis)];
        for (int64_t d = axis + 1; d < rank; ++d) inner *= x.shape[static_cast<size_t>(d)];
    }
    if ((scales != 1 && scales != len) || (zps != 1 && zps != len) || inner <= 0) return std::nullopt;
    HostValue r = make(DType::F32, x.shape, count);
    for (int64_t i = 0; i < count; ++i) {
        if (stop_requested(i, why)) return std::nullopt;
        const int64_t a = len > 1 ? (i / inner) % len : 0;
        const auto xi = static_cast<int32_t>(get_int(x, static_cast<size_t>(i)));
        const auto zi = zp ? static_cast<int32_t>(get_int(*zp, static_cast<size_t>(zps == 1 ? 0 : a))) : 0;
        float s_a;
        std::memcpy(&s_a, scale.bytes.data() + static_cast<size_t>(scales == 1 ? 0 : a) * 4, 4);
        const float y = static_cast<float>(xi - zi) * s_a;
        std::memcpy(r.bytes.data() + static_cast<size_t>(i) * 4, &y, 4);
    }
    return r;
}

std::optional<std::vector<HostValue>> evaluate(const onnx::NodeProto& n, const std::vector<const HostValue*>& ins,
                                               const std::optional<Shape>& in_shape, int64_t opset, std::string& why) {
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
    if (ins.empty() || !ins[0]) return std::nullopt;
    const HostValue& x = *ins[0];
    const auto x_count = static_cast<int64_t>(count_of(x));
    if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") {
        auto target = reshape_target(n, x.shape, ins.size() > 1 ? ins[1] : nullptr, opset, why);
        if (!target || x_count > kMaxFoldElements) return std::nullopt;
        HostValue r = x;
        r.shape = *target;
        return one(r);
    }
    if (op == "ConstantOfShape") {
        Shape shape = ints(x);
        const std::optional<int64_t> count = element_count(shape, why);
        if (!count) return std::nullopt;
        if (*count > kMaxFoldElements) {
            why = "its result " + shape_string(shape) + " has " + std::to_string(*count) +
                  " elements; graphrun folds constants of at most " + std::to_string(kMaxFoldElements);
            return std::nullopt;
        }
        HostValue fill = scalar(0, DType::F32);
        if (const auto* a = find_attr(n, "value")) {
            auto v = tensor_value(a->t(), why);
            if (!v) return std::nullopt;
            if (v->bytes.size() != dtype_size(v->dtype)) {
                why = "its value has " + std::to_string(count_of(*v)) + " elements where it needs 1";
                return std::nullopt;
            }
            fill = std::move(*v);
        }
        HostValue r = make(fill.dtype, shape, *count);
        const size_t es = dtype_size(fill.dtype);
        for (int64_t i = 0; i < *count; ++i) {
            if (stop_requested(i, why)) return std::nullopt;
            std::memcpy(r.bytes.data() + static_cast<size_t>(i) * es, fill.bytes.data(), es);
        }
        return one(r);
    }
    if (op == "Range") {
        if (ins.size() < 3 || !ins[1] || !ins[2] || x.bytes.empty() || ins[1]->bytes.empty() || ins[2]->bytes.empty())
            return std::nullopt;
        const double start = get(x, 0), limit = get(*ins[1], 0), delta = get(*ins[2], 0);
        if (delta == 0) {
            why = "a delta of 0";
            return std::nullopt;
        }
        const double q = std::ceil((limit - start) / delta);
        if (!(q <= static_cast<double>(kMaxFoldElements))) {  // NaN and infinities too
            why = "its result of " + std::to_string(q) + " elements (from " + std::to_string(start) + " to " +
                  std::to_string(limit) + " by " + std::to_string(delta) + ") is more than graphrun folds (at most " +
                  std::to_string(kMaxFoldElements) + ")";
            return std::nullopt;
        }
        const auto count = static_cast<int64_t>(std::max(0.0, q));
        HostValue r = make(x.dtype, {count}, count);
        const bool integral = is_int(x.dtype);
        const int64_t istart = get_int(x, 0), idelta = get_int(*ins[2], 0);
        for (int64_t i = 0; i < count; ++i)
            put(r, static_cast<size_t>(i), start + static_cast<double>(i) * delta,
                wrap_add(istart, wrap_mul(i, idelta)), integral);
        return one(r);
    }
    if (op == "DequantizeLinear") return one(dequantize(n, ins, why));
    // Each op below makes a result of x's size at most (Gather and Concat check theirs).
    if (x_count > kMaxFoldElements) return std::nullopt;
    if (op == "Identity") return one(x);
    if (op == "Cast") {
        auto to = dtype_of(static_cast<int32_t>(attr_int(n, "to", 0)));
        if (!to) return std::nullopt;
        HostValue r = make(*to, x.shape, x_count);
        const bool integral = is_int(x.dtype) || x.dtype == DType::Bool;
        for (int64_t i = 0; i < x_count; ++i) {
            if (stop_requested(i, why)) return std::nullopt;
            put(r, static_cast<size_t>(i), get(x, static_cast<size_t>(i)), get_int(x, static_cast<size_t>(i)), integral);
        }
        return one(r);
    }
    if (op == "Gather") {
        if (ins.size() < 2 || !ins[1]) return std::nullopt;
        return one(gather(x, *ins[1], attr_int(n, "axis", 0), why));
    }
    if (op == "Concat") return one(concat(ins, attr_int(n, "axis", 0), why));
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
        if (ins.size() < 2 || !ins[1] || ins[1]->dtype != x.dtype) return std::nullopt;
        return one(binary(op, x, *ins[1], why));
    }
    if (op == "Slice") return one(slice(n, ins, why));
    if (op == "Transpose") return one(transpose(x, attr_ints(n, "perm"), why));
    if (op == "Mod") {
        if (ins.size() < 2 || !ins[1] || ins[1]->dtype != x.dtype || x.dtype == DType::Bool) return std::nullopt;
        // fmod=0 on floats: the divisor's sign, numpy.mod's (as the run-time Mod, onnx_ops_more2.cpp).
        const bool fmod = attr_int(n, "fmod", 0) != 0;
        return one(binary(fmod ? "FMod" : "Mod", x, *ins[1], why));
    }
    if (op == "ScatterND") {
        if (ins.size() < 3 || !ins[1] || !ins[2]) return std::nullopt;
        const auto* red = find_attr(n, "reduction");
        if (red && red->s() != "none") return std::nullopt;
        return one(scatter_nd(x, *ins[1], *ins[2], why));
    }
    if (op == "Expand") {
        if (ins.size() < 2 || !ins[1] || !is_int(ins[1]->dtype) || ins[1]->shape.size() != 1) return std::nullopt;
        HostValue target;  // a stand-in of the target shape: only its shape is read
        target.dtype = x.dtype;
        target.shape = ints(*ins[1]);
        for (int64_t d : target.shape)
            if (d < 0) {
                why = "its shape " + shape_string(target.shape) + " has a negative dimension";
                return std::nullopt;
            }
        return one(select_or_equal(op, {&x, &target}, why));
    }
    if (op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual") {
        if (ins.size() < 2 || !ins[1] || ins[1]->dtype != x.dtype) return std::nullopt;
        return one(select_or_equal(op, {&x, ins[1]}, why));
    }
    if (op == "Where") {
        if (ins.size() < 3 || !ins[1] || !ins[2] || x.dtype != DType::Bool || ins[1]->dtype != ins[2]->dtype)
            return std::nullopt;
        return one(select_or_equal(op, {&x, ins[1], ins[2]}, why));
    }
    if (op == "Neg" && (is_int(x.dtype))) {
        HostValue r = x;
        for (int64_t i = 0; i < x_count; ++i) {
            if (stop_requested(i, why)) return std::nullopt;
            put(r, static_cast<size_t>(i), 0, wrap_sub(0, get_int(x, static_cast<size_t>(i))), true);
        }
        return one(r);
    }
    return std::nullopt;
}

}  // namespace graphrun::onnx_fold
