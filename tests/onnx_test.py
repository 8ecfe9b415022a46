#!/usr/bin/env python3
"""The ONNX front end through the real binary: models built here with ONNX's
helper API (fixed seeds), run by graphrun, compared with NumPy in float64.

Usage: onnx_test.py GRAPHRUN
"""
import json
import os
import sys
import tempfile

from harness import run_binary  # noqa: E402 (tests/harness.py)

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    print(f"SKIP: the ONNX tests need numpy and python3-onnx ({e})")
    sys.exit(0)

GRAPHRUN = sys.argv[1]
failures = []
TMP = tempfile.mkdtemp(prefix="graphrun-onnx-")


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def save_model(name, nodes, inputs, outputs, inits=(), opset=13, value_info=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits), value_info=list(value_info))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    path = os.path.join(TMP, name + ".onnx")
    onnx.save(model, path)
    return path


def graphrun(*args):
    return run_binary(GRAPHRUN, args, timeout=120)


def run_with(path, feeds, *extra):
    args = ["run", path, "--cleanup=safepoint"]
    for i, (name, value) in enumerate(feeds.items()):
        p = os.path.join(TMP, f"{os.path.basename(path)}.in{i}.npy")
        np.save(p, value)
        args.append(f"--input={name}=@{p}")
    out = os.path.join(TMP, os.path.basename(path) + ".out")
    args.append(f"--save={out}")
    p = graphrun(*args, *extra)
    results = {}
    if p.returncode == 0:
        for f in os.listdir(out):
            results[f[:-4]] = np.load(os.path.join(out, f))
    return p, results


def close(got, want, rtol=1e-5, atol=1e-6):
    return got is not None and got.shape == want.shape and np.allclose(got, want, rtol=rtol, atol=atol)


rng = np.random.default_rng(7)
f32 = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731


def mlp():
    """MatMul + Add + Relu, Gemm with transB/alpha/beta, Softmax: a classifier head."""
    w1, b1, w2, b2 = f32(8, 16), f32(16), f32(5, 16), f32(5)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        helper.make_node("Add", ["h", "b1"], ["hb"], name="bias1"),
        helper.make_node("Relu", ["hb"], ["a"], name="relu1"),
        helper.make_node("Gemm", ["a", "w2", "b2"], ["logits"], name="fc2", transB=1, alpha=0.5, beta=2.0),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    inits = [numpy_helper.from_array(v, n) for v, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))]
    path = save_model("mlp", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
                      [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [4, 5])], inits)
    x = f32(4, 8)
    p, out = run_with(path, {"x": x})
    check(p.returncode == 0, f"mlp: exit {p.returncode}: {p.stderr}")
    a = np.maximum(x.astype(np.float64) @ w1 + b1, 0)
    logits = 0.5 * a @ w2.T.astype(np.float64) + 2.0 * b2
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    check(close(out.get("probs"), e / e.sum(axis=-1, keepdims=True)), f"mlp: probs differ: {out.get('probs')}")
    # The statistics: the run's memory tables are printed as for any graph.
    check("memory after teardown" in p.stdout, "mlp: statistics printed")
    return path


def shape_folding():
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as exporters write a flatten."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes0"], ["batch1"]),
        helper.make_node("Concat", ["batch1", "minus1"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["flat"]),
        helper.make_node("Flatten", ["x"], ["flat2"], axis=2),
        helper.make_node("Unsqueeze", ["flat", "axes0"], ["u"]),
        helper.make_node("Squeeze", ["u", "axes0"], ["sq"]),
        helper.make_node("Transpose", ["sq"], ["t"], perm=[1, 0]),
    ]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array([0], np.int64), "axes0"),
             numpy_helper.from_array(np.array([-1], np.int64), "minus1")]
    path = save_model("fold", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
                      [helper.make_tensor_value_info("t", TensorProto.FLOAT, [12, 2]),
                       helper.make_tensor_value_info("flat2", TensorProto.FLOAT, [6, 4])], inits)
    x = f32(2, 3, 4)
    p, out = run_with(path, {"x": x})
    check(p.returncode == 0, f"fold: exit {p.returncode}: {p.stderr}")
    check(close(out.get("t"), x.reshape(2, 12).T), "fold: t differs")
    check(close(out.get("flat2"), x.reshape(6, 4)), "fold: flat2 differs")
    # Nothing of the shape arithmetic is left in the graph graphrun runs.
    c = graphrun("check", "--format=json", path)
    check(c.returncode == 0, f"fold: check exit {c.returncode}: {c.stderr}")
    if c.returncode == 0:
        ops = [n["op"] for n in json.loads(c.stdout)["nodes"]]
        check("gather" not in ops and ops.count("reshape") <= 4 and json.loads(c.stdout)["format"] == "onnx",
              f"fold: ops left {ops}")


