// graphrun's entry point: everything lives in the cli library, except the
// OpenMP spin default below, which only the executable may set.
#include <cstdlib>
#include <cstring>

#include "cli/app.h"

extern char** environ;

namespace {

// The value of `name` in the process's environment, or nullptr: what glibc's
// getenv does (a scan of environ), which the getenv below stands in for.
char* environment_value(const char* name) {
    if (environ == nullptr) return nullptr;
    const size_t n = std::strlen(name);
    for (char** e = environ; *e != nullptr; ++e)
        if (std::strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
    return nullptr;
}

// libgomp, the OpenMP runtime that oneDNN's convolutions and matmuls run on,
// lets an idle worker spin for GOMP_SPINCOUNT iterations of a `pause` (300000
// by default: about 5 ms on the AMD EPYC of these machines, 18 ns a pause)
// after every parallel region before it sleeps. graphrun runs its own pool
// and OpenBLAS's threads between those regions, so on a machine busy with
// other processes the spinning worker took the core that a thread with work
// needed. Beside two busy processes (medians of 3 rounds, README "Speed"):
// ResNet-18 89 ms per pass with the default and 31 with 10000, SqueezeNet 220
// and 18, the transformer encoder 111 and 38. On an idle machine 10000 is as
// fast as the default, except that a 0.25 ms MLP pass in --bench sometimes
// took 1.4 ms (its worker slept between passes and was slow to wake); 20000
// helped there but left MobileNet and GPT-2 as slow as the default under load.
constexpr char kSpinCount[] = "10000";

}  // namespace

// libgomp reads GOMP_SPINCOUNT in its initializer, which runs before main
// and after glibc has reset environ to the block the kernel passed (so not
// even a preinit function's setenv reaches it): graphrun's default is given
// where libgomp asks: the executable's getenv interposes on every
// library's. It answers as glibc's would, except that GOMP_SPINCOUNT reads
// kSpinCount when neither it nor OMP_WAIT_POLICY is set, so that a user's
// choice of either still wins. Not in libgraphrun: a program that links the
// engine sets its own environment. tests/cli_test.py checks what libgomp
// reports with OMP_DISPLAY_ENV.
extern "C" char* getenv(const char* name) noexcept {
    char* value = environment_value(name);
    if (value == nullptr && std::strcmp(name, "GOMP_SPINCOUNT") == 0 &&
        environment_value("OMP_WAIT_POLICY") == nullptr)
        return const_cast<char*>(kSpinCount);
    return value;
}

int main(int argc, char** argv) { return graphrun::cli::run_app(argc, argv); }
