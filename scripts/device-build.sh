#!/usr/bin/env bash
# Builds graphrun with its CUDA plugin on a GPU machine that reaches no package
# registry, then checks it there. Run scripts/vendor-headers.sh first on a
# machine that has the Debian packages, and take third_party/ along.
#
#   scripts/device-build.sh [STEP...]
#
# Steps (default: build devices ops session unit_gpu sanitize bench, in that order):
#   build     configure build/ with -DGRAPHRUN_CUDA=ON and build everything
#   devices   graphrun devices, and --version
#   ops       python3 tests/gpu_ops_test.py build/graphrun (every GPU op against the CPU)
#   session   python3 tests/gpu_session_test.py build/graphrun (tensors past 2^24
#             elements and 65535 rows, GPU-resident chains, --memory-limit under
#             every strategy, --reset-device across files, the safepoint peak
#             against `check`, two GPUs where present)
#   unit_gpu  the unit cases gpu:* on the GPU (every allocation of every example
#             failed in turn under every strategy, --memory-limit, the static
#             peak, --reset-device then cuBLAS in the same process)
#   sanitize  compute-sanitizer memcheck with full leak check over every
#             scripts/examples/*.graph, --device=gpu, under the three strategies,
#             and over two files with matmuls run with --reset-device
#   bench     python3 scripts/bench/gpu_bench.py build/graphrun (against PyTorch)
#   ctest     the whole CPU test suite (not in the default list)
# Each step's output goes to stdout and to $LOG_DIR/STEP.log (default
# build/device-logs); a summary line per step ends the run. The exit code is 1
# if any step failed. BUILD_DIR overrides build/.
# shellcheck disable=SC2317  # the step_* functions are called by name
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD
build=${BUILD_DIR:-build}
logs=${LOG_DIR:-$build/device-logs}
if [ $# -gt 0 ]; then steps=("$@"); else steps=(build devices ops session unit_gpu sanitize bench); fi
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
    local args=(-DGRAPHRUN_CUDA=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
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

step_unit_gpu() {
    local plugin
    case $build in /*) plugin=$build/libgraphrun_cuda.so ;; *) plugin=$root/$build/libgraphrun_cuda.so ;; esac
    GRAPHRUN_CUDA_PLUGIN=$plugin "$build/tests/graphrun_unit_tests" --test-case='gpu:*'
}

step_sanitize() {
    local cs
    cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    if [ ! -x "$cs" ]; then
        echo "sanitize: compute-sanitizer not found"
        return 1
    fi
    local fails=0 runs=0 f cleanup
    for f in scripts/examples/*.graph; do
        for cleanup in background safepoint close; do
            runs=$((runs + 1))
            # --reset-device ends the CUDA context at teardown, which is when
            # the leak check looks; --error-exitcode tells its reports apart
            # from graphrun's own exit codes.
            if "$cs" --tool memcheck --leak-check full --error-exitcode 97 \
                "$bin" run "$f" --device=gpu --cleanup="$cleanup" --iterations=2 --check-leaks --reset-device \
                >"$logs/sanitize.run.log" 2>&1; then
                echo "ok   $f --cleanup=$cleanup"
            else
                echo "FAIL $f --cleanup=$cleanup (exit $?)"
                cat "$logs/sanitize.run.log"
                fails=$((fails + 1))
            fi
        done
    done
    # --reset-device, then the next file's cuBLAS work in the same process.
    for cleanup in background safepoint close; do
        runs=$((runs + 1))
        if "$cs" --tool memcheck --leak-check full --error-exitcode 97 \
            "$bin" run scripts/examples/matmul.graph scripts/examples/mlp.graph scripts/examples/matmul.graph \
            --device=gpu --cleanup="$cleanup" --check-leaks --reset-device >"$logs/sanitize.run.log" 2>&1; then
            echo "ok   matmul, mlp, matmul --reset-device --cleanup=$cleanup"
        else
            echo "FAIL matmul, mlp, matmul --reset-device --cleanup=$cleanup (exit $?)"
            cat "$logs/sanitize.run.log"
            fails=$((fails + 1))
        fi
    done
    rm -f "$logs/sanitize.run.log"
    echo "sanitize: $((runs - fails)) passed, $fails failed"
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
        echo "device-build: unknown step '$step' (build devices ops session unit_gpu sanitize bench ctest)" >&2
        exit 2
    fi
done
mkdir -p "$build" "$logs"

summary=()
status=0
for step in "${steps[@]}"; do
    echo "==== $step"
    start=$(date +%s)
    "step_$step" 2>&1 | tee "$logs/$step.log"
    rc=${PIPESTATUS[0]}
    took=$(( $(date +%s) - start ))
    if [ "$rc" -eq 0 ]; then
        summary+=("$step: ok (${took} s)")
    else
        summary+=("$step: FAILED, exit $rc (${took} s; $logs/$step.log)")
        status=1
        # Nothing else can run without a binary.
        [ "$step" = build ] && break
    fi
done
echo "==== summary"
printf '%s\n' "${summary[@]}"
exit "$status"
