#!/usr/bin/env python3
"""ONNX's Gemm, LayerNormalization and BatchNormalization through the real
binary (models built with onnx.helper, fixed seeds, compared with NumPy in
float64), and `graphrun convert -o` with its side .npz: the script and the
side file run to the same results as the model, and every broken reference
(missing file, key, another shape or dtype) is an error at its place.

Usage: onnx_norm_test.py GRAPHRUN
"""
import json
import os
import shutil
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

GRAPHRUN = os.path.abspath(sys.argv[1])
failures = []
TMP = tempfile.mkdtemp(prefix="graphrun-onnx-norm-")
rng = np.random.default_rng(18)


def f32(*s):
    return rng.standard_normal(s).astype(np.float32)


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def graphrun(*args, cwd=None):
    return run_binary(GRAPHRUN, args, timeout=120, cwd=cwd)


def save_model(name, nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    path = os.path.join(TMP, name + ".onnx")
    onnx.save(model, path)
    return path


def run_with(path, feeds):
    args = ["run", path]
    for i, (name, value) in enumerate(feeds.items()):
        p = os.path.join(TMP, f"{os.path.basename(path)}.in{i}.npy")
        np.save(p, value)
        args.append(f"--input={name}=@{p}")
    out = os.path.join(TMP, os.path.basename(path) + ".out.npz")
    p = graphrun(*args, f"--save={out}")
    return p, (dict(np.load(out)) if p.returncode == 0 else {})


def close(got, want, rtol=1e-5, atol=1e-5):
    return got is not None and got.shape == want.shape and np.allclose(got, want, rtol=rtol, atol=atol)


def ops_of(path):
    c = graphrun("check", "--format=json", path)
    return [n["op"] for n in json.loads(c.stdout)["nodes"]] if c.returncode == 0 else None


def layer_norm_ref(x, s, b, axis, eps):
    x = x.astype(np.float64)
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    inv = 1 / np.sqrt(var + eps)
    return (x - mean) * inv * s + (0 if b is None else b), mean, inv


def transformer_block():
    """Gemm (transB, bias) -> LayerNormalization with Mean/InvStdDev -> Gemm without C, alpha."""
    w1, b1, s, b, w2 = f32(48, 32), f32(48), f32(48), f32(48), f32(48, 10)
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1, name="fc1"),
             helper.make_node("LayerNormalization", ["h", "s", "b"], ["y", "mean", "inv"], axis=-1, epsilon=1e-3,
                              name="ln"),
             helper.make_node("Gemm", ["y", "w2"], ["z"], alpha=0.25, name="fc2")]
    inits = [numpy_helper.from_array(v, n) for v, n in ((w1, "w1"), (b1, "b1"), (s, "s"), (b, "b"), (w2, "w2"))]
    path = save_model("block", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 32])],
                      [helper.make_tensor_value_info("z", TensorProto.FLOAT, [6, 10]),
                       helper.make_tensor_value_info("mean", TensorProto.FLOAT, [6, 1]),
                       helper.make_tensor_value_info("inv", TensorProto.FLOAT, [6, 1])], inits)
    x = f32(6, 32)
    p, out = run_with(path, {"x": x})
    check(p.returncode == 0, f"block: exit {p.returncode}: {p.stderr}")
    h = x.astype(np.float64) @ w1.T + b1
    y, mean, inv = layer_norm_ref(h, s, b, -1, np.float32(1e-3))
    check(close(out.get("z"), 0.25 * y @ w2), "block: z differs")
    check(close(out.get("mean"), mean), "block: Mean differs")
    check(close(out.get("inv"), inv, rtol=1e-4), "block: InvStdDev differs")
    ops = ops_of(path)
    check(ops is not None and ops.count("gemm") == 2 and "layer_norm" in ops and "matmul" not in ops,
          f"block: ops {ops}")
    return path, x


