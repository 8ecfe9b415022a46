// Files written whole or not at all, as git writes its index (lockfile.c,
// tempfile.c): the bytes go to a temporary beside the target, every write and
// the close are checked, the temporary is fsync'd and then renamed over the
// target. An error, or a stop request (interrupt.h) that arrives while the
// file is written, removes the temporary and leaves what was there before.
//
// A symlink at the target is replaced itself (rename does not follow it): the
// file it pointed to is never written through. The new file's mode is
// 0666 less the umask, as for any new file.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace graphrun {

class AtomicFile {
public:
    AtomicFile() = default;
    ~AtomicFile();  // abandons a temporary not yet committed
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    // Creates the temporary beside `path` (".NAME.XXXXXX.tmp" in its folder,
    // O_CREAT|O_EXCL|O_NOFOLLOW). false with `error` ("cannot write PATH: reason").
    bool open(const std::string& path, std::string& error);
    // Appends bytes; false from the first failure on (commit() then says why).
    bool write(const void* data, size_t n);
    bool write(std::string_view s) { return write(s.data(), s.size()); }
    // Writes out what is buffered and fsyncs the temporary: every error but
    // the rename's is known after this (for a caller that writes two files
    // and renames them one right after the other). On failure as commit().
    bool sync(std::string& error);
    // sync(), then renames the temporary over the path. On failure the
    // temporary is gone and the path holds what it held.
    bool commit(std::string& error);
    // Removes the temporary (the destructor does too).
    void abandon();

    const std::string& path() const { return path_; }
    // Whether something (a file or a link) was at the path when commit() replaced it.
    bool replaced() const { return replaced_; }
    // Whether the failure was a stop request that arrived while writing.
    bool interrupted() const { return interrupted_; }

private:
    bool flush_buffer();
    bool fail(int err);
    bool failed(std::string& error);  // says why, removes the temporary

    std::string path_, temp_;
    int fd_ = -1;
    int slot_ = -1;         // in the table remove_pending_temporaries() reads
    int errno_ = 0;         // the first failure's errno (0: none yet)
    int start_signal_ = 0;  // the stop request pending at open(): only a later one stops the write
    bool interrupted_ = false;
    bool replaced_ = false;
    bool synced_ = false;
    std::string buffer_;
};

// Writes `bytes` to `path` through an AtomicFile. `replaced`, when given, says
// whether something was at the path before.
bool write_file_atomically(const std::string& path, std::string_view bytes, std::string& error,
                           bool* replaced = nullptr);

// Why `path` cannot be written as a file ("" when it can): its folder is
// missing or not writable, or the path is a directory or another non-regular
// file (a symlink to a regular file is fine: the link is replaced).
std::string unwritable_reason(const std::string& path);

// Removes every temporary still being written. Async-signal-safe: for a
// signal handler that exits at once (a second SIGINT).
void remove_pending_temporaries() noexcept;

}  // namespace graphrun
