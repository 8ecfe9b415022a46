#!/usr/bin/env python3
"""graphrun as a library (issue 24): `cmake --install` of this build tree into
a temporary prefix, examples/ configured and built against that prefix alone
(find_package(graphrun)), and the example run: its values are checked against
figures computed here, its statistics against teardown, and a bad graph's
error against its line and column.
Usage: library_test.py CMAKE_COMMAND BUILD_DIR SOURCE_DIR CXX_COMPILER GENERATOR"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from harness import checks, expect  # noqa: E402 (tests/harness.py)

CMAKE, BUILD, SRC, CXX, GENERATOR = sys.argv[1:6]


FAILURES = []
check = checks(FAILURES)


def sh(*args, cwd=None, want=0):
    """Runs a command; a wrong exit status stops the test (what follows needs it)."""
    p = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=600)
    expect(p.returncode == want, f"{' '.join(args)}: exit {p.returncode}, expected {want}:\n"
                                 f"{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p


def example_values(base):
    """y = relu(x @ w + b) and its sum, for x = base, base+1, ... (2x3), as examples/run_graph.cpp's graph."""
    x = [[base + 3 * r + c for c in range(3)] for r in range(2)]
    w = [[1.0, -1.0], [2.0, 0.5], [-1.0, 1.0]]
    b = [0.5, -2.0]
    y = [[max(0.0, sum(x[r][k] * w[k][c] for k in range(3)) + b[c]) for c in range(2)] for r in range(2)]
    return [v for row in y for v in row], sum(v for row in y for v in row)


def floats(line):
    """The values after the type of a printed array ('f32[2,2] 2.5 1 ...')."""
    return [float(t) for t in line.split("]", 1)[1].split()]


def main():
    tmp = tempfile.mkdtemp(prefix="graphrun-library-")
    try:
        prefix = os.path.join(tmp, "prefix")
        sh(CMAKE, "--install", BUILD, "--prefix", prefix)

        # What is installed: the library, the header, the package; nothing of the engine's insides.
        header = os.path.join(prefix, "include", "graphrun", "graphrun.h")
        check(os.path.isfile(header), "include/graphrun/graphrun.h is not installed")
        libs = [f for d in ("lib", "lib64") if os.path.isdir(os.path.join(prefix, d))
                for f in os.listdir(os.path.join(prefix, d)) if f.startswith("libgraphrun.so")]
        check(libs, f"no libgraphrun.so under {prefix}/lib")
        configs = [os.path.join(dp, f) for dp, _, fs in os.walk(prefix) for f in fs if f == "graphrunConfig.cmake"]
        check(len(configs) == 1, f"graphrunConfig.cmake installed {len(configs)} times")
        includes = set()
        for dp, _, fs in os.walk(os.path.join(prefix, "include", "graphrun")):
            for f in fs:
                with open(os.path.join(dp, f)) as fh:
                    includes |= set(re.findall(r'#\s*include\s*[<"]([^>"]+)', fh.read()))
        leaked = sorted(i for i in includes if "/" in i and not i.startswith("graphrun/"))
        check(not leaked, f"the public headers include more than the standard library: {leaked}")
        # What a program that links graphrun::graphrun gets: include/ and C++20, no dependency.
        targets = "".join(open(os.path.join(os.path.dirname(configs[0]), f)).read()
                          for f in os.listdir(os.path.dirname(configs[0])) if f.startswith("graphrunTargets"))
        link = re.findall(r'INTERFACE_LINK_LIBRARIES "([^"]*)"', targets)
        check(not link, f"the exported target passes on libraries to link: {link}")

        # examples/ against the prefix alone.
        ex_build = os.path.join(tmp, "examples")
        sh(CMAKE, "-S", os.path.join(SRC, "examples"), "-B", ex_build, "-G", GENERATOR,
           f"-DCMAKE_PREFIX_PATH={prefix}", f"-DCMAKE_CXX_COMPILER={CXX}")
        sh(CMAKE, "--build", ex_build)
        exe = os.path.join(ex_build, "run_graph")
        if shutil.which("ldd"):
            found = [l for l in sh("ldd", exe).stdout.splitlines() if "libgraphrun.so" in l]
            check(found and prefix in found[0], f"run_graph does not load the installed library: {found}")

        out = sh(exe).stdout
        lines = out.splitlines()
        check(lines and lines[0].startswith("graphrun ") and "example.graph, 1 input(s), 2 output(s)" in lines[0],
               f"unexpected first line: {out[:300]}")
        runs = re.split(r"^run \d+ ", out, flags=re.M)[1:]
        check(len(runs) == 2, f"expected two runs:\n{out}")
        for i, base in enumerate((1.0, -2.0)):
            want_y, want_total = example_values(base)
            block = runs[i]
            y = [l for l in block.splitlines() if l.strip().startswith("y = ")]
            total = [l for l in block.splitlines() if l.strip().startswith("total = ")]
            check(y and total, f"run {i + 1} printed no y or total:\n{block}")
            if y and total:
                check(floats(y[0]) == want_y, f"run {i + 1}: y = {floats(y[0])}, expected {want_y}")
                check(y[0].split()[2] == "f32[2,2]", f"run {i + 1}: y's type: {y[0]}")
                check(floats(total[0]) == [want_total], f"run {i + 1}: total = {floats(total[0])}, "
                                                         f"expected {want_total}")
            peak = re.search(r"cpu: peak (\d+) bytes, (\d+) allocations", block)
            check(peak and int(peak.group(1)) > 0 and int(peak.group(2)) > 0, f"run {i + 1}: no statistics:\n{block}")
            check("cpu between runs: in_use 0, live 0" in block, f"run {i + 1}: tensors held between runs:\n{block}")
            if i == 1:
                allocs = [int(m.group(2)) for m in re.finditer(r"cpu: peak (\d+) bytes, (\d+) allocations", out)]
                check(len(allocs) == 2 and allocs[1] == 2 * allocs[0],
                      f"the two runs are not one session (allocations {allocs}):\n{out}")
        check("cpu after teardown: in_use 0, reserved 0, live 0" in out, f"memory left after teardown:\n{out}")

        # Where the CUDA plugin is built, the library finds it beside itself
        # (LIBDIR/graphrun/) and loads it: RTLD_NOW resolves every engine
        # symbol the plugin takes from the library, or the load fails.
        plugins = [os.path.join(prefix, d, "graphrun", "libgraphrun_cuda.so") for d in ("lib", "lib64")]
        plugin = next((p for p in plugins if os.path.isfile(p)), None)
        if plugin:
            env = dict(os.environ, LD_DEBUG="files")
            env.pop("GRAPHRUN_CUDA_PLUGIN", None)
            p = subprocess.run([exe], capture_output=True, text=True, timeout=120, env=env)
            check(p.returncode == 0 and f"calling init: {plugin}" in p.stderr,
                  f"run_graph did not load the installed plugin {plugin}:\n{p.stderr[-1500:]}")
        else:
            print("(no CUDA plugin in this build: its lookup from the library is not checked)")

        # A graph with an error: the kind, and the diagnostic with its line and column.
        bad = os.path.join(tmp, "bad.graph")
        with open(bad, "w") as f:
            f.write("x = input([2])\ny = x + nosuch\noutput y\n")
        p = sh(exe, bad, want=1)
        check("run_graph: invalid_graph error:" in p.stderr, f"unexpected error output:\n{p.stderr}")
        check(f"{bad}:2:9: error:" in p.stderr and "nosuch" in p.stderr,
               f"the diagnostic lacks its place:\n{p.stderr}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"library: {len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
