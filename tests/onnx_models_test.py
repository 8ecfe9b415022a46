#!/usr/bin/env python3
"""Real-model shapes end to end (issue 18 item 4): ResNet-, MobileNet- and
transformer-shaped ONNX models (scripts/models/onnx_models.py, random weights,
fixed seeds) run through the binary under every cleanup strategy and match
their NumPy float64 reference; `graphrun compare model.onnx` shows the three
strategies' memory, and every strategy gives all memory back at teardown.

Usage: onnx_models_test.py GRAPHRUN
"""
import json
import os
import subprocess
import sys
import tempfile

from harness import run_binary  # noqa: E402 (tests/harness.py)

try:
    import numpy as np
    import onnx
except ImportError as e:
    print(f"SKIP: the ONNX model tests need numpy and python3-onnx ({e})")
    sys.exit(0)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "models"))
import onnx_models  # noqa: E402

GRAPHRUN = sys.argv[1]
TMP = tempfile.mkdtemp(prefix="graphrun-models-")
failures = []
# The models' outputs against float64 NumPy: max |error| / max |reference|.
RTOL = 1e-4


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def graphrun(*args):
    return run_binary(GRAPHRUN, args, timeout=300)


def save(name, model):
    path = os.path.join(TMP, name + ".onnx")
    onnx.save(model.proto, path)
    feeds = []
    for k, v in model.feeds.items():
        p = os.path.join(TMP, f"{name}.{k}.npy")
        np.save(p, v)
        feeds.append(f"--input={k}=@{p}")
    return path, feeds


def run_model(name, model):
    path, feeds = save(name, model)
    for cleanup in ("background", "safepoint", "close"):
        out = os.path.join(TMP, f"{name}.{cleanup}.out")
        p = graphrun("run", path, f"--cleanup={cleanup}", "--check-leaks", "--format=json", "--no-data",
                     f"--save={out}", *feeds)
        check(p.returncode == 0, f"{name} ({cleanup}): exit {p.returncode}: {p.stderr[-2000:]}")
        if p.returncode != 0:
            continue
        for oname, want in model.expected.items():
            got = np.load(os.path.join(out, oname + ".npy"))
            check(got.shape == want.shape, f"{name} ({cleanup}): {oname} shape {got.shape} != {want.shape}")
            if got.shape != want.shape:
                continue
            err = float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))
            check(err <= RTOL, f"{name} ({cleanup}): {oname} differs from NumPy: relative error {err:.3g}")
            if cleanup == "safepoint":
                print(f"{name}: {oname} {list(got.shape)} relative error {err:.2e}")
        doc = json.loads(p.stdout.splitlines()[0])
        after = doc["memory"]["after_teardown"]["cpu"]["in_use"]
        check(after == 0, f"{name} ({cleanup}): {after} bytes in use after teardown")
    return path, feeds


def compare(name, path, feeds):
    p = graphrun("compare", path, *feeds)
    check(p.returncode == 0, f"compare {name}: exit {p.returncode}: {p.stderr[-2000:]}")
    check(all(s in p.stdout for s in ("background", "safepoint", "close")), f"compare {name}: {p.stdout}")
    p = graphrun("compare", path, "--format=json", *feeds)
    check(p.returncode == 0, f"compare {name} --format=json: exit {p.returncode}: {p.stderr[-2000:]}")
    if p.returncode != 0:
        return
    peaks = {s["cleanup"]: s["memory"]["cpu"]["peak"] for s in json.loads(p.stdout)["strategies"]}
    # Close holds every tensor to the end: the most memory; safepoint frees at once: the least.
    check(peaks["safepoint"] <= peaks["background"] <= peaks["close"] or peaks["safepoint"] <= peaks["close"],
          f"compare {name}: peaks {peaks}")
    check(peaks["safepoint"] < peaks["close"], f"compare {name}: safepoint frees nothing: {peaks}")
    print(f"{name}: peaks {peaks}")


def main():
    models = {
        "resnet": onnx_models.resnet(blocks=(1, 1, 1), widths=(8, 16, 32), size=32, batch=2, classes=10),
        "mobilenet": onnx_models.mobilenet(size=32, batch=2, classes=10, width=8, last=64,
                                           settings=((1, 8, 1, 1), (6, 12, 2, 2), (6, 16, 2, 2))),
        "transformer": onnx_models.transformer(layers=2, d=32, heads=4, tokens=8, vocab=50, ffn=64, batch=2),
    }
    for name, model in models.items():
        path, feeds = run_model(name, model)
        if name == "resnet":
            compare(name, path, feeds)
    # The script form writes a model and its input for `graphrun run`.
    out = os.path.join(TMP, "r18.onnx")
    p = subprocess.run([sys.executable, onnx_models.__file__, "resnet18", out], capture_output=True, text=True)
    check(p.returncode == 0 and os.path.exists(out) and os.path.exists(out[:-5] + ".input.npz"),
          f"onnx_models.py resnet18: {p.returncode} {p.stderr}")
    if failures:
        print(f"onnx_models: {len(failures)} failed")
        return 1
    print("onnx_models: all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
