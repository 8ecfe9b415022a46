// What a run reads against what it writes, before anything runs.
#include "engine/api/output_paths.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace graphrun {

namespace {

// The path's folder made absolute (symlinks resolved) and its last
// component: two spellings of one output ("out.npy", "./out.npy") agree.
std::string output_key(const std::string& path) {
    const size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    char* real = ::realpath(dir.c_str(), nullptr);
    if (!real) return path;
    std::string key = real;
    std::free(real);
    return (key == "/" ? key : key + "/") + base;
}

}  // namespace

void ReadFiles::add(const std::string& path, std::string role) {
    struct stat st {};
    if (path.empty() || path == "-" || ::stat(path.c_str(), &st) != 0) return;
    for (const Entry& e : files_)
        if (e.dev == st.st_dev && e.ino == st.st_ino) return;  // the first role a file plays names it
    files_.push_back(Entry{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), std::move(role)});
}

void ReadFiles::add_all(const ReadFiles& other) {
    for (const Entry& e : other.files_) {
        bool known = false;
        for (const Entry& mine : files_) known = known || (mine.dev == e.dev && mine.ino == e.ino);
        if (!known) files_.push_back(e);
    }
}

const std::string* ReadFiles::role_of(const std::string& path) const {
    struct stat st {};
    if (path.empty() || ::stat(path.c_str(), &st) != 0) return nullptr;
    for (const Entry& e : files_)
        if (e.dev == static_cast<uint64_t>(st.st_dev) && e.ino == static_cast<uint64_t>(st.st_ino)) return &e.role;
    return nullptr;
}

ReadFiles files_read(const LoadedGraph& lg, const std::string& graph_role, const FeedOptions* feeds,
                     const OutputFileOptions* files) {
    ReadFiles r;
    r.add(lg.path, graph_role);
    for (const std::string& f : lg.side_files) r.add(f, (lg.onnx ? "an external data file that " : "a const array file that ") + lg.display + " reads");
    // A folder of tensor files (--input=@DIR): each file in it is read.
    auto add_source = [&r](const ArraySource& s) {
        std::error_code ec;
        if (s.file.empty() || !std::filesystem::is_directory(s.file, ec)) {
            r.add(s.file, "the array file of " + s.spelled());
            return;
        }
        size_t n = 0;
        for (const auto& e : std::filesystem::directory_iterator(s.file, ec))
            if (e.path().extension() == ".pb" && ++n <= 100000)
                r.add(e.path().string(), "a tensor file of " + s.spelled());
    };
    if (feeds)
        for (const ArraySource& s : feeds->inputs) add_source(s);
    if (files)
        for (const ArraySource& s : files->expected) add_source(s);
    return r;
}

std::optional<Error> check_output_paths(const std::vector<OutputPath>& outputs, const ReadFiles& reads,
                                        std::ostream& err) {
    auto refuse = [&](ErrorKind kind, const std::string& msg) {
        err << "graphrun: error: " << msg << "\n";
        return Error{kind, msg, 0};
    };
    std::vector<std::string> keys;
    for (size_t i = 0; i < outputs.size(); ++i) {
        const OutputPath& o = outputs[i];
        if (const std::string* role = reads.role_of(o.path))
            return refuse(ErrorKind::Usage, o.spelled + " is " + *role +
                                                "; graphrun never writes over a file the run reads: name another file");
        keys.push_back(output_key(o.path));
        for (size_t j = 0; j < i; ++j)
            if (keys[j] == keys[i])
                return refuse(ErrorKind::Usage, outputs[j].spelled + " and " + o.spelled + " name one file (" +
                                                    o.path + "); give each output a file of its own");
    }
    for (const OutputPath& o : outputs) {
        if (!o.check_writable) continue;
        if (std::string why = unwritable_reason(o.path); !why.empty())
            return refuse(ErrorKind::Runtime, o.spelled + ": cannot write " +
                                                  (o.holds.empty() ? o.path : o.holds + " to " + o.path) + ": " + why);
    }
    return std::nullopt;
}

std::string unwritable_folder_reason(const std::string& dir_in) {
    std::string dir = dir_in;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    if (dir.empty()) return "no folder name given";
    // The folder, or the nearest part of it that exists (mkdir -p makes the rest there).
    std::string at = dir;
    struct stat st {};
    while (::stat(at.c_str(), &st) != 0) {
        if (errno != ENOENT && errno != ENOTDIR) return at + ": " + std::strerror(errno);
        const size_t slash = at.rfind('/');
        at = slash == std::string::npos ? "." : slash == 0 ? "/" : at.substr(0, slash);
    }
    if (!S_ISDIR(st.st_mode))
        return "cannot create directory " + dir + ": " +
               (at == dir ? std::string("a file of that name exists") : at + " is not a folder");
    if (::access(at.c_str(), W_OK | X_OK) != 0)
        return at == dir ? "the folder " + dir + " is not writable: " + std::strerror(errno)
                         : "cannot create directory " + dir + ": " + at + " is not writable: " + std::strerror(errno);
    return {};
}

}  // namespace graphrun
