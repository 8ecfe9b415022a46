// Outputs to files (--output, --save) and checked against expected values
// (--expected-output with numpy.allclose's rule).
#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>
#include <type_traits>
#include <sys/stat.h>

#include "engine/api/feeds.h"
#include "engine/api/feeds_internal.h"
#include "engine/api/output_paths.h"
#include "engine/base/interrupt.h"

namespace graphrun {

// The file name `--save=DIR` gives an output: its name, with '/' (ONNX names
// such as "/fc1/Gemm_output_0") as '_' and a leading '.' as '_', so that every
// output lands in DIR itself.
static std::string save_file_name(const std::string& name) {
    std::string f = name;
    for (char& c : f)
        if (c == '/' || c == '\\' || c == '\0') c = '_';
    if (f.empty() || f[0] == '.') f.insert(f.begin(), '_');
    return f;
}

std::vector<std::string> save_file_names(const std::vector<std::string>& names) {
    std::vector<std::string> files(names.size());
    std::set<std::string> taken;
    // A name that is a file name as it stands keeps it; a mapped one that
    // meets a taken name gets the first free numeric suffix.
    for (size_t i = 0; i < names.size(); ++i)
        if (save_file_name(names[i]) == names[i] && taken.insert(names[i]).second) files[i] = names[i] + ".npy";
    for (size_t i = 0; i < names.size(); ++i) {
        if (!files[i].empty()) continue;
        const std::string base = save_file_name(names[i]);
        std::string f = base;
        for (int k = 2; !taken.insert(f).second; ++k) f = base + "_" + std::to_string(k);
        files[i] = f + ".npy";
    }
    return files;
}

namespace {

std::vector<std::string> output_names(const Graph& g) {
    std::vector<std::string> v;
    for (const Output& o : g.outputs) v.push_back(o.name);
    return v;
}

const Output* find_output(const Graph& g, const std::string& name) {
    for (const Output& o : g.outputs)
        if (o.name == name) return &o;
    return nullptr;
}

bool ends_with(const std::string& s, const char* suffix) {
    const size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// mkdir -p
bool make_dirs(const std::string& dir, std::string& error) {
    for (size_t i = 1; i <= dir.size(); ++i) {
        if (i != dir.size() && dir[i] != '/') continue;
        const std::string part = dir.substr(0, i);
        if (::mkdir(part.c_str(), 0777) == 0 || errno == EEXIST) continue;
        error = "cannot create directory " + part + ": " + std::strerror(errno);
        return false;
    }
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        error = "cannot create directory " + dir + ": a file of that name exists";
        return false;
    }
    return true;
}

// --save=DIR's file for one output.
std::string save_path(const std::string& dir, const std::string& file) {
    return dir + (ends_with(dir, "/") ? "" : "/") + file;
}

// --save=result.npy would make a folder of that name: a name whose extension
// is a file's (an array, graph or data file's: .npy, .json, ...) is refused
// unless it ends in '/' or is a folder. Other dotted names (run.out, v1.2)
// are folders, as they always were.
std::string save_name_problem(const std::string& save) {
    if (save.empty() || ends_with(save, ".npz") || ends_with(save, "/")) return {};
    const std::string base = save.substr(save.rfind('/') == std::string::npos ? 0 : save.rfind('/') + 1);
    const size_t dot = base.rfind('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == base.size()) return {};
    std::string ext = base.substr(dot + 1);
    for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    static const std::set<std::string> file_extensions = {"npy", "json", "graph", "onnx", "pb", "txt", "csv", "svg"};
    if (!file_extensions.count(ext)) return {};
    struct stat st {};
    if (::stat(save.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return {};
    return "--save=" + save + ": --save writes a folder (DIR/NAME.npy for each output) or one .npz file, and " +
           base.substr(dot) + " names neither; use --output=NAME=@" + save + " for one output, --save=" +
           save.substr(0, save.size() - (base.size() - dot)) + ".npz for one file, or a folder name (" + save +
           "/ keeps the dot)";
}

std::string number(double v) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 6);
    return std::string(buf, r.ptr);
}

// numpy.isclose's arithmetic (NumPy 1.24, as SPEC.md's printing): every
// dtype but float32 is compared in float64 (NumPy casts the expected array to
// float64). A float32 output stays in float32, and so do the Python-float
// tolerances, rounded to float32, while they are below 3.4e38 (NumPy's test
// of a Python float against float32, min_scalar_type); from 3.4e38 up the
// product (an rtol) or the sum (an atol) is taken in float64.
constexpr double kFloat32Scalar = 3.4e38;

// A tolerance shown for the user to give back: two significant digits,
// rounded up so that the figure shown passes too ("3e-06" for 2.98e-06,
// "1.2" for 1.134).
std::string tolerance_up(double v) {
    if (v == 0) return "0";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1e", v);
    if (std::strtod(buf, nullptr) < v) {
        // "2.9e-06" rounds below v: the next two-digit figure up ("3.0e-06").
        int mantissa = (buf[0] - '0') * 10 + (buf[2] - '0') + 1;
        int exponent = std::atoi(buf + 4);
        if (mantissa == 100) {
            mantissa = 10;
            ++exponent;
        }
        std::snprintf(buf, sizeof buf, "%d.%de%+03d", mantissa / 10, mantissa % 10, exponent);
    }
    const double shown = std::strtod(buf, nullptr);
    // Rounded up across 3.4e38, a float32 output's check would change
    // arithmetic (kFloat32Scalar) and may fail: there the figure is v, exact.
    if (v < kFloat32Scalar && shown >= kFloat32Scalar) {
        auto r = std::to_chars(buf, buf + sizeof buf, v);
        return std::string(buf, r.ptr);
    }
    std::snprintf(buf, sizeof buf, "%.2g", shown);  // the same value, shortest
    return buf;
}

// v >= 0 rounded to float32 to nearest, as NumPy casts it; past FLT_MAX by
// half an ulp or more it is infinity (a cast C++ leaves undefined).
float to_f32(double v) {
    constexpr double max = std::numeric_limits<float>::max();
    if (v <= max) return static_cast<float>(v);
    return v >= max + std::ldexp(1.0, 103) ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::max();
}

// The smallest double that rounds to f (>= 0) in float32: the tolerance to
// report, which passes while the next lower double does not.
double smallest_double_for(float f) {
    if (f == 0) return 0;
    // Halfway between f and the float below rounds to the one with the even last bit.
    const double below = std::nextafter(f, 0.0f);
    const double mid = below + (static_cast<double>(f) - below) / 2;  // exact: one bit more than a float
    return to_f32(mid) == f ? mid : std::nextafter(mid, std::numeric_limits<double>::infinity());
}

// The smallest D in (lo, top] that `passes` (monotone: once true, true for
// every larger value), given that lo does not and a `guess` near the answer;
// nullopt where top does not pass.
template <class D, class P>
std::optional<D> smallest_passing(D lo, D top, D guess, const P& passes) {
    using U = std::conditional_t<sizeof(D) == 4, uint32_t, uint64_t>;
    if (!passes(top)) return std::nullopt;
    D hi = top;
    auto up = [](D v) { return std::nextafter(v, std::numeric_limits<D>::infinity()); };
    auto down = [](D v) { return std::nextafter(v, D(0)); };
    // The guess is mostly within an ulp: a few steps from it, else bisection.
    if (guess > lo && guess < hi) {
        if (passes(guess)) {
            hi = guess;
            for (int k = 0; k < 2 && down(hi) > lo; ++k) {
                if (!passes(down(hi))) {
                    lo = down(hi);
                    break;
                }
                hi = down(hi);
            }
        } else {
            lo = guess;
            for (int k = 0; k < 2 && up(lo) < hi; ++k) {
                if (passes(up(lo))) {
                    hi = up(lo);
                    break;
                }
                lo = up(lo);
            }
        }
    }
    // Non-negative floats order as their bit patterns do.
    U l = std::bit_cast<U>(lo), h = std::bit_cast<U>(hi);
    while (h - l > 1) {
        const U m = l + (h - l) / 2;
        if (passes(std::bit_cast<D>(m))) h = m;
        else l = m;
    }
    return std::bit_cast<D>(h);
}

// The smallest tolerance that passes every element so far, among the values
// of one arithmetic (D: float for float32's, double for float64's), from
// `need` up to `top`.
template <class D>
struct Need {
    D need, top;
    bool open = true;  // some value passes every element so far
    // Raises `need` to the smallest value that passes this element too.
    template <class P>
    void raise(const P& passes, double guess) {
        if (!open || passes(need)) return;
        const D g = guess > static_cast<double>(need) ? static_cast<D>(std::min(guess, static_cast<double>(top))) : need;
        if (auto m = smallest_passing<D>(need, top, g, passes)) need = *m;
        else open = false;
    }
};

// A tolerance's search: float32 arithmetic below 3.4e38 (`low`), float64
// from there up (`high`); a float64 output has `low` alone, in float64.
// NumPy's passing values are low's [need, 3.4e38) and high's [need, inf):
// the smallest is low's where it is open.
template <class F>
struct Search {
    Need<F> low;
    Need<double> high;
    bool low_used, high_used;
    int64_t never = -1;         // the first element that no value passes
    int64_t first_closed = -1;  // the element after which none passes every element
    Search(F top, bool use_low, bool use_high, double high_from)
        : low{0, top, use_low}, high{high_from, std::numeric_limits<double>::max(), use_high},
          low_used(use_low), high_used(use_high) {}
    // One element: mostly it passes at both needs, and that is all.
    template <class PL, class PH>
    void add(const PL& passes_low, const PH& passes_high, double guess, int64_t i) {
        const bool settled = (!low.open || passes_low(low.need)) && (!high.open || passes_high(high.need));
        const bool all_open = (low.open || !low_used) && (high.open || !high_used);
        if (settled && (never >= 0 || all_open)) return;
        raise(passes_low, passes_high, guess, i);
    }
    template <class PL, class PH>
    [[gnu::noinline]] void raise(const PL& passes_low, const PH& passes_high, double guess, int64_t i) {
        const bool was_open = low.open || high.open;
        const F low_was = low.need;
        const double high_was = high.need;
        low.raise(passes_low, guess);
        high.raise(passes_high, guess);
        if (was_open && !low.open && !high.open) first_closed = i;
        // An element that raised or closed a search: can any value pass it at all?
        const bool touched = (low_used && (!low.open || low.need != low_was)) ||
                             (high_used && (!high.open || high.need != high_was));
        if (never < 0 && touched && !(low_used && passes_low(low.top)) && !(high_used && passes_high(high.top)))
            never = i;
    }
    // An element that never passes (NaN against a number).
    void close(int64_t i) {
        if (never < 0) never = i;
        if ((low.open || high.open) && first_closed < 0) first_closed = i;
        low.open = high.open = false;
    }
    std::optional<double> smallest() const {
        if (low.open) {
            if constexpr (std::is_same_v<F, float>) return smallest_double_for(low.need);
            else return low.need;
        }
        if (high.open) return high.need;
        return std::nullopt;
    }
    int64_t blocker() const { return never >= 0 ? never : first_closed; }
};

// Flat indices of what a comparison finds: the first mismatch, and the first
// element that no rtol (no atol) passes.
struct Found {
    int64_t first = -1, no_rtol = -1, no_atol = -1;
};

// The elementwise check, one dtype at a time, as numpy.isclose(got, expected,
// rtol, atol, equal_nan=True) decides it: NaN equals NaN, infinities equal
// when of the same sign and nothing else, else |a - b| <= atol + rtol * |b|
// in NumPy's arithmetic (above); i64 differences are taken exactly (NumPy
// rounds them to float64 first, which differs beyond 2^53). In the same pass:
// the errors (exact, in float64) and the smallest rtol and atol that pass.
template <class T>
void compare_elements(const uint8_t* pa, const uint8_t* pb, int64_t n, double rtol, double atol, ExpectedCheck& c,
                      Found& found) {
    constexpr bool f32 = std::is_same_v<T, float>;
    using F = std::conditional_t<f32, float, double>;  // the arithmetic below 3.4e38
    const F top = f32 ? to_f32(std::nextafter(kFloat32Scalar, 0.0)) : std::numeric_limits<double>::max();
    const bool rtol_low = !f32 || rtol < kFloat32Scalar, atol_low = !f32 || atol < kFloat32Scalar;
    // The tolerances in the low arithmetic (read only where they are below 3.4e38).
    const F r = f32 ? to_f32(std::min(rtol, kFloat32Scalar)) : rtol;
    const F a = f32 ? to_f32(std::min(atol, kFloat32Scalar)) : atol;
    double max_abs = 0, max_rel = 0;
    uint64_t mismatched = 0;
    // An rtol product in float64 makes every atol sum float64: the atol's search is all high, from 0.
    Search<F> need_rtol(top, true, f32, kFloat32Scalar), need_atol(top, rtol_low, f32, rtol_low ? kFloat32Scalar : 0);
    auto never = [&](int64_t i) {
        ++mismatched;
        if (found.first < 0) found.first = i;
        need_rtol.close(i);
        need_atol.close(i);
    };
    for (int64_t i = 0; i < n; ++i) {
        T x, y;
        std::memcpy(&x, pa + static_cast<size_t>(i) * sizeof(T), sizeof(T));
        std::memcpy(&y, pb + static_cast<size_t>(i) * sizeof(T), sizeof(T));
        double error;  // |x - y|, exact where double holds it
        F diff, e;     // NumPy's |x - y| and |y|
        if constexpr (std::is_floating_point_v<T>) {
            if (!std::isfinite(x) || !std::isfinite(y)) {
                // NaN against a number, an infinity against anything else: no tolerance passes.
                if (!((std::isnan(x) && std::isnan(y)) || x == y)) never(i);
                continue;
            }
            error = std::fabs(static_cast<double>(x) - static_cast<double>(y));
            diff = std::fabs(x - y);  // float32 rounds (even to infinity) as NumPy's subtraction does
            e = std::fabs(y);
        } else if constexpr (std::is_same_v<T, int64_t>) {
            error = static_cast<double>(x > y ? static_cast<uint64_t>(x) - static_cast<uint64_t>(y)
                                              : static_cast<uint64_t>(y) - static_cast<uint64_t>(x));
            diff = error;
            e = std::fabs(static_cast<double>(y));
        } else {  // i32, bool: exact in double
            error = std::fabs(static_cast<double>(x) - static_cast<double>(y));
            diff = error;
            e = std::fabs(static_cast<double>(y));
        }
        max_abs = std::max(max_abs, error);
        if (y != 0) max_rel = std::max(max_rel, error / std::fabs(static_cast<double>(y)));
        else if (error > 0) max_rel = std::numeric_limits<double>::infinity();
        const double d = diff, ed = e;
        // atol + rtol * |y| <= ... with an rtol (an atol) of the low arithmetic or a double one.
        auto sum = [&](F rt_low, F at_low, double rt, double at, bool rt_is_low, bool at_is_low) -> double {
            if (!rt_is_low) return at + rt * ed;
            const F prod = rt_low * e;
            return at_is_low ? static_cast<double>(at_low + prod) : at + static_cast<double>(prod);
        };
        if (!(d <= sum(r, a, rtol, atol, rtol_low, atol_low))) {
            ++mismatched;
            if (found.first < 0) found.first = i;
        }
        // An element that fails at the smallest tolerance so far raises it to its own.
        const double rtol_guess = ed > 0 ? (d - atol) / ed : std::numeric_limits<double>::infinity();
        const double atol_guess = d - (rtol_low ? static_cast<double>(r * e) : rtol * ed);
        need_rtol.add([&](F v) { return d <= sum(v, a, 0, atol, true, atol_low); },
                      [&](double v) { return d <= sum(0, a, v, atol, false, atol_low); }, rtol_guess, i);
        need_atol.add([&](F v) { return d <= sum(r, v, rtol, 0, true, true); },
                      [&](double v) { return d <= sum(r, 0, rtol, v, rtol_low, false); }, atol_guess, i);
    }
    c.max_abs_error = max_abs;
    c.max_rel_error = max_rel;
    c.mismatched = mismatched;
    c.min_rtol = need_rtol.smallest();
    c.min_atol = need_atol.smallest();
    if (!c.min_rtol) found.no_rtol = need_rtol.blocker();
    if (!c.min_atol) found.no_atol = need_atol.blocker();
}

// "[1,2]" for a flat index into `shape`.
std::string index_text(const Shape& shape, int64_t flat) {
    std::vector<int64_t> idx(shape.size(), 0);
    for (size_t d = shape.size(); d-- > 0;) {
        idx[d] = flat % shape[d];
        flat /= shape[d];
    }
    std::string s = "[";
    for (size_t d = 0; d < idx.size(); ++d) s += (d ? "," : "") + std::to_string(idx[d]);
    return s + "]";
}

// The smallest tolerances that pass (`verb`: "passes", "would pass"), or
// which element none passes.
std::string tolerance_clause(const ExpectedCheck& c, double rtol, double atol, const std::string& verb) {
    const std::string with_rtol = "rtol >= " + (c.min_rtol ? tolerance_up(*c.min_rtol) : "") + " (atol " + number(atol) + ")";
    const std::string with_atol = "atol >= " + (c.min_atol ? tolerance_up(*c.min_atol) : "") + " (rtol " + number(rtol) + ")";
    if (c.min_rtol && c.min_atol) return verb + " with " + with_rtol + " or " + with_atol;
    if (c.min_atol)
        return "no rtol passes with atol " + number(atol) + " (at " + c.no_rtol_at + "); " + verb + " with " + with_atol;
    if (c.min_rtol)
        return "no atol passes with rtol " + number(rtol) + " (at " + c.no_atol_at + "); " + verb + " with " + with_rtol;
    return "no rtol or atol passes (at " + c.no_atol_at + ")";
}

}  // namespace

std::optional<Error> load_expected(const Graph& g, const OutputFileOptions& o, const std::string& display,
                                   std::vector<ExpectedValue>& out, std::ostream& err) {
    std::optional<Error> first;
    // kind: Usage for a bad or unknown array, Runtime for one the memory
    // limit (or the host) cannot hold (SPEC section 6: out of memory).
    auto fail = [&](const std::string& msg, ErrorKind kind = ErrorKind::Usage) {
        err << "graphrun: error: " << msg << "\n";
        if (!first) first = Error{kind, msg, 0};
    };
    std::set<std::string> seen;
    auto add = [&](const ArraySource& s, const std::string& name, NpyArray a, const std::string& source) {
        if (!find_output(g, name)) {
            fail(detail::unknown_name_message(s, name, "fetched output", output_names(g), display));
            return;
        }
        if (!seen.insert(name).second) {
            fail(s.spelled() + ": output '" + name + "' already has an expected value");
            return;
        }
        out.push_back(ExpectedValue{name, source, std::move(a)});
    };
    for (const ArraySource& s : o.expected) {
        std::string why;
        if (s.file.empty()) {
            const Output* out_node = find_output(g, s.name);
            if (!out_node) {
                fail(detail::unknown_name_message(s, s.name, "fetched output", output_names(g), display));
                continue;
            }
            auto a = detail::inline_array(s, g.node(out_node->id).dtype, why);
            if (!a) fail(why);
            else add(s, s.name, std::move(*a), "the inline value");
            continue;
        }
        std::vector<NpzEntry> entries;
        ArrayLimits limits;
        limits.memory_limit = o.memory_limit;
        bool over_limit = false;
        limits.stopped_at_memory_limit = &over_limit;
        const std::vector<std::string> order = output_names(g);  // for unnamed output_K.pb tensors
        if (!detail::read_arrays(s, entries, why, limits, &order)) {
            fail(why, over_limit ? ErrorKind::Runtime : ErrorKind::Usage);
            continue;
        }
        for (NpzEntry& e : entries) add(s, e.name, std::move(e.array), s.file);
    }
    return first;
}

std::optional<Error> check_output_names(const Graph& g, const OutputFileOptions& o, const std::string& display,
                                        std::ostream& err) {
    if (std::string msg = save_name_problem(o.save); !msg.empty()) {
        err << "graphrun: error: " << msg << "\n";
        return Error{ErrorKind::Usage, msg, 0};
    }
    for (const ArraySource& s : o.outputs) {
        std::string msg;
        if (s.name.empty() && !ends_with(s.file, ".npz"))
            msg = s.spelled() + ": name the output (" + s.option + "=NAME=@" + s.file +
                  "), or give an .npz file to hold every fetched output";
        else if (!s.name.empty() && !find_output(g, s.name))
            msg = detail::unknown_name_message(s, s.name, "fetched output", output_names(g), display);
        if (!msg.empty()) {
            err << "graphrun: error: " << msg << "\n";
            return Error{ErrorKind::Usage, msg, 0};
        }
    }
    return std::nullopt;
}

std::optional<Error> planned_output_paths(const Graph& g, const OutputFileOptions& o, std::vector<OutputPath>& out,
                                          std::ostream& err) {
    for (const ArraySource& s : o.outputs) out.push_back(OutputPath{s.file, s.spelled()});
    if (o.save.empty()) return std::nullopt;
    if (ends_with(o.save, ".npz")) {
        out.push_back(OutputPath{o.save, "--save=" + o.save});
        return std::nullopt;
    }
    if (std::string why = unwritable_folder_reason(o.save); !why.empty()) {
        const std::string msg = "--save=" + o.save + ": " + why;
        err << "graphrun: error: " << msg << "\n";
        return Error{ErrorKind::Runtime, msg, 0};
    }
    // In a folder still to be made, a file can be none that exists.
    struct stat st {};
    const bool exists = ::stat(o.save.c_str(), &st) == 0;
    const std::vector<std::string> names = output_names(g);
    const std::vector<std::string> files = save_file_names(names);
    for (size_t i = 0; i < files.size(); ++i)
        out.push_back(OutputPath{save_path(o.save, files[i]), "--save=" + o.save + " (" + save_path(o.save, files[i]) +
                                                                  " for output '" + names[i] + "')",
                                 exists});
    return std::nullopt;
}

std::optional<Error> write_output_files(const std::vector<HostTensor>& outputs, const OutputFileOptions& o,
                                        std::ostream& err) {
    std::optional<Error> first;
    auto fail = [&](const std::string& msg) {
        err << "graphrun: error: " << msg << "\n";
        // A stop request while a file was written: that file is left as it was, and the rest are not written.
        if (!first) first = interrupted() ? Error{ErrorKind::Interrupted, msg, interrupted()}
                                          : Error{ErrorKind::Runtime, msg, 0};
    };
    auto stopped = [&] { return first && first->kind == ErrorKind::Interrupted; };
    auto member = [](const HostTensor& t) { return NpzMember{t.name, t.dtype, t.shape, t.data.data()}; };
    auto all = [&] {
        std::vector<NpzMember> v;
        for (const HostTensor& t : outputs) v.push_back(member(t));
        return v;
    };
    std::string why;
    for (const ArraySource& s : o.outputs) {
        if (stopped()) break;
        if (s.name.empty()) {
            if (!write_npz_file(s.file, all(), why)) fail(s.spelled() + ": " + why);
            continue;
        }
        bool written = false;
        for (const HostTensor& t : outputs) {
            if (t.name != s.name) continue;
            const bool ok = ends_with(s.file, ".npz") ? write_npz_file(s.file, {member(t)}, why)
                                                      : write_npy_file(s.file, t.dtype, t.shape, t.data.data(), why);
            if (!ok) fail(s.spelled() + ": " + why);
            written = true;
            break;
        }
        if (!written)  // --iterations=0 produces no outputs
            err << "graphrun: warning: " << s.spelled() << ": output '" << s.name
                << "' was not produced (no pass ran); " << s.file << " is not written\n";
    }
    if (!o.save.empty() && !stopped()) {
        if (ends_with(o.save, ".npz")) {
            if (!write_npz_file(o.save, all(), why)) fail("--save=" + o.save + ": " + why);
        } else if (!make_dirs(o.save, why)) {
            fail("--save=" + o.save + ": " + why);
        } else {
            std::vector<std::string> names;
            for (const HostTensor& t : outputs) names.push_back(t.name);
            const std::vector<std::string> files = save_file_names(names);
            for (size_t i = 0; i < outputs.size() && !stopped(); ++i) {
                const HostTensor& t = outputs[i];
                if (files[i] != save_file_name(t.name) + ".npy")
                    err << "graphrun: note: --save=" << o.save << ": output '" << t.name << "' is written as "
                        << files[i] << ", since " << save_file_name(t.name) << ".npy is another output's\n";
                if (!write_npy_file(save_path(o.save, files[i]), t.dtype, t.shape, t.data.data(), why))
                    fail("--save=" + o.save + ": " + why);
            }
        }
    }
    return first;
}

ExpectedCheck compare_expected(const HostTensor& got, const ExpectedValue& want, double rtol, double atol) {
    ExpectedCheck c;
    c.name = got.name;
    c.source = want.source;
    const NpyArray& w = want.array;
    if (got.dtype != w.dtype || got.shape != w.shape) {
        c.problem = "output '" + got.name + "' is " + type_string(got.dtype, got.shape) + ", " + want.source +
                    " holds " + type_string(w.dtype, w.shape) +
                    (got.dtype != w.dtype ? " (the dtypes differ)" : " (the shapes differ)");
        return c;
    }
    const int64_t n = checked_numel(got.shape).value_or(0);
    c.elements = static_cast<uint64_t>(n);
    Found found;
    const uint8_t* a = got.data.data();
    const uint8_t* b = w.data.data();
    switch (got.dtype) {
        case DType::F32: compare_elements<float>(a, b, n, rtol, atol, c, found); break;
        case DType::F64: compare_elements<double>(a, b, n, rtol, atol, c, found); break;
        case DType::I32: compare_elements<int32_t>(a, b, n, rtol, atol, c, found); break;
        case DType::I64: compare_elements<int64_t>(a, b, n, rtol, atol, c, found); break;
        case DType::Bool: compare_elements<uint8_t>(a, b, n, rtol, atol, c, found); break;
        case DType::F16:
        case DType::BF16:
        case DType::I8:
        case DType::U8: {
            // Compared in the compute type, which holds every value exactly (f32, i32).
            const DType wide = compute_dtype(got.dtype);
            std::vector<uint8_t> wa(static_cast<size_t>(n) * 4), wb(static_cast<size_t>(n) * 4);
            for (int64_t i = 0; i < n; ++i) {
                store_double(wide, wa.data(), i, element_as_double(got.dtype, a, i));
                store_double(wide, wb.data(), i, element_as_double(got.dtype, b, i));
            }
            if (wide == DType::F32) compare_elements<float>(wa.data(), wb.data(), n, rtol, atol, c, found);
            else compare_elements<int32_t>(wa.data(), wb.data(), n, rtol, atol, c, found);
            break;
        }
    }
    c.matched = c.mismatched == 0;
    auto at = [&](int64_t i) {
        return index_text(got.shape, i) + ": got " + element_text(got.dtype, got.data.data(), i) + ", expected " +
               element_text(w.dtype, w.data.data(), i);
    };
    if (found.first >= 0) {
        int64_t rest = found.first;
        c.first_index.assign(got.shape.size(), 0);
        for (size_t d = got.shape.size(); d-- > 0;) {
            c.first_index[d] = rest % got.shape[d];
            rest /= got.shape[d];
        }
        c.got = element_text(got.dtype, got.data.data(), found.first);
        c.want = element_text(w.dtype, w.data.data(), found.first);
    }
    if (found.no_rtol >= 0) c.no_rtol_at = at(found.no_rtol);
    if (found.no_atol >= 0) c.no_atol_at = at(found.no_atol);
    return c;
}

std::string mismatch_message(const ExpectedCheck& c, double rtol, double atol) {
    if (!c.problem.empty()) return c.problem;
    std::string idx = "[";
    for (size_t i = 0; i < c.first_index.size(); ++i) idx += (i ? "," : "") + std::to_string(c.first_index[i]);
    idx += "]";
    return "output '" + c.name + "' differs from " + c.source + ": " + std::to_string(c.mismatched) + " of " +
           std::to_string(c.elements) + " elements are not within atol=" + number(atol) + " + rtol=" + number(rtol) +
           " * |expected|; the first at " + idx + ": got " + c.got + ", expected " + c.want + "; max abs error " +
           number(c.max_abs_error) + ", max rel error " + number(c.max_rel_error) +
           (c.no_atol_at.empty() ? "" : " (of the pairs where both are finite)") + "; " +
           tolerance_clause(c, rtol, atol, "it would pass");
}

std::string check_figures(const ExpectedCheck& c, double rtol, double atol) {
    if (!c.problem.empty()) return {};
    if (c.elements == 0) return "0 elements (nothing to compare)";
    return std::to_string(c.elements) + (c.elements == 1 ? " element" : " elements") + ", max abs error " +
           number(c.max_abs_error) + ", max rel error " + number(c.max_rel_error) + "; " +
           tolerance_clause(c, rtol, atol, "passes");
}

}  // namespace graphrun
