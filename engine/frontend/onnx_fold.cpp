// Constant folding for the ONNX front end (onnx_fold.h).
#include "engine/frontend/onnx_fold.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace graphrun::onnx_fold {

// ONNX's element types graphrun has.
std::optional<DType> dtype_of(int32_t t) {
    switch (t) {
        case onnx::TensorProto::FLOAT: return DType::F32;
        case onnx::TensorProto::DOUBLE: return DType::F64;
        case onnx::TensorProto::INT32: return DType::I32;
        case onnx::TensorProto::INT64: return DType::I64;
        case onnx::TensorProto::BOOL: return DType::Bool;
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
        why = "its element type " + onnx_type_name(t.data_type()) + " is not one graphrun has (f32, f64, i32, i64, bool)";
        return std::nullopt;
    }
    if (t.data_location() == onnx::TensorProto::EXTERNAL) {
        why = "its data is in an external file, which graphrun does not read";
        return std::nullopt;
    }
    HostValue v;
    v.dtype = *dt;
    for (int64_t d : t.dims()) {
        if (d < 0) {
            why = "it has a negative dimension " + std::to_string(d);
            return std::nullopt;
        }
        v.shape.push_back(d);
    }
    const int64_t n = onnx_fold::numel(v.shape);
    const size_t size = dtype_size(v.dtype);
    v.bytes.resize(static_cast<size_t>(n) * size);
    auto wrong_count = [&](int64_t got) {
        why = "it has " + std::to_string(got) + " values for shape " + shape_string(v.shape) + " (" +
              std::to_string(n) + " elements)";
    };
    if (t.has_raw_data()) {
        if (t.raw_data().size() != v.bytes.size()) {
            why = "its raw data has " + std::to_string(t.raw_data().size()) + " bytes where shape " +
                  shape_string(v.shape) + " of " + dtype_name(v.dtype) + " needs " + std::to_string(v.bytes.size());
            return std::nullopt;
        }
        if (!v.bytes.empty()) std::memcpy(v.bytes.data(), t.raw_data().data(), v.bytes.size());
        return v;
    }
    auto fill = [&](const auto& field, auto convert) -> bool {
        if (field.size() != n) {
            wrong_count(field.size());
            return false;
        }
        for (int64_t i = 0; i < n; ++i) convert(static_cast<size_t>(i), field.Get(static_cast<int>(i)));
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
    }
    if (!ok) return std::nullopt;
    return v;
}

