#!/usr/bin/env bash
# Installs the Debian packages graphrun builds with, when they are missing.
# Usage: scripts/deps.sh [clang]
#   clang: also clang 14 and its sanitizer and libFuzzer runtimes, which the
#   ASan and fuzz builds (scripts/sanitize.sh, scripts/fuzz.sh) compile with.
set -euo pipefail

need=()
have_file() { [ -e "$1" ]; }
if [ "${1:-}" = clang ]; then
    command -v clang++-14 >/dev/null 2>&1 || need+=(clang-14)
    ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a >/dev/null 2>&1 || need+=(libclang-rt-14-dev)
elif [ $# -gt 0 ]; then
    echo "usage: scripts/deps.sh [clang]" >&2
    exit 2
fi
have_file /usr/include/CLI/CLI.hpp            || need+=(libcli11-dev)
have_file /usr/include/nlohmann/json.hpp      || need+=(nlohmann-json3-dev)
have_file /usr/include/doctest/doctest.h      || need+=(doctest-dev)
ls /usr/include/*/openblas-pthread/cblas.h >/dev/null 2>&1 || need+=(libopenblas-dev)
have_file /usr/include/zlib.h                 || need+=(zlib1g-dev)  # deflated .npz inputs
# oneDNN: conv and gemm kernels where they beat graphrun's own (optional:
# the build and the tests pass without it, on graphrun's kernels).
have_file /usr/include/oneapi/dnnl/dnnl.hpp   || need+=(libdnnl-dev)
have_file /usr/include/histedit.h             || need+=(libedit-dev)  # graphrun repl: line editing, history
command -v cmake   >/dev/null 2>&1            || need+=(cmake)
command -v g++     >/dev/null 2>&1            || need+=(g++)
command -v python3 >/dev/null 2>&1            || need+=(python3)
# The benchmarks (scripts/bench) compare with NumPy under the system Python.
/usr/bin/python3 -c "import numpy" >/dev/null 2>&1 || need+=(python3-numpy)
# tests/output_test.py checks that `graphrun dot` output parses with Graphviz.
command -v dot     >/dev/null 2>&1            || need+=(graphviz)
# tests/memory_test.py renders `graphrun compare --plot`'s SVG to PNG with it.
command -v rsvg-convert >/dev/null 2>&1       || need+=(librsvg2-bin)
# The ONNX front end (ONNX's C++ classes, checker and shape inference), the
# Python package its tests build models with, and ONNX's backend test suite.
have_file /usr/include/onnx/onnx_pb.h          || need+=(libonnx-dev)
have_file /usr/include/google/protobuf/message.h || need+=(libprotobuf-dev)
/usr/bin/python3 -c "import onnx" >/dev/null 2>&1 || need+=(python3-onnx)
have_file /usr/share/libonnx-testdata/data     || need+=(libonnx-testdata)

if [ ${#need[@]} -eq 0 ]; then
    exit 0
fi
echo "deps: installing ${need[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
