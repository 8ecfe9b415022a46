// Text printing of tensor values, as NumPy 1.24's str(array) does it
// (numpy/core/arrayprint.py: FloatingFormat, IntegerFormat, BoolFormat,
// _leading_trailing and _formatArray with the default print options:
// precision 8, floatmode 'maxprec', threshold 1000, edgeitems 3, linewidth 75).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <sstream>

#include "cli/values.h"
#include "cli/values_digits.h"
#include "engine/api/interrupt.h"

namespace graphrun::cli {

namespace {

constexpr int64_t kThreshold = 1000;  // summarise arrays with more elements
constexpr int64_t kEdgeItems = 3;
constexpr size_t kLineWidth = 75;
constexpr size_t kPrecision = 8;  // digits after the point, at most

// Thrown out of the walk over a big tensor's elements once a signal asked
// graphrun to stop (polled every 65536 elements), so that printing stops
// within a second however big the tensor.
struct PrintingStopped {};

// The shown part of a float, split as NumPy's first formatting pass splits it.
struct FloatParts {
    bool neg = false;
    std::string int_part;  // positional: the integer digits; scientific: the mantissa's one digit
    std::string frac;      // without trailing zeros
    int exp = 0;           // scientific only
};

// Dragon4 positional, unique, at most 8 digits after the point, trailing zeros
// trimmed: the shortest digits when they need no more than 8 after the point,
// otherwise the exact value rounded (half to even) to 8.
FloatParts positional(double v, DType ft) {
    Digits d = shortest_digits(v, ft);
    FloatParts p;
    p.neg = d.neg;
    const int n = static_cast<int>(d.digits.size());
    if (n - d.point > static_cast<int>(kPrecision)) {
        char buf[512];
        int len = std::snprintf(buf, sizeof buf, "%.8f", std::fabs(v));
        std::string s(buf, static_cast<size_t>(len));
        size_t dot = s.find('.');
        p.int_part = s.substr(0, dot);
        p.frac = s.substr(dot + 1);
        while (!p.frac.empty() && p.frac.back() == '0') p.frac.pop_back();
        return p;
    }
    if (d.point <= 0) {
        p.int_part = "0";
        p.frac = std::string(static_cast<size_t>(-d.point), '0') + d.digits;
    } else if (d.point > n) {
        // Fewer unique digits than integer digits (an f32 over 2^24): Dragon4
        // with min_digits 0 still prints every digit through the units, so
        // the value's own (it is an integer), not zeros.
        char buf[512];
        int len = std::snprintf(buf, sizeof buf, "%.0f", std::fabs(v));
        p.int_part.assign(buf, static_cast<size_t>(len));
    } else if (d.point == n) {
        p.int_part = d.digits;
    } else {
        p.int_part = d.digits.substr(0, static_cast<size_t>(d.point));
        p.frac = d.digits.substr(static_cast<size_t>(d.point));
    }
    if (p.frac.find_first_not_of('0') == std::string::npos) p.frac.clear();  // the value 0
    return p;
}

// Dragon4 scientific, unique, at most 8 mantissa digits after the point.
FloatParts scientific(double v, DType ft) {
    Digits d = shortest_digits(v, ft);
    FloatParts p;
    p.neg = d.neg;
    if (d.digits.size() - 1 > kPrecision) {
        char buf[64];
        int len = std::snprintf(buf, sizeof buf, "%.8e", std::fabs(v));
        std::string s(buf, static_cast<size_t>(len));
        p.int_part = s.substr(0, 1);
        size_t e = s.find('e');
        p.frac = s.substr(2, e - 2);
        while (!p.frac.empty() && p.frac.back() == '0') p.frac.pop_back();
        p.exp = std::atoi(s.c_str() + e + 1);
        return p;
    }
    p.int_part = d.digits.substr(0, 1);
    p.frac = d.digits.substr(1);
    p.exp = d.point - 1;
    return p;
}

std::string exponent_text(int e, size_t min_digits) {
    std::string digits = std::to_string(e < 0 ? -e : e);
    if (digits.size() < min_digits) digits.insert(0, min_digits - digits.size(), '0');
    return (e < 0 ? "-" : "+") + digits;
}

double float_at(const HostTensor& t, int64_t i) {
    if (t.dtype == DType::F16 || t.dtype == DType::BF16) return element_as_double(t.dtype, t.data.data(), i);
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
    if (t.dtype == DType::I8 || t.dtype == DType::U8) return element_as_int(t.dtype, t.data.data(), i);
    if (t.dtype == DType::I32) {
        int32_t v;
        std::memcpy(&v, t.data.data() + i * 4, 4);
        return v;
    }
    int64_t v;
    std::memcpy(&v, t.data.data() + i * 8, 8);
    return v;
}

// One format for every element of an array, from the elements shown
// (NumPy's format function is built from the summarised data).
class ElementFormat {
public:
    template <class ForEach>
    ElementFormat(const HostTensor& t, ForEach each) : t_(t), ft_(t.dtype) {
        if (t.dtype == DType::Bool) return;
        if (is_int(t.dtype)) {
            int64_t lo = INT64_MAX, hi = INT64_MIN;
            each([&](int64_t i) {
                int64_t v = int_at(t, i);
                lo = std::min(lo, v), hi = std::max(hi, v);
            });
            if (lo <= hi) width_ = std::max(std::to_string(lo).size(), std::to_string(hi).size());
            return;
        }
        fill_float(each);
    }

