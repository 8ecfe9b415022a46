#!/usr/bin/env bash
# Builds graphrun with its CUDA plugin on a GPU machine that reaches no package
# registry, then checks it there. Run scripts/vendor-headers.sh first on a
# machine that has the Debian packages, and take third_party/ along.
#
#   scripts/device-build.sh [STEP...]
#
# Steps (default: build devices ops session models unit_gpu sanitize bench, in that order):
#   build     configure build/ with -DGRAPHRUN_CUDA=ON and build everything
#   devices   graphrun devices, and --version
#   ops       python3 tests/gpu_ops_test.py build/graphrun (every GPU op against the CPU)
#   session   python3 tests/gpu_session_test.py build/graphrun (tensors past 2^24
#             elements and 65535 rows, GPU-resident chains, --memory-limit under
#             every strategy, --reset-device across files, the safepoint peak
#             against `check`, two GPUs where present)
#   models    python3 tests/gpu_models_test.py run third_party/models build/graphrun
#             (ResNet-, MobileNet- and transformer-shaped models, converted by
#             vendor-headers.sh, whole on the GPU under every strategy against
#             NumPy and the CPU; memory back at teardown; safepoint peak = static)
#   unit_gpu  the unit cases gpu:* on the GPU (every allocation of every example
#             failed in turn under every strategy, --memory-limit, the static
#             peak, --reset-device then cuBLAS in the same process)
#   sanitize  compute-sanitizer memcheck with full leak check over every
#             scripts/examples/*.graph, --device=gpu, under the three strategies,
#             over two files with matmuls run with --reset-device, and over
#             each model of third_party/models
#   bench     python3 scripts/bench/gpu_bench.py build/graphrun (against PyTorch)
#   ctest     the whole CPU test suite (not in the default list)
# Each step's output goes to stdout and to $LOG_DIR/STEP.log (default: $OUT,
# the device tool's folder that comes back, where it is set; else
# build/device-logs; the device tool brings back 8 files, one per default
# step); a summary line per step ends the run. The exit code is 1 if any step
# failed or did not run.
# BUILD_DIR overrides build/.
#
# Time: the device tool gives one command 600 s and keeps the machine (and so
# build/) warm only 30 s after it. DEVICE_BUDGET_S (default 540 where $OUT is
# set, else unlimited) is this run's budget: a step runs under a timeout of
# what is left of it, a step that would start with under 20 s left is listed
# as "not run (budget)", and the summary is always printed, so that one call
# reports every step it reached and a second call (`scripts/device-build.sh
# build STEP...`, the build incremental on a warm machine) finishes the rest.
# sanitize runs SANITIZE_JOBS (default 4) compute-sanitizer processes at once.
# shellcheck disable=SC2317  # the step_* functions are called by name
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD
build=${BUILD_DIR:-build}
if [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ]; then logs=${LOG_DIR:-$OUT}; else logs=${LOG_DIR:-$build/device-logs}; fi
budget=${DEVICE_BUDGET_S:-}
if [ -z "$budget" ] && [ -n "${OUT:-}" ]; then budget=540; fi
if [ -n "$budget" ] && ! [[ $budget =~ ^[0-9]+$ ]]; then
    echo "device-build: DEVICE_BUDGET_S must be a whole number of seconds, not '$budget'" >&2
    exit 2
