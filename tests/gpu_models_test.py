#!/usr/bin/env python3
"""Real-model graphs on the GPU (issue 17): ResNet-, MobileNet- and
transformer-shaped models (scripts/models/onnx_models.py, random weights, fixed
seeds) run whole on the GPU, every node there (--no-soft-placement), under the
three strategies, against their float64 NumPy reference and against the CPU's
run; all memory back at teardown on both devices; the safepoint GPU peak equal
to `graphrun check`'s static peak. What gpu_ops_test.py's op-by-op runs miss:
long chains of GPU kernels feeding each other, and the models' memory.

The GPU machine reaches no package registry and has no ONNX C++ library, so
the models are converted on a machine that has one, into scripts with their
weights beside them (`graphrun convert -o`), and only the scripts travel:

  gpu_models_test.py prepare DIR --graphrun GRAPHRUN   writes DIR/NAME.graph,
      NAME.npz (weights), NAME.input.npz, NAME.expected.npz (the float64
      reference, as float64); scripts/vendor-headers.sh runs it into
      third_party/models
  gpu_models_test.py run DIR GRAPHRUN [--cpu-only]     runs them; without a
      usable GPU it prints SKIP and exits 0; --cpu-only runs the same checks
      on the CPU (what ctest does here: the scripts and the checks are right)
  gpu_models_test.py GRAPHRUN [--cpu-only]             both, in a temporary DIR

Needs numpy; `prepare` also python3-onnx and a graphrun with the ONNX front end.
"""
import argparse
import glob
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gpu_ops_test import gpu_usable  # noqa: E402
from harness import run_binary  # noqa: E402 (tests/harness.py)
from gpu_session_test import torn_down  # noqa: E402

RTOL = 1e-4  # max |error| / max |reference|, as tests/onnx_models_test.py
STRATEGIES = ("background", "safepoint", "close")


