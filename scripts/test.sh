#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test
# (unit tests, golden scripts, CLI tests through the real binary).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)"
