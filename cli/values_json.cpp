// Streamed JSON of tensor values, the shortest digits of floats, and the
// --no-data summary.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <thread>

#include "cli/values.h"
#include "cli/values_digits.h"

namespace graphrun::cli {

namespace {

// std::to_chars in scientific form, shortest round trip in the float type ft
// (f32, f64, f16, bf16): "-1.2345e-05".
size_t shortest_scientific(char* buf, size_t size, double v, DType ft) {
    std::to_chars_result r;
    if (ft == DType::F16 || ft == DType::BF16) {
        // The fewest digits that read back as the same 16-bit value (correctly
        // rounded to that many digits, as NumPy's Dragon4 picks among them).
        r = std::to_chars(buf, buf + size - 1, v, std::chars_format::scientific, half_shortest_precision(ft, v));
    } else if (ft == DType::F32) {
        r = std::to_chars(buf, buf + size - 1, static_cast<float>(v), std::chars_format::scientific);
    } else {
        r = std::to_chars(buf, buf + size - 1, v, std::chars_format::scientific);
    }
    *r.ptr = '\0';  // for atoi on the exponent
    return static_cast<size_t>(r.ptr - buf);
}

template <class T>
T load(const HostTensor& t, int64_t i) {
    T v;
    std::memcpy(&v, t.data.data() + static_cast<size_t>(i) * sizeof(T), sizeof(T));
    return v;
}

double number_at(const HostTensor& t, int64_t i) {
    switch (t.dtype) {
        case DType::F32: return load<float>(t, i);
        case DType::F64: return load<double>(t, i);
        case DType::I32: return load<int32_t>(t, i);
        case DType::I64: return static_cast<double>(load<int64_t>(t, i));
        case DType::Bool: return t.data[static_cast<size_t>(i)] ? 1 : 0;
        case DType::F16:
        case DType::BF16:
        case DType::I8:
        case DType::U8: return element_as_double(t.dtype, t.data.data(), i);
    }
    return 0;
}

// One element as JSON at `p`; returns the end (at most 32 characters).
char* json_element(char* p, const HostTensor& t, int64_t i) {
    switch (t.dtype) {
        case DType::Bool:
            if (t.data[static_cast<size_t>(i)]) return std::memcpy(p, "true", 4), p + 4;
            return std::memcpy(p, "false", 5), p + 5;
        case DType::I32: return std::to_chars(p, p + 32, load<int32_t>(t, i)).ptr;
        case DType::I64: return std::to_chars(p, p + 32, load<int64_t>(t, i)).ptr;
        case DType::I8:
        case DType::U8: return std::to_chars(p, p + 32, element_as_int(t.dtype, t.data.data(), i)).ptr;
        default: break;
    }
    const double v = number_at(t, i);
    if (std::isnan(v)) return std::memcpy(p, "\"nan\"", 5), p + 5;
    if (std::isinf(v)) {
        if (v > 0) return std::memcpy(p, "\"inf\"", 5), p + 5;
        return std::memcpy(p, "\"-inf\"", 6), p + 6;
    }
    return json_number(p, v, t.dtype);
}

// Elements [begin, end) of a tensor of rank >= 1 with their brackets and
// commas: before element i, one "]" and "[" for every dimension a new row
// of which starts at i.
void format_chunk(const HostTensor& t, const std::vector<int64_t>& strides, int64_t begin, int64_t end,
                  std::string& out) {
    const size_t rank = t.shape.size();
    const int64_t row = t.shape.back();
    // An element takes at most 32 characters, and its brackets and comma 2 * rank + 1.
    out.resize(static_cast<size_t>(end - begin) * (33 + 2 * rank) + 2 * rank + 16);
    char* p = out.data();
    for (int64_t i = begin; i < end; ++i) {
        if (i == 0) {
            std::memset(p, '[', rank);
            p += rank;
        } else if (i % row != 0) {
            *p++ = ',';
        } else {
            // The last dimension's row ends here, and so does each row above
            // it (not dimension 0's) that i is a multiple of the length of.
            size_t k = 1;
            while (k + 1 < rank && i % strides[rank - 2 - k] == 0) ++k;
            std::memset(p, ']', k), p += k;
            *p++ = ',';
            std::memset(p, '[', k), p += k;
        }
        p = json_element(p, t, i);
    }
    out.resize(static_cast<size_t>(p - out.data()));
}

// Empty nested lists for a tensor with no elements: shape [2,0] is [[],[]].
void write_empty(std::ostream& out, const Shape& shape, size_t dim) {
    out << '[';
    if (dim + 1 < shape.size())
        for (int64_t i = 0; i < shape[dim]; ++i) {
            if (i) out << ',';
            write_empty(out, shape, dim + 1);
        }
    out << ']';
}

}  // namespace

Digits shortest_digits(double v, DType ft) {
    char buf[64];
    const size_t n = shortest_scientific(buf, sizeof buf, v, ft);
    Digits d;
    size_t i = 0;
    if (buf[i] == '-') d.neg = true, ++i;
    for (; i < n && buf[i] != 'e'; ++i)
        if (buf[i] != '.') d.digits += buf[i];
    d.point = std::atoi(buf + i + 1) + 1;
    return d;
}

// nlohmann::detail::dtoa_impl::format_buffer with min_exp -4 and max_exp 15
// (digits10 of double: every JSON number is a double there).
char* json_number(char* out, double v, DType ft) {
    char buf[64];
    const size_t n = shortest_scientific(buf, sizeof buf, v, ft);
    char* p = out;
    size_t i = 0;
    if (buf[0] == '-') *p++ = '-', i = 1;
    char digits[32];
    int k = 0;
    for (; i < n && buf[i] != 'e'; ++i)
        if (buf[i] != '.') digits[k++] = buf[i];
    const int e = std::atoi(buf + i + 1);
    const int point = e + 1;  // digits x 10^(point - k)
    constexpr int kMinExp = -4, kMaxExp = 15;
    if (k <= point && point <= kMaxExp) {  // digits[000].0
        std::memcpy(p, digits, static_cast<size_t>(k)), p += k;
        std::memset(p, '0', static_cast<size_t>(point - k)), p += point - k;
        *p++ = '.', *p++ = '0';
        return p;
    }
    if (0 < point && point <= kMaxExp) {  // dig.its
        std::memcpy(p, digits, static_cast<size_t>(point)), p += point;
        *p++ = '.';
        std::memcpy(p, digits + point, static_cast<size_t>(k - point)), p += k - point;
        return p;
    }
    if (kMinExp < point && point <= 0) {  // 0.[000]digits
        *p++ = '0', *p++ = '.';
        std::memset(p, '0', static_cast<size_t>(-point)), p += -point;
        std::memcpy(p, digits, static_cast<size_t>(k)), p += k;
        return p;
    }
    *p++ = digits[0];  // d.igitsE+123
    if (k > 1) {
        *p++ = '.';
        std::memcpy(p, digits + 1, static_cast<size_t>(k - 1)), p += k - 1;
    }
    *p++ = 'e';
    *p++ = e < 0 ? '-' : '+';
    const int a = e < 0 ? -e : e;
    if (a < 10) *p++ = '0';
    return std::to_chars(p, p + 4, a).ptr;
}

void write_values_json(std::ostream& out, const HostTensor& t) {
    const int64_t numel = checked_numel(t.shape).value_or(0);
    if (t.shape.empty()) {
        char buf[40];
        char* end = json_element(buf, t, 0);
        out.write(buf, end - buf);
        return;
    }
    if (numel == 0) {
        write_empty(out, t.shape, 0);
        return;
    }
    std::vector<int64_t> strides(t.shape.size(), 1);
    for (size_t d = t.shape.size(); d-- > 1;) strides[d - 1] = strides[d] * t.shape[d];
    // Chunks of elements formatted side by side, written in order; at most
    // `workers` chunks of text are held at a time, whatever the tensor's size.
    constexpr int64_t kChunk = int64_t{1} << 15;
    const int64_t chunks = (numel + kChunk - 1) / kChunk;
    const int64_t workers =
        std::min<int64_t>(chunks, std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, 16));
    std::vector<std::string> text(static_cast<size_t>(workers));
    for (int64_t first = 0; first < chunks; first += workers) {
        const int64_t count = std::min(workers, chunks - first);
        auto job = [&](int64_t w) {
            const int64_t b = (first + w) * kChunk;
            format_chunk(t, strides, b, std::min(numel, b + kChunk), text[static_cast<size_t>(w)]);
        };
        std::vector<std::thread> threads;
        for (int64_t w = 1; w < count; ++w) threads.emplace_back(job, w);
        job(0);
        for (std::thread& th : threads) th.join();
        for (int64_t w = 0; w < count; ++w)
            out.write(text[static_cast<size_t>(w)].data(), static_cast<std::streamsize>(text[static_cast<size_t>(w)].size()));
    }
    const std::string close(t.shape.size(), ']');
    out.write(close.data(), static_cast<std::streamsize>(close.size()));
}

