// An ONNX model's external data (onnx_external.h).
#include "engine/frontend/onnx_external.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <new>

#include "engine/base/interrupt.h"
#include "engine/frontend/npy.h"  // quote_bytes, size_text
#include "engine/frontend/onnx_fold.h"

namespace graphrun::onnx_external {

namespace {

struct Entries {
    std::string location;
    uint64_t offset = 0;
    bool has_length = false;
    uint64_t length = 0;
};

bool whole_number(const std::string& s, uint64_t& out) {
    if (s.empty()) return false;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size();
}

std::string read_entries(const onnx::TensorProto& t, Entries& e) {
    bool has_location = false;
    for (const auto& kv : t.external_data()) {
        if (kv.key() == "location") {
            e.location = kv.value();
            has_location = true;
        } else if (kv.key() == "offset") {
            if (!whole_number(kv.value(), e.offset))
                return "its external data offset " + quote_bytes(kv.value()) + " is not a whole number of bytes";
        } else if (kv.key() == "length") {
            if (!whole_number(kv.value(), e.length))
                return "its external data length " + quote_bytes(kv.value()) + " is not a whole number of bytes";
            e.has_length = true;
        }  // "checksum" and other keys: ONNX defines no check graphrun could make
    }
    if (!has_location || e.location.empty()) return "its data is external, but it names no file (no 'location')";
    if (e.location.find('\0') != std::string::npos)
        return "its external data location " + quote_bytes(e.location) + " holds a NUL byte";
    return "";
}

// ONNX Runtime's rule: a location is relative to the model's folder and
// stays inside it.
std::string location_problem(const std::string& loc) {
    const std::string shown = quote_bytes(loc, 256);
    const bool drive = loc.size() > 1 && std::isalpha(static_cast<unsigned char>(loc[0])) && loc[1] == ':' &&
                       (loc.size() == 2 || loc[2] == '/' || loc[2] == '\\');  // C:\model.bin
    if (loc[0] == '/' || loc[0] == '\\' || drive)
        return "its external data location " + shown + " is an absolute path; it must be relative to the model's folder";
    size_t at = 0;
    while (at <= loc.size()) {
        size_t end = loc.find_first_of("/\\", at);
        if (end == std::string::npos) end = loc.size();
        if (loc.compare(at, end - at, "..") == 0)
            return "its external data location " + shown + " leads out of the model's folder ('..')";
        at = end + 1;
    }
    return "";
}

}  // namespace

std::string entry_problem(const onnx::TensorProto& t, uint64_t& bytes) {
    Entries e;
    if (std::string p = read_entries(t, e); !p.empty()) return p;
    if (std::string p = location_problem(e.location); !p.empty()) return p;
    std::string why;
    if (!onnx_fold::element_count(Shape(t.dims().begin(), t.dims().end()), why)) return why;
    bytes = onnx_fold::tensor_bytes(t);
    if (e.has_length && e.length != bytes)
        return "its external data length is " + std::to_string(e.length) + " bytes where shape " +
               shape_string(Shape(t.dims().begin(), t.dims().end())) + " of " + onnx_fold::onnx_type_name(t.data_type()) +
               " needs " + std::to_string(bytes);
    return "";
}

namespace {

// Resolves t's external file inside `dir`, opens it and checks that
// offset + bytes fit in it; fd >= 0 and "" on success.
std::string open_data(const onnx::TensorProto& t, const std::string& dir, std::string& file, int& fd, uint64_t& offset,
                      uint64_t& bytes) {
    fd = -1;
    if (std::string p = entry_problem(t, bytes); !p.empty()) return p;
    Entries e;
    read_entries(t, e);
    offset = e.offset;
    const std::string shown = quote_bytes(e.location, 256);
    if (dir.empty())
        return "its data is in the external file " + shown +
               ", but a model read from standard input has no folder to find it in";
    const std::string path = dir + "/" + e.location;
    // A link may not lead out of the model's folder: both are resolved and compared.
    char* real_dir = realpath(dir.c_str(), nullptr);
    char* real_file = realpath(path.c_str(), nullptr);
    std::string problem;
    if (!real_dir)
        problem = "the model's folder cannot be resolved: " + std::string(std::strerror(errno));
    else if (!real_file)
        problem = "its external data file " + shown + " cannot be opened: " + std::strerror(errno);
    else {
        const std::string rd(real_dir), rf(real_file);
        if (rf.size() <= rd.size() || rf.compare(0, rd.size(), rd) != 0 || (rd != "/" && rf[rd.size()] != '/'))
            problem = "its external data file " + shown + " is a link that leads out of the model's folder (to " +
                      quote_bytes(rf, 256) + ")";
    }
    const std::string real = real_file ? real_file : "";
    std::free(real_dir);
    std::free(real_file);
    if (!problem.empty()) return problem;
    file = real;
    fd = ::open(real.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return "its external data file " + shown + " cannot be opened: " + std::strerror(errno);
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        fd = -1;
        return "its external data file " + shown + " is not a regular file";
    }
    const auto size = static_cast<uint64_t>(st.st_size);
    if (offset > size || bytes > size - offset) {
        ::close(fd);
        fd = -1;
        return "its external data (" + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
               ") runs past the end of " + shown + " (" + std::to_string(size) + " bytes)";
    }
    return "";
}

// Reads `bytes` bytes at `offset` of fd into `to`, and closes fd.
std::string read_data(int fd, uint64_t offset, uint64_t bytes, char* to) {
    uint64_t done = 0;
    std::string problem;
    while (done < bytes && problem.empty()) {
        if (interrupted()) {
            problem = "interrupted while reading its external data";
            break;
        }
        const size_t chunk = static_cast<size_t>(std::min<uint64_t>(bytes - done, uint64_t{64} << 20));
        const ssize_t n = ::pread(fd, to + done, chunk, static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            problem = std::string("its external data could not be read: ") + (n < 0 ? std::strerror(errno) : "the file ended early");
        else
            done += static_cast<uint64_t>(n);
    }
    ::close(fd);
    return problem;
}

// The tensor now holds its data in the model (raw_data, set by the caller).
void mark_held(onnx::TensorProto& t) {
    t.clear_external_data();
    t.set_data_location(onnx::TensorProto::DEFAULT);
}

}  // namespace

std::string read_into(onnx::TensorProto& t, const std::string& dir, std::string& file) {
    int fd = -1;
    uint64_t offset = 0, bytes = 0;
    if (std::string p = open_data(t, dir, file, fd, offset, bytes); !p.empty()) return p;
    std::string data;
    try {
        data.resize(static_cast<size_t>(bytes));
    } catch (const std::bad_alloc&) {
        ::close(fd);
        return "its external data (" + size_text(bytes) + ") does not fit in host memory";
    }
    if (std::string p = read_data(fd, offset, bytes, data.data()); !p.empty()) return p;
    t.set_raw_data(std::move(data));
    mark_held(t);
    return "";
}

std::string read_apart(onnx::TensorProto& t, const std::string& dir, std::string& file, std::vector<uint8_t>& out) {
    int fd = -1;
    uint64_t offset = 0, bytes = 0;
    if (std::string p = open_data(t, dir, file, fd, offset, bytes); !p.empty()) return p;
    try {
        out.resize(static_cast<size_t>(bytes));
    } catch (const std::bad_alloc&) {
        ::close(fd);
        return "its external data (" + size_text(bytes) + ") does not fit in host memory";
    }
    if (std::string p = read_data(fd, offset, bytes, reinterpret_cast<char*>(out.data())); !p.empty()) return p;
    t.set_raw_data(std::string());
    mark_held(t);
    return "";
}

}  // namespace graphrun::onnx_external
