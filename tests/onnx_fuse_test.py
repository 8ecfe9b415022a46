#!/usr/bin/env python3
"""The fusion pass end to end (issue 25 item 2): ResNet-, MobileNet- and
transformer-shaped ONNX models (scripts/models/onnx_models.py) run fused (the
default) and with --no-fuse. Both match the NumPy float64 reference and each
other; `check` lists what was fused (text and JSON); the fused plan holds
fewer weights and a lower static peak, and each safepoint run peaks at its
own plan's static peak; a fetched intermediate is not fused away.

Usage: onnx_fuse_test.py GRAPHRUN
"""
import json
import os
import sys
import tempfile

from harness import run_binary  # noqa: E402 (tests/harness.py)

try:
    import numpy as np
    import onnx
except ImportError as e:
    print(f"SKIP: the fusion tests need numpy and python3-onnx ({e})")
    sys.exit(0)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "models"))
import onnx_models  # noqa: E402

GRAPHRUN = sys.argv[1]
TMP = tempfile.mkdtemp(prefix="graphrun-fuse-")
failures = []
RTOL = 1e-5  # fused against unfused, and each against float64 NumPy: max |error| / max |reference|


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def graphrun(*args, env=None):
    return run_binary(GRAPHRUN, args, timeout=300, env=env)


def save(name, model):
    path = os.path.join(TMP, name + ".onnx")
    onnx.save(model.proto, path)
    feeds = []
    for k, v in model.feeds.items():
        p = os.path.join(TMP, f"{name}.{k}.npy")
        np.save(p, v)
        feeds.append(f"--input={k}=@{p}")
    return path, feeds


def plan_of(path, *extra, env=None):
    p = graphrun("check", path, "--format=json", *extra, env=env)
    check(p.returncode == 0, f"check {path} {extra}: exit {p.returncode}: {p.stderr[-2000:]}")
    return json.loads(p.stdout) if p.returncode == 0 else None


def run(name, path, feeds, *extra):
    """Runs once under safepoint; the outputs (by name) and the JSON document."""
    out = os.path.join(TMP, f"{name}{'.'.join(extra).replace('-', '').replace('=', '_')}.out")
    p = graphrun("run", path, "--cleanup=safepoint", "--check-leaks", "--format=json", "--no-data",
                 f"--save={out}", *feeds, *extra)
    check(p.returncode == 0, f"run {name} {extra}: exit {p.returncode}: {p.stderr[-2000:]}")
    if p.returncode != 0:
        return None, None
    doc = json.loads(p.stdout.splitlines()[0])
    got = {o["name"]: np.load(os.path.join(out, o["name"] + ".npy")) for o in doc["outputs"]}
    return got, doc


def rel_error(got, want):
    return float(np.max(np.abs(got.astype(np.float64) - want)) / max(np.max(np.abs(want)), 1e-30))


def fused_kinds(plan):
    return {" + ".join(p["op"] for p in f["fused"]) for f in plan["fused"]}


def check_model(name, model, want_kinds):
    path, feeds = save(name, model)
    fused, unfused = plan_of(path), plan_of(path, "--no-fuse")
    if not fused or not unfused:
        return
    check(unfused["fused"] == [], f"{name}: --no-fuse still fused {unfused['fused'][:2]}")
    kinds = fused_kinds(fused)
    for k in want_kinds:
        check(k in kinds, f"{name}: no '{k}' among the fused nodes {sorted(kinds)}")
    node_names = {n["name"] for n in fused["nodes"]}
    for f in fused["fused"]:
        # The fused node keeps its chain's last name and output; the others left the graph.
        check(f["node"] == f["fused"][-1]["name"], f"{name}: fused node {f['node']} is not its chain's last {f}")
        if f["fused"][0]["op"] in ("conv", "matmul", "gemm"):
            check(f["op"] == f["fused"][0]["op"], f"{name}: fused node {f['node']} runs {f['op']}, not its head's op")
        for part in f["fused"][:-1]:
            check(part["name"] not in node_names, f"{name}: {part['name']} was fused into {f['node']} but stayed")
    check(len(fused["nodes"]) < len(unfused["nodes"]), f"{name}: fusing left {len(fused['nodes'])} nodes")
    # What fusion does to the weights (folding drops the batch norms' vectors) is
    # measured without oneDNN: with it the pre-pack pass holds the weights in its
    # kernels' layouts, padded on some CPUs (AVX-512's GEMM panels to 64 columns,
    # conv filters to 16 channels: this model's 32-wide weights double there).
    plain = plan_of(path, env={"GRAPHRUN_NO_DNNL": "1"})
    if plain:
        check(plain["fused"] != [], f"{name}: nothing fused without oneDNN")
        check(plain["weights"]["cpu"] <= unfused["weights"]["cpu"],
              f"{name}: fusing grew the weights from {unfused['weights']['cpu']} to {plain['weights']['cpu']}")
    check(fused["static_peak"]["cpu"] <= unfused["static_peak"]["cpu"],
          f"{name}: static peak grew from {unfused['static_peak']['cpu']} to {fused['static_peak']['cpu']}")
    text = graphrun("check", path)
    check("fused (one kernel each; --no-fuse runs them apart):" in text.stdout, f"{name}: check text: {text.stdout}")
    first = fused["fused"][0]
    line = f"  {first['node']}: " + " + ".join(p["op"] for p in first["fused"])
    check(line in text.stdout, f"{name}: check text has no line '{line}'")

    got_f, doc_f = run(name, path, feeds)
    got_u, doc_u = run(name, path, feeds, "--no-fuse")
    if got_f is None or got_u is None:
        return fused, unfused, plain
    for doc, plan, how in ((doc_f, fused, "fused"), (doc_u, unfused, "unfused")):
        mem = doc["memory"]["before_teardown"]["cpu"]
        check(mem["peak"] == plan["static_peak"]["cpu"],
              f"{name} ({how}): safepoint peak {mem['peak']} != static peak {plan['static_peak']['cpu']}")
        check(mem["weights"] == plan["weights"]["cpu"],
              f"{name} ({how}): weights {mem['weights']} != check's {plan['weights']['cpu']}")
        after = doc["memory"]["after_teardown"]["cpu"]
        check(after["in_use"] == 0 and after["weights"] == 0 and after["workspace"] == 0,
              f"{name} ({how}): left after teardown: {after}")
    for oname, want in model.expected.items():
        a, b = got_f[oname], got_u[oname]
        check(a.shape == want.shape and b.shape == want.shape, f"{name}: {oname} shapes {a.shape} {b.shape}")
        e_fu = rel_error(a, b.astype(np.float64))
        e_f, e_u = rel_error(a, want), rel_error(b, want)
        check(e_fu <= RTOL, f"{name}: {oname} fused differs from --no-fuse by {e_fu:.3g}")
        check(np.allclose(a, b, rtol=RTOL, atol=RTOL * float(np.max(np.abs(b)))),
              f"{name}: {oname} fused and --no-fuse not allclose")
        check(e_f <= RTOL, f"{name}: {oname} fused differs from NumPy by {e_f:.3g}")
        check(e_u <= RTOL, f"{name}: {oname} --no-fuse differs from NumPy by {e_u:.3g}")
        print(f"{name}: {len(fused['fused'])} fused nodes ({len(unfused['nodes'])} -> {len(fused['nodes'])} nodes), "
              f"static peak {unfused['static_peak']['cpu']} -> {fused['static_peak']['cpu']}, weights "
              f"{unfused['weights']['cpu']} -> {fused['weights']['cpu']}; {oname} error vs NumPy fused {e_f:.2e}, "
              f"unfused {e_u:.2e}, between them {e_fu:.2e}")
    return fused, unfused, plain


