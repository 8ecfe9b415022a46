// Files graphrun writes (SPEC section 7): the atomic writer
// (engine/base/atomic_file.h), the checks of output paths against the files a
// run reads (engine/api/output_paths.h) and --save's file names.
#include <doctest/doctest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "engine/api/output_paths.h"
#include "engine/base/atomic_file.h"
#include "engine/base/interrupt.h"

using namespace graphrun;

namespace {

// A fresh folder under TMPDIR, removed with what is in it.
struct TempDir {
    std::string path;
    TempDir() {
        const char* base = std::getenv("TMPDIR");
        std::string tmpl = std::string(base && *base ? base : "/tmp") + "/graphrun-out-XXXXXX";
        path = ::mkdtemp(tmpl.data()) ? tmpl : "";
    }
    ~TempDir() {
        for (const std::string& f : files()) ::unlink((path + "/" + f).c_str());
        ::rmdir(path.c_str());
    }
    std::string operator/(const std::string& name) const { return path + "/" + name; }
    std::set<std::string> files() const {
        std::set<std::string> out;
        if (DIR* d = ::opendir(path.c_str())) {
            while (dirent* e = ::readdir(d))
                if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") out.insert(e->d_name);
            ::closedir(d);
        }
        return out;
    }
};

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

void spit(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

}  // namespace

TEST_CASE("atomic file: a commit replaces the file whole; nothing else is left in the folder") {
    TempDir d;
    spit(d / "y.npy", "old");
    AtomicFile f;
    std::string error;
    REQUIRE(f.open(d / "y.npy", error));
    CHECK(f.write(std::string(3 << 20, 'x')));  // over the buffer: written in steps
    CHECK(slurp(d / "y.npy") == "old");          // not yet
    CHECK(d.files().size() == 2);                // y.npy and the temporary beside it
    REQUIRE(f.commit(error));
    CHECK(f.replaced());
    CHECK(slurp(d / "y.npy") == std::string(3 << 20, 'x'));
    CHECK(d.files() == std::set<std::string>{"y.npy"});
}

TEST_CASE("atomic file: abandoning (or an error) leaves the old file and no temporary") {
    TempDir d;
    spit(d / "y.npy", "old");
    {
        AtomicFile f;
        std::string error;
        REQUIRE(f.open(d / "y.npy", error));
        f.write("new");
    }  // destroyed uncommitted
    CHECK(slurp(d / "y.npy") == "old");
    CHECK(d.files() == std::set<std::string>{"y.npy"});
    // A path that cannot be written says why, and touches nothing.
    std::string error;
    CHECK_FALSE(write_file_atomically(d / "missing/y.npy", "x", error));
    CHECK(error.find("its folder " + d.path + "/missing does not exist") != std::string::npos);
    CHECK_FALSE(write_file_atomically(d.path, "x", error));
    CHECK(error.find("is a directory") != std::string::npos);
}

TEST_CASE("atomic file: a stop request that arrives while writing abandons the file") {
    TempDir d;
    spit(d / "t.json", "old");
    AtomicFile f;
    std::string error;
    REQUIRE(f.open(d / "t.json", error));
    f.write("partial");
    g_interrupt_signal.store(2);
    CHECK_FALSE(f.write(std::string(2 << 20, 'x')));
    CHECK_FALSE(f.commit(error));
    g_interrupt_signal.store(0);
    CHECK(f.interrupted());
    CHECK(error.find("interrupted by SIGINT") != std::string::npos);
    CHECK(error.find("left as it was") != std::string::npos);
    CHECK(slurp(d / "t.json") == "old");
    CHECK(d.files() == std::set<std::string>{"t.json"});
    // One pending before the write began (the run was stopped; the trace of
    // what ran is still written) does not stop it.
    g_interrupt_signal.store(15);
    CHECK(write_file_atomically(d / "t.json", "what ran", error));
    g_interrupt_signal.store(0);
    CHECK(slurp(d / "t.json") == "what ran");
}

TEST_CASE("atomic file: a symlink at the path is replaced, never written through") {
    TempDir d;
    spit(d / "other.npy", "precious");
    REQUIRE(::symlink((d / "other.npy").c_str(), (d / "link.npy").c_str()) == 0);
    std::string error;
    bool replaced = false;
    REQUIRE(write_file_atomically(d / "link.npy", "new", error, &replaced));
    CHECK(replaced);
    CHECK(slurp(d / "other.npy") == "precious");
    struct stat st {};
    REQUIRE(::lstat((d / "link.npy").c_str(), &st) == 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK(slurp(d / "link.npy") == "new");
}

TEST_CASE("atomic file: a signal handler that exits at once removes the temporaries") {
    TempDir d;
    AtomicFile f;
    std::string error;
    REQUIRE(f.open(d / "y.npy", error));
    f.write("x");
    CHECK(d.files().size() == 1);
    remove_pending_temporaries();
    CHECK(d.files().empty());
    CHECK_FALSE(f.commit(error));  // its temporary is gone: nothing is renamed into place
    CHECK(d.files().empty());
}

TEST_CASE("output paths: unwritable_reason and the --save folder") {
    TempDir d;
    CHECK(unwritable_reason(d / "new.npy").empty());
    CHECK(unwritable_reason(d.path) == "it is a directory");
    CHECK(unwritable_reason(d.path + "/") == "it names a folder, not a file");
    CHECK(unwritable_reason("/dev/null") == "it is not a regular file (a device, FIFO or socket)");
    CHECK(unwritable_reason(d / "no/y.npy") == "its folder " + d.path + "/no does not exist");
    spit(d / "file", "x");
    CHECK(unwritable_reason(d / "file/y.npy") == d.path + "/file is not a folder");
    CHECK(unwritable_folder_reason(d / "a/b/c").empty());  // made by mkdir -p
    CHECK(unwritable_folder_reason(d / "file") ==
          "cannot create directory " + d.path + "/file: a file of that name exists");
    CHECK(unwritable_folder_reason(d / "file/sub") ==
          "cannot create directory " + d.path + "/file/sub: " + d.path + "/file is not a folder");
}

TEST_CASE("output paths: a file the run reads, by any spelling, and two outputs in one file") {
    TempDir d;
    spit(d / "m.graph", "x = [1]\noutput x\n");
    REQUIRE(::symlink("m.graph", (d / "alias.graph").c_str()) == 0);
    ReadFiles reads;
    reads.add(d / "m.graph", "the graph file being run");
    reads.add(d / "absent.npy", "never read");  // a path that does not exist is no file
    reads.add("-", "standard input");
    CHECK(reads.role_of(d / "absent.npy") == nullptr);
    std::ostringstream err;
    for (const std::string& spelling : {d / "m.graph", d.path + "/./m.graph", d / "alias.graph"}) {
        auto e = check_output_paths({{spelling, "--trace=" + spelling}}, reads, err);
        REQUIRE(e);
        CHECK(e->kind == ErrorKind::Usage);
        CHECK(e->message.find("--trace=" + spelling + " is the graph file being run") == 0);
    }
    auto e = check_output_paths({{d / "a.npy", "--output=y=@a.npy"}, {d.path + "/./a.npy", "--output=z=@./a.npy"}},
                                reads, err);
    REQUIRE(e);
    CHECK(e->kind == ErrorKind::Usage);
    CHECK(e->message.find("--output=y=@a.npy and --output=z=@./a.npy name one file") == 0);
    e = check_output_paths({{d / "no/a.npy", "--output=y=@no/a.npy"}}, reads, err);
    REQUIRE(e);
    CHECK(e->kind == ErrorKind::Runtime);
    CHECK_FALSE(check_output_paths({{d / "a.npy", "--output=y=@a.npy"}}, reads, err));
}

TEST_CASE("output paths: --save names are distinct for distinct outputs") {
    CHECK(save_file_names({"y", "z"}) == std::vector<std::string>{"y.npy", "z.npy"});
    // A name that is a file name keeps it; the mapped one moves aside, whichever comes first.
    CHECK(save_file_names({"a/b", "a_b"}) == std::vector<std::string>{"a_b_2.npy", "a_b.npy"});
    CHECK(save_file_names({"a_b", "a/b", "a\\b", "a_b_2"}) ==
          std::vector<std::string>{"a_b.npy", "a_b_3.npy", "a_b_4.npy", "a_b_2.npy"});
    CHECK(save_file_names({".x", "_.x"}) == std::vector<std::string>{"_.x_2.npy", "_.x.npy"});
    CHECK(save_file_names({"/fc/Gemm_output_0"}) == std::vector<std::string>{"_fc_Gemm_output_0.npy"});
    CHECK(save_file_names({"y", "y"}) == std::vector<std::string>{"y.npy", "y_2.npy"});
}
