#!/usr/bin/env bash
# Fills third_party/ (ignored by git) with what scripts/device-build.sh needs on
# a GPU machine that reaches no package registry: the CLI11, nlohmann/json and
# doctest headers of this machine's Debian packages, a CMake package file for
# each (so that the project's find_package calls work unchanged), OpenBLAS
# (library, its Fortran runtime, cblas.h) packed as third_party/openblas.tar.xz
# for a machine that has no OpenBLAS of its own, and the real-model scripts of
# tests/gpu_models_test.py in third_party/models (built here, with the ONNX
# front end, if build/graphrun is missing).
# Usage: scripts/vendor-headers.sh        (then carry third_party/ to the GPU machine)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh

out=third_party
rm -rf "$out"
mkdir -p "$out/include" "$out/cmake"

cp -r /usr/include/CLI /usr/include/nlohmann /usr/include/doctest "$out/include/"

# package NAME TARGET VERSION_FILE: a config file that makes the INTERFACE
# target from the headers above, and the package's own version file (which
# only compares version numbers, so it works wherever it lies). Debian's
# config files are not used as they are: doctest's names /usr literally.
package() {
    local name=$1 target=$2 version_file=$3 dir="$out/cmake/$1"
    mkdir -p "$dir"
    cp "$version_file" "$dir/${name}ConfigVersion.cmake"
    cat >"$dir/${name}Config.cmake" <<EOF
# Written by scripts/vendor-headers.sh: the headers of this machine's Debian package.
if(NOT TARGET $target)
  add_library($target INTERFACE IMPORTED)
  set_target_properties($target PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "\${CMAKE_CURRENT_LIST_DIR}/../../include")
endif()
EOF
}
package CLI11 CLI11::CLI11 /usr/share/cmake/CLI11/CLI11ConfigVersion.cmake
package nlohmann_json nlohmann_json::nlohmann_json /usr/share/cmake/nlohmann_json/nlohmann_jsonConfigVersion.cmake
package doctest doctest::doctest /usr/lib/cmake/doctest/doctestConfigVersion.cmake
# doctest's CMake helpers (doctest_discover_tests), for a project that includes them.
cp /usr/lib/cmake/doctest/doctest.cmake /usr/lib/cmake/doctest/doctestAddTests.cmake "$out/cmake/doctest/"
echo 'list(APPEND CMAKE_MODULE_PATH "${CMAKE_CURRENT_LIST_DIR}")' >>"$out/cmake/doctest/doctestConfig.cmake"

# OpenBLAS: the real files behind Debian's alternatives symlinks. xz keeps the
# 40 MB of libraries near 5 MB, within what a GPU call may carry.
blas_inc=$(dirname "$(ls /usr/include/*/openblas-pthread/cblas.h | head -1)")
blas_lib=$(readlink -f "$(ls /usr/lib/*/openblas-pthread/libopenblas.so.0 | head -1)")
libdir=$(dirname "$(dirname "$blas_lib")")
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/openblas/include" "$stage/openblas/lib"
cp "$blas_inc"/*.h "$stage/openblas/include/"
cp "$blas_lib" "$stage/openblas/lib/libopenblas.so.0"
ln -s libopenblas.so.0 "$stage/openblas/lib/libopenblas.so"
for dep in libgfortran.so.5 libquadmath.so.0; do
    cp "$(readlink -f "$libdir/$dep")" "$stage/openblas/lib/$dep"
done
tar -C "$stage" -cJf "$out/openblas.tar.xz" openblas

# The real-model scripts of device-build.sh's `models` step: ResNet-, MobileNet-
# and transformer-shaped models converted here (`graphrun convert -o`), since
# the GPU machine has no ONNX library to read the .onnx files with.
[ -x build/graphrun ] || scripts/build.sh
/usr/bin/python3 tests/gpu_models_test.py prepare "$out/models" --graphrun build/graphrun

cat >"$out/README" <<'EOF'
Made by scripts/vendor-headers.sh for scripts/device-build.sh; not part of the
project's sources (ignored by git). Rebuild it rather than edit it.
EOF
echo "vendor-headers: $(du -sh "$out" | cut -f1) in $out/ (headers: CLI11, nlohmann/json, doctest; OpenBLAS packed; model scripts)"
