// NumPy-like printing of tensor values.
#include "cli/values.h"

#include <charconv>
#include <cmath>
#include <cstring>

namespace graphrun::cli {

namespace {

constexpr int64_t kSummariseOver = 1000;  // NumPy's threshold
constexpr int64_t kEdgeItems = 3;
constexpr size_t kLineWidth = 75;

double float_at(const HostTensor& t, int64_t i) {
    if (t.dtype == DType::F32) {
        float f;
        std::memcpy(&f, t.data.data() + i * 4, 4);
        return f;
    }
    double d;
    std::memcpy(&d, t.data.data() + i * 8, 8);
    return d;
}

int64_t int_at(const HostTensor& t, int64_t i) {
    if (t.dtype == DType::I32) {
        int32_t v;
        std::memcpy(&v, t.data.data() + i * 4, 4);
        return v;
    }
    int64_t v;
    std::memcpy(&v, t.data.data() + i * 8, 8);
    return v;
}

// Shortest decimal that reads back as the same value of the tensor's dtype.
std::string shortest(const HostTensor& t, double v) {
    char buf[64];
    std::to_chars_result r = t.dtype == DType::F32 ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v))
                                                   : std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

// Formats every shown element to strings of one width, as NumPy does.
class ElementFormatter {
public:
    ElementFormatter(const HostTensor& t, const std::vector<int64_t>& shown) : t_(t) {
        if (!is_float(t.dtype)) {
            for (int64_t i : shown) width_ = std::max(width_, raw(i).size());
            return;
        }
        double max_abs = 0, min_abs = INFINITY;
        bool all_int = true;
        for (int64_t i : shown) {
            double v = float_at(t, i);
            if (!std::isfinite(v)) continue;
            double a = std::fabs(v);
            max_abs = std::max(max_abs, a);
            if (a > 0) min_abs = std::min(min_abs, a);
            if (v != std::floor(v)) all_int = false;
        }
        sci_ = max_abs >= 1e8 || (min_abs < 1e-4 && min_abs > 0 && !all_int) ||
               (min_abs > 0 && max_abs / min_abs > 1e3 && !all_int && min_abs < 1);
        // Digits after the point: the fewest that show every value to 8 significant places.
        for (int64_t i : shown) {
            double v = float_at(t, i);
            if (!std::isfinite(v)) continue;
            frac_ = std::max(frac_, frac_digits(v));
        }
        for (int64_t i : shown) {
            std::string s = raw(i);
            if (!std::isfinite(float_at(t, i))) {
                width_ = std::max(width_, s.size());
                continue;
            }
            size_t dot = s.find_first_of(".e");
            size_t ip = dot == std::string::npos ? s.size() : dot;
            int_width_ = std::max(int_width_, ip);
            width_ = std::max(width_, s.size());
        }
        if (!sci_) {
            width_ = 0;
            for (int64_t i : shown) width_ = std::max(width_, pad(raw(i)).size());
        }
    }

    std::string operator()(int64_t i) const {
        std::string s = is_float(t_.dtype) && !sci_ ? pad(raw(i)) : raw(i);
        if (s.size() < width_) s.insert(0, width_ - s.size(), ' ');
        return s;
    }

private:
    size_t frac_digits(double v) const {
        if (sci_) {
            // The mantissa digits of the shortest form that reads back as the
            // same value of the tensor's dtype, at most 8 (NumPy's precision).
            char buf[64];
            std::to_chars_result r =
                t_.dtype == DType::F32
                    ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(v), std::chars_format::scientific)
                    : std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
            std::string m(buf, r.ptr);
            std::string mant = m.substr(0, m.find('e'));
            size_t dot = mant.find('.');
            return dot == std::string::npos ? 0 : std::min<size_t>(8, mant.size() - dot - 1);
        }
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.8f", v);
        std::string s(buf);
        while (!s.empty() && s.back() == '0') s.pop_back();
        size_t dot = s.find('.');
        return dot == std::string::npos ? 0 : s.size() - dot - 1;
    }

    std::string raw(int64_t i) const {
        switch (t_.dtype) {
            case DType::Bool: return t_.data[static_cast<size_t>(i)] ? " True" : "False";
            case DType::I32:
            case DType::I64: return std::to_string(int_at(t_, i));
            default: break;
        }
        double v = float_at(t_, i);
        if (std::isnan(v)) return "nan";
        if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
        char buf[64];
        if (sci_) {
            int n = std::snprintf(buf, sizeof buf, "%.*e", static_cast<int>(frac_), v);
            std::string s(buf, static_cast<size_t>(n));
            if (frac_ == 0) {
                size_t e = s.find('e');
                return s.substr(0, e) + "." + s.substr(e);
            }
            return s;
        }
        int n = std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(frac_), v);
        std::string s(buf, static_cast<size_t>(n));
        if (frac_ == 0) s += '.';
        // Trailing zeros become spaces so that the points line up (NumPy's style).
        size_t dot = s.find('.');
        size_t end = s.size();
        while (end > dot + 1 && s[end - 1] == '0') --end;
        return s.substr(0, end) + std::string(s.size() - end, ' ');
    }

    std::string pad(std::string s) const {
        if (s == "nan" || s == "inf" || s == "-inf") return s;  // right-aligned by the caller
        size_t dot = s.find('.');
        size_t ip = dot == std::string::npos ? s.size() : dot;
        if (ip < int_width_) s.insert(0, int_width_ - ip, ' ');
        return s;
    }

    const HostTensor& t_;
    bool sci_ = false;
    size_t frac_ = 0;
    size_t int_width_ = 0;
    size_t width_ = 0;
};

