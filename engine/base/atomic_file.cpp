// The atomic writer: a temporary beside the target, checked writes, fsync, rename.
#include "engine/base/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "engine/base/interrupt.h"

namespace graphrun {

namespace {

constexpr size_t kBufferBytes = size_t{1} << 20;  // also the step at which a stop request is polled

// The temporaries being written, for remove_pending_temporaries(): a fixed
// table that a signal handler may read (no allocation, no lock). A slot is 0
// (free), 1 (being filled) or 2 (holds a temporary's path).
constexpr int kSlots = 16;
constexpr size_t kSlotPath = 4096;
struct PendingSlot {
    std::atomic<int> state{0};
    char path[kSlotPath];
};
PendingSlot g_pending[kSlots];

int register_temporary(const std::string& temp) {
    if (temp.size() >= kSlotPath) return -1;
    for (int i = 0; i < kSlots; ++i) {
        int free = 0;
        if (!g_pending[i].state.compare_exchange_strong(free, 1)) continue;
        std::memcpy(g_pending[i].path, temp.c_str(), temp.size() + 1);
        g_pending[i].state.store(2);
        return i;
    }
    return -1;  // more than kSlots at once: still removed on every ordinary path
}

void unregister_temporary(int slot) {
    if (slot >= 0) g_pending[slot].state.store(0);
}

// A file over `ulimit -f` would kill the process with SIGXFSZ half-way
// through; ignored, the write fails with EFBIG and the old file stays.
void ignore_file_size_signal() {
    static const bool done = [] {
        struct sigaction old {};
        if (sigaction(SIGXFSZ, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) signal(SIGXFSZ, SIG_IGN);
        return true;
    }();
    (void)done;
}

std::string folder_of(const std::string& path) {
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

AtomicFile::~AtomicFile() { abandon(); }

bool AtomicFile::open(const std::string& path, std::string& error) {
    abandon();
    path_ = path;
    errno_ = 0;
    interrupted_ = replaced_ = synced_ = false;
    start_signal_ = ::graphrun::interrupted();
    if (std::string why = unwritable_reason(path); !why.empty()) {
        error = "cannot write " + path + ": " + why;
        return false;
    }
    ignore_file_size_signal();
    const std::string dir = folder_of(path);
    // A short prefix of the name keeps the temporary's name within NAME_MAX.
    const size_t name_at = path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1;
    std::string base = path.substr(name_at);
    base.resize(std::min<size_t>(base.size(), 200));
    static std::atomic<unsigned> counter{0};
    for (int attempt = 0; attempt < 100; ++attempt) {
        const unsigned n = counter.fetch_add(1) * 7919u + static_cast<unsigned>(getpid());
        char suffix[16];
        std::snprintf(suffix, sizeof suffix, "%06x", n & 0xffffffu);
        temp_ = path.substr(0, name_at) + "." + base + "." + suffix + ".tmp";
        fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd_ >= 0 || errno != EEXIST) break;
    }
    if (fd_ < 0) {
        error = "cannot write " + path + ": cannot create a temporary file in " + dir + ": " + std::strerror(errno);
        temp_.clear();
        return false;
    }
    slot_ = register_temporary(temp_);
    buffer_.clear();
    buffer_.reserve(kBufferBytes);
    return true;
}

bool AtomicFile::fail(int err) {
    if (!errno_) errno_ = err;
    return false;
}

bool AtomicFile::flush_buffer() {
    const char* p = buffer_.data();
    size_t left = buffer_.size();
    while (left > 0) {
        const ssize_t n = ::write(fd_, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return fail(n < 0 ? errno : EIO);
        p += n;
        left -= static_cast<size_t>(n);
    }
    buffer_.clear();
    return true;
}

bool AtomicFile::write(const void* data, size_t n) {
    if (fd_ < 0 || errno_) return fail(EBADF);
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
        if (!start_signal_ && ::graphrun::interrupted()) {
            interrupted_ = true;
            return fail(EINTR);
        }
        const size_t take = std::min(n, kBufferBytes - buffer_.size());
        buffer_.append(p, take);
        p += take;
        n -= take;
        if (buffer_.size() == kBufferBytes && !flush_buffer()) return false;
    }
    return true;
}

bool AtomicFile::failed(std::string& error) {
    struct stat st {};
    const bool existed = ::lstat(path_.c_str(), &st) == 0;
    const std::string why = interrupted_ ? "interrupted by " + signal_name(::graphrun::interrupted())
                                         : std::string(std::strerror(errno_));
    error = "cannot write " + path_ + ": " + why + (existed ? " (the file there is left as it was)" : "");
    abandon();
    return false;
}

bool AtomicFile::sync(std::string& error) {
    if (synced_) return true;
    if (fd_ < 0 && !errno_) errno_ = EBADF;
    if (!errno_ && !start_signal_ && ::graphrun::interrupted()) {
        interrupted_ = true;
        errno_ = EINTR;
    }
    if (!errno_) flush_buffer();
    // The data is on disk before the name points at it (EINVAL: a file
    // system that cannot sync, such as some pseudo file systems).
    if (!errno_ && ::fsync(fd_) != 0 && errno != EINVAL) fail(errno);
    if (fd_ >= 0 && ::close(fd_) != 0 && !errno_) fail(errno);
    fd_ = -1;
    if (errno_) return failed(error);
    synced_ = true;
    return true;
}

bool AtomicFile::commit(std::string& error) {
    if (!sync(error)) return false;
    struct stat st {};
    const bool existed = ::lstat(path_.c_str(), &st) == 0;
    if (::rename(temp_.c_str(), path_.c_str()) != 0) {
        fail(errno);
        return failed(error);
    }
    replaced_ = existed;
    synced_ = false;
    unregister_temporary(slot_);
    slot_ = -1;
    temp_.clear();
    // The rename itself reaches the disk with the folder (best effort).
    const int dfd = ::open(folder_of(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)::fsync(dfd);
        ::close(dfd);
    }
    return true;
}

void AtomicFile::abandon() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (!temp_.empty()) ::unlink(temp_.c_str());
    temp_.clear();
    unregister_temporary(slot_);
    slot_ = -1;
    buffer_.clear();
    buffer_.shrink_to_fit();
    synced_ = false;
}

bool write_file_atomically(const std::string& path, std::string_view bytes, std::string& error, bool* replaced) {
    AtomicFile f;
    if (!f.open(path, error)) return false;
    f.write(bytes);
    if (!f.commit(error)) return false;
    if (replaced) *replaced = f.replaced();
    return true;
}

std::string unwritable_reason(const std::string& path) {
    if (path.empty()) return "no file name given";
    if (path.back() == '/') return "it names a folder, not a file";
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode)) return "it is a directory";
        if (S_ISLNK(st.st_mode)) {
            // The link is replaced, not written through; one to a folder or a
            // device is refused all the same, as a slip of the user's.
            struct stat to {};
            if (::stat(path.c_str(), &to) == 0 && !S_ISREG(to.st_mode))
                return S_ISDIR(to.st_mode) ? "it is a link to a directory" : "it is a link to a non-regular file";
        } else if (!S_ISREG(st.st_mode)) {
            return "it is not a regular file (a device, FIFO or socket)";
        }
    } else if (errno != ENOENT && errno != ENOTDIR) {  // ENOTDIR: the folder part is a file, said below
        return std::strerror(errno);
    }
    const std::string dir = folder_of(path);
    if (::stat(dir.c_str(), &st) != 0)
        return errno == ENOENT ? "its folder " + dir + " does not exist"
                               : "its folder " + dir + ": " + std::strerror(errno);
    if (!S_ISDIR(st.st_mode)) return dir + " is not a folder";
    if (::access(dir.c_str(), W_OK | X_OK) != 0) return "its folder " + dir + " is not writable: " + std::strerror(errno);
    return {};
}

void remove_pending_temporaries() noexcept {
    for (PendingSlot& s : g_pending)
        if (s.state.load() == 2) ::unlink(s.path);
}

}  // namespace graphrun
