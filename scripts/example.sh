#!/usr/bin/env bash
# The main job: installs what is missing, builds if needed, then checks an
# example graph (its nodes, outputs and static memory peak).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x build/graphrun ] || [ -n "$(find cli engine gpu CMakeLists.txt -newer build/graphrun -print -quit 2>/dev/null)" ]; then
    scripts/build.sh >&2
fi
exec build/graphrun check "${1:-scripts/examples/mlp.graph}"
