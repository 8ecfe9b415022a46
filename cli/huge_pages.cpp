#include "cli/huge_pages.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string_view>

extern char** environ;

namespace graphrun::cli {

namespace {

constexpr std::string_view kTunable = "glibc.malloc.hugetlb";
// Added with it, each unless GLIBC_TUNABLES names it already: blocks up to 32
// MiB come from the heap and stay there when freed, and the heap's top is not
// trimmed at every free. By default glibc maps blocks from 128 KiB on
// afresh and unmaps them when freed, and on huge pages each fresh 2 MiB page
// is zeroed by the kernel: on this VM, where a page fault's cost rises for
// minutes at a time, a million-node `run` spent 1.8 s of its 3.35 s there
// (median of 5), 0.45 s of 1.59 s with these. The heap is still handed back
// where graphrun frees much at once and at a device's close
// (engine/base/heap_trim.h), so the statistics after teardown are as before.
constexpr std::string_view kKeepTunables[] = {"glibc.malloc.mmap_threshold=33554432",
                                              "glibc.malloc.trim_threshold=17179869184"};

bool sanitized_build() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
    return true;
#else
    return false;
#endif
#else
    return false;
#endif
}

// "always [madvise] never": huge pages are there for a heap that asks.
bool kernel_offers_huge_pages() {
    std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string line;
    return std::getline(f, line) && line.find("[never]") == std::string::npos;
}

// A text or JSON graph file (standard input too, when it is a file) of
// kHugePagesFrom bytes or more; an ONNX model's heap is its weights, which
// this does not make faster.
bool big_graph_source(const std::string& path) {
    if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".onnx") == 0) return false;
    struct stat st {};
    if (path == "-") {
        const off_t at = ::lseek(STDIN_FILENO, 0, SEEK_CUR);
        return ::fstat(STDIN_FILENO, &st) == 0 && S_ISREG(st.st_mode) && at >= 0 &&
               st.st_size - at >= kHugePagesFrom;
    }
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= kHugePagesFrom;
}

}  // namespace

std::string huge_page_tunables(const char* tunables) {
    std::string value = (tunables && *tunables ? tunables + std::string(":") : "") + std::string(kTunable) + "=1";
    for (std::string_view keep : kKeepTunables) {
        const std::string_view name = keep.substr(0, keep.find('='));
        if (!tunables || std::string_view(tunables).find(name) == std::string_view::npos) value += ":" + std::string(keep);
    }
    return value;
}

void reexec_with_huge_pages_for(const std::vector<std::string>& sources, char** argv) {
    if (sanitized_build() || !argv || !argv[0]) return;
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    if (tunables && std::string_view(tunables).find(kTunable) != std::string_view::npos) return;
    const char* preload = std::getenv("LD_PRELOAD");
    if (preload && std::strstr(preload, "vgpreload")) return;  // valgrind: an exec would leave it
    bool big = false;
    for (const std::string& s : sources) big = big || big_graph_source(s);
    if (!big || !kernel_offers_huge_pages()) return;

    std::string value = "GLIBC_TUNABLES=" + huge_page_tunables(tunables);
    std::vector<char*> env;
    for (char** e = environ; e && *e; ++e)
        if (std::strncmp(*e, "GLIBC_TUNABLES=", 15) != 0) env.push_back(*e);
    env.push_back(value.data());
    env.push_back(nullptr);
    ::execve("/proc/self/exe", argv, env.data());
    // Not replaced (no /proc, say): go on as we are.
}

}  // namespace graphrun::cli