int64_t numel(const Shape& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
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

// Folding is for shape arithmetic and small constants: a bigger computation
// on constants is left to the graph (it runs where the graph runs, counted).
constexpr int64_t kMaxFoldElements = int64_t{1} << 20;

double get(const HostValue& v, size_t i) {
    const uint8_t* p = v.bytes.data() + i * dtype_size(v.dtype);
    switch (v.dtype) {
        case DType::F32: { float x; std::memcpy(&x, p, 4); return x; }
        case DType::F64: { double x; std::memcpy(&x, p, 8); return x; }
        case DType::I32: { int32_t x; std::memcpy(&x, p, 4); return x; }
        case DType::I64: { int64_t x; std::memcpy(&x, p, 8); return static_cast<double>(x); }
        case DType::Bool: return *p ? 1 : 0;
    }
    return 0;
}

int64_t get_int(const HostValue& v, size_t i) {
    const uint8_t* p = v.bytes.data() + i * dtype_size(v.dtype);
    switch (v.dtype) {
        case DType::I32: { int32_t x; std::memcpy(&x, p, 4); return x; }
        case DType::I64: { int64_t x; std::memcpy(&x, p, 8); return x; }
        case DType::Bool: return *p ? 1 : 0;
        default: {
            double d = get(v, i);
            return std::isfinite(d) ? static_cast<int64_t>(d) : 0;
        }
    }
}

void put(HostValue& v, size_t i, double x, int64_t xi, bool integral) {
    uint8_t* p = v.bytes.data() + i * dtype_size(v.dtype);
    switch (v.dtype) {
        case DType::F32: { float f = static_cast<float>(x); std::memcpy(p, &f, 4); break; }
        case DType::F64: std::memcpy(p, &x, 8); break;
        case DType::I32: { int32_t k = static_cast<int32_t>(integral ? xi : static_cast<int64_t>(x)); std::memcpy(p, &k, 4); break; }
        case DType::I64: { int64_t k = integral ? xi : static_cast<int64_t>(x); std::memcpy(p, &k, 8); break; }
        case DType::Bool: *p = integral ? xi != 0 : x != 0; break;
    }
}

HostValue make(DType t, Shape shape) {
    HostValue v;
    v.dtype = t;
    v.shape = std::move(shape);
    v.bytes.resize(static_cast<size_t>(numel(v.shape)) * dtype_size(t));
    return v;
}

HostValue i64(const std::vector<int64_t>& xs, Shape shape) {
    HostValue v = make(DType::I64, std::move(shape));
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
        HostValue v = make(DType::F32, {a->floats_size()});
        for (int i = 0; i < a->floats_size(); ++i) put(v, static_cast<size_t>(i), a->floats(i), 0, false);
        return v;
    }
    if (const auto* a = find_attr(n, "value_ints"))
        return i64(std::vector<int64_t>(a->ints().begin(), a->ints().end()), {a->ints_size()});
    why = "its value (sparse or string) is not supported";
    return std::nullopt;
}

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
    if (numel(out) > kMaxFoldElements) return std::nullopt;
    HostValue r = make(a.dtype, out);
    const bool integral = is_int(a.dtype) || a.dtype == DType::Bool;
    std::vector<int64_t> idx(rank, 0);
    auto offset = [&](const HostValue& v) {
        size_t off = 0;
        for (size_t i = rank - v.shape.size(); i < rank; ++i) {
            int64_t d = v.shape[i - (rank - v.shape.size())];
            off = off * static_cast<size_t>(d) + static_cast<size_t>(d == 1 ? 0 : idx[i]);
        }
        return off;
    };
    const int64_t total = numel(out);
    for (int64_t k = 0; k < total; ++k) {
        int64_t rem = k;
        for (size_t i = rank; i-- > 0;) {
            idx[i] = out[i] ? rem % out[i] : 0;
            rem = out[i] ? rem / out[i] : 0;
        }
        const size_t ia = offset(a), ib = offset(b);
        if (integral) {
            int64_t x = get_int(a, ia), y = get_int(b, ib), z = 0;
            if (op == "Add") z = x + y;
            else if (op == "Sub") z = x - y;
            else if (op == "Mul") z = x * y;
            else {
                if (y == 0) {
                    why = "integer division by zero in a constant";
                    return std::nullopt;
                }
                z = x / y;
            }
            put(r, static_cast<size_t>(k), 0, z, true);
        } else {
            double x = get(a, ia), y = get(b, ib);
            double z = op == "Add" ? x + y : op == "Sub" ? x - y : op == "Mul" ? x * y : x / y;
            put(r, static_cast<size_t>(k), z, 0, false);
        }
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
    if (numel(out) > kMaxFoldElements) return std::nullopt;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= data.shape[static_cast<size_t>(d)];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= data.shape[static_cast<size_t>(d)];
    const int64_t dim = data.shape[static_cast<size_t>(axis)];
    const size_t es = dtype_size(data.dtype);
    HostValue r = make(data.dtype, out);
    const int64_t n_idx = numel(indices.shape);
    size_t w = 0;
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < n_idx; ++j) {
            int64_t k = get_int(indices, static_cast<size_t>(j));
            if (k < -dim || k >= dim) {
                why = "index " + std::to_string(k) + " is out of range for a dimension of " + std::to_string(dim);
                return std::nullopt;
            }
            if (k < 0) k += dim;
            const size_t src = static_cast<size_t>((o * dim + k) * inner) * es;
            if (inner) std::memcpy(r.bytes.data() + w, data.bytes.data() + src, static_cast<size_t>(inner) * es);
            w += static_cast<size_t>(inner) * es;
        }
    return r;
}

std::optional<HostValue> concat(const std::vector<const HostValue*>& ins, int64_t axis, std::string& why) {
    if (ins.empty() || !ins[0]) return std::nullopt;
    const auto rank = static_cast<int64_t>(ins[0]->shape.size());
    if (!normalize_axis(axis, std::max<int64_t>(rank, 1), why)) return std::nullopt;
    Shape out = ins[0]->shape;
    if (rank == 0) return std::nullopt;
    out[static_cast<size_t>(axis)] = 0;
    for (const HostValue* v : ins) {
        if (!v || v->dtype != ins[0]->dtype || v->shape.size() != out.size()) return std::nullopt;
        out[static_cast<size_t>(axis)] += v->shape[static_cast<size_t>(axis)];
    }
    if (numel(out) > kMaxFoldElements) return std::nullopt;
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= out[static_cast<size_t>(d)];
    HostValue r = make(ins[0]->dtype, out);
    size_t w = 0;
    for (int64_t o = 0; o < outer; ++o)
        for (const HostValue* v : ins) {
            const size_t chunk = v->bytes.size() / static_cast<size_t>(std::max<int64_t>(outer, 1));
            if (chunk)  // an empty input (a 0 in its shape) has no bytes, and memcpy no null source
                std::memcpy(r.bytes.data() + w, v->bytes.data() + static_cast<size_t>(o) * chunk, chunk);
            w += chunk;
        }
    return r;
}

