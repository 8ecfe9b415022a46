#!/usr/bin/env bash
# Every example under every cleanup strategy (text output, --check-leaks) under
# valgrind's memcheck: any memory error or leak (definite, indirect or possible)
# fails the run. Builds a portable RelWithDebInfo binary (no -march flags, no
# sanitizers) in build-valgrind/, or uses the binary given.
# Usage: scripts/valgrind.sh [GRAPHRUN_BINARY]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
if ! command -v valgrind >/dev/null 2>&1; then
    echo "valgrind: installing valgrind" >&2
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends valgrind >/dev/null
fi

if [ $# -ge 1 ]; then
    bin=$1
else
    cmake -S . -B build-valgrind -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRAPHRUN_SANITIZE= -DGRAPHRUN_TESTS=OFF >/dev/null
    cmake --build build-valgrind --target graphrun -j"$(nproc)"
    bin=build-valgrind/graphrun
fi

# OpenBLAS picks its kernels by probing the CPU; valgrind's emulated CPU can
# make it pick AVX-512 kernels that valgrind cannot run. Haswell (AVX2) kernels
# run everywhere valgrind does. One OpenBLAS thread: no thread pool to account for.
export OPENBLAS_CORETYPE=Haswell
export OPENBLAS_NUM_THREADS=1

vg=(valgrind --error-exitcode=99 --leak-check=full
    --errors-for-leak-kinds=definite,indirect,possible
    --show-leak-kinds=definite,indirect,possible
    --num-callers=40 --track-origins=yes)
if [ -f scripts/valgrind.supp ]; then vg+=(--suppressions=scripts/valgrind.supp); fi

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
start=$(date +%s)
runs=0
fails=0
for f in scripts/examples/*.graph scripts/examples/*.json; do
    for cleanup in background safepoint close; do
        runs=$((runs + 1))
        log="$logs/$runs.log"
        status=0
        "${vg[@]}" --log-file="$log" "$bin" run "$f" --cleanup="$cleanup" --format=text --check-leaks \
            --iterations=2 --threads=1 >"$logs/$runs.out" 2>"$logs/$runs.err" || status=$?
        if [ "$status" -ne 0 ]; then
            fails=$((fails + 1))
            echo "FAIL $f --cleanup=$cleanup: exit status $status (99: valgrind found an error or leak, 4: --check-leaks)" >&2
            cat "$logs/$runs.err" "$log" >&2
        fi
    done
done
echo "valgrind: $runs runs in $(( $(date +%s) - start )) s"
echo "valgrind: $((runs - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