// The indices shown along a dimension of size n.
std::vector<int64_t> shown_indices(int64_t n, bool summarise) {
    std::vector<int64_t> v;
    if (summarise && n > 2 * kEdgeItems) {
        for (int64_t i = 0; i < kEdgeItems; ++i) v.push_back(i);
        v.push_back(-1);  // the "..."
        for (int64_t i = n - kEdgeItems; i < n; ++i) v.push_back(i);
    } else {
        for (int64_t i = 0; i < n; ++i) v.push_back(i);
    }
    return v;
}

void collect(const Shape& shape, size_t dim, int64_t offset, const std::vector<int64_t>& strides, bool summarise,
             std::vector<int64_t>& out) {
    if (dim == shape.size()) {
        out.push_back(offset);
        return;
    }
    for (int64_t i : shown_indices(shape[dim], summarise))
        if (i >= 0) collect(shape, dim + 1, offset + i * strides[dim], strides, summarise, out);
}

void render(const Shape& shape, size_t dim, int64_t offset, const std::vector<int64_t>& strides, bool summarise,
            const ElementFormatter& fmt, size_t indent, std::string& out) {
    if (dim == shape.size()) {
        out += fmt(offset);
        return;
    }
    out += '[';
    std::vector<int64_t> idx = shown_indices(shape[dim], summarise);
    bool last_dim = dim + 1 == shape.size();
    size_t line_start = out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1;
    for (size_t k = 0; k < idx.size(); ++k) {
        if (k > 0) {
            if (last_dim) {
                out += ' ';
            } else {
                out += '\n';
                // A blank line between blocks of rank 3 and more, as NumPy does.
                for (size_t b = dim + 2; b < shape.size(); ++b) out += '\n';
                out += std::string(indent + 1, ' ');
                line_start = out.size() - indent - 1;
            }
        }
        if (idx[k] < 0) {
            out += "...";
            continue;
        }
        if (last_dim) {
            std::string item = fmt(offset + idx[k] * strides[dim]);
            if (out.size() - line_start + item.size() + 1 > kLineWidth && k > 0) {
                out.back() = '\n';
                out += std::string(indent + 1, ' ');
                line_start = out.size() - indent - 1;
            }
            out += item;
        } else {
            render(shape, dim + 1, offset + idx[k] * strides[dim], strides, summarise, fmt, indent + 1, out);
        }
    }
    out += ']';
}

}  // namespace

std::string format_values(const HostTensor& t) {
    int64_t numel = checked_numel(t.shape).value_or(0);
    std::vector<int64_t> strides(t.shape.size(), 1);
    for (size_t d = t.shape.size(); d-- > 1;) strides[d - 1] = strides[d] * t.shape[d];
    bool summarise = numel > kSummariseOver;
    std::vector<int64_t> shown;
    collect(t.shape, 0, 0, strides, summarise, shown);
    ElementFormatter fmt(t, shown);
    if (t.shape.empty()) return fmt(0).substr(fmt(0).find_first_not_of(' '));
    std::string out;
    render(t.shape, 0, 0, strides, summarise, fmt, 0, out);
    return out;
}

nlohmann::ordered_json values_json(const HostTensor& t) {
    auto element = [&](int64_t i) -> nlohmann::ordered_json {
        switch (t.dtype) {
            case DType::Bool: return t.data[static_cast<size_t>(i)] != 0;
            case DType::I32:
            case DType::I64: return int_at(t, i);
            default: break;
        }
        double v = float_at(t, i);
        if (std::isnan(v)) return "nan";
        if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
        // An f32 value as its shortest decimal, so that it reads back exactly as f32.
        if (t.dtype == DType::F32) return std::strtod(shortest(t, v).c_str(), nullptr);
        return v;
    };
    std::vector<int64_t> strides(t.shape.size(), 1);
    for (size_t d = t.shape.size(); d-- > 1;) strides[d - 1] = strides[d] * t.shape[d];
    auto build = [&](auto& self, size_t dim, int64_t offset) -> nlohmann::ordered_json {
        if (dim == t.shape.size()) return element(offset);
        auto arr = nlohmann::ordered_json::array();
        for (int64_t i = 0; i < t.shape[dim]; ++i) arr.push_back(self(self, dim + 1, offset + i * strides[dim]));
        return arr;
    };
    return build(build, 0, 0);
}

}  // namespace graphrun::cli