    void append(std::string& out, int64_t i) const {
        if (t_.dtype == DType::Bool) {
            out += t_.data[static_cast<size_t>(i)] ? " True" : "False";
            return;
        }
        if (is_int(t_.dtype)) {
            char buf[24];
            auto r = std::to_chars(buf, buf + sizeof buf, int_at(t_, i));
            out.append(width_ - std::min(width_, static_cast<size_t>(r.ptr - buf)), ' ');
            out.append(buf, r.ptr);
            return;
        }
        const double v = float_at(t_, i);
        if (!std::isfinite(v)) {
            const char* s = std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
            out.append(pad_left_ + pad_right_ + 1 - std::strlen(s), ' ');
            out += s;
            return;
        }
        if (exp_format_) {
            // min_digits = precision: the value's own digits to `precision`
            // after the point, rounded half to even, not the unique ones padded.
            char buf[64];
            int len = std::snprintf(buf, sizeof buf, "%.*e", static_cast<int>(precision_), v);
            std::string_view s(buf, static_cast<size_t>(len));
            const size_t e = s.find('e');
            const size_t mant = e - (precision_ == 0 ? 0 : precision_ + 1);  // the sign and the digit
            out.append(pad_left_ - mant, ' ');
            out.append(s.substr(0, mant));
            out += '.';
            if (precision_ > 0) out.append(s.substr(mant + 1, precision_));
            out += 'e';
            out += exponent_text(std::atoi(buf + e + 1), exp_size_);
            return;
        }
        FloatParts p = positional(v, ft_);
        out.append(pad_left_ - (p.neg + p.int_part.size()), ' ');
        if (p.neg) out += '-';
        out += p.int_part;
        out += '.';
        out += p.frac;
        out.append(pad_right_ - p.frac.size(), ' ');
    }

private:
    // FloatingFormat.fillFormat.
    template <class ForEach>
    void fill_float(ForEach each) {
        bool any_finite = false, any_nonfinite = false, neg_inf = false;
        double max_val = 0, min_val = INFINITY;
        each([&](int64_t i) {
            const double v = float_at(t_, i);
            if (!std::isfinite(v)) {
                any_nonfinite = true;
                neg_inf |= std::isinf(v) && v < 0;
                return;
            }
            any_finite = true;
            if (v == 0) return;
            max_val = std::max(max_val, std::fabs(v));
            min_val = std::min(min_val, std::fabs(v));
        });
        if (min_val != INFINITY) {
            // The ratio in the dtype's own arithmetic, as NumPy divides two scalars of it.
            // (f16, bf16: NumPy divides in f32 and rounds to the type.)
            double ratio = ft_ == DType::F64 ? max_val / min_val
                                             : static_cast<double>(static_cast<float>(max_val) / static_cast<float>(min_val));
            if (ft_ == DType::F16 || ft_ == DType::BF16) {
                uint16_t r = 0;
                store_double(ft_, &r, 0, ratio);
                ratio = element_as_double(ft_, &r, 0);
            }
            exp_format_ = max_val >= 1e8 || min_val < 0.0001 || ratio > 1000.;
        }
        if (any_finite && exp_format_) {
            size_t exp_digits = 0;
            each([&](int64_t i) {
                const double v = float_at(t_, i);
                if (!std::isfinite(v)) return;
                FloatParts p = scientific(v, ft_);
                precision_ = std::max(precision_, p.frac.size());
                pad_left_ = std::max(pad_left_, p.neg + p.int_part.size());
                exp_digits = std::max(exp_digits, std::to_string(std::abs(p.exp)).size());
            });
            exp_size_ = std::max<size_t>(2, exp_digits);
            pad_right_ = exp_size_ + 2 + precision_;
        } else if (any_finite) {
            each([&](int64_t i) {
                const double v = float_at(t_, i);
                if (!std::isfinite(v)) return;
                FloatParts p = positional(v, ft_);
                pad_left_ = std::max(pad_left_, p.neg + p.int_part.size());
                pad_right_ = std::max(pad_right_, p.frac.size());
            });
        }
        if (any_nonfinite) {
            const size_t offset = pad_right_ + 1;  // +1 for the point
            const size_t inf_len = 3 + (neg_inf ? 1 : 0);
            if (3 > offset) pad_left_ = std::max(pad_left_, 3 - offset);
            if (inf_len > offset) pad_left_ = std::max(pad_left_, inf_len - offset);
        }
    }

