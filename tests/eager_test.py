#!/usr/bin/env python3
"""Eager mode (SPEC section 8, issue 24) through the real binary:

- every example and every golden script that runs gives the same values, bit
  for bit, in graph mode and in eager mode (JSON floats round-trip exactly),
  one pass and two;
- eager memory per strategy against figures derived here from buffer sizes
  (each buffer rounded up to 64 bytes), not from the engine: `repeat m { n
  statements }` holds n*m values under close, the live set under safepoint,
  and background stays bounded; everything is released at teardown;
- `compare --mode=both` shows graph mode's planned peak beside eager's;
- eager errors (out of memory, bad inputs) say where, with the usual exit codes.

Usage: eager_test.py GRAPHRUN_BINARY PROJECT_DIR
"""
import glob
import json
import os
import sys
import tempfile

from harness import expect, finish, make_harness  # noqa: E402 (tests/harness.py)

BIN = sys.argv[1]
ROOT = sys.argv[2]
run, test, results = make_harness(BIN, timeout=120)


def doc(*args):
    code, out, err = run("run", "--format=json", *args)
    expect(code == 0, f"run {' '.join(args)} exited {code}: {err}")
    return json.loads(out.splitlines()[0])


def outputs(d):
    return [(o["name"], o["dtype"], o["shape"], o["data"]) for o in d["outputs"]]


def script_args(path):
    """The `# args:` and `# run-args:` of a golden script (fetch names, fills)."""
    args = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            for key in ("# args:", "# run-args:"):
                if line.startswith(key):
                    args += line[len(key):].split()
    return args


def script_files():
    files = sorted(glob.glob(os.path.join(ROOT, "scripts/examples/*.graph")) +
                   glob.glob(os.path.join(ROOT, "scripts/examples/*.json")) +
                   glob.glob(os.path.join(ROOT, "tests/scripts/*.graph")))
    for f in files:
        yield f, script_args(f) if "/tests/scripts/" in f else []


@test
def same_values_in_both_modes():
    checked = 0
    for f, extra in script_files():
        own_iterations = any(a.startswith("--iterations") for a in extra)
        for iters in (("",) if own_iterations else ("1", "2")):
            base = ["--fill=random", "--device=cpu", *([f"--iterations={iters}"] if iters else []), f, *extra]
            # A file that graph mode does not run (a golden script of an error) is left out.
            code, out, err = run("run", "--format=json", "--mode=graph", *base)
            if code != 0:
                expect(iters != "2", f"{f} runs once but not with --iterations=2: {err}")
                break
            g = json.loads(out.splitlines()[0])
            e = doc("--mode=eager", *base)
            expect(outputs(g) == outputs(e), f"{f} --iterations={iters}: eager values differ from graph mode's")
            expect(e["session"].get("mode") == "eager" and "mode" not in g["session"],
                   f"{f}: session mode keys {g['session']} / {e['session']}")
        else:
            checked += 1
    expect(checked >= 20, f"only {checked} files ran in both modes")


def peak(d, key="peak"):
    return d["memory"]["before_teardown"]["cpu"][key]


def after(d):
    return d["memory"]["after_teardown"]["cpu"]


V = 4096   # f32[1024]
L = 64     # a scalar literal's buffer


@test
def eager_memory_per_strategy():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "loop.graph")
        for m in (10, 40):
            with open(path, "w") as f:
                f.write(f"x = zeros([1024])\nrepeat {m} {{ a = x + 1; b = a * 2; x = b - a }}\noutput x\n")
            # close: nothing is released; each of the 3 statements per pass
            # allocates its value and its literal (x = b - a has none).
            c = doc("--mode=eager", "--cleanup=close", "--device=cpu", path)
            expect(peak(c) == V + m * (3 * V + 2 * L), f"close m={m}: peak {peak(c)}")
            # safepoint: the live set. From the second pass on, while `a = x + 1`
            # or `b = a * 2` is computed, held are x, the last pass's a and b
            # (bound until rebound), the literal and the new value: 4 values
            # and a literal, whatever m.
            s = doc("--mode=eager", "--cleanup=safepoint", "--device=cpu", path)
            expect(peak(s) == 4 * V + L, f"safepoint m={m}: peak {peak(s)}")
            g = doc("--mode=graph", "--cleanup=safepoint", "--device=cpu", path)
            expect(peak(g) <= peak(s), f"graph mode's planned peak {peak(g)} above eager's {peak(s)}")
            b = doc("--mode=eager", "--cleanup=background", "--device=cpu", path)
            # background: bounded by the live set plus the 4 MiB backlog
            expect(peak(b) <= 4 * V + (4 << 20), f"background m={m}: peak {peak(b)}")
            for d in (c, s, b):
                a = after(d)
                expect(a["in_use"] == 0 and a["live"] == 0 and a["allocs"] == a["frees"],
                       f"m={m}: after teardown {a}")
            expect(outputs(c) == outputs(g), "values differ")


