// Feeding a graph's inputs: --input values (.npy, .npz, inline JSON) and --fill.
#include "engine/api/feeds.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <new>
#include <set>
#include <nlohmann/json.hpp>

#include "engine/api/feeds_internal.h"
#include "engine/base/diagnostics.h"
#include "engine/base/limits.h"
#include "engine/base/printable.h"
#include "engine/frontend/onnx_reader.h"  // parse_tensor_pb

namespace graphrun {

std::string ArraySource::spelled() const {
    std::string s = option + "=";
    if (!name.empty()) s += name + "=";
    // A long inline value is cut: the message is about it, not a copy of it.
    return s + (!file.empty() ? "@" + file : clipped_text(value, 63));
}

std::optional<ArraySource> parse_array_option(const std::string& option, const std::string& text, bool inline_ok,
                                              std::string& error) {
    ArraySource s;
    s.option = option;
    const std::string forms = inline_ok ? "NAME=@FILE.npy, @FILE.npz or NAME=VALUE (a number or nested list)"
                                        : "NAME=@FILE.npy or @FILE.npz";
    if (!text.empty() && text[0] == '@') {
        s.file = text.substr(1);
    } else {
        const size_t eq = text.find('=');
        if (eq == std::string::npos || eq == 0) {
            error = option + "=" + text + ": expected " + forms;
            return std::nullopt;
        }
        s.name = text.substr(0, eq);
        const std::string rest = text.substr(eq + 1);
        if (rest == "@") {
            error = option + "=" + text + ": '@' must be followed by a file name; expected " + forms;
            return std::nullopt;
        }
        if (!rest.empty() && rest[0] == '@') s.file = rest.substr(1);
        else if (inline_ok && !rest.empty()) s.value = rest;
        else {
            error = option + "=" + text + ": expected " + forms;
            return std::nullopt;
        }
    }
    if (!text.empty() && text[0] == '@' && s.file.empty()) {
        error = option + "=" + text + ": '@' must be followed by a file name; expected " + forms;
        return std::nullopt;
    }
    if (s.name.empty() && s.file.empty()) {
        error = option + "=" + text + ": expected " + forms;
        return std::nullopt;
    }
    return s;
}

std::vector<const Node*> graph_inputs(const Graph& g) {
    std::vector<const Node*> v;
    for (const Node& n : g.nodes)
        if (n.op == OpKind::Input) v.push_back(&n);
    return v;
}

namespace detail {

std::string array_type(const NpyArray& a) { return type_string(a.dtype, a.shape); }

namespace {

bool ends_with(const std::string& s, std::string_view tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// One ONNX TensorProto file: named NAME (the option's), or by the proto.
bool read_tensor_file(const ArraySource& s, const std::string& file, std::string name, std::vector<NpzEntry>& out,
                      std::string& error, const ArrayLimits& limits) {
    std::string bytes, why;
    if (!read_whole_file(file, bytes, why, limits.file_cap())) {
        error = s.spelled() + ": " + why;
        return false;
    }
    auto e = parse_tensor_pb(bytes, why, limits);
    if (!e) {
        error = s.spelled() + ": " + file + ": " + why;
        return false;
    }
    if (!name.empty()) e->name = std::move(name);
    out.push_back(std::move(*e));
    return true;
}

// A folder of ONNX tensor files, as the model zoo's test_data_set_N holds
// them: input_0.pb, input_1.pb, ... for --input, output_K.pb for
// --expected-output, in K's order. A tensor without a name is the K-th of
// `order` (the graph's inputs or outputs) where it is known, else "".
bool read_tensor_folder(const ArraySource& s, std::vector<NpzEntry>& out, std::string& error,
                        const ArrayLimits& limits, const std::vector<std::string>* order) {
    const std::string prefix = s.option == "--expected-output" ? "output_" : "input_";
    if (!s.name.empty()) {
        error = s.spelled() + ": " + s.file + " is a folder of tensor files (" + prefix +
                "K.pb), named by their tensors: write " + s.option + "=@" + s.file;
        return false;
    }
    std::vector<std::pair<uint64_t, std::string>> files;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(s.file, ec)) {
        const std::string f = entry.path().filename().string();
        if (f.size() <= prefix.size() + 3 || f.compare(0, prefix.size(), prefix) != 0 || !ends_with(f, ".pb")) continue;
        const std::string digits = f.substr(prefix.size(), f.size() - prefix.size() - 3);
        uint64_t k = 0;
        auto [p, err] = std::from_chars(digits.data(), digits.data() + digits.size(), k);
        if (err != std::errc() || p != digits.data() + digits.size() || k > 100000) continue;
        files.emplace_back(k, entry.path().string());
        if (files.size() > 100000) break;
    }
    if (ec) {
        error = s.spelled() + ": " + s.file + ": cannot list the folder: " + ec.message();
        return false;
    }
    if (files.empty()) {
        error = s.spelled() + ": " + s.file + " holds no " + prefix + "K.pb tensor files";
        return false;
    }
    std::sort(files.begin(), files.end());
    for (size_t i = 0; i < files.size(); ++i) {
        const auto& [k, file] = files[i];
        if (i > 0 && files[i - 1].first == k) {
            error = s.spelled() + ": " + s.file + " holds two files for " + prefix + std::to_string(k) + ".pb";
            return false;
        }
        if (!read_tensor_file(s, file, "", out, error, limits)) return false;
        if (!out.back().name.empty() || !order) continue;
        if (k >= order->size()) {
            error = s.spelled() + ": " + file + " holds a tensor without a name, and the graph has " +
                    std::to_string(order->size()) + (prefix == "input_" ? " input" : " output") +
                    (order->size() == 1 ? "" : "s") + ", so it stands for none";
            return false;
        }
        out.back().name = (*order)[k];
    }
    return true;
}

bool read_arrays_unguarded(const ArraySource& s, std::vector<NpzEntry>& out, std::string& error,
                           const ArrayLimits& limits, const std::vector<std::string>* order) {
    std::error_code ec;
    // A folder is one of tensor files, unless it is named as an array file (refused as not a regular file).
    if (!ends_with(s.file, ".npy") && !ends_with(s.file, ".npz") && std::filesystem::is_directory(s.file, ec))
        return read_tensor_folder(s, out, error, limits, order);
    if (ends_with(s.file, ".pb")) {
        if (!read_tensor_file(s, s.file, s.name, out, error, limits)) return false;
        if (out.back().name.empty()) {
            out.clear();
            error = s.spelled() + ": " + s.file + " holds a tensor without a name: write " + s.option + "=NAME=@" +
                    s.file;
            return false;
        }
        return true;
    }
    std::string bytes, why;
    if (!read_array_file(s.file, bytes, why, limits)) {
        error = s.spelled() + ": " + why;
        return false;
    }
    if (looks_like_zip(bytes)) {
        auto entries = parse_npz(bytes, why, limits);
        if (!entries) {
            error = s.spelled() + ": " + s.file + ": " + why;
            return false;
        }
        bytes = std::string();  // the arrays are out: the file's bytes are not held beside them
        if (s.name.empty()) {
            out = std::move(*entries);
            return true;
        }
        for (NpzEntry& e : *entries)
            if (e.name == s.name) {
                out.push_back(std::move(e));
                return true;
            }
        if (entries->size() == 1) {  // the only member stands for NAME
            out.push_back(std::move(entries->front()));
            out.back().name = s.name;
            return true;
        }
        std::string names;
        for (size_t k = 0; k < entries->size() && k < 8; ++k) names += (k ? ", " : "") + escape_bytes((*entries)[k].name, 256);
        if (entries->size() > 8) names += " and " + std::to_string(entries->size() - 8) + " more";
        error = s.spelled() + ": " + s.file + " has no member '" + s.name + "' (it holds " +
                (names.empty() ? std::string("none") : names) + ")";
        return false;
    }
    if (s.name.empty()) {
        error = s.spelled() + ": " + s.file + " is an .npy file, which holds one unnamed array: write " + s.option +
                "=NAME=@" + s.file;
        return false;
    }
    auto a = parse_npy(bytes, why, limits);
    if (!a) {
        error = s.spelled() + ": " + s.file + ": " + why;
        return false;
    }
    out.push_back(NpzEntry{s.name, std::move(*a)});
    return true;
}

}  // namespace

bool read_arrays(const ArraySource& s, std::vector<NpzEntry>& out, std::string& error, const ArrayLimits& limits,
                 const std::vector<std::string>* order) {
    try {
        return read_arrays_unguarded(s, out, error, limits, order);
    } catch (const std::bad_alloc&) {
        // Every size was checked against the limits; the system still had less to give.
        if (limits.stopped_at_memory_limit) *limits.stopped_at_memory_limit = true;
        out.clear();
        error = s.spelled() + ": " + s.file + ": out of host memory while reading it (the limit was " +
                limits.array_cap_text() + ")";
        return false;
    }
}

namespace {

using json = nlohmann::json;

// One JSON scalar as a value of t; "" or the problem.
std::string encode_json_scalar(const json& v, DType t, uint8_t* out) {
    double d = 0;
    bool integral = false;
    int64_t i = 0;
    if (v.is_boolean()) {
        if (t == DType::Bool) {
            *out = v.get<bool>();
            return "";
        }
        d = v.get<bool>() ? 1 : 0;
        i = static_cast<int64_t>(d);
        integral = true;
    } else if (v.is_number_integer() && !v.is_number_unsigned()) {
        i = v.get<int64_t>();
        d = static_cast<double>(i);
        integral = true;
    } else if (v.is_number_unsigned()) {
        const uint64_t u = v.get<uint64_t>();
        if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) && is_int(t))
            return "is out of range for " + std::string(dtype_name(t));
        i = static_cast<int64_t>(u);
        d = static_cast<double>(u);
        integral = u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    } else if (v.is_number_float()) {
        d = v.get<double>();
    } else if (v.is_string()) {
        const std::string s = v.get<std::string>();
        if (s == "nan") d = std::numeric_limits<double>::quiet_NaN();
        else if (s == "inf") d = std::numeric_limits<double>::infinity();
        else if (s == "-inf") d = -std::numeric_limits<double>::infinity();
        else return "is a string; only \"nan\", \"inf\" and \"-inf\" stand for numbers";
    } else {
        return "is not a number or true/false";
    }
    switch (t) {
        case DType::F32: {
            if (std::isfinite(d) && std::fabs(d) > std::numeric_limits<float>::max())
                return "is out of range for f32 (largest 3.4028235e+38)";
            const float f = static_cast<float>(d);
            std::memcpy(out, &f, 4);
            return "";
        }
        case DType::F64:
            std::memcpy(out, &d, 8);
            return "";
        case DType::Bool:
            if (integral && (i == 0 || i == 1)) {
                *out = static_cast<uint8_t>(i);
                return "";
            }
            return "is not true, false, 0 or 1 (the input is bool)";
        case DType::I32:
        case DType::I64: {
            if (!integral) {
                if (!std::isfinite(d) || d != std::trunc(d)) return "is not an integer";
                if (std::fabs(d) >= 9.2233720368547758e18) return "is out of range for " + std::string(dtype_name(t));
                i = static_cast<int64_t>(d);
            }
            if (t == DType::I32) {
                if (i < std::numeric_limits<int32_t>::min() || i > std::numeric_limits<int32_t>::max())
                    return "is out of range for i32";
                const auto v32 = static_cast<int32_t>(i);
                std::memcpy(out, &v32, 4);
            } else {
                std::memcpy(out, &i, 8);
            }
            return "";
        }
        case DType::F16:
        case DType::BF16: {
            const double max = t == DType::F16 ? 65504.0 : 3.3895313892515355e38;
            if (std::isfinite(d) && std::fabs(d) > max)
                return "is out of range for " + std::string(dtype_name(t)) + (t == DType::F16 ? " (largest 65504)" : " (largest 3.3895314e+38)");
            store_double(t, out, 0, d);
            return "";
        }
        case DType::I8:
        case DType::U8: {
            if (!integral) {
                if (!std::isfinite(d) || d != std::trunc(d)) return "is not an integer";
                if (std::fabs(d) >= 9.2233720368547758e18) return "is out of range for " + std::string(dtype_name(t));
                i = static_cast<int64_t>(d);
            }
            const int64_t lo = t == DType::I8 ? -128 : 0, hi = t == DType::I8 ? 127 : 255;
            if (i < lo || i > hi)
                return "is out of range for " + std::string(dtype_name(t)) + " (" + std::to_string(lo) + ".." +
                       std::to_string(hi) + ")";
            store_int(t, out, 0, i);
            return "";
        }
    }
    return "has no dtype";
}

// The shape of a regular nested list, or the problem.
bool json_shape(const json& v, Shape& shape, std::string& error) {
    const json* cur = &v;
    shape.clear();
    while (cur->is_array()) {
        if (shape.size() >= static_cast<size_t>(kMaxRank)) {
            error = "nests deeper than " + std::to_string(kMaxRank) + " levels";
            return false;
        }
        shape.push_back(static_cast<int64_t>(cur->size()));
        if (cur->empty()) break;
        cur = &(*cur)[0];
    }
    // Every element must agree with the first path's shape.
    std::vector<std::pair<const json*, size_t>> stack{{&v, 0}};
    while (!stack.empty()) {
        auto [node, depth] = stack.back();
        stack.pop_back();
        if (depth == shape.size()) {
            if (node->is_array()) {
                error = "is ragged: a list stands where the first row has a number (depth " + std::to_string(depth) + ")";
                return false;
            }
            continue;
        }
        if (!node->is_array() || static_cast<int64_t>(node->size()) != shape[depth]) {
            error = "is ragged: a row at depth " + std::to_string(depth) + " has " +
                    (node->is_array() ? std::to_string(node->size()) + " elements" : std::string("a number")) +
                    ", the first has " + std::to_string(shape[depth]);
            return false;
        }
        for (const json& e : *node) stack.push_back({&e, depth + 1});
    }
    return true;
}

void flatten(const json& v, std::vector<const json*>& out) {
    if (!v.is_array()) {
        out.push_back(&v);
        return;
    }
    for (const json& e : v) flatten(e, out);
}

}  // namespace

