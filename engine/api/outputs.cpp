// Outputs to files (--output, --save) and checked against expected values
// (--expected-output with numpy.allclose's rule).
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
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

// The elementwise check, one dtype at a time: NaN equals NaN, infinities by
// sign, else |a - b| <= atol + rtol * |b|; i64 differences are taken exactly.
template <class T>
void compare_elements(const uint8_t* pa, const uint8_t* pb, int64_t n, double rtol, double atol, ExpectedCheck& c,
                      int64_t& first) {
    double max_abs = 0, max_rel = 0;
    uint64_t mismatched = 0;
    for (int64_t i = 0; i < n; ++i) {
        T a, b;
        std::memcpy(&a, pa + static_cast<size_t>(i) * sizeof(T), sizeof(T));
        std::memcpy(&b, pb + static_cast<size_t>(i) * sizeof(T), sizeof(T));
        bool close;
        double diff = 0;
        const double db = static_cast<double>(b);
        if constexpr (std::is_same_v<T, int64_t>) {
            diff = static_cast<double>(a > b ? static_cast<uint64_t>(a) - static_cast<uint64_t>(b)
                                             : static_cast<uint64_t>(b) - static_cast<uint64_t>(a));
            close = a == b || diff <= atol + rtol * std::fabs(db);
        } else {
            const double da = static_cast<double>(a);
            if (std::isnan(da) || std::isnan(db)) {
                if (std::isnan(da) && std::isnan(db)) continue;
                close = false;
            } else if (std::isinf(da) || std::isinf(db)) {
                if (da == db) continue;
                close = false;
            } else {
                diff = std::fabs(da - db);
                close = diff <= atol + rtol * std::fabs(db);
            }
        }
        max_abs = std::max(max_abs, diff);
        if (db != 0) max_rel = std::max(max_rel, diff / std::fabs(db));
        else if (diff > 0) max_rel = std::numeric_limits<double>::infinity();
        if (close) continue;
        ++mismatched;
        if (first < 0) first = i;
    }
    c.max_abs_error = max_abs;
    c.max_rel_error = max_rel;
    c.mismatched = mismatched;
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
    int64_t first = -1;
    const uint8_t* a = got.data.data();
    const uint8_t* b = w.data.data();
    switch (got.dtype) {
        case DType::F32: compare_elements<float>(a, b, n, rtol, atol, c, first); break;
        case DType::F64: compare_elements<double>(a, b, n, rtol, atol, c, first); break;
        case DType::I32: compare_elements<int32_t>(a, b, n, rtol, atol, c, first); break;
        case DType::I64: compare_elements<int64_t>(a, b, n, rtol, atol, c, first); break;
        case DType::Bool: compare_elements<uint8_t>(a, b, n, rtol, atol, c, first); break;
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