ValueSummary summarize(const HostTensor& t) {
    ValueSummary s;
    const int64_t numel = checked_numel(t.shape).value_or(0);
    bool any = false;
    int64_t imin = INT64_MAX, imax = INT64_MIN;
    double fmin = INFINITY, fmax = -INFINITY, sum = 0;
    uint64_t counted = 0;
    for (int64_t i = 0; i < numel; ++i) {
        if (is_int(t.dtype)) {
            const int64_t v = element_as_int(t.dtype, t.data.data(), i);
            imin = std::min(imin, v), imax = std::max(imax, v);
        }
        const double v = number_at(t, i);
        if (std::isnan(v)) {
            ++s.nan_count;
            continue;
        }
        any = true;
        fmin = std::min(fmin, v), fmax = std::max(fmax, v);
        sum += v;
        ++counted;
    }
    if (!any) return s;
    auto number = [&](double v, DType ft) -> std::string {
        if (std::isnan(v)) return "\"nan\"";
        if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
        char buf[40];
        return std::string(buf, json_number(buf, v, ft));
    };
    if (is_int(t.dtype)) {
        s.min = std::to_string(imin), s.max = std::to_string(imax);
    } else if (t.dtype == DType::Bool) {
        s.min = fmin != 0 ? "1" : "0", s.max = fmax != 0 ? "1" : "0";
    } else {
        s.min = number(fmin, t.dtype), s.max = number(fmax, t.dtype);
    }
    s.mean = number(sum / static_cast<double>(counted), DType::F64);
    return s;
}

}  // namespace graphrun::cli
