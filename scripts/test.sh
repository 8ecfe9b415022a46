#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test:
#   1. build: the optimised build (scripts/build.sh);
#   2. ctest: on the optimised build, every ctest entry not labelled
#      sanitize_only: the unit tests, the README's figures, layers,
#      fp-contract, the GPU tests (SKIP without a GPU), the ONNX backend suite;
#   3. tsan: the sessions, executor and reclaimer thread under ThreadSanitizer;
#   4. asan: the entries labelled sanitize (the unit tests and the behaviour
#      suites that drive the binary: tests/CMakeLists.txt says which) under
#      AddressSanitizer + UBSan (scripts/sanitize.sh), so each of those runs once;
#   5. valgrind: the examples under valgrind memcheck (scripts/valgrind.sh);
#   6. fuzz: every libFuzzer target's committed corpus and regressions
#      replayed, then GRAPHRUN_FUZZ_SECONDS (default 25) of fuzzing per target
#      (scripts/fuzz.sh).
# Each stage's wall time is printed as it ends, and a table of them at the end
# (also when a stage fails). Set GRAPHRUN_QUICK=1 to stop after the ctest stage
# (it then runs the whole ctest suite, labelled or not, on the optimised build).
set -euo pipefail
cd "$(dirname "$0")/.."

stage_names=()
stage_secs=()
stage_results=()
started=$(date +%s)

summary() {
    local status=$? i passed=0 failed=0
    echo
    echo "stage       seconds  result"
    for i in "${!stage_names[@]}"; do
        printf '%-10s %8s  %s\n' "${stage_names[$i]}" "${stage_secs[$i]}" "${stage_results[$i]}"
        if [ "${stage_results[$i]}" = ok ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
    done
    printf '%-10s %8s  %s\n' total "$(( $(date +%s) - started ))" "$([ "$status" -eq 0 ] && echo ok || echo "FAILED (exit $status)")"
    echo "stages: $passed passed, $failed failed"
}
trap summary EXIT

# stage NAME COMMAND...: runs COMMAND, records and prints its wall time; a
# failing stage ends the run (with its exit status) after the summary.
stage() {
    local name=$1 t0 rc=0
    shift
    echo "== $name"
    t0=$(date +%s)
    "$@" || rc=$?
    stage_names+=("$name")
    stage_secs+=("$(( $(date +%s) - t0 ))")
    if [ "$rc" -eq 0 ]; then stage_results+=(ok); else stage_results+=("FAILED (exit $rc)"); fi
    echo "== $name: ${stage_secs[-1]} s, ${stage_results[-1]}"
    if [ "$rc" -ne 0 ]; then exit "$rc"; fi
}

# (set -e does not apply inside a stage's command: chain with &&.)
tsan() {
    # Without oneDNN: its OpenMP runtime (libgomp) is not built for ThreadSanitizer,
    # which cannot see its barriers and would report every parallel conv as a race.
    # Warnings are not errors here: the build stage holds the code to them.
    # clang 14, as the asan stage (scripts/sanitize.sh): on the 2-core CI
    # machine kind it builds this target in 183 s and runs the cases in 52 s;
    # the stage took 294 s with GCC.
    scripts/deps.sh clang &&
    cmake -S . -B build-tsan -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRAPHRUN_SANITIZE=thread -DGRAPHRUN_DNNL=OFF \
        -DGRAPHRUN_WERROR=OFF >/dev/null &&
    # graphrun_thread_tests: the unit-test files that hold these cases
    # (tests/CMakeLists.txt); the stage fails when the optimised build's full
    # unit-test binary has a case of the filter that file list misses.
    local filter='session*,injection*,thread pool*,cleanup*,plan walker*,observer*,trace*,live*,json stream*,winograd*'
    cmake --build build-tsan --target graphrun_thread_tests -j"$(nproc)" &&
    tsan_cases_covered "$filter" &&
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build-tsan/tests/graphrun_thread_tests -tc="$filter"
}

tsan_cases_covered() {
    local all mine
    all=$(build/tests/graphrun_unit_tests -tc="$1" -ltc | grep -v '^\[doctest\]\|^====' | sort) &&
    mine=$(build-tsan/tests/graphrun_thread_tests -tc="$1" -ltc | grep -v '^\[doctest\]\|^====' | sort) || return 1
    if [ "$all" != "$mine" ]; then
        echo "tsan: these unit tests match the filter but are not in graphrun_thread_tests (tests/CMakeLists.txt):"
        comm -23 <(echo "$all" | sort) <(echo "$mine" | sort)
        return 1
    fi
    echo "tsan: $(echo "$all" | wc -l) test cases, all in graphrun_thread_tests"
}

stage build scripts/build.sh
if [ "${GRAPHRUN_QUICK:-0}" = 1 ]; then
    stage ctest ctest --test-dir build --output-on-failure -j"$(nproc)"
    exit 0
fi
# The suites labelled sanitize_only (tests/CMakeLists.txt) run once, under the sanitizers (stage asan).
stage ctest ctest --test-dir build --output-on-failure -j"$(nproc)" -LE sanitize_only
stage tsan tsan
stage asan scripts/sanitize.sh -L sanitize
stage valgrind scripts/valgrind.sh build/graphrun
stage fuzz scripts/fuzz.sh "${GRAPHRUN_FUZZ_SECONDS:-25}"
