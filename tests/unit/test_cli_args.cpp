// Unit tests for the command line's own logic: did-you-mean for commands and
// options, and the messages for option values (the binary is tested in cli_test.py).
#include <doctest/doctest.h>

#include "cli/app.h"
#include "cli/huge_pages.h"

using graphrun::cli::integer_problem;
using graphrun::cli::memory_size_problem;
using graphrun::cli::suggest;

TEST_CASE("cli suggests the command or option a typo most likely meant") {
    const std::vector<std::string> commands{"check", "run", "convert", "devices"};
    CHECK(suggest("rnu", commands) == "run");  // a transposition is one edit
    CHECK(suggest("chekc", commands) == "check");
    CHECK(suggest("devics", commands) == "devices");
    CHECK(suggest("frobnicate", commands).empty());
    CHECK(suggest("", commands).empty());
    const std::vector<std::string> options{"--iterations", "--fetch", "--format", "--memory-limit",
                                           "--threads"};
    CHECK(suggest("--iteration", options) == "--iterations");
    CHECK(suggest("--fech", options) == "--fetch");
    CHECK(suggest("--mem", options) == "--memory-limit");  // the only option it begins
    CHECK(suggest("--f", options).empty());
    CHECK(suggest("--colour", options).empty());
}

TEST_CASE("cli option values: messages say what is expected") {
    const int64_t max = int64_t{1} << 40;
    CHECK(integer_problem("3", 0, max, "2^40").empty());
    CHECK(integer_problem("0", 0, max, "2^40").empty());
    CHECK(integer_problem("1099511627776", 0, max, "2^40").empty());
    CHECK(integer_problem("abc", 0, max, "2^40") ==
          "'abc' is not a whole number; expected an integer from 0 to 2^40");
    CHECK(integer_problem("1.5", 0, max, "2^40") ==
          "'1.5' is not a whole number; expected an integer from 0 to 2^40");
    CHECK(integer_problem("", 0, max, "2^40") ==
          "'' is not a whole number; expected an integer from 0 to 2^40");
    CHECK(integer_problem("-1", 0, max, "2^40") ==
          "'-1' is out of range; expected an integer from 0 to 2^40");
    CHECK(integer_problem("1099511627777", 0, max, "2^40") ==
          "'1099511627777' is out of range; expected an integer from 0 to 2^40");
    CHECK(integer_problem("99999999999999999999", 0, max, "2^40") ==
          "'99999999999999999999' is out of range; expected an integer from 0 to 2^40");
    CHECK(integer_problem("0", 1, 1024, "1024") ==
          "'0' is out of range; expected an integer from 1 to 1024");
    CHECK(memory_size_problem("512MiB").empty());
    CHECK(memory_size_problem("1").empty());
    CHECK(memory_size_problem("0").find("'0' is 0 bytes; expected a size above 0: ") == 0);
    CHECK(memory_size_problem("lots").find(
              "'lots' is not a memory size; expected a size above 0: ") == 0);
}

TEST_CASE("cli huge pages: the heap's thresholds come with them, a user's own settings stay and are not named twice") {
    using graphrun::cli::huge_page_tunables;
    const std::string mine = ":glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=17179869184";
    CHECK(huge_page_tunables(nullptr) == "glibc.malloc.hugetlb=1" + mine);
    CHECK(huge_page_tunables("") == "glibc.malloc.hugetlb=1" + mine);
    CHECK(huge_page_tunables("glibc.malloc.trim_threshold=1048576") ==
          "glibc.malloc.trim_threshold=1048576:glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=33554432");
    CHECK(huge_page_tunables("glibc.malloc.mmap_threshold=0:glibc.malloc.trim_threshold=1") ==
          "glibc.malloc.mmap_threshold=0:glibc.malloc.trim_threshold=1:glibc.malloc.hugetlb=1");
    CHECK(huge_page_tunables("glibc.malloc.arena_max=1") == "glibc.malloc.arena_max=1:glibc.malloc.hugetlb=1" + mine);
}
