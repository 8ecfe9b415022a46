// The compact containers the graph IR keeps per node: SmallVector (a node's
// inputs) and CompactString (a Loc's JSON pointer); and the Prefaulter that
// faults a big node list in while it fills. Run under ASan in CI,
// which catches what a wrong move or a double free here would do.
#include <doctest/doctest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/base/compact_string.h"
#include "engine/base/prefault.h"
#include "engine/base/small_vector.h"

using namespace graphrun;

TEST_CASE("CompactString holds, copies and moves its text") {
    CompactString empty;
    CHECK(empty.empty());
    CHECK(empty.size() == 0);
    CHECK(empty.view().empty());
    CHECK(CompactString("").empty());

    CompactString a("/nodes/3/inputs/1");
    CHECK(!a.empty());
    CHECK(a.size() == 17);
    CHECK(a == "/nodes/3/inputs/1");
    CHECK(a.str() == std::string("/nodes/3/inputs/1"));
    CHECK(a + "!" == "/nodes/3/inputs/1!");

    CompactString b = a;  // deep copy
    CHECK(b == a);
    CompactString c = std::move(b);
    CHECK(c == "/nodes/3/inputs/1");
    CHECK(b.empty());  // NOLINT: moved-from is empty by contract
    b = c;
    c = CompactString("/x");
    CHECK(b == "/nodes/3/inputs/1");
    CHECK(c == "/x");
    b = b;  // self-assignment keeps the text
    CHECK(b == "/nodes/3/inputs/1");
    std::string with_nul("a\0b", 3);
    CHECK(CompactString(with_nul).size() == 3);
}

namespace {

struct Counted {
    static inline int alive = 0;
    std::string text;
    explicit Counted(std::string t) : text(std::move(t)) { ++alive; }
    Counted(const Counted& o) : text(o.text) { ++alive; }
    Counted(Counted&& o) noexcept : text(std::move(o.text)) { ++alive; }
    Counted& operator=(const Counted&) = default;
    Counted& operator=(Counted&&) = default;
    ~Counted() { --alive; }
};

}  // namespace

TEST_CASE("SmallVector keeps two inline, grows to the heap, and destroys every element") {
    Counted::alive = 0;
    {
        SmallVector<Counted, 2> v;
        CHECK(v.empty());
        v.emplace_back("a long string that is not in the small-string buffer");
        v.emplace_back("b");
        CHECK(v.size() == 2);
        const Counted* inline_data = v.data();
        v.emplace_back("c");  // spills to the heap
        CHECK(v.data() != inline_data);
        v.push_back(v[0]);  // an element of the vector itself, while it grows
        CHECK(v.size() == 4);
        CHECK(v[3].text == v[0].text);
        CHECK(v.back().text == v[0].text);
        CHECK(Counted::alive == 4);

        SmallVector<Counted, 2> copy = v;
        CHECK(copy.size() == 4);
        CHECK(copy[2].text == "c");
        CHECK(Counted::alive == 8);

        SmallVector<Counted, 2> moved = std::move(copy);  // takes the heap block
        CHECK(moved.size() == 4);
        CHECK(copy.empty());  // NOLINT: moved-from is empty by contract
        CHECK(Counted::alive == 8);

        SmallVector<Counted, 2> small;
        small.emplace_back("x");
        SmallVector<Counted, 2> small_moved = std::move(small);  // moves the inline element
        CHECK(small_moved.size() == 1);
        CHECK(small_moved[0].text == "x");
        CHECK(Counted::alive == 9);

        moved = small_moved;  // heap to inline contents
        CHECK(moved.size() == 1);
        CHECK(Counted::alive == 6);
        v = std::move(moved);
        CHECK(v.size() == 1);
        CHECK(v[0].text == "x");
        v.pop_back();
        CHECK(v.empty());
        small_moved.clear();
        CHECK(Counted::alive == 0);

        SmallVector<Counted, 2> list{Counted("1"), Counted("2"), Counted("3")};
        size_t n = 0;
        for (const Counted& x : list) n += x.text.size();
        CHECK(n == 3);
    }
    CHECK(Counted::alive == 0);
}

// --- Prefaulter ----------------------------------------------------------------

namespace {

// Pages of [p, p + bytes) resident in memory (mincore).
size_t resident_pages(void* p, size_t bytes) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> vec((bytes + page - 1) / page);
    if (mincore(p, bytes, vec.data()) != 0) return 0;
    size_t n = 0;
    for (unsigned char v : vec) n += v & 1;
    return n;
}

}  // namespace

TEST_CASE("Prefaulter faults pages in ahead of the filler, and stops at once when asked") {
    const size_t bytes = size_t{16} << 20, page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(mem != MAP_FAILED);
    {
        Prefaulter pf(mem, bytes, size_t{4} << 20);
        if (!pf.active()) {
            MESSAGE("SKIP: this kernel cannot fault pages in ahead (MADV_POPULATE_WRITE)");
        } else {
            // Up to 4 MiB ahead of a filler that has used nothing yet.
            auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            while (resident_pages(mem, bytes) < (size_t{4} << 20) / page && std::chrono::steady_clock::now() < deadline)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            CHECK(resident_pages(mem, bytes) >= (size_t{4} << 20) / page);
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            CHECK(resident_pages(mem, bytes) <= (size_t{4} << 20) / page + 1);  // and no further
            pf.progress(bytes);  // the filler is at the end: all of it
            deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            while (resident_pages(mem, bytes) < bytes / page && std::chrono::steady_clock::now() < deadline)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            CHECK(resident_pages(mem, bytes) == bytes / page);
            // The memory is untouched: fresh pages read as zeros.
            CHECK(static_cast<unsigned char*>(mem)[bytes / 2] == 0);
        }
    }
    munmap(mem, bytes);
    // Stopped before it could start, and over a buffer too small for one page.
    std::vector<char> small(100);
    { Prefaulter none(small.data(), small.size()); CHECK_FALSE(none.active()); }
    std::vector<char> big(size_t{8} << 20);
    { Prefaulter quick(big.data(), big.size()); quick.stop(); quick.stop(); }
}
