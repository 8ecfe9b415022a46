#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test
# (unit tests, golden scripts, CLI tests through the real binary).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)"

# The sessions, the executor and the background reclaimer under ThreadSanitizer.
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRAPHRUN_SANITIZE=thread >/dev/null
cmake --build build-tsan --target graphrun_unit_tests -j"$(nproc)"
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build-tsan/tests/graphrun_unit_tests -tc='session*'