std::optional<NpyArray> inline_array(const ArraySource& s, DType t, std::string& error) {
    json v;
    try {
        v = json::parse(s.value);
    } catch (const json::parse_error& e) {
        error = s.spelled() + ": the value is not a JSON number or nested list: " + e.what();
        return std::nullopt;
    }
    NpyArray a;
    a.dtype = t;
    std::string why;
    if (!json_shape(v, a.shape, why)) {
        error = s.spelled() + ": the value " + why;
        return std::nullopt;
    }
    std::vector<const json*> elems;
    flatten(v, elems);
    const size_t size = dtype_size(t);
    a.data.resize(elems.size() * size);
    for (size_t k = 0; k < elems.size(); ++k) {
        why = encode_json_scalar(*elems[k], t, a.data.data() + k * size);
        if (!why.empty()) {
            error = s.spelled() + ": element " + std::to_string(k) + " (" + elems[k]->dump() + ") " + why;
            return std::nullopt;
        }
    }
    return a;
}

bool inline_shape(const ArraySource& s, Shape& shape) {
    json v;
    try {
        v = json::parse(s.value);
    } catch (const json::parse_error&) {
        return false;
    }
    std::string why;
    return json_shape(v, shape, why);
}

std::string unknown_name_message(const ArraySource& s, const std::string& name, const std::string& what,
                                 const std::vector<std::string>& names, const std::string& display) {
    // The name may come from an .npz member: its bytes are escaped, never printed raw.
    std::string msg = s.spelled() + ": " + display + " has no " + what + " " + quote_bytes(name, 256);
    if (names.empty()) return msg + " (it has none)";
    if (auto near = nearest_name(name, names); !near.empty()) return msg + "; did you mean '" + near + "'?";
    std::string all;
    for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
    return msg + " (its " + what + "s are " + all + ")";
}

}  // namespace detail