fi
started=$(date +%s)
# Seconds left of the budget (a large number without one).
left() {
    if [ -z "$budget" ]; then echo 1000000; else echo $((budget - ($(date +%s) - started))); fi
}
if [ $# -gt 0 ]; then steps=("$@"); else steps=(build devices ops session models unit_gpu sanitize bench); fi
bin=$build/graphrun

# OpenBLAS carried in third_party/ (the GPU machine may have none): unpacked
# into the build folder; the binary finds it through LD_LIBRARY_PATH (its
# Fortran runtime is a dependency of OpenBLAS, which the binary's RUNPATH does
# not cover).
case $build in /*) blas_dir=$build/openblas ;; *) blas_dir=$root/$build/openblas ;; esac
if [ -f third_party/openblas.tar.xz ]; then
    export LD_LIBRARY_PATH=$blas_dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

step_build() {
    # Warnings are not errors there: the GPU machine's compilers (its g++ and
    # nvcc) are not the ones CI holds the code to, and a warning new to them
    # must not cost the verification; they are still printed in build.log.
    local args=(-DGRAPHRUN_CUDA=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRAPHRUN_WERROR=OFF
                # Line tables for compute-sanitizer's reports; no effect on the code.
                -DCMAKE_CUDA_FLAGS=-lineinfo)
    if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then args+=(-G Ninja); fi
    if [ -d third_party/cmake ]; then
        args+=(-DCLI11_DIR="$root/third_party/cmake/CLI11"
               -Dnlohmann_json_DIR="$root/third_party/cmake/nlohmann_json"
               -Ddoctest_DIR="$root/third_party/cmake/doctest")
    fi
    if [ -f third_party/openblas.tar.xz ]; then
        rm -rf "$blas_dir"
        if command -v xz >/dev/null 2>&1; then
            tar -C "$build" -xJf third_party/openblas.tar.xz || return 1
        else
            python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
                third_party/openblas.tar.xz "$build" || return 1
        fi
        args+=(-DCBLAS_INCLUDE_DIR="$blas_dir/include" -DOPENBLAS_LIBRARY="$blas_dir/lib/libopenblas.so")
    fi
    # CMake before 3.25.2 has no flag for CUDA_STANDARD 20 with nvcc (CMake issue 23079).
    local v
    v=$(cmake --version | awk 'NR == 1 {print $3}')
    if [ "$(printf '%s\n3.25.2\n' "$v" | sort -V | head -1)" != 3.25.2 ]; then
        args+=(-DCMAKE_CUDA20_STANDARD_COMPILE_OPTION=-std=c++20)
    fi
    echo "cmake ${args[*]}"
    cmake -S . -B "$build" "${args[@]}" && cmake --build "$build" -j"$(nproc)" && test -f "$build/libgraphrun_cuda.so"
}

step_devices() {
    "$bin" --version && "$bin" devices
}

step_ops() {
    python3 tests/gpu_ops_test.py "$bin"
}

step_session() {
    python3 tests/gpu_session_test.py "$bin" "$root" -v
}

step_models() {
    if [ ! -d third_party/models ]; then
        echo "models: no third_party/models: run scripts/vendor-headers.sh where the ONNX library is, and carry third_party/"
        return 1
    fi
    python3 tests/gpu_models_test.py run third_party/models "$bin"
}

step_unit_gpu() {
    local plugin
    case $build in /*) plugin=$build/libgraphrun_cuda.so ;; *) plugin=$root/$build/libgraphrun_cuda.so ;; esac
    GRAPHRUN_CUDA_PLUGIN=$plugin "$build/tests/graphrun_unit_tests" --test-case='gpu:*'
}

# One compute-sanitizer run: sanitize_one LOG graphrun-args...; its exit code
# in LOG.rc. --error-exitcode tells the sanitizer's reports apart from
# graphrun's own exit codes; a run still going 10 s before the budget ends is
# killed (exit 124), so that the step can still print what each run gave.
sanitize_one() {
    local log=$1 t=$(($(left) - 10))
    shift
    [ "$t" -ge 1 ] || { echo 124 >"$log.rc"; echo "not started: out of time" >"$log"; return; }
    timeout "$t" \
        "$cs" --tool memcheck --leak-check full --error-exitcode 97 "$bin" run "$@" >"$log" 2>&1
    echo $? >"$log.rc"
}

step_sanitize() {
    cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    if [ ! -x "$cs" ]; then
        echo "sanitize: compute-sanitizer not found"
        return 1
    fi
    local jobs=${SANITIZE_JOBS:-4} tmp f cleanup i
    tmp=$(mktemp -d)
    local -a names=() runs=()
    # --reset-device ends the CUDA context at teardown, which is when the leak
    # check looks.
    for f in scripts/examples/*.graph; do
        for cleanup in background safepoint close; do
            names+=("$f --cleanup=$cleanup")
            runs+=("$f --device=gpu --cleanup=$cleanup --iterations=2 --check-leaks --reset-device")
        done
    done
    # --reset-device, then the next file's cuBLAS work in the same process.
    for cleanup in background safepoint close; do
        names+=("matmul, mlp, matmul --reset-device --cleanup=$cleanup")
        runs+=("scripts/examples/matmul.graph scripts/examples/mlp.graph scripts/examples/matmul.graph
                --device=gpu --cleanup=$cleanup --check-leaks --reset-device")
    done
    # Long chains of kernels: the real-model scripts, where vendor-headers.sh made them.
    for f in third_party/models/*.graph; do
        [ -f "$f" ] || continue
        names+=("$f --cleanup=background")
        runs+=("$f --input=@${f%.graph}.input.npz --device=gpu --check-leaks --reset-device")
    done
    for i in "${!runs[@]}"; do
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
        # shellcheck disable=SC2086  # each run is a list of words
        sanitize_one "$tmp/$i.log" ${runs[$i]} &
    done
    wait
    local fails=0 rc
    for i in "${!runs[@]}"; do
        rc=$(cat "$tmp/$i.log.rc" 2>/dev/null || echo "none")
        if [ "$rc" = 0 ]; then
            echo "ok   ${names[$i]}"
        else
            echo "FAIL ${names[$i]} (exit $rc$([ "$rc" = 124 ] && echo ': out of time'))"
            cat "$tmp/$i.log"
            fails=$((fails + 1))
        fi
    done
    rm -rf "$tmp"
    echo "sanitize: $((${#runs[@]} - fails)) passed, $fails failed"
    [ "$fails" -eq 0 ]
}

step_bench() {
    python3 scripts/bench/gpu_bench.py "$bin"
}

step_ctest() {
    ctest --test-dir "$build" --output-on-failure
}

for step in "${steps[@]}"; do
    if ! declare -F "step_$step" >/dev/null; then
        echo "device-build: unknown step '$step' (build devices ops session models unit_gpu sanitize bench ctest)" >&2
        exit 2
    fi
done
mkdir -p "$build" "$logs"
export root build bin logs blas_dir budget started
# shellcheck disable=SC2046  # one word per function name
export -f left sanitize_one $(declare -F | awk '$3 ~ /^step_/ {print $3}')

summary=()
status=0
for step in "${steps[@]}"; do
    if [ "$(left)" -lt 20 ]; then
        summary+=("$step: not run (budget: $(left) s of ${budget} s left)")
        status=1
        continue
    fi
    echo "==== $step"
    start=$(date +%s)
    # A step's timeout is what is left of the budget; bash -c runs the step
    # function (exported with what it reads) so that timeout can end it.
    timeout "$(left)" bash -c "step_$step" 2>&1 | tee "$logs/$step.log"
    rc=${PIPESTATUS[0]}
    took=$(( $(date +%s) - start ))
    if [ "$rc" -eq 0 ]; then
        summary+=("$step: ok (${took} s)")
    else
        [ "$rc" -eq 124 ] && why="out of time" || why="exit $rc"
        summary+=("$step: FAILED, $why (${took} s; $logs/$step.log)")
        status=1
        # Nothing else can run without a binary.
        [ "$step" = build ] && break
    fi
done
echo "==== summary"
printf '%s\n' "${summary[@]}"
exit "$status"