def batch_norm_model():
    """BatchNormalization (opset 15, inference) on [N, C, H, W]; training_mode=1 refused."""
    sc, bi, mu, var = f32(4), f32(4), f32(4), np.abs(f32(4)) + 0.5
    inits = [numpy_helper.from_array(v, n) for v, n in ((sc, "sc"), (bi, "bi"), (mu, "mu"), (var, "var"))]
    io = ([helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 3, 3])],
          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, 3, 3])])
    path = save_model("bn", [helper.make_node("BatchNormalization", ["x", "sc", "bi", "mu", "var"], ["y"],
                                              epsilon=1e-2, name="bn1")], *io, inits, opset=15)
    x = f32(2, 4, 3, 3)
    p, out = run_with(path, {"x": x})
    check(p.returncode == 0, f"bn: exit {p.returncode}: {p.stderr}")
    r = lambda v: v.astype(np.float64).reshape(1, 4, 1, 1)  # noqa: E731
    want = (x - r(mu)) / np.sqrt(r(var) + np.float32(1e-2)) * r(sc) + r(bi)
    check(close(out.get("y"), want), "bn: y differs")
    path = save_model("bn_train", [helper.make_node("BatchNormalization", ["x", "sc", "bi", "mu", "var"],
                                                    ["y", "rm", "rv"], training_mode=1, name="bn_t")],
                      *io, inits, opset=15)
    p = graphrun("check", path)
    check(p.returncode == 3 and "bn_t" in p.stderr and "training_mode=1 is not supported" in p.stderr,
          f"bn_train: exit {p.returncode}: {p.stderr}")


def convert_side_file(path, x):
    """convert -o: large initializers (w1: 1536 elements) in the side .npz, small ones inline."""
    want = run_with(path, {"x": x})[1]
    p = graphrun("convert", path, "--to=text")
    check(p.returncode == 2 and "-o FILE" in p.stderr and "'w1', f32[48,32]" in p.stderr,
          f"convert to stdout with a large initializer: exit {p.returncode}: {p.stderr}")
    d = os.path.join(TMP, "conv")
    os.makedirs(d)
    for form, name in (("text", "block.graph"), ("json", "block.json")):
        out = os.path.join(d, name)
        p = graphrun("convert", path, f"--to={form}", "-o", out)
        check(p.returncode == 0 and p.stdout == "", f"convert -o {name}: exit {p.returncode}: {p.stderr}")
        side = os.path.join(d, "block.npz")
        check(os.path.exists(side), f"convert -o {name}: no side file")
        if not os.path.exists(side):
            continue
        with np.load(side) as z:
            check(sorted(z.files) == ["w1"], f"convert -o {name}: side file holds {sorted(z.files)}")
        text = open(out).read()
        check('"file": "block.npz"' in text or 'file="block.npz"' in text, f"convert -o {name}: no reference")
        got = run_with(out, {"x": x})[1]
        check(all(np.array_equal(got.get(k), v) for k, v in want.items()), f"convert -o {name}: results differ")
        # Relative to the script's directory, wherever it is run from.
        p = graphrun("check", name, cwd=d)
        check(p.returncode == 0, f"check {name} from its directory: {p.stderr}")
    # --inline-limit: 0 sends every initializer to the side file; a large one inlines them all.
    out = os.path.join(d, "all.graph")
    p = graphrun("convert", path, "--to=text", "-o", out, "--inline-limit=0")
    with np.load(os.path.join(d, "all.npz")) as z:
        check(p.returncode == 0 and {"b", "b1", "s", "w1", "w2"} <= set(z.files), f"inline-limit=0: {z.files}")
    check(all(np.array_equal(run_with(out, {"x": x})[1].get(k), v) for k, v in want.items()),
          "inline-limit=0: results differ")
    p = graphrun("convert", path, "--to=json", "--inline-limit=100000")
    check(p.returncode == 0 and '"file"' not in p.stdout, f"inline-limit=100000: exit {p.returncode} {p.stderr}")
    p = graphrun("convert", path, "--to=json", "--inline-limit=-1")
    check(p.returncode == 2, f"inline-limit=-1: exit {p.returncode}")
    p = graphrun("convert", path, "--to=text", "-o", os.path.join(d, "self.npz"))
    check(p.returncode == 2 and "its own side file" in p.stderr, f"-o x.npz: exit {p.returncode} {p.stderr}")
    # A converted script converts again: its side-file constants are read, then written anew.
    again = os.path.join(TMP, "again", "x.json")
    os.makedirs(os.path.dirname(again))
    p = graphrun("convert", os.path.join(d, "block.graph"), "--to=json", "-o", again)
    check(p.returncode == 0 and os.path.exists(os.path.join(TMP, "again", "x.npz")), f"reconvert: {p.stderr}")
    check(all(np.array_equal(run_with(again, {"x": x})[1].get(k), v) for k, v in want.items()),
          "reconvert: results differ")
    return d