    const HostTensor& t_;
    const DType ft_;  // the float dtype
    size_t width_ = 0;  // integers
    bool exp_format_ = false;
    size_t pad_left_ = 0, pad_right_ = 0, precision_ = 0, exp_size_ = 0;
};

// NumPy's str() of a scalar: positional when 1e-4 <= |v| < 1e16 (or 0), with
// at least one digit after the point; otherwise scientific without a
// trailing point; shortest digits either way.
std::string scalar_text(const HostTensor& t) {
    switch (t.dtype) {
        case DType::Bool: return t.data[0] ? "True" : "False";
        case DType::I32:
        case DType::I64:
        case DType::I8:
        case DType::U8: return std::to_string(int_at(t, 0));
        default: break;
    }
    const double v = float_at(t, 0);
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    Digits d = shortest_digits(v, t.dtype);
    const double a = std::fabs(v);
    std::string s = d.neg ? "-" : "";
    const int n = static_cast<int>(d.digits.size());
    if (a == 0 || (a >= 1e-4 && a < 1e16)) {
        if (d.point <= 0) return s + "0." + std::string(static_cast<size_t>(-d.point), '0') + d.digits;
        if (d.point >= n) return s + d.digits + std::string(static_cast<size_t>(d.point - n), '0') + ".0";
        return s + d.digits.substr(0, static_cast<size_t>(d.point)) + "." + d.digits.substr(static_cast<size_t>(d.point));
    }
    s += d.digits.substr(0, 1);
    if (n > 1) s += "." + d.digits.substr(1);
    return s + "e" + exponent_text(d.point - 1, 2);
}

// Buffered lines to the stream; the line being formed is kept apart so that
// wrapping can strip its trailing blanks, as NumPy's _extendLine does.
class Writer {
public:
    explicit Writer(std::ostream& out) : out_(out) {}
    ~Writer() { flush(); }
    std::string line;  // the current line, from its first column
    void end_line() {
        while (!line.empty() && line.back() == ' ') line.pop_back();
        buf_ += line;
        buf_ += '\n';
        line.clear();
        if (buf_.size() > (1 << 16)) {
            flush();
            if (interrupted()) throw PrintingStopped{};
        }
    }
    void flush() {
        buf_ += line;
        line.clear();
        out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
        buf_.clear();
    }

private:
    std::ostream& out_;
    std::string buf_;
};

// Which elements are shown: all, or the edge items of each dimension longer
// than twice their number when summarising.
struct Walk {
    const Shape& shape;
    std::vector<int64_t> strides;
    bool summarise;

