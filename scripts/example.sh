#!/usr/bin/env bash
# The main job: installs what is missing, builds if needed, then runs an
# example graph and prints its results and the memory statistics before and
# after the session is torn down. Extra arguments go to `graphrun run`.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x build/graphrun ] || [ -n "$(find cli engine gpu CMakeLists.txt -newer build/graphrun -print -quit 2>/dev/null)" ]; then
    scripts/build.sh >&2
fi
if [ $# -eq 0 ]; then set -- scripts/examples/power_iteration.graph; fi
exec build/graphrun run "$@"
