// The checks every node shares: attribute names and value types, typed
// attribute access, dtype classes, result sizes, and how values are shown in
// messages.
#include "engine/check/infer_context.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/base/printable.h"
#include "engine/check/validate.h"

namespace graphrun::infer {

std::string number_text(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
    if (v == std::trunc(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

std::string scalar_text(const Scalar& s) {
    if (s.is_bool) return s.b ? "true" : "false";
    if (s.is_int) return std::to_string(s.i);
    return number_text(s.f);
}

namespace {

std::string attr_text_at(const Attr& a, int depth) {
    switch (a.kind) {
        case Attr::Kind::Number:
            return a.is_int ? std::to_string(a.i) : number_text(a.f);
        case Attr::Kind::Bool:
            return a.b ? "true" : "false";
        case Attr::Kind::Ident:
            return clipped_text(a.s, 43);
        case Attr::Kind::String:
            return "\"" + clipped_text(a.s, 43) + "\"";
        case Attr::Kind::List: {
            if (depth >= 3 && !a.list.empty()) return "[...]";
            std::string out = "[";
            for (size_t i = 0; i < a.list.size(); ++i) {
                if (i) out += ", ";
                if (i == 8) {
                    out += "...";
                    break;
                }
                out += attr_text_at(a.list[i], depth + 1);
            }
            return out + "]";
        }
    }
    return "?";
}

const std::vector<std::string>& dtype_words() {
    static const std::vector<std::string> words{"f32",     "f64",     "i32",   "i64",  "bool",
                                                "float32", "float64", "int32", "int64"};
    return words;
}

}  // namespace

std::string attr_text(const Attr& a) {
    return attr_text_at(a, 0);
}

std::string ints_text(const std::vector<int64_t>& v) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ",";
        if (i == 16 && v.size() > 17) {
            out += "...(" + std::to_string(v.size()) + " entries)";
            break;
        }
        out += std::to_string(v[i]);
    }
    return out + "]";
}

bool in_class(DType t, DTypeClass c) {
    switch (c) {
        case DTypeClass::All:
            return true;
        case DTypeClass::Num:
            return t != DType::Bool;
        case DTypeClass::Float:
            return is_float(t);
        case DTypeClass::Bool:
            return t == DType::Bool;
    }
    return false;
}

const char* class_text(DTypeClass c) {
    switch (c) {
        case DTypeClass::All:
            return "f32, f64, i32, i64 or bool";
        case DTypeClass::Num:
            return "f32, f64, i32 or i64";
        case DTypeClass::Float:
            return "f32 or f64";
        case DTypeClass::Bool:
            return "bool";
    }
    return "?";
}

DType cast_target(DType t, DTypeClass c) {
    if (in_class(t, c)) return t;
    if (c == DTypeClass::Bool) return DType::Bool;
    return t == DType::I64 ? DType::F64 : DType::F32;
}

std::optional<Scalar> to_scalar(const Attr& a) {
    Scalar s;
    s.src = &a;
    if (a.kind == Attr::Kind::Bool) {
        s.is_bool = true;
        s.b = a.b;
        s.f = a.b ? 1 : 0;
        return s;
    }
    if (a.kind == Attr::Kind::Number) {
        s.is_int = a.is_int;
        s.i = a.i;
        s.f = a.is_int ? static_cast<double>(a.i) : a.f;
        return s;
    }
    if (a.is_word()) {
        // JSON spells the non-finite numbers as strings.
        if (a.s == "nan")
            s.f = std::numeric_limits<double>::quiet_NaN();
        else if (a.s == "inf")
            s.f = std::numeric_limits<double>::infinity();
        else if (a.s == "-inf")
            s.f = -std::numeric_limits<double>::infinity();
        else
            return std::nullopt;
        return s;
    }
    return std::nullopt;
}

std::string conversion_problem(const Scalar& s, DType t) {
    if (t == DType::Bool) return s.is_bool ? "" : "use true/false";
    if (s.is_bool || t == DType::F64) return "";
    if (t == DType::F32) {
        // Like an i32 out of range: a finite number that f32 cannot hold is an
        // error, not an infinity.
        const double v = s.is_int ? static_cast<double>(s.i) : s.f;
        if (std::isfinite(v) && std::isinf(static_cast<float>(v)))
            return "it is out of range (-3.4028235e38 to 3.4028235e38)";
        return "";
    }
    if (t == DType::F16 || t == DType::BF16) {
        const double v = s.is_int ? static_cast<double>(s.i) : s.f;
        std::vector<uint8_t> bits(2);
        store_double(t, bits.data(), 0, v);
        if (std::isfinite(v) && std::isinf(element_as_double(t, bits.data(), 0)))
            return t == DType::F16 ? "it is out of range (-65504 to 65504)"
                                   : "it is out of range (-3.3895314e38 to 3.3895314e38)";
        return "";
    }
    if (t == DType::I8 || t == DType::U8) {
        const int64_t lo = t == DType::I8 ? -128 : 0, hi = t == DType::I8 ? 127 : 255;
        const std::string range = "it is out of range (" + std::to_string(lo) + " to " + std::to_string(hi) + ")";
        if (!s.is_int) {
            if (!std::isfinite(s.f)) return "integers have no nan or inf";
            if (s.f != std::trunc(s.f)) return "it is not an integer";
            return s.f < static_cast<double>(lo) || s.f > static_cast<double>(hi) ? range : "";
        }
        return s.i < lo || s.i > hi ? range : "";
    }
    const bool i32 = t == DType::I32;
    const char* range = i32 ? "it is out of range (-2147483648 to 2147483647)"
                            : "it is out of range (-9223372036854775808 to 9223372036854775807)";
    if (s.is_int) {
        if (i32 && (s.i < std::numeric_limits<int32_t>::min() ||
                    s.i > std::numeric_limits<int32_t>::max()))
            return range;
        return "";
    }
    if (!std::isfinite(s.f)) return "integers have no nan or inf";
    if (s.f != std::trunc(s.f)) return "it is not an integer";
    if (i32 ? (s.f < -2147483648.0 || s.f > 2147483647.0)
            : (s.f < -9223372036854775808.0 || s.f >= 9223372036854775808.0))
        return range;
    return "";
}

namespace {
template <typename T>
void append(std::vector<uint8_t>& out, T v) {
    uint8_t bytes[sizeof(T)];
    std::memcpy(bytes, &v, sizeof(T));
    out.insert(out.end(), bytes, bytes + sizeof(T));
}
}  // namespace

void encode_scalar(const Scalar& s, DType t, std::vector<uint8_t>& out) {
    switch (t) {
        case DType::F32:
            append(out, s.is_bool  ? (s.b ? 1.0f : 0.0f)
                        : s.is_int ? static_cast<float>(s.i)
                                   : static_cast<float>(s.f));
            break;
        case DType::F64:
            append(out, s.is_bool ? (s.b ? 1.0 : 0.0) : s.f);
            break;
        case DType::I32:
            append(out, s.is_bool  ? int32_t{s.b}
                        : s.is_int ? static_cast<int32_t>(s.i)
                                   : static_cast<int32_t>(s.f));
            break;
        case DType::I64:
            append(out, s.is_bool ? int64_t{s.b} : s.is_int ? s.i : static_cast<int64_t>(s.f));
            break;
        case DType::Bool:
            append(out, static_cast<uint8_t>(s.b ? 1 : 0));
            break;
        case DType::F16:
        case DType::BF16:
        case DType::I8:
        case DType::U8: {
            const size_t at = out.size();
            out.resize(at + dtype_size(t));
            const double v = s.is_bool ? (s.b ? 1.0 : 0.0) : s.is_int ? static_cast<double>(s.i) : s.f;
            store_double(t, out.data() + at, 0, v);  // in range: conversion_problem checked it
            break;
        }
    }
}

// ---------------------------------------------------------------------------

NodeCheck::NodeCheck(Graph& g, Diagnostics& d, NodeId id)
    : graph(g), diag(d), node(g.node(id)), info(op_info(g.node(id).op)) {}

std::string NodeCheck::prefix() const {
    std::string p;
    if (!node.generated && !node.display().empty()) p = std::string(node.display()) + ": ";
    return p + info.name + ": ";
}

void NodeCheck::error(const Loc& loc, const std::string& msg) {
    diag.error(loc.known() ? loc : node.loc, prefix() + msg);
}

const Loc& NodeCheck::input_loc(size_t i) const {
    const Loc& l = node.inputs[i].loc;
    return l.known() ? l : node.loc;
}

namespace {

// A literal written in place: a const node the user did not name.
bool is_inline_literal(const Node& n) {
    return n.op == OpKind::Const && n.generated && n.find_attr("value") != nullptr;
}

std::string literal_value_text(const Node& lit) {
    const NamedAttr* va = lit.find_attr("value");
    if (!va) return "?";
    if (auto value = to_scalar(va->value)) return scalar_text(*value);
    return attr_text(va->value);
}

}  // namespace

std::string NodeCheck::literal_text(const Node& lit) {
    return "the literal " + literal_value_text(lit);
}

std::string NodeCheck::role(size_t i) {
    const Node& in = input(i);
    if (is_inline_literal(in)) return literal_value_text(in);
    return std::string(in.display());
}

std::string NodeCheck::operand_name(size_t i) {
    const Node& in = input(i);
    if (is_inline_literal(in)) return literal_text(in);
    return std::string(in.display());
}

std::string NodeCheck::operand_text(size_t i) {
    const Node& in = input(i);
    return operand_name(i) + " is " + type_string(in.dtype, in.shape);
}

bool NodeCheck::check_input_class(size_t i) {
    const Node& in = input(i);
    if (in_class(in.dtype, info.dtypes)) return true;
    error(input_loc(i), operand_text(i) + ", but " + info.name + " takes " +
                            class_text(info.dtypes) + "; use cast(" + role(i) +
                            ", dtype=" + dtype_name(cast_target(in.dtype, info.dtypes)) + ")");
    return false;
}

bool NodeCheck::check_result_size(const Shape& s) {
    auto n = checked_numel(s);
    if (static_cast<int>(s.size()) > kMaxRank) {
        error(node.loc, "result has " + std::to_string(s.size()) + " dimensions; at most " +
                            std::to_string(kMaxRank) + " are supported");
        return false;
    }
    if (!n || *n > kMaxElements) {
        error(node.loc, "result " + type_string(node.dtype, s) +
                            " has too many elements (at most " + std::to_string(kMaxElements) +
                            " are allowed)");
        return false;
    }
    return true;
}

// --- attributes ---

bool NodeCheck::check_attrs() {
    // Runs for every node: no allocation unless something is wrong.
    if (node.attrs.empty() && info.attrs.empty()) return true;
    bool ok = true;
    uint64_t seen = 0;  // bit k: info.attrs[k] given (no op has 64 attributes)
    for (const NamedAttr& a : node.attrs) {
        const Loc& name_loc = a.loc.known() ? a.loc : a.value.loc;
        size_t k = 0;
        while (k < info.attrs.size() && a.name != info.attrs[k].name) ++k;
        if (k == info.attrs.size()) {
            std::vector<std::string> names;
            for (const AttrSpec& s : info.attrs) names.emplace_back(s.name);
            std::string msg = "unknown attribute '" + a.name + "'";
            if (std::string near = nearest_name(a.name, names); !near.empty()) {
                msg += "; did you mean '" + near + "'?";
            } else if (names.empty()) {
                msg += "; " + std::string(info.name) + " takes no attributes";
            } else {
                msg += "; " + std::string(info.name) + " takes ";
                for (size_t i = 0; i < names.size(); ++i)
                    msg += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
            }
            error(name_loc, msg);
            ok = false;
            continue;
        }
        if (seen & (uint64_t{1} << k)) {
            error(name_loc, "attribute '" + a.name + "' is given more than once");
            ok = false;
            continue;
        }
        seen |= uint64_t{1} << k;
        if (!check_attr_value(info.attrs[k], a)) ok = false;
    }
    for (size_t k = 0; k < info.attrs.size(); ++k) {
        if (!info.attrs[k].required || (seen & (uint64_t{1} << k))) continue;
        if (node.host_literal && std::string_view(info.attrs[k].name) == "value") continue;  // its bytes are read
        error(node.loc, "missing required attribute '" + std::string(info.attrs[k].name) + "'");
        ok = false;
    }
    return ok;
}

bool NodeCheck::check_attr_value(const AttrSpec& spec, const NamedAttr& a) {
    const Attr& v = a.value;
    const Loc& loc = v.loc.known() ? v.loc : a.loc;
    const std::string name = spec.name;
    const bool is_int = v.kind == Attr::Kind::Number && v.is_int;
    switch (spec.type) {
        case AttrType::Int:
            if (is_int) return true;
            error(loc, name + " must be an integer, got " + attr_text(v));
            return false;
        case AttrType::IntList:
            if (is_int && spec.allow_scalar) return true;
            if (v.kind != Attr::Kind::List) {
                std::string msg = name + " must be a list of integers" +
                                  (spec.allow_scalar ? " or one integer" : "") + ", got " +
                                  attr_text(v);
                if (is_int) msg += "; write [" + std::to_string(v.i) + "]";
                error(loc, msg);
                return false;
            }
            for (const Attr& e : v.list) {
                if (e.kind == Attr::Kind::Number && e.is_int) continue;
                error(e.loc.known() ? e.loc : loc,
                      "each entry of " + name + " must be an integer, got " + attr_text(e));
                return false;
            }
            return true;
        case AttrType::Number:
            if (to_scalar(v)) return true;
            error(loc, name + " must be a number or true/false, got " + attr_text(v));
            return false;
        case AttrType::Bool:
            if (v.kind == Attr::Kind::Bool) return true;
            error(loc, name + " must be true or false, got " + attr_text(v));
            return false;
        case AttrType::DType: {
            if (v.is_word() && parse_dtype(v.s)) return true;
            std::string msg = v.is_word() ? "unknown dtype '" + v.s + "'"
                                          : name + " must be a dtype name, got " + attr_text(v);
            if (v.is_word())
                if (std::string near = nearest_name(v.s, dtype_words()); !near.empty())
                    msg += "; did you mean '" + near + "'?";
            error(loc, msg + "; dtypes are f32, f64, i32, i64, bool, f16, bf16, i8 and u8");
            return false;
        }
        case AttrType::String:
            if (v.is_word()) return true;
            error(loc, name + " must be a word (a name or a string), got " + attr_text(v));
            return false;
        case AttrType::Value:
            if (v.kind == Attr::Kind::List || to_scalar(v)) return true;
            error(loc,
                  name + " must be a number, true/false or a list of them, got " + attr_text(v));
            return false;
    }
    return false;
}

const Loc& NodeCheck::attr_loc(std::string_view name) const {
    const NamedAttr* a = attr(name);
    if (!a) return node.loc;
    if (a->value.loc.known()) return a->value.loc;
    return a->loc.known() ? a->loc : node.loc;
}

int64_t NodeCheck::int_attr(std::string_view name, int64_t def) const {
    const NamedAttr* a = attr(name);
    return a ? a->value.i : def;
}

bool NodeCheck::bool_attr(std::string_view name, bool def) const {
    const NamedAttr* a = attr(name);
    return a ? a->value.b : def;
}

std::optional<Scalar> NodeCheck::scalar_attr(std::string_view name) const {
    const NamedAttr* a = attr(name);
    if (!a) return std::nullopt;
    return to_scalar(a->value);
}

std::optional<std::vector<int64_t>> NodeCheck::ints_attr(std::string_view name) const {
    const NamedAttr* a = attr(name);
    if (!a) return std::nullopt;
    if (a->value.kind == Attr::Kind::Number) return std::vector<int64_t>{a->value.i};
    std::vector<int64_t> v;
    v.reserve(a->value.list.size());
    for (const Attr& e : a->value.list) v.push_back(e.i);
    return v;
}

std::optional<DType> NodeCheck::dtype_attr() const {
    const NamedAttr* a = attr("dtype");
    if (!a) return std::nullopt;
    return parse_dtype(a->value.s);
}

std::optional<Shape> NodeCheck::creation_shape(std::string_view name) {
    auto dims = ints_attr(name);
    if (!dims) return std::nullopt;  // required: check_attrs reported it
    const std::string what = std::string(name) + " " + ints_text(*dims);
    for (int64_t d : *dims) {
        if (d >= 0) continue;
        error(attr_loc(name), what + " has a negative dimension " + std::to_string(d));
        return std::nullopt;
    }
    if (static_cast<int>(dims->size()) > kMaxRank) {
        error(attr_loc(name), what + " has " + std::to_string(dims->size()) +
                                  " dimensions; at most " + std::to_string(kMaxRank) +
                                  " are supported");
        return std::nullopt;
    }
    auto n = checked_numel(*dims);
    if (!n || *n > kMaxElements) {
        error(attr_loc(name), what + " has too many elements (at most " +
                                  std::to_string(kMaxElements) + " are allowed)");
        return std::nullopt;
    }
    return *dims;
}

std::optional<DType> NodeCheck::creation_dtype(DType def) {
    DType t = dtype_attr().value_or(def);
    if (in_class(t, info.dtypes)) return t;
    error(attr_loc("dtype"), std::string("dtype ") + dtype_name(t) + " is not supported; " +
                                 info.name + " makes " + class_text(info.dtypes));
    return std::nullopt;
}

}  // namespace graphrun::infer