namespace {

uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// --fill: zeros, ones, or a counter-based stream per input (floats uniform in
// [0, 1), integers in 0..9, bools 0 or 1), the same for the same seed.
void fill_literal(std::vector<uint8_t>& lit, DType t, int64_t numel, FillMode mode, uint64_t seed, size_t input_index) {
    const size_t size = dtype_size(t);
    lit.assign(static_cast<size_t>(numel) * size, 0);
    if (mode == FillMode::Zeros) return;
    const uint64_t key = splitmix64(seed ^ splitmix64(static_cast<uint64_t>(input_index) + 1));
    for (int64_t i = 0; i < numel; ++i) {
        uint8_t* p = lit.data() + static_cast<size_t>(i) * size;
        const uint64_t r = mode == FillMode::Ones ? 0 : splitmix64(key + static_cast<uint64_t>(i));
        const double u = static_cast<double>(r >> 11) * 0x1.0p-53;
        switch (t) {
            case DType::F32: {
                const float f = mode == FillMode::Ones ? 1.0f : static_cast<float>(u);
                std::memcpy(p, &f, 4);
                break;
            }
            case DType::F64: {
                const double d = mode == FillMode::Ones ? 1.0 : u;
                std::memcpy(p, &d, 8);
                break;
            }
            case DType::I32: {
                const int32_t v = mode == FillMode::Ones ? 1 : static_cast<int32_t>(r % 10);
                std::memcpy(p, &v, 4);
                break;
            }
            case DType::I64: {
                const int64_t v = mode == FillMode::Ones ? 1 : static_cast<int64_t>(r % 10);
                std::memcpy(p, &v, 8);
                break;
            }
            case DType::Bool:
                *p = mode == FillMode::Ones ? 1 : static_cast<uint8_t>(r & 1);
                break;
            case DType::F16:
            case DType::BF16:
                store_double(t, p, 0, mode == FillMode::Ones ? 1.0 : u);
                break;
            case DType::I8:
            case DType::U8:
                store_int(t, p, 0, mode == FillMode::Ones ? 1 : static_cast<int64_t>(r % 10));
                break;
        }
    }
}

}  // namespace