def fetched_intermediate(name, model, fused):
    """--fetch of a value inside a chain keeps that value: its chain stops there."""
    path, feeds = save(name, model)
    chain = next(f for f in fused["fused"] if len(f["fused"]) >= 3)
    middle = chain["fused"][1]["name"]  # e.g. the batch_norm between a conv and its relu
    out = next(iter(model.expected))
    plan = plan_of(path, f"--fetch={middle}", f"--fetch={out}")
    if not plan:
        return
    owners = {p["name"]: f["node"] for f in plan["fused"] for p in f["fused"][:-1]}
    check(middle not in owners, f"{name}: fetched {middle} was fused into {owners.get(middle)}")
    check(middle in {n["name"] for n in plan["nodes"]}, f"{name}: fetched {middle} is not a node")
    got_f, _ = run(name + "_fetch", path, feeds, f"--fetch={middle}", f"--fetch={out}")
    got_u, _ = run(name + "_fetch", path, feeds, f"--fetch={middle}", f"--fetch={out}", "--no-fuse")
    if got_f is None or got_u is None:
        return
    for k in (middle, out):
        e = rel_error(got_f[k], got_u[k].astype(np.float64))
        check(e <= RTOL, f"{name}: fetched {k} differs from --no-fuse by {e:.3g}")
    print(f"{name}: --fetch={middle} keeps it ({chain['node']} fused without it)")


def main():
    resnet = onnx_models.resnet(blocks=(1, 1, 1), widths=(8, 16, 32), size=32, batch=2, classes=10)
    mobilenet = onnx_models.mobilenet(size=32, batch=2, classes=10, width=8, last=64,
                                      settings=((1, 8, 1, 1), (6, 12, 2, 2), (6, 16, 2, 2)))
    transformer = onnx_models.transformer(layers=2, d=32, heads=4, tokens=8, vocab=50, ffn=64, batch=2)
    plans = check_model("resnet", resnet, ["conv + batch_norm + relu", "conv + batch_norm + add + relu",
                                           "conv + batch_norm"])
    if plans:
        fused, unfused, plain = plans
        # The small model's peak is its input and first conv; what a pass allocates shrinks.
        check(fused["close_growth"]["cpu"] < unfused["close_growth"]["cpu"],
              f"resnet: fusing did not lower the close growth {fused['close_growth']} {unfused['close_growth']}")
        check(plain and plain["weights"]["cpu"] < unfused["weights"]["cpu"], "resnet: folding did not shrink the weights")
        fetched_intermediate("resnet", resnet, fused)
    plans = check_model("mobilenet", mobilenet, ["conv + batch_norm + clip", "conv + batch_norm + add"])
    if plans:
        check(plans[0]["static_peak"]["cpu"] < plans[1]["static_peak"]["cpu"], "mobilenet: fusing did not lower the peak")
    # The erf GELU the exporter writes out (div, erf, add, mul, mul) goes into its matmul too,
    # and attention is one node: the head split's transposes of q, k and v, kᵀ's transpose, the
    # scale, softmax, @ v, and the heads' merge.
    check_model("transformer", transformer, ["matmul + add", "matmul + add + add",
                                             "matmul + add + div + erf + mul + add + mul",
                                             "transpose + transpose + transpose + transpose + matmul + mul"
                                             " + softmax + matmul + transpose"])
    if failures:
        print(f"onnx_fuse: {len(failures)} failed")
        return 1
    print("onnx_fuse: all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