def legacy_softmax():
    """Opset 11 Softmax coerces its input to 2-D at axis (default 1)."""
    path = save_model("softmax11", [helper.make_node("Softmax", ["x"], ["y"])],
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4])], opset=11)
    x = f32(2, 3, 4)
    p, out = run_with(path, {"x": x})
    check(p.returncode == 0, f"softmax11: exit {p.returncode}: {p.stderr}")
    flat = x.reshape(2, 12).astype(np.float64)
    e = np.exp(flat - flat.max(axis=1, keepdims=True))
    check(close(out.get("y"), (e / e.sum(axis=1, keepdims=True)).reshape(2, 3, 4)), "softmax11: y differs")


def unsupported_listed():
    """Every unsupported op is listed with its node names, before anything runs (exit 2)."""
    # (Conv was the example until graphrun had it; Det has no graphrun op.)
    nodes = [helper.make_node("Det", ["x"], ["d1"], name="det1"),
             helper.make_node("Det", ["x"], ["d2"], name="det2"),
             helper.make_node("LpNormalization", ["x"], ["y"], name="norm")]
    path = save_model("unsupported", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 5, 5])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 5, 5])],
                      [numpy_helper.from_array(f32(1, 1, 1, 1), "w")])
    p = graphrun("run", path)
    check(p.returncode == 3, f"unsupported (exit 3 expected): exit {p.returncode}")
    check("Det (2 nodes: det1, det2)" in p.stderr and "LpNormalization (1 node: norm)" in p.stderr,
          f"unsupported: message {p.stderr}")
    check("memory" not in p.stdout, "unsupported: nothing ran")


def bad_files():
    path = os.path.join(TMP, "garbage.onnx")
    with open(path, "wb") as f:
        f.write(b"\x08\x07\x12\xff\xff\xff\xff\x0fnot a model")
    p = graphrun("run", path)
    check(p.returncode == 3 and "garbage.onnx" in p.stderr and "ONNX" in p.stderr, f"garbage: {p.returncode} {p.stderr}")
    path = os.path.join(TMP, "empty.onnx")
    open(path, "wb").close()
    p = graphrun("check", path)
    check(p.returncode == 3 and "empty.onnx" in p.stderr, f"empty: {p.returncode} {p.stderr}")
    # An opset graphrun does not read.
    path = save_model("opset5", [helper.make_node("Relu", ["x"], ["y"])],
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], opset=18)
    p = graphrun("check", path)
    check(p.returncode == 3 and "opset 18" in p.stderr, f"opset: {p.returncode} {p.stderr}")
    # An element type graphrun does not have (in a model ONNX accepts: Identity takes uint8, Relu does not).
    path = save_model("uint8", [helper.make_node("Identity", ["x"], ["y"])],
                      [helper.make_tensor_value_info("x", TensorProto.UINT8, [2])],
                      [helper.make_tensor_value_info("y", TensorProto.UINT8, [2])])
    p = graphrun("check", path)
    check(p.returncode == 3 and "UINT8" in p.stderr and "'x'" in p.stderr, f"uint8: {p.returncode} {p.stderr}")


def free_dimension():
    """A symbolic batch dimension is taken as 1, with a warning."""
    path = save_model("batch", [helper.make_node("Relu", ["x"], ["y"])],
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])])
    x = f32(1, 3)
    p, out = run_with(path, {"x": x})
    check(p.returncode == 0 and "'N'" in p.stderr and "taken as 1" in p.stderr, f"batch: {p.returncode} {p.stderr}")
    check(close(out.get("y"), np.maximum(x, 0)), "batch: y differs")


def convert_round_trip(mlp_path):
    """convert model.onnx --to=graph gives a script that runs to the same results."""
    for fmt, ext in (("text", ".graph"), ("json", ".json")):
        p = graphrun("convert", mlp_path, f"--to={fmt}")
        check(p.returncode == 0, f"convert --to={fmt}: exit {p.returncode}: {p.stderr}")
        script = os.path.join(TMP, "mlp_converted" + ext)
        with open(script, "w") as f:
            f.write(p.stdout)
        x = f32(4, 8)
        a = run_with(mlp_path, {"x": x})[1].get("probs")
        b = run_with(script, {"x": x})[1].get("probs")
        check(a is not None and b is not None and np.array_equal(a, b), f"convert --to={fmt}: results differ")


def main():
    mlp_path = mlp()
    shape_folding()
    legacy_softmax()
    unsupported_listed()
    bad_files()
    free_dimension()
    convert_round_trip(mlp_path)
    if failures:
        print(f"onnx: {len(failures)} failed")
        return 1
    print("onnx: all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
