#!/usr/bin/env bash
# Coverage-guided fuzzing (libFuzzer, clang 14): builds build-fuzz with
# GRAPHRUN_FUZZ=ON; then, for every target (the list below: text front end,
# JSON front end, whole pipeline, .npy/.npz readers, ...):
#   1. replays its committed corpus (tests/fuzz/seeds/TARGET/, and for the
#      text, JSON and pipeline targets the scripts of scripts/examples and
#      tests/scripts) and its regressions (tests/fuzz/regressions/TARGET/):
#      cheap and deterministic, every input must pass;
#   2. fuzzes it for SECONDS_PER_TARGET from that corpus, with its dictionary
#      (tests/fuzz/dict/TARGET.dict where there is one).
# Up to nproc targets fuzz at once (each is one process, one core).
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]
#   default: $GRAPHRUN_FUZZ_SECONDS, else 25; 0 replays only.
# Exits non-zero when a target finds a crash, leak or timeout, and prints the
# reproducer's path (run it with: build-fuzz/tests/fuzz/fuzz_TARGET FILE).
set -euo pipefail
# A UBSan report names its stack, so that a CI log alone says where it was.
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"

# The targets (tests/fuzz/fuzz_TARGET.cpp): add a new one here only.
targets=(text json pipeline npy live onnx)

seconds="${1:-${GRAPHRUN_FUZZ_SECONDS:-25}}"
case "$seconds" in
    '' | *[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET]" >&2; exit 2 ;;
esac
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
# Tools and libraries: the build deps and clang 14 with its libFuzzer runtime.
scripts/deps.sh clang

build=build-fuzz
CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DGRAPHRUN_FUZZ=ON -DGRAPHRUN_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target "${targets[@]/#/fuzz_}"

work="$build/fuzz-run"
rm -rf "$work"
mkdir -p "$work/artifacts"
for t in "${targets[@]}"; do
    mkdir -p "$work/corpus-$t"
    # The committed seeds (npz has none of its own: the .npy seeds hold .npz files too).
    seeds="tests/fuzz/seeds/$t"
    [ "$t" = npz ] && [ ! -d "$seeds" ] && seeds=tests/fuzz/seeds/npy
    if [ -d "$seeds" ]; then cp "$seeds"/* "$work/corpus-$t/"; fi
done
cat tests/fuzz/dict/text.dict tests/fuzz/dict/json.dict >"$work/pipeline.dict"

# Seeds from the scripts. The pipeline's first byte picks the format (bit 0:
# JSON), the cleanup strategy (bits 1-2) and the iterations (bit 3).
mkdir -p "$work/corpus-text" "$work/corpus-json" "$work/corpus-pipeline" "$work/corpus-live"
n=0
for f in scripts/examples/* tests/scripts/*; do
    [ -f "$f" ] || continue
    case "$f" in *.expect) continue ;; esac
    n=$((n + 1))
    if [[ "$f" == *.json ]]; then
        cp "$f" "$work/corpus-json/seed$n.json"
        { printf '\001'; cat "$f"; } >"$work/corpus-pipeline/seed$n-a"
        { printf '\013'; cat "$f"; } >"$work/corpus-pipeline/seed$n-b"
    else
        cp "$f" "$work/corpus-text/seed$n.graph"
        { printf '\001'; cat "$f"; } >"$work/corpus-live/seed$n"
        { printf '\002'; cat "$f"; } >"$work/corpus-pipeline/seed$n-a"
        { printf '\014'; cat "$f"; } >"$work/corpus-pipeline/seed$n-b"
    fi
done

options=(-rss_limit_mb=2048 -timeout=10 -max_len=16384 -print_final_stats=1)

# 1. Replay: every committed input and every crash found so far must pass.
status=0
replay_start=$(date +%s)
for t in "${targets[@]}"; do
    bin="$build/tests/fuzz/fuzz_$t"
    inputs=("$work/corpus-$t")
    if compgen -G "tests/fuzz/regressions/$t/*" >/dev/null; then inputs+=("tests/fuzz/regressions/$t"); fi
    files=()
    for d in "${inputs[@]}"; do for f in "$d"/*; do [ -f "$f" ] && files+=("$f"); done; done
    [ ${#files[@]} -eq 0 ] && continue
    if ! "$bin" "${options[@]}" -runs=0 "${files[@]}" >"$work/replay_$t.log" 2>&1; then
        echo "fuzz: fuzz_$t: a committed input or regression fails; see $work/replay_$t.log" >&2
        grep -E 'Running:|ERROR|runtime error|SUMMARY' "$work/replay_$t.log" | tail -5 >&2 || true
        status=1
    else
        echo "fuzz: fuzz_$t: ${#files[@]} committed inputs and regressions replayed" >&2
    fi
done
echo "fuzz: replay took $(( $(date +%s) - replay_start )) s" >&2
if [ "$status" -ne 0 ] || [ "$seconds" -eq 0 ]; then exit $status; fi

# 2. Fuzz each target for $seconds, nproc of them at once.
fuzz_one() {
    local t=$1 bin="$build/tests/fuzz/fuzz_$1" dict="tests/fuzz/dict/$1.dict" rc=0 corpora
    [ "$t" = pipeline ] && dict="$work/pipeline.dict"
    [ "$t" = live ] && dict=tests/fuzz/dict/text.dict
    [ "$t" = npz ] && [ ! -f "$dict" ] && dict=tests/fuzz/dict/npy.dict
    local dict_opt=()
    [ -f "$dict" ] && dict_opt=(-dict="$dict")
    corpora=("$work/corpus-$t")
    if compgen -G "tests/fuzz/regressions/$t/*" >/dev/null; then corpora+=("tests/fuzz/regressions/$t"); fi
    "$bin" "${options[@]}" -max_total_time="$seconds" "${dict_opt[@]}" \
        -artifact_prefix="$work/artifacts/${t}-" "${corpora[@]}" >"$work/fuzz_$t.log" 2>&1 || rc=$?
    echo "$rc" >"$work/fuzz_$t.rc"
}

echo "fuzz: ${#targets[@]} targets for ${seconds}s each, $(nproc) at once" >&2
fuzz_start=$(date +%s)
running=0
for t in "${targets[@]}"; do
    if [ "$running" -ge "$(nproc)" ]; then wait -n || true; running=$((running - 1)); fi
    fuzz_one "$t" &
    running=$((running + 1))
done
wait || true

for t in "${targets[@]}"; do
    bin="$build/tests/fuzz/fuzz_$t"
    log="$work/fuzz_$t.log"
    rc=$(cat "$work/fuzz_$t.rc" 2>/dev/null || echo "no status")
    grep -E '^(stat::|Done)|DONE ' "$log" | sed "s/^/fuzz: fuzz_$t: /" >&2 || true
    if [ "$rc" != 0 ]; then
        status=1
        echo "fuzz: fuzz_$t FAILED (exit $rc); log: $log" >&2
        grep -E 'ERROR: |runtime error: |SUMMARY: |Test unit written to|^    #[0-9] ' "$log" | head -14 >&2 || true
        for a in "$work"/artifacts/"$t"-*; do
            [ -e "$a" ] && echo "fuzz: reproducer: $a  (replay: $bin $a)" >&2
        done
    fi
done
echo "fuzz: fuzzing took $(( $(date +%s) - fuzz_start )) s" >&2
exit $status
