#!/usr/bin/env python3
"""Runs two graphrun binaries on every example, golden script and ONNX model
and says where their output differs: for a change that must not change what
a user sees (a refactor of the engine). Each file is checked (`check`, text)
and run (`run --format=json`, text with values) under each cleanup strategy
with two iterations, in eager mode, and compared (`compare --mode=both`), CPU only, inputs filled at random from one seed.
Timings and the process's resident memory are the only fields left out of
the comparison (they differ from run to run); the text output is compared
with its `run ... ms` and `rss` figures masked.

Usage: compare-binaries.py OLD_GRAPHRUN NEW_GRAPHRUN [FILE...]
(without FILEs: scripts/examples, tests/scripts, tests/fuzz/seeds/onnx, and
three small ONNX models written by scripts/models/onnx_models.py when its
dependencies are installed). Exit 1 when anything differs."""
import atexit
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def files():
    out = []
    for pattern in ("scripts/examples/*.graph", "scripts/examples/*.json", "tests/scripts/*.graph",
                    "tests/scripts/*.json", "tests/fuzz/seeds/onnx/*.onnx"):
        out += sorted(glob.glob(os.path.join(ROOT, pattern)))
    try:
        sys.path.insert(0, os.path.join(ROOT, "scripts", "models"))
        import onnx  # noqa: F401
        import onnx_models
        tmp = tempfile.mkdtemp(prefix="graphrun-compare-")
        atexit.register(shutil.rmtree, tmp, True)
        models = {
            "resnet": onnx_models.resnet(blocks=(1, 1, 1), widths=(8, 16, 32), size=32, batch=2, classes=10,
                                         reference=False),
            "mobilenet": onnx_models.mobilenet(size=32, batch=2, classes=10, width=8, last=64, reference=False,
                                               settings=((1, 8, 1, 1), (6, 12, 2, 2), (6, 16, 2, 2))),
            "transformer": onnx_models.transformer(layers=2, d=32, heads=4, tokens=8, vocab=50, ffn=64, batch=2,
                                                   reference=False),
        }
        for name, m in models.items():
            path = os.path.join(tmp, name + ".onnx")
            onnx.save(m.proto, path)
            out.append(path)
    except ImportError as e:
        print(f"(no generated ONNX models: {e})")
    return out


TIMING = re.compile(r"(run|teardown) [0-9.e+-]+ ms|[0-9.]+ ms|rss[^\n]*|resident[^\n]*")


# Under background the reclaimer thread races the executor: how much is
# pending, freed or live when a figure is taken, and so the peaks, vary from
# run to run. Only its values and its after-teardown zeros are compared.
RACY = ("in_use", "peak", "pending", "pending_peak", "reserved", "frees", "live", "series", "pending_at_end")


def strip_json(doc, racy=False):
    if isinstance(doc, dict):
        racy = racy or doc.get("cleanup") == "background"
        return {k: strip_json(v, racy) for k, v in doc.items()
                if k not in ("run_ms", "teardown_ms", "system", "ms", "time_ms") and not (racy and k in RACY)}
    if isinstance(doc, list):
        return [strip_json(v, racy) for v in doc]
    return doc


def run(binary, args, cwd):
    p = subprocess.run([binary] + args, capture_output=True, text=True, timeout=300, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    old, new = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    paths = [os.path.abspath(p) for p in sys.argv[3:]] or files()
    differ = 0
    compared = 0
    for path in paths:
        cwd = os.path.dirname(path)
        variants = [["check", path, "--device=cpu"]]
        for cleanup in ("background", "safepoint", "close"):
            variants.append(["run", path, "--device=cpu", "--fill=random", "--seed=7", "--iterations=2",
                             f"--cleanup={cleanup}", "--format=json", "--threads=1"])
        variants.append(["run", path, "--device=cpu", "--fill=random", "--seed=7", "--threads=1",
                         "--cleanup=safepoint"])
        variants.append(["run", path, "--device=cpu", "--fill=random", "--seed=7", "--threads=1", "--mode=eager",
                         "--iterations=2", "--format=json", "--cleanup=close"])
        variants.append(["compare", path, "--device=cpu", "--fill=random", "--seed=7", "--threads=1",
                         "--mode=both", "--format=json"])
        for args in variants:
            a, b = run(old, args, cwd), run(new, args, cwd)
            compared += 1
            if "--format=json" in args and a[0] == b[0] and a[1] and b[1]:
                racy = args[0] == "run" and "--cleanup=safepoint" not in args and "--cleanup=close" not in args
                try:
                    same_out = strip_json(json.loads(a[1]), racy) == strip_json(json.loads(b[1]), racy)
                except json.JSONDecodeError:
                    same_out = a[1] == b[1]
            else:
                same_out = TIMING.sub("<t>", a[1]) == TIMING.sub("<t>", b[1])
            if a[0] != b[0] or not same_out or a[2] != b[2]:
                differ += 1
                print(f"DIFFERS: {' '.join(args)}: exit {a[0]} vs {b[0]}")
                if a[2] != b[2]:
                    print(f"  stderr old: {a[2][:400]!r}\n  stderr new: {b[2][:400]!r}")
                if not same_out:
                    print(f"  stdout old: {a[1][:600]!r}\n  stdout new: {b[1][:600]!r}")
    print(f"compare-binaries: {compared} commands over {len(paths)} files, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