def models():
    """The models, small enough to travel (a few MB of weights) and large
    enough that every kernel's grid has many blocks."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts", "models"))
    import onnx_models  # noqa: E402
    return {
        "resnet": onnx_models.resnet(blocks=(1, 1, 1, 1), widths=(16, 32, 64, 128), size=64, batch=4,
                                     classes=100),
        "mobilenet": onnx_models.mobilenet(size=64, batch=4, classes=100, width=16, last=256,
                                           settings=((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 2, 2),
                                                     (6, 64, 2, 2))),
        "transformer": onnx_models.transformer(layers=2, d=128, heads=4, tokens=64, vocab=500, ffn=256,
                                               batch=4),
    }


def prepare(out_dir, graphrun):
    import numpy as np
    import onnx
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gpu_models.") as tmp:
        for name, model in models().items():
            path = os.path.join(tmp, name + ".onnx")
            onnx.save(model.proto, path)
            script = os.path.join(out_dir, name + ".graph")
            p = run_binary(graphrun, ["convert", path, "--to=text", "-o", script], timeout=300)
            if p.returncode != 0:
                sys.exit(f"gpu_models_test: converting {name}: exit {p.returncode}: {p.stderr.strip()}")
            np.savez(os.path.join(out_dir, name + ".input.npz"), **model.feeds)
            np.savez(os.path.join(out_dir, name + ".expected.npz"), **model.expected)
            print(f"prepared {script}")


def run_json(graphrun, args):
    p = run_binary(graphrun, args, timeout=600)
    docs = [json.loads(ln) for ln in p.stdout.splitlines() if ln.strip()]
    return p.returncode, docs, p.stderr


class Checks:
    def __init__(self):
        self.failures = 0
        self.passed = 0

    def check(self, cond, msg):
        if cond:
            self.passed += 1
        else:
            self.failures += 1
            print("FAIL:", msg)
        return cond


def rel_error(got, want):
    import numpy as np
    return float(np.max(np.abs(got.astype(np.float64) - want)) / max(float(np.max(np.abs(want))), 1e-30))


def run_model(c, graphrun, d, name, device, tmp):
    import numpy as np
    script = os.path.join(d, name + ".graph")
    feeds = f"--input=@{os.path.join(d, name + '.input.npz')}"
    expected = np.load(os.path.join(d, name + ".expected.npz"))
    place = ["--device=cpu"] if device == "cpu" else ["--device=gpu", "--no-soft-placement"]
    saved = {}
    peaks = {}
    for cleanup in STRATEGIES:
        out = os.path.join(tmp, f"{name}.{device}.{cleanup}")
        code, docs, err = run_json(graphrun, ["run", script, feeds, *place, f"--cleanup={cleanup}",
                                              "--check-leaks", "--format=json", "--no-data", f"--save={out}"])
        what = f"{name} on {device} ({cleanup})"
        if not c.check(code == 0 and len(docs) == 1, f"{what}: exit {code}: {err.strip()[-2000:]}"):
            continue
        doc = docs[0]
        for o in doc["outputs"]:
            c.check(o["device"] == device if device == "cpu" else o["device"].startswith("gpu"),
                    f"{what}: output {o['name']} on {o['device']}")
        bad = torn_down(doc)
        c.check(not bad, f"{what}: {'; '.join(bad)}")
        peaks[cleanup] = {dev: s["peak"] for dev, s in doc["memory"]["before_teardown"].items()}
        for oname in expected.files:
            path = os.path.join(out, oname + ".npy")
            if not c.check(os.path.exists(path), f"{what}: no output {oname}"):
                continue
            got = np.load(path)
            want = expected[oname]
            if not c.check(got.shape == want.shape, f"{what}: {oname} shape {got.shape}, reference {want.shape}"):
                continue
            err = rel_error(got, want)
            c.check(err <= RTOL, f"{what}: {oname} differs from NumPy: relative error {err:.3g}")
            saved.setdefault(oname, got)
            if cleanup == "safepoint":
                print(f"{name} on {device}: {oname} {list(got.shape)} relative error {err:.2e} against NumPy")
    # The safepoint peak of one pass is the static plan's, per device.
    code, docs, err = run_json(graphrun, ["check", script, *place, "--format=json"])
    if c.check(code == 0 and docs, f"check {name} on {device}: exit {code}: {err.strip()[-1500:]}"):
        static = docs[0]["static_peak"]
        if "safepoint" in peaks:
            for dev, peak in peaks["safepoint"].items():
                c.check(static.get(dev, 0) == peak,
                        f"{name} on {device}: safepoint peak on {dev} {peak}, static peak {static.get(dev, 0)}")
        if "close" in peaks and "safepoint" in peaks:
            main = "cpu" if device == "cpu" else next((k for k in peaks["close"] if k.startswith("gpu")), "cpu")
            c.check(peaks["close"].get(main, 0) > peaks["safepoint"].get(main, 0),
                    f"{name} on {device}: close peak {peaks['close']} not above safepoint's {peaks['safepoint']}")
            print(f"{name} on {device}: peak {main} safepoint {peaks['safepoint'].get(main)}, "
                  f"background {peaks.get('background', {}).get(main)}, close {peaks['close'].get(main)}; "
                  f"static {static.get(main)}")
    return saved


def run_all(d, graphrun, cpu_only):
    scripts = sorted(glob.glob(os.path.join(d, "*.graph")))
    if not scripts:
        print(f"FAIL: no model scripts in {d} (scripts/vendor-headers.sh, or `gpu_models_test.py prepare`)")
        return 1
    if not cpu_only:
        ok, why = gpu_usable(graphrun)
        if not ok:
            print(f"SKIP: no usable GPU: {why}")
            return 0
    c = Checks()
    with tempfile.TemporaryDirectory(prefix="gpu_models.") as tmp:
        for script in scripts:
            name = os.path.basename(script)[:-len(".graph")]
            if cpu_only:
                run_model(c, graphrun, d, name, "cpu", tmp)
                continue
            gpu = run_model(c, graphrun, d, name, "gpu", tmp)
            cpu = run_model(c, graphrun, d, name, "cpu", tmp)
            for oname, g in gpu.items():
                if oname in cpu and g.shape == cpu[oname].shape:
                    err = rel_error(g, cpu[oname].astype("float64"))
                    c.check(err <= RTOL, f"{name}: {oname} on the GPU differs from the CPU: {err:.3g}")
                    print(f"{name}: {oname} GPU against CPU: relative difference {err:.2e}")
    mode = "cpu-only" if cpu_only else "gpu"
    print(f"gpu models ({mode}): {c.passed} passed, {c.failures} failed")
    return 1 if c.failures else 0


def main():
    argv = sys.argv[1:]
    if argv and argv[0] == "prepare":
        ap = argparse.ArgumentParser(prog="gpu_models_test.py prepare")
        ap.add_argument("dir")
        ap.add_argument("--graphrun", required=True)
        a = ap.parse_args(argv[1:])
        prepare(a.dir, a.graphrun)
        return 0
    if argv and argv[0] == "run":
        ap = argparse.ArgumentParser(prog="gpu_models_test.py run")
        ap.add_argument("dir")
        ap.add_argument("graphrun")
        ap.add_argument("--cpu-only", action="store_true")
        a = ap.parse_args(argv[1:])
        try:
            import numpy  # noqa: F401
        except ImportError as e:
            print(f"SKIP: the model tests need numpy ({e})")
            return 0
        return run_all(a.dir, a.graphrun, a.cpu_only)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("graphrun")
    ap.add_argument("--cpu-only", action="store_true")
    a = ap.parse_args(argv)
    try:
        import numpy  # noqa: F401
        import onnx  # noqa: F401
    except ImportError as e:
        print(f"SKIP: the model tests need numpy and python3-onnx ({e})")
        return 0
    if not a.cpu_only:
        ok, why = gpu_usable(a.graphrun)
        if not ok:
            print(f"SKIP: no usable GPU: {why}")
            return 0
    with tempfile.TemporaryDirectory(prefix="gpu_models.") as d:
        prepare(d, a.graphrun)
        return run_all(d, a.graphrun, a.cpu_only)


if __name__ == "__main__":
    sys.exit(main())
