#!/usr/bin/env bash
# Every example under valgrind's memcheck (text output, --check-leaks): the
# text examples under every cleanup strategy, their JSON twins under one; any
# memory error or leak (definite, indirect or possible) fails the run. Builds a portable RelWithDebInfo binary (no -march flags, no
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

# Without --track-origins (about twice as fast); a run that fails is run again
# with it, for the origins of any uninitialised value in the report.
vg=(valgrind --error-exitcode=99 --leak-check=full
    --errors-for-leak-kinds=definite,indirect,possible
    --show-leak-kinds=definite,indirect,possible
    --num-callers=40)
if [ -f scripts/valgrind.supp ]; then vg+=(--suppressions=scripts/valgrind.supp); fi

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
start=$(date +%s)

# The runs: each text example under every strategy; its JSON twin (the same
# graph, another front end) under the default strategy only: the strategies'
# code paths are the text runs'.
runs=()
for f in scripts/examples/*.graph; do
    for cleanup in background safepoint close; do runs+=("$f $cleanup"); done
done
for f in scripts/examples/*.json; do runs+=("$f background"); done

# one_run N FILE CLEANUP [EXTRA VALGRIND OPTIONS]: exit status in $logs/N.rc
one_run() {
    local n=$1 f=$2 cleanup=$3 status=0
    shift 3
    "${vg[@]}" "$@" --log-file="$logs/$n.log" "$bin" run "$f" --cleanup="$cleanup" --format=text --check-leaks \
        --iterations=2 --threads=1 >"$logs/$n.out" 2>"$logs/$n.err" || status=$?
    echo "$status" >"$logs/$n.rc"
}

# nproc runs at once (each is one thread).
running=0
for i in "${!runs[@]}"; do
    if [ "$running" -ge "$(nproc)" ]; then wait -n || true; running=$((running - 1)); fi
    # shellcheck disable=SC2086
    one_run "$i" ${runs[$i]} &
    running=$((running + 1))
done
wait || true

fails=0
for i in "${!runs[@]}"; do
    status=$(cat "$logs/$i.rc" 2>/dev/null || echo "no status")
    [ "$status" = 0 ] && continue
    fails=$((fails + 1))
    # shellcheck disable=SC2086
    set -- ${runs[$i]}
    echo "FAIL $1 --cleanup=$2: exit status $status (99: valgrind found an error or leak, 4: --check-leaks)" >&2
    one_run "$i" "$1" "$2" --track-origins=yes
    cat "$logs/$i.err" "$logs/$i.log" >&2
done
echo "valgrind: ${#runs[@]} runs in $(( $(date +%s) - start )) s"
echo "valgrind: $((${#runs[@]} - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
