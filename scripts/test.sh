#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test:
#   1. unit tests, golden scripts, CLI tests and the smoke script (ctest);
#   2. the sessions, executor and reclaimer thread under ThreadSanitizer;
#   3. the whole ctest suite again under AddressSanitizer + UBSan (scripts/sanitize.sh);
#   4. the smoke runs under valgrind memcheck (scripts/valgrind.sh);
#   5. each libFuzzer target for GRAPHRUN_FUZZ_SECONDS (default 60) (scripts/fuzz.sh).
# Set GRAPHRUN_QUICK=1 to stop after step 1.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)"
if [ "${GRAPHRUN_QUICK:-0}" = 1 ]; then echo "stages: 1 passed, 0 failed"; exit 0; fi

echo "== ThreadSanitizer: sessions, strategies, injected failures, the thread pool"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRAPHRUN_SANITIZE=thread >/dev/null
cmake --build build-tsan --target graphrun_unit_tests -j"$(nproc)"
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build-tsan/tests/graphrun_unit_tests -tc='session*,injection*,thread pool*,cleanup*,plan walker*,observer*,trace*'

echo "== AddressSanitizer + UndefinedBehaviorSanitizer: the whole suite"
scripts/sanitize.sh

echo "== valgrind memcheck: every example under every strategy"
scripts/valgrind.sh build/graphrun

echo "== libFuzzer: text, JSON and whole-pipeline targets"
scripts/fuzz.sh "${GRAPHRUN_FUZZ_SECONDS:-60}"

# Reached only when every stage above passed (set -e).
echo "stages: 5 passed, 0 failed"
