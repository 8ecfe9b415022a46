// Reading array files with bounds: regular files only, never more bytes than
// the limits allow, counted as read (engine/frontend/npy.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include "engine/frontend/npy.h"
#include "engine/frontend/npy_internal.h"

namespace graphrun {

namespace {

// What a file that is not a regular one is, for the message.
const char* file_kind(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO (named pipe)";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

// Closes the descriptor on every path out.
struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

// How many bytes the parser needs, as far as the bytes read so far tell: an
// .npy's header and its declared data (0 once its header is one the parser
// refuses: nothing more is needed), or the first bytes of a file that is
// neither an .npy nor a zip archive; nullopt while that is not known yet, and
// for a zip archive (its central directory is at the end).
std::optional<uint64_t> parser_needs(const std::string& b, const ArrayLimits& limits) {
    if (b.size() < 6 || looks_like_zip(b)) return std::nullopt;
    NpyLayout h;
    std::string error;
    switch (parse_npy_layout(b, h, error, limits)) {
        case NpyHeaderStatus::Bad: return 0;
        case NpyHeaderStatus::Truncated: return std::nullopt;
        case NpyHeaderStatus::Ok: return h.data_at + h.data_bytes;
    }
    return 0;
}

}  // namespace

uint64_t ArrayLimits::file_cap() const {
    return memory_limit ? std::min(file_bytes, memory_limit) : file_bytes;
}

uint64_t ArrayLimits::array_cap() const {
    return memory_limit ? std::min(array_bytes, memory_limit) : array_bytes;
}

std::string ArrayLimits::file_cap_text() const {
    if (memory_limit_binds_file()) return "the memory limit of " + size_text(memory_limit);
    return "graphrun's limit of " + size_text(file_bytes) + " on an array file";
}

std::string ArrayLimits::array_cap_text() const {
    if (memory_limit_binds_arrays()) return "the memory limit of " + size_text(memory_limit);
    return "graphrun's limit of " + size_text(array_bytes) + " on the arrays of one file";
}

std::string size_text(uint64_t bytes) {
    std::string s = std::to_string(bytes) + " bytes";
    if (bytes < 1024) return s;
    static const char* const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = static_cast<double>(bytes);
    size_t u = 0;
    for (v /= 1024; v >= 1024 && u + 1 < std::size(units); v /= 1024) ++u;
    char buf[32];
    std::snprintf(buf, sizeof buf, v < 10 && v != static_cast<double>(static_cast<uint64_t>(v)) ? "%.1f %s" : "%.0f %s",
                  v, units[u]);
    return s + " (" + buf + ")";
}

std::string escape_bytes(std::string_view s, size_t most) {
    std::string out;
    for (size_t i = 0; i < s.size() && i < most; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
            out += static_cast<char>(c);
        } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        }
    }
    if (s.size() > most) out += "...";
    return out;
}

std::string quote_bytes(std::string_view s, size_t most) { return "'" + escape_bytes(s, most) + "'"; }

bool read_regular_file(const std::string& path, std::string& out, std::string& error, const ArrayLimits& limits,
                       bool parse_stop) {
    out.clear();
    // O_NONBLOCK: opening a FIFO must not wait for a writer; the check below refuses it.
    Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
    if (f.fd < 0) {
        error = "cannot read " + path + ": " + std::strerror(errno);
        return false;
    }
    struct stat st {};
    if (::fstat(f.fd, &st) != 0) {
        error = "cannot read " + path + ": " + std::strerror(errno);
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        error = "cannot read " + path + ": it is " + file_kind(st.st_mode) +
                "; array files are read from regular files only";
        return false;
    }
    const int flags = ::fcntl(f.fd, F_GETFL);
    if (flags >= 0) ::fcntl(f.fd, F_SETFL, flags & ~O_NONBLOCK);
    const uint64_t cap = limits.file_cap();
    auto too_big = [&] {
        limits.note_file_cap_hit();
        out.clear();
        out.shrink_to_fit();
        error = "cannot read " + path + ": it holds more than " + limits.file_cap_text() +
                "; reading stopped there";
        return false;
    };
    constexpr size_t kChunk = size_t{1} << 20;
    bool reserved = false;
    for (;;) {
        const uint64_t room = cap - out.size() + 1;  // one byte more than the cap: finds a file over it
        const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, room));
        const size_t at = out.size();
        out.resize(at + want);
        const ssize_t n = ::read(f.fd, out.data() + at, want);
        if (n < 0) {
            out.resize(at);
            if (errno == EINTR) continue;
            error = "cannot read " + path + ": " + std::strerror(errno);
            return false;
        }
        out.resize(at + static_cast<size_t>(n));
        if (out.size() > cap) return too_big();
        if (n == 0) break;
        if (!parse_stop) continue;
        // The first allocation for the whole file: never more than both the bytes read say (an
        // .npy's declared size, checked against the limits) and the size the file states (a /proc
        // file states 0); a zip archive whose stated size is over the bound is refused at once.
        const std::optional<uint64_t> need = parser_needs(out, limits);
        if (need && out.size() >= *need) break;
        if (need && !reserved) {  // within the bytes the file has (a lying header declares more)
            reserved = true;
            out.reserve(static_cast<size_t>(std::min({*need, cap, static_cast<uint64_t>(st.st_size)})));
        }
        if (!reserved && looks_like_zip(out)) {
            reserved = true;
            const auto stated = static_cast<uint64_t>(st.st_size);
            if (stated > cap) return too_big();
            out.reserve(static_cast<size_t>(stated));
        }
    }
    return true;
}

bool read_array_file(const std::string& path, std::string& out, std::string& error, const ArrayLimits& limits) {
    return read_regular_file(path, out, error, limits, true);
}

std::optional<Shape> npy_file_shape(const std::string& path, const ArrayLimits& limits) {
    Fd f;
    f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (f.fd < 0) return std::nullopt;
    struct stat st {};
    if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
    // The magic, the version, the header's length and a header of up to 64 KiB.
    std::string b(std::min<uint64_t>(static_cast<uint64_t>(st.st_size), uint64_t{65536} + 12), '\0');
    size_t got = 0;
    while (got < b.size()) {
        const ssize_t r = ::pread(f.fd, b.data() + got, b.size() - got, static_cast<off_t>(got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += static_cast<size_t>(r);
    }
    b.resize(got);
    NpyLayout h;
    std::string error;
    if (parse_npy_layout(b, h, error, limits) != NpyHeaderStatus::Ok) return std::nullopt;
    return h.shape;
}

}  // namespace graphrun
