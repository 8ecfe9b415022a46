// Outputs to files (--output, --save) and checked against expected values
// (--expected-output with numpy.allclose's rule).
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <sys/stat.h>

#include "engine/api/feeds.h"
#include "engine/api/feeds_internal.h"

namespace graphrun {

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

double element_double(DType t, const uint8_t* p) {
    switch (t) {
        case DType::F32: {
            float v;
            std::memcpy(&v, p, 4);
            return v;
        }
        case DType::F64: {
            double v;
            std::memcpy(&v, p, 8);
            return v;
        }
        case DType::I32: {
            int32_t v;
            std::memcpy(&v, p, 4);
            return v;
        }
        case DType::I64: {
            int64_t v;
            std::memcpy(&v, p, 8);
            return static_cast<double>(v);
        }
        case DType::Bool:
            return *p ? 1 : 0;
    }
    return 0;
}

std::string number(double v) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 6);
    return std::string(buf, r.ptr);
}

}  // namespace

std::optional<Error> load_expected(const Graph& g, const OutputFileOptions& o, const std::string& display,
                                   std::vector<ExpectedValue>& out, std::ostream& err) {
    std::optional<Error> first;
    auto fail = [&](const std::string& msg) {
        err << "graphrun: error: " << msg << "\n";
        if (!first) first = Error{ErrorKind::Usage, msg, 0};
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
        if (!detail::read_arrays(s, entries, why)) {
            fail(why);
            continue;
        }
        for (NpzEntry& e : entries) add(s, e.name, std::move(e.array), s.file);
    }
    return first;
}

std::optional<Error> check_output_names(const Graph& g, const OutputFileOptions& o, const std::string& display,
                                        std::ostream& err) {
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

std::optional<Error> write_output_files(const std::vector<HostTensor>& outputs, const OutputFileOptions& o,
                                        std::ostream& err) {
    std::optional<Error> first;
    auto fail = [&](const std::string& msg) {
        err << "graphrun: error: " << msg << "\n";
        if (!first) first = Error{ErrorKind::Runtime, msg, 0};
    };
    auto member = [](const HostTensor& t) { return NpzMember{t.name, t.dtype, t.shape, t.data.data()}; };
    auto all = [&] {
        std::vector<NpzMember> v;
        for (const HostTensor& t : outputs) v.push_back(member(t));
        return v;
    };
    std::string why;
    for (const ArraySource& s : o.outputs) {
        if (s.name.empty()) {
            if (!write_npz_file(s.file, all(), why)) fail(s.spelled() + ": " + why);
            continue;
        }
        for (const HostTensor& t : outputs) {
            if (t.name != s.name) continue;
            const bool ok = ends_with(s.file, ".npz") ? write_npz_file(s.file, {member(t)}, why)
                                                      : write_npy_file(s.file, t.dtype, t.shape, t.data.data(), why);
            if (!ok) fail(s.spelled() + ": " + why);
            break;
        }
    }
    if (!o.save.empty()) {
        if (ends_with(o.save, ".npz")) {
            if (!write_npz_file(o.save, all(), why)) fail("--save=" + o.save + ": " + why);
        } else if (!make_dirs(o.save, why)) {
            fail("--save=" + o.save + ": " + why);
        } else {
            for (const HostTensor& t : outputs) {
                const std::string path = o.save + (ends_with(o.save, "/") ? "" : "/") + t.name + ".npy";
                if (!write_npy_file(path, t.dtype, t.shape, t.data.data(), why)) fail("--save=" + o.save + ": " + why);
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
    const size_t size = dtype_size(got.dtype);
    c.elements = static_cast<uint64_t>(n);
    int64_t first = -1;
    for (int64_t i = 0; i < n; ++i) {
        const uint8_t* pa = got.data.data() + static_cast<size_t>(i) * size;
        const uint8_t* pb = w.data.data() + static_cast<size_t>(i) * size;
        bool close;
        if (got.dtype == DType::I64) {  // exact beyond 2^53
            int64_t a, b;
            std::memcpy(&a, pa, 8);
            std::memcpy(&b, pb, 8);
            const double diff = static_cast<double>(a > b ? static_cast<uint64_t>(a) - static_cast<uint64_t>(b)
                                                          : static_cast<uint64_t>(b) - static_cast<uint64_t>(a));
            close = a == b || diff <= atol + rtol * std::fabs(static_cast<double>(b));
            c.max_abs_error = std::max(c.max_abs_error, diff);
            if (b != 0) c.max_rel_error = std::max(c.max_rel_error, diff / std::fabs(static_cast<double>(b)));
            else if (diff > 0) c.max_rel_error = std::numeric_limits<double>::infinity();
        } else {
            const double a = element_double(got.dtype, pa), b = element_double(got.dtype, pb);
            if (std::isnan(a) || std::isnan(b)) {
                close = std::isnan(a) && std::isnan(b);
            } else if (std::isinf(a) || std::isinf(b)) {
                close = a == b;
            } else {
                const double diff = std::fabs(a - b);
                close = diff <= atol + rtol * std::fabs(b);
                c.max_abs_error = std::max(c.max_abs_error, diff);
                if (b != 0) c.max_rel_error = std::max(c.max_rel_error, diff / std::fabs(b));
                else if (diff > 0) c.max_rel_error = std::numeric_limits<double>::infinity();
            }
        }
        if (close) continue;
        ++c.mismatched;
        if (first < 0) first = i;
    }
    c.matched = c.mismatched == 0;
    if (first >= 0) {
        int64_t rest = first;
        c.first_index.assign(got.shape.size(), 0);
        for (size_t a = got.shape.size(); a-- > 0;) {
            c.first_index[a] = rest % got.shape[a];
            rest /= got.shape[a];
        }
        c.got = element_text(got.dtype, got.data.data(), first);
        c.want = element_text(w.dtype, w.data.data(), first);
    }
    return c;
}

std::string mismatch_message(const ExpectedCheck& c, double rtol, double atol) {
    if (!c.problem.empty()) return c.problem;
    std::string idx = "[";
    for (size_t i = 0; i < c.first_index.size(); ++i) idx += (i ? "," : "") + std::to_string(c.first_index[i]);
    idx += "]";
    return "output '" + c.name + "' differs from " + c.source + ": " + std::to_string(c.mismatched) + " of " +
           std::to_string(c.elements) + " elements are not within atol=" + number(atol) + " + rtol=" + number(rtol) +
           " * |expected|; the first at " + idx + ": got " + c.got + ", expected " + c.want +
           "; max abs error " + number(c.max_abs_error) + ", max rel error " + number(c.max_rel_error);
}

}  // namespace graphrun