// Slice of a 1-D constant (the shape vectors exporters slice).
std::optional<HostValue> slice(const onnx::NodeProto& n, const std::vector<const HostValue*>& ins, std::string& why) {
    const HostValue& data = *ins[0];
    if (data.shape.size() != 1) return std::nullopt;
    std::vector<int64_t> starts, ends, axes{0}, steps{1};
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
    if (starts.size() != 1 || ends.size() != 1 || axes.size() != 1 || steps.size() != 1) return std::nullopt;
    if (axes[0] != 0 && axes[0] != -1) {
        why = "axis " + std::to_string(axes[0]) + " is out of range for a 1-D input";
        return std::nullopt;
    }
    const int64_t dim = data.shape[0], step = steps[0];
    if (step == 0) {
        why = "a step of 0";
        return std::nullopt;
    }
    auto clamp = [&](int64_t v, int64_t lo, int64_t hi) {
        if (v < 0) v += dim;
        return std::clamp(v, lo, hi);
    };
    int64_t start = step > 0 ? clamp(starts[0], 0, dim) : clamp(starts[0], -1, dim - 1);
    int64_t end = step > 0 ? clamp(ends[0], 0, dim) : clamp(ends[0], -1, dim - 1);
    if (ends[0] < -dim && step < 0) end = -1;
    std::vector<size_t> picks;
    for (int64_t i = start; step > 0 ? i < end : i > end; i += step) picks.push_back(static_cast<size_t>(i));
    HostValue r = make(data.dtype, {static_cast<int64_t>(picks.size())});
    const size_t es = dtype_size(data.dtype);
    for (size_t i = 0; i < picks.size(); ++i) std::memcpy(r.bytes.data() + i * es, data.bytes.data() + picks[i] * es, es);
    return r;
}

}  // namespace

HostValue scalar(double x, DType t) {
    HostValue v = make(t, {});
    put(v, 0, x, static_cast<int64_t>(x), is_int(t));
    return v;
}

std::vector<int64_t> ints(const HostValue& v) {
    std::vector<int64_t> r(static_cast<size_t>(numel(v.shape)));
    for (size_t i = 0; i < r.size(); ++i) r[i] = get_int(v, i);
    return r;
}

std::vector<double> doubles(const HostValue& v) {
    std::vector<double> r(static_cast<size_t>(numel(v.shape)));
    for (size_t i = 0; i < r.size(); ++i) r[i] = get(v, i);
    return r;
}

