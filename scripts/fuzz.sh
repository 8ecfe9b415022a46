#!/usr/bin/env bash
# Coverage-guided fuzzing (libFuzzer, clang 14): builds build-fuzz with
# GRAPHRUN_FUZZ=ON, replays tests/fuzz/regressions/, then runs each target
# (text front end, JSON front end, whole pipeline, .npy/.npz readers, ONNX
# reader) for SECONDS_PER_TARGET on a corpus seeded from scripts/examples and
# tests/scripts (tests/fuzz/seeds/npy and seeds/onnx for the binary readers).
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 60)
# Exits non-zero when a target finds a crash, leak or timeout, and prints the
# reproducer's path (run it with: build-fuzz/tests/fuzz/fuzz_TARGET FILE).
set -euo pipefail

seconds="${1:-60}"
case "$seconds" in
    '' | *[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET]" >&2; exit 2 ;;
esac
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

# Tools and libraries: clang 14 with its libFuzzer runtime, and the build deps.
need=()
command -v clang++-14 >/dev/null 2>&1 || need+=(clang-14)
ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a >/dev/null 2>&1 || need+=(libclang-rt-14-dev)
if [ ${#need[@]} -gt 0 ]; then
    echo "fuzz: installing ${need[*]}" >&2
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
scripts/deps.sh

build=build-fuzz
CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DGRAPHRUN_FUZZ=ON -DGRAPHRUN_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target fuzz_text fuzz_json fuzz_pipeline fuzz_npy fuzz_onnx

work="$build/fuzz-run"
rm -rf "$work"
mkdir -p "$work/artifacts"
for t in text json pipeline npy onnx; do mkdir -p "$work/corpus-$t"; done
cp tests/fuzz/seeds/npy/* "$work/corpus-npy/"
cp tests/fuzz/seeds/onnx/* "$work/corpus-onnx/"
cat tests/fuzz/dict/text.dict tests/fuzz/dict/json.dict >"$work/pipeline.dict"

# Seeds. The pipeline's first byte picks the format (bit 0: JSON), the cleanup
# strategy (bits 1-2) and the iterations (bit 3).
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
        { printf '\002'; cat "$f"; } >"$work/corpus-pipeline/seed$n-a"
        { printf '\014'; cat "$f"; } >"$work/corpus-pipeline/seed$n-b"
    fi
done

options=(-rss_limit_mb=2048 -timeout=10 -max_len=16384 -print_final_stats=1)
status=0
for t in text json pipeline npy onnx; do
    bin="$build/tests/fuzz/fuzz_$t"
    dict="tests/fuzz/dict/$t.dict"
    [ "$t" = pipeline ] && dict="$work/pipeline.dict"
    regressions="tests/fuzz/regressions/$t"
    log="$work/fuzz_$t.log"

    # Every crash found so far must stay fixed.
    corpora=("$work/corpus-$t")
    if compgen -G "$regressions/*" >/dev/null; then
        corpora+=("$regressions")
        if ! "$bin" "${options[@]}" -runs=0 "$regressions"/* >"$work/replay_$t.log" 2>&1; then
            echo "fuzz: fuzz_$t: a regression input fails again; see $work/replay_$t.log" >&2
            grep -E 'Running:|ERROR|SUMMARY' "$work/replay_$t.log" | tail -5 >&2 || true
            status=1
            continue
        fi
    fi

    echo "fuzz: fuzz_$t for ${seconds}s" >&2
    rc=0
    "$bin" "${options[@]}" -max_total_time="$seconds" -dict="$dict" \
        -artifact_prefix="$work/artifacts/${t}-" "${corpora[@]}" >"$log" 2>&1 || rc=$?
    grep -E '^(stat::|Done)|DONE ' "$log" | sed "s/^/fuzz: fuzz_$t: /" >&2 || true
    if [ "$rc" -ne 0 ]; then
        status=1
        echo "fuzz: fuzz_$t FAILED (exit $rc); log: $log" >&2
        grep -E 'ERROR: |SUMMARY: |Test unit written to' "$log" | head -5 >&2 || true
        for a in "$work"/artifacts/"$t"-*; do
            [ -e "$a" ] && echo "fuzz: reproducer: $a  (replay: $bin $a)" >&2
        done
    fi
done
exit $status