std::vector<FeedView> feed_views(const InputValues& values) {
    std::vector<FeedView> out;
    out.reserve(values.size());
    for (const InputValue& v : values) out.push_back(FeedView{v.id, v.bytes.data(), v.bytes.size()});
    return out;
}

std::optional<Error> read_feeds(const Graph& g, const FeedOptions& feeds, const std::string& display,
                                InputValues& out, std::ostream& err) {
    std::optional<Error> first;
    // kind: Usage for a bad or unknown array, Runtime for one the memory
    // limit (or the host) cannot hold (SPEC section 6: out of memory).
    auto fail = [&](const std::string& msg, ErrorKind kind = ErrorKind::Usage) {
        err << "graphrun: error: " << msg << "\n";
        if (!first) first = Error{kind, msg, 0};
    };
    std::map<std::string, const Node*, std::less<>> by_name;
    std::vector<std::string> names;
    std::vector<const Node*> inputs;
    for (const Node& n : g.nodes)
        if (n.op == OpKind::Input) {
            inputs.push_back(&n);
            by_name[std::string(n.display())] = &n;
            names.emplace_back(n.display());
        }
    // Per input (as `inputs`), its value once read or filled.
    std::vector<std::optional<std::vector<uint8_t>>> values(inputs.size());
    auto slot = [&](const Node* n) -> std::optional<std::vector<uint8_t>>& {
        return values[static_cast<size_t>(std::find(inputs.begin(), inputs.end(), n) - inputs.begin())];
    };
    ArrayLimits limits;
    limits.memory_limit = feeds.memory_limit;
    std::map<const Node*, std::string> fed;  // by which option
    std::set<std::string> tried;  // named by an option that failed: not "missing" too
    auto feed = [&](const ArraySource& s, const std::string& name, NpyArray a, const std::string& from) {
        auto it = by_name.find(name);
        if (it == by_name.end()) {
            fail(detail::unknown_name_message(s, name, "input", names, display));
            return;
        }
        const Node& n = *it->second;
        if (auto prev = fed.find(&n); prev != fed.end()) {
            fail(s.spelled() + ": input " + quote_bytes(name, 256) + " is already given by " + prev->second);
            return;
        }
        if (a.dtype != n.dtype || a.shape != n.shape) {
            fail(s.spelled() + ": " + from + " holds " + detail::array_type(a) +
                 (s.file.empty() ? std::string() : std::string(" ('") + npy_descr(a.dtype) + "')") +
                 ", but input '" + name + "' is " + type_string(n.dtype, n.shape) +
                 (a.dtype != n.dtype ? " (the dtypes differ; graphrun does not convert them)"
                                     : " (the shapes differ)"));
            return;
        }
        slot(&n) = std::move(a.data);
        fed[&n] = s.spelled();
    };
    for (const ArraySource& s : feeds.inputs) {
        std::string why;
        if (s.file.empty()) {
            auto it = by_name.find(s.name);
            if (it == by_name.end()) {
                fail(detail::unknown_name_message(s, s.name, "input", names, display));
                continue;
            }
            tried.insert(s.name);
            auto a = detail::inline_array(s, it->second->dtype, why);
            if (!a) {
                fail(why);
                continue;
            }
            feed(s, s.name, std::move(*a), "the value");
            continue;
        }
        std::vector<NpzEntry> entries;
        bool over_limit = false;
        limits.stopped_at_memory_limit = &over_limit;
        if (!detail::read_arrays(s, entries, why, limits, &names)) {
            fail(why, over_limit ? ErrorKind::Runtime : ErrorKind::Usage);
            tried.insert(s.name);
            continue;
        }
        for (NpzEntry& e : entries) {
            tried.insert(e.name);
            feed(s, e.name, std::move(e.array), s.file);
        }
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
        const Node& n = *inputs[i];
        if (fed.count(&n) || tried.count(std::string(n.display()))) continue;
        const std::string type = type_string(n.dtype, n.shape);
        if (feeds.fill == FillMode::None) {
            fail(display + ": input '" + std::string(n.display()) + "' (" + type + ") has no value: give --input=" +
                 std::string(n.display()) + "=@FILE.npy (" + type + ") or an inline value, or --fill=random|zeros|ones");
            continue;
        }
        try {
            std::vector<uint8_t> bytes;
            fill_literal(bytes, n.dtype, checked_numel(n.shape).value_or(0), feeds.fill, feeds.seed, i);
            values[i] = std::move(bytes);
        } catch (const std::bad_alloc&) {
            err << "graphrun: error: " << display << ": input '" << n.display() << "' (" << type
                << ") is too large to fill in host memory\n";
            if (!first) first = Error{ErrorKind::Runtime, "input '" + std::string(n.display()) + "' is too large to fill", 0};
        }
    }
    if (first) return first;
    out.clear();
    for (size_t i = 0; i < inputs.size(); ++i)
        if (values[i]) out.push_back(InputValue{static_cast<NodeId>(inputs[i] - g.nodes.data()), std::move(*values[i])});
    return first;
}