    bool cut(size_t dim) const { return summarise && 2 * kEdgeItems < shape[dim]; }

    // _leading_trailing: the flat indices of the elements shown, in order.
    template <class F>
    void shown(size_t dim, int64_t offset, F& f) const {
        if (dim == shape.size()) {
            f(offset);
            return;
        }
        const int64_t n = shape[dim];
        const bool c = cut(dim);
        for (int64_t i = 0; i < n; ++i) {
            if (c && i == kEdgeItems) i = n - kEdgeItems;
            shown(dim + 1, offset + i * strides[dim], f);
        }
    }
};

struct Layout {
    const HostTensor& t;
    const ElementFormat& fmt;
    const Walk& walk;
    const std::vector<int64_t>& strides = walk.strides;

    bool cut(size_t dim) const { return walk.cut(dim); }

    // _formatArray's recurser for the sub-array at `offset` of dimension `dim`;
    // its hanging indent is dim + 1 columns (brackets or blanks), its width 75 - dim.
    void recurse(Writer& w, size_t dim, int64_t offset) const {
        const int64_t n = t.shape[dim];
        const size_t axes_left = t.shape.size() - dim;
        const size_t indent = dim + 1;
        const bool show_cut = cut(dim);
        w.line += '[';
        auto each = [&](auto&& visit) {
            for (int64_t i = 0; i < n; ++i) {
                if (show_cut && i == kEdgeItems) {
                    visit(-1);
                    i = n - kEdgeItems;
                }
                visit(i);
            }
        };
        if (axes_left == 1) {
            const size_t elem_width = kLineWidth - dim - 1;  // room for the ']'
            std::string word;
            bool first = true;
            each([&](int64_t i) {
                word.clear();
                if (i < 0) word = "...";
                else fmt.append(word, offset + i * strides[dim]);
                if (!first) w.line += ' ';
                // Wrap unless the line holds only its indent (wrapping would not help).
                if (w.line.size() + word.size() > elem_width && w.line.size() > indent) {
                    w.end_line();
                    w.line.append(indent, ' ');
                }
                w.line += word;
                first = false;
            });
        } else {
            bool first = true;
            each([&](int64_t i) {
                if (!first) {
                    for (size_t k = 0; k + 1 < axes_left; ++k) w.end_line();
                    w.line.append(indent, ' ');
                }
                first = false;
                if (i < 0) w.line += "...";
                else recurse(w, dim + 1, offset + i * strides[dim]);
            });
        }
        w.line += ']';
    }
};

}  // namespace

void write_values(std::ostream& out, const HostTensor& t, bool full) {
    const int64_t numel = checked_numel(t.shape).value_or(0);
    if (t.shape.empty()) {
        out << scalar_text(t);
        return;
    }
    if (numel == 0) {
        out << "[]";
        return;
    }
    std::vector<int64_t> strides(t.shape.size(), 1);
    for (size_t d = t.shape.size(); d-- > 1;) strides[d - 1] = strides[d] * t.shape[d];
    const Walk walk{t.shape, std::move(strides), !full && numel > kThreshold};
    uint64_t visited = 0;
    auto each_shown = [&](auto&& f) {
        auto polled = [&](int64_t offset) {
            if ((++visited & 0xFFFF) == 0 && interrupted()) throw PrintingStopped{};
            f(offset);
        };
        walk.shown(0, 0, polled);
    };
    try {
        const ElementFormat fmt(t, each_shown);
        const Layout layout{t, fmt, walk};
        Writer w(out);
        layout.recurse(w, 0, 0);
    } catch (const PrintingStopped&) {
        out << "\n... (printing stopped: interrupted by " << signal_name(interrupted()) << ")";
    }
}

std::string format_values(const HostTensor& t, bool full) {
    std::ostringstream s;
    write_values(s, t, full);
    return s.str();
}

}  // namespace graphrun::cli