@test
def rebinding_and_locals():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rebind.graph")
        with open(path, "w") as f:
            f.write("x = zeros([1024])\nx = x + 1\nx = x + 1\ny = x * 3\noutput y\n")
        d = doc("--mode=eager", "--cleanup=safepoint", "--device=cpu", path)
        # y = x * 3: x, the literal, y; earlier x values went at rebinding
        expect(peak(d) == 2 * V + L, f"rebinding peak {peak(d)}")
        expect(d["outputs"][0]["data"][:2] == [6.0, 6.0], d["outputs"])


@test
def del_drops_a_name():
    # `del x` in a file: under safepoint the value goes back at the next
    # statement boundary, so z = y * 2 runs beside y alone; under close it
    # stays until close; graph mode gives the same values.
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "del.graph")
        with open(path, "w") as f:
            f.write("x = zeros([1024])\ny = x + 1\ndel x\nz = y * 2\nw = y * 2\noutput z\n")
        s = doc("--mode=eager", "--cleanup=safepoint", "--device=cpu", path)
        # y = x + 1 holds x, the literal, y; after del x: y, literal, z (w: y, z, literal, w)
        expect(peak(s) == 3 * V + L, f"safepoint peak with del {peak(s)}")
        c = doc("--mode=eager", "--cleanup=close", "--device=cpu", path)
        expect(peak(c) == 4 * V + 3 * L, f"close peak with del {peak(c)}")
        g = doc("--mode=graph", "--device=cpu", path)
        expect(outputs(s) == outputs(g) == outputs(c), "values differ")
        expect(s["outputs"][0]["data"][:2] == [2.0, 2.0], s["outputs"])
        # without the del, x stays bound: one more value at the peak
        with open(path, "w") as f:
            f.write("x = zeros([1024])\ny = x + 1\nz = y * 2\nw = y * 2\noutput z\n")
        n = doc("--mode=eager", "--cleanup=safepoint", "--device=cpu", path)
        expect(peak(n) == 4 * V + L, f"safepoint peak without del {peak(n)}")


@test
def compare_both_modes():
    ex = os.path.join(ROOT, "scripts/examples/power_iteration.graph")
    code, out, err = run("compare", "--mode=both", "--device=cpu", ex)
    expect(code == 0, err)
    for s in ("background", "safepoint", "close"):
        for m in ("graph", "eager"):
            expect(f"{s} ({m})" in out, f"compare --mode=both lacks {s} ({m}):\n{out}")
    code, out, err = run("compare", "--mode=both", "--format=json", "--device=cpu", ex)
    expect(code == 0, err)
    d = json.loads(out)
    modes = [(r["cleanup"], r["mode"]) for r in d["strategies"]]
    expect(len(modes) == 6 and ("close", "eager") in modes, modes)
    code, out, err = run("compare", "--device=cpu", ex)
    expect(code == 0 and "(graph)" not in out and "(eager)" not in out, "graph-only compare changed:\n" + out)


@test
def eager_errors():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "big.graph")
        with open(path, "w") as f:
            f.write("x = zeros([1024])\nrepeat 100 { x = x + 1 }\n")
        code, out, err = run("run", "--mode=eager", "--cleanup=close", "--memory-limit=100KiB", "--device=cpu", path)
        expect(code == 1, f"exit {code}: {err}")
        expect("out of memory" in err and ":2:" in err and "pass" in err, err)
        code, out, err = run("run", "--mode=sideways", path)
        expect(code == 2, f"exit {code}")
        inp = os.path.join(tmp, "in.graph")
        with open(inp, "w") as f:
            f.write("a = input([3])\nb = a * 2\n")
        code, out, err = run("run", "--mode=eager", "--device=cpu", "--input=a=[1,2,3]", inp)
        expect(code == 0 and "[2. 4. 6.]" in out, out + err)
        code, out, err = run("run", "--mode=eager", "--device=cpu", inp)
        expect(code == 2 and "input" in err, f"exit {code}: {err}")


sys.exit(finish("eager", results))