std::vector<GivenShape> feed_shapes(const FeedOptions& feeds) {
    std::vector<GivenShape> out;
    ArrayLimits limits;
    limits.memory_limit = feeds.memory_limit;
    for (const ArraySource& s : feeds.inputs) {
        if (s.file.empty()) {
            Shape shape;
            if (detail::inline_shape(s, shape)) out.push_back(GivenShape{s.name, std::move(shape), s.spelled(), false});
            continue;
        }
        // An .npy's shape is in its header: its data is read once, by read_feeds.
        if (!s.name.empty() && detail::ends_with(s.file, ".npy"))
            if (std::optional<Shape> shape = npy_file_shape(s.file, limits)) {
                out.push_back(GivenShape{s.name, std::move(*shape), s.spelled(), false});
                continue;
            }
        // An .npz's shapes are in its members' headers, the file mapped: its
        // data too is read once, by read_feeds (which names what is wrong with it).
        if (detail::ends_with(s.file, ".npz"))
            if (auto shapes = npz_file_shapes(s.file, limits)) {
                for (auto& [key, shape] : *shapes) {
                    // As read_arrays picks: every member by name, or the member
                    // NAME, or the only member standing for NAME.
                    if (!s.name.empty() && key != s.name && shapes->size() != 1) continue;
                    out.push_back(GivenShape{s.name.empty() ? key : s.name, std::move(shape), s.spelled(), false});
                    if (!s.name.empty()) break;
                }
                continue;
            }
        std::vector<NpzEntry> entries;
        std::string why;
        if (!detail::read_arrays(s, entries, why, limits)) continue;  // read_feeds says why
        for (NpzEntry& e : entries)  // an unnamed tensor file's input is known once the model is read
            if (!e.name.empty()) out.push_back(GivenShape{e.name, std::move(e.array.shape), s.spelled(), false});
    }
    return out;
}

