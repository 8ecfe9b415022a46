#!/usr/bin/env bash
# The one benchmark command (issue 6): graphrun vs NumPy on every workload.
#   scripts/bench/run.sh                 build Release into build-bench/, then benchmark it
#   scripts/bench/run.sh BINARY [ARGS]   benchmark an existing binary; ARGS go to bench.py
#                                        (--quick, --only NAME, --strict)
# Needs Debian's python3-numpy (it runs /usr/bin/python3, not the first python3 on PATH).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ $# -ge 1 ] && [[ "$1" != --* ]]; then
    bin="$1"; shift
else
    cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DGRAPHRUN_TESTS=OFF -DGRAPHRUN_CUDA=OFF >/dev/null
    cmake --build build-bench -j"$(nproc)"
    bin=build-bench/graphrun
fi
exec /usr/bin/python3 scripts/bench/bench.py "$bin" "$@"
