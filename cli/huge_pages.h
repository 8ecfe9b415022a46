// Transparent huge pages for graphrun's own heap when it reads a big text or
// JSON graph (issue 24: a million-node script).
#pragma once
#include <string>
#include <vector>

namespace graphrun::cli {

// Building a graph of a million nodes touches about half a GB of heap a page
// at a time: on a virtual machine whose page faults are slow that was half
// of `check`'s time and most of `run`'s. glibc's malloc backs its heap with
// transparent huge pages only when the tunable glibc.malloc.hugetlb=1 is in
// GLIBC_TUNABLES when the process starts, so when one of `sources` is a text
// or JSON graph of kHugePagesFrom bytes or more, this re-executes graphrun
// (the same pid, argv and streams: nothing has been read or printed yet)
// with the tunable added, and with glibc.malloc.mmap_threshold and
// trim_threshold set so that freed blocks are reused rather than unmapped and
// faulted in again (huge_pages.cpp). It returns, changing nothing, where that cannot
// help or is not wanted: GLIBC_TUNABLES already names the tunable (a user's
// `glibc.malloc.hugetlb=0` turns this off), transparent huge pages are off
// in the kernel, a sanitizer or valgrind owns malloc, or the exec fails.
void reexec_with_huge_pages_for(const std::vector<std::string>& sources, char** argv);
// The GLIBC_TUNABLES value it runs with, given the user's (or nullptr):
// theirs, then the huge pages and each heap threshold they did not set.
std::string huge_page_tunables(const char* tunables);

constexpr long long kHugePagesFrom = 256 << 10;

}  // namespace graphrun::cli