std::string element_text(DType t, const void* data, int64_t index) {
    const auto* p = static_cast<const uint8_t*>(data) + static_cast<size_t>(index) * dtype_size(t);
    char buf[64];
    auto finite_text = [&](auto v) -> std::string {
        if (std::isnan(v)) return "nan";
        if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
        auto r = std::to_chars(buf, buf + sizeof buf, v);
        return std::string(buf, r.ptr);
    };
    switch (t) {
        case DType::F32: {
            float v;
            std::memcpy(&v, p, 4);
            return finite_text(v);
        }
        case DType::F64: {
            double v;
            std::memcpy(&v, p, 8);
            return finite_text(v);
        }
        case DType::I32: {
            int32_t v;
            std::memcpy(&v, p, 4);
            return std::to_string(v);
        }
        case DType::I64: {
            int64_t v;
            std::memcpy(&v, p, 8);
            return std::to_string(v);
        }
        case DType::Bool:
            return *p ? "true" : "false";
        case DType::F16:
        case DType::BF16: {  // the fewest digits that read back as the same 16-bit value
            const double v = element_as_double(t, p, 0);
            if (std::isnan(v)) return "nan";
            if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
            auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, half_shortest_precision(t, v) + 1);
            return std::string(buf, r.ptr);
        }
        case DType::I8:
        case DType::U8:
            return std::to_string(element_as_int(t, p, 0));
    }
    return "?";
}

}  // namespace graphrun