def broken_references(d):
    """Every broken reference: exit 3, the place, the file or key and the values."""
    script = open(os.path.join(d, "block.graph")).read()
    line = next(i for i, ln in enumerate(script.splitlines(), 1) if 'key="w1"' in ln)
    cases = [
        (script.replace('file="block.npz"', 'file="gone.npz"'),
         [f":{line}:", "error: w1: const: cannot read ", "gone.npz: No such file or directory"]),
        (script.replace('key="w1"', 'key="w2"'), [f":{line}:", "block.npz has no array 'w2'"]),
        (script.replace('key="w1"', 'key="w11"'), ["has no array 'w11'; did you mean 'w1'?"]),
        (script.replace("shape=[48, 32]", "shape=[32, 48]"),
         [f":{line}:", "block.npz['w1'] is f32[48,32], but shape=[32,48]"]),
        (script.replace("shape=[48, 32], dtype=f32", "shape=[48, 32], dtype=f64"),
         ["block.npz['w1'] is f32[48,32], but dtype=f64"]),
        (script.replace('key="w1"', 'key="w1", value=[1]'), ["not both"]),
    ]
    for k, (body, expected) in enumerate(cases):
        path = os.path.join(d, f"broken{k}.graph")
        with open(path, "w") as f:
            f.write(body)
        p = graphrun("check", path)
        missing = [e for e in expected if e not in p.stderr]
        check(p.returncode == 3 and not missing, f"broken{k}: exit {p.returncode}, missing {missing} in {p.stderr}")
    # JSON: the place is the attribute's pointer; an .npy is read without a key.
    np.save(os.path.join(d, "w1.npy"), np.ones((48, 32), np.float32))
    doc = json.load(open(os.path.join(d, "block.json")))
    for n in doc["nodes"]:
        if n.get("attrs", {}).get("key") == "w1":
            n["attrs"]["key"] = "nope"
            index = doc["nodes"].index(n)
    path = os.path.join(d, "broken_key.json")
    json.dump(doc, open(path, "w"))
    p = graphrun("check", path)
    check(p.returncode == 3 and f"/nodes/{index}/attrs/key: error" in p.stderr and "'nope'" in p.stderr,
          f"broken json key: {p.returncode} {p.stderr}")
    doc["nodes"][index]["attrs"] = {"file": "w1.npy"}
    path = os.path.join(d, "npy.json")
    json.dump(doc, open(path, "w"))
    p = graphrun("check", path)
    check(p.returncode == 0, f"an .npy without key: {p.returncode} {p.stderr}")


def main():
    path, x = transformer_block()
    batch_norm_model()
    d = convert_side_file(path, x)
    broken_references(d)
    if failures:
        print(f"onnx_norm: {len(failures)} failed")
        return 1
    shutil.rmtree(TMP, ignore_errors=True)
    print("onnx_norm: all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