std::optional<Shape> reshape_target(const onnx::NodeProto& n, const std::optional<Shape>& in, const HostValue* second,
                                    int64_t opset) {
    if (!in) return std::nullopt;
    const std::string& op = n.op_type();
    const auto rank = static_cast<int64_t>(in->size());
    if (op == "Flatten") {
        int64_t axis = attr_int(n, "axis", 1);
        if (axis < 0) axis += rank;
        if (axis < 0 || axis > rank) return std::nullopt;
        int64_t outer = 1, inner = 1;
        for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : inner) *= (*in)[static_cast<size_t>(d)];
        return Shape{outer, inner};
    }
    if (op == "Reshape") {
        if (!second) return std::nullopt;
        std::vector<int64_t> target = ints(*second);
        const bool allowzero = attr_int(n, "allowzero", 0) != 0;
        int64_t known = 1, infer_at = -1;
        for (size_t i = 0; i < target.size(); ++i) {
            if (target[i] == 0 && !allowzero) {
                if (static_cast<int64_t>(i) >= rank) return std::nullopt;
                target[i] = (*in)[i];
            }
            if (target[i] == -1) {
                if (infer_at >= 0) return std::nullopt;
                infer_at = static_cast<int64_t>(i);
            } else if (target[i] < 0) {
                return std::nullopt;
            } else {
                known *= target[i];
            }
        }
        if (infer_at >= 0) {
            if (known == 0) return std::nullopt;
            target[static_cast<size_t>(infer_at)] = numel(*in) / known;
        }
        if (numel(target) != numel(*in)) return std::nullopt;
        return target;
    }
    std::optional<std::vector<int64_t>> axes = opset >= 13 ? (second ? std::optional(ints(*second)) : std::nullopt)
                                                           : attr_ints(n, "axes");
    if (op == "Squeeze") {
        Shape out;
        for (int64_t d = 0; d < rank; ++d) {
            bool drop = false;
            if (!axes) drop = (*in)[static_cast<size_t>(d)] == 1;
            else
                for (int64_t a : *axes) drop = drop || (a < 0 ? a + rank : a) == d;
            if (!drop) out.push_back((*in)[static_cast<size_t>(d)]);
        }
        return out;
    }
    if (op == "Unsqueeze") {
        if (!axes) return std::nullopt;
        const int64_t out_rank = rank + static_cast<int64_t>(axes->size());
        std::vector<bool> is_new(static_cast<size_t>(out_rank), false);
        for (int64_t a : *axes) {
            if (a < 0) a += out_rank;
            if (a < 0 || a >= out_rank) return std::nullopt;
            is_new[static_cast<size_t>(a)] = true;
        }
        Shape out;
        size_t k = 0;
        for (int64_t d = 0; d < out_rank; ++d) out.push_back(is_new[static_cast<size_t>(d)] ? 1 : (*in)[k++]);
        return out;
    }
    return std::nullopt;
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
    if (op == "Shape") {
        const auto rank = static_cast<int64_t>(in_shape->size());
        int64_t start = attr_int(n, "start", 0), end = attr_int(n, "end", rank);
        if (start < 0) start += rank;
        if (end < 0) end += rank;
        start = std::clamp<int64_t>(start, 0, rank);
        end = std::clamp<int64_t>(end, start, rank);
        std::vector<int64_t> dims(in_shape->begin() + start, in_shape->begin() + end);
        return one(i64(dims, {static_cast<int64_t>(dims.size())}));
    }
    if (op == "Size") return one(i64({numel(*in_shape)}, {}));  // a scalar: the element count
    if (ins.empty() || !ins[0]) return std::nullopt;
    const HostValue& x = *ins[0];
    if (numel(x.shape) > kMaxFoldElements) return std::nullopt;
    if (op == "Identity") return one(x);
    if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") {
        auto target = reshape_target(n, x.shape, ins.size() > 1 ? ins[1] : nullptr, opset);
        if (!target) return std::nullopt;
        HostValue r = x;
        r.shape = *target;
        return one(r);
    }
    if (op == "Cast") {
        auto to = dtype_of(static_cast<int32_t>(attr_int(n, "to", 0)));
        if (!to) return std::nullopt;
        HostValue r = make(*to, x.shape);
        const bool integral = is_int(x.dtype) || x.dtype == DType::Bool;
        for (size_t i = 0; i < static_cast<size_t>(numel(x.shape)); ++i) put(r, i, get(x, i), get_int(x, i), integral);
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
    if (op == "ConstantOfShape") {
        Shape shape = ints(x);
        for (int64_t d : shape)
            if (d < 0) {
                why = "a negative dimension " + std::to_string(d);
                return std::nullopt;
            }
        if (numel(shape) > kMaxFoldElements) return std::nullopt;
        HostValue fill = scalar(0, DType::F32);
        if (const auto* a = find_attr(n, "value")) {
            auto v = tensor_value(a->t(), why);
            if (!v) return std::nullopt;
            fill = *v;
        }
        HostValue r = make(fill.dtype, shape);
        const size_t es = dtype_size(fill.dtype);
        for (size_t i = 0; i < static_cast<size_t>(numel(shape)); ++i) std::memcpy(r.bytes.data() + i * es, fill.bytes.data(), es);
        return one(r);
    }
    if (op == "Range") {
        if (ins.size() < 3 || !ins[1] || !ins[2]) return std::nullopt;
        const double start = get(x, 0), limit = get(*ins[1], 0), delta = get(*ins[2], 0);
        if (delta == 0) {
            why = "a delta of 0";
            return std::nullopt;
        }
        const auto count = static_cast<int64_t>(std::max(0.0, std::ceil((limit - start) / delta)));
        if (count > kMaxFoldElements) return std::nullopt;
        HostValue r = make(x.dtype, {count});
        const bool integral = is_int(x.dtype);
        for (int64_t i = 0; i < count; ++i)
            put(r, static_cast<size_t>(i), start + static_cast<double>(i) * delta,
                get_int(x, 0) + i * get_int(*ins[2], 0), integral);
        return one(r);
    }
    if (op == "Neg" && (is_int(x.dtype))) {
        HostValue r = x;
        for (size_t i = 0; i < static_cast<size_t>(numel(x.shape)); ++i) put(r, i, 0, -get_int(x, i), true);
        return one(r);
    }
    return std::nullopt;
}

}  // namespace graphrun::onnx_fold
