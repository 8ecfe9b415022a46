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
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], opset=25)
    p = graphrun("check", path)
    check(p.returncode == 3 and "opset 25" in p.stderr, f"opset: {p.returncode} {p.stderr}")
    # An element type graphrun does not have (in a model ONNX accepts: Identity takes uint16).
    path = save_model("uint16", [helper.make_node("Identity", ["x"], ["y"])],
                      [helper.make_tensor_value_info("x", TensorProto.UINT16, [2])],
                      [helper.make_tensor_value_info("y", TensorProto.UINT16, [2])])
    p = graphrun("check", path)
    check(p.returncode == 3 and "UINT16" in p.stderr and "'x'" in p.stderr, f"uint16: {p.returncode} {p.stderr}")


def free_dimension():
    """Free input dimensions (SPEC section 2): bound from the --input arrays, by
    --dim or --input-shape, else 1 with a warning; conflicts are usage errors."""
    w = f32(8, 4)
    # An exporter's dynamic batch: the Reshape target computed from Shape(x).
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "zero1"], ["n1"]),
        helper.make_node("Concat", ["n1", "tail"], ["target"], axis=0),
        helper.make_node("Reshape", ["h", "target"], ["r"]),
        helper.make_node("Add", ["r", "m"], ["a"]),
        helper.make_node("Relu", ["a"], ["y"]),
    ]
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array([0], np.int64), "zero1"),
             numpy_helper.from_array(np.array([2, 2], np.int64), "tail")]
    path = save_model("dynbatch", nodes,
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8]),
                       helper.make_tensor_value_info("m", TensorProto.FLOAT, ["N", 2, None])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2, 2])], inits)
    want = lambda x, m: np.maximum((x.astype(np.float64) @ w).reshape(-1, 2, 2) + m, 0)  # noqa: E731
    for n in (1, 16):  # one file, any batch: the arrays bind N (and m's unnamed dimension)
        x, m = f32(n, 8), f32(n, 2, 2)
        p, out = run_with(path, {"x": x, "m": m})
        check(p.returncode == 0 and "taken as 1" not in p.stderr, f"batch {n}: {p.returncode} {p.stderr}")
        check(close(out.get("y"), want(x, m)), f"batch {n}: y differs")
    # .npz files bind N from their members' headers (feed_shapes maps the file and
    # reads no data): stored and deflated, every member by name or NAME=@ one member.
    x, m = f32(5, 8), f32(5, 2, 2)
    both, packed, only_x = (os.path.join(TMP, f) for f in ("both.npz", "packed.npz", "only_x.npz"))
    np.savez(both, x=x, m=m)
    np.savez_compressed(packed, x=x, m=m)
    np.savez_compressed(only_x, other_name=x)
    for feeds in ([f"--input=@{both}"], [f"--input=@{packed}"], [f"--input=x=@{only_x}", f"--input=m=@{packed}"]):
        out_dir = os.path.join(TMP, "npz_feeds.out")
        p = graphrun("run", path, *feeds, "--cleanup=safepoint", f"--save={out_dir}")
        check(p.returncode == 0 and "taken as 1" not in p.stderr, f"{feeds}: {p.returncode} {p.stderr}")
        if p.returncode == 0:
            check(close(np.load(os.path.join(out_dir, "y.npy")), want(x, m)), f"{feeds}: y differs")
    # --dim binds N where no array does; check lists it, and the static peak is the bound shapes'.
    peaks = {}
    for n in (3, 6):
        p = graphrun("check", path, f"--dim=N={n}", "--input-shape=m=%dx2x2" % n, "--format=json")
        check(p.returncode == 0, f"check --dim=N={n}: {p.returncode} {p.stderr}")
        if p.returncode == 0:
            doc = json.loads(p.stdout)
            dims = {(d["input"], d["axis"]): d for d in doc["free_dims"]}
            check(dims.get(("x", 0), {}).get("size") == n and dims[("x", 0)]["name"] == "N" and
                  dims[("x", 0)]["bound_by"] == f"--dim=N={n}", f"check free_dims: {doc['free_dims']}")
            check(dims.get(("m", 2), {}).get("name") is None and dims[("m", 2)]["size"] == 2,
                  f"check m's unnamed dimension: {doc['free_dims']}")
            peaks[n] = doc["static_peak"]["cpu"] if "static_peak" in doc else None
    check(peaks.get(3) and peaks.get(6, 0) > peaks[3], f"the static peak grows with N: {peaks}")
    # ... and is what a safepoint run at those shapes measures.
    p = graphrun("run", path, "--dim=N=6", "--input-shape=m=6x2x2", "--fill=ones", "--cleanup=safepoint",
                 "--format=json")
    check(p.returncode == 0 and json.loads(p.stdout.splitlines()[0])["memory"]["before_teardown"]["cpu"]["peak"] ==
          peaks.get(6), f"safepoint peak at N=6 vs check's {peaks.get(6)}: {p.stdout[:400]} {p.stderr}")
    p = graphrun("check", path, "--dim=N=3", "--input-shape=m=3x2x2")
    check(p.returncode == 0 and "x[0] 'N' = 3  (--dim=N=3)" in p.stdout and
          "m[2] = 2  (--input-shape=m=3x2x2)" in p.stdout, f"check text: {p.stdout}")
    p = graphrun("run", path, "--dim=N=5", "--fill=ones", "--format=json")
    check(p.returncode == 0 and json.loads(p.stdout)["outputs"][0]["shape"] == [5, 2, 2], f"--dim + --fill: {p.stdout} {p.stderr}")
    # Nothing binds them: 1 each, with a warning naming the option that would.
    p = graphrun("run", path, "--fill=zeros")
    check(p.returncode == 0 and "'N' is taken as 1 (give --dim=N=SIZE" in p.stderr and
          "--input-shape=m=" in p.stderr, f"unbound: {p.returncode} {p.stderr}")
    # Usage errors (exit 2), each naming what disagrees.
    xa, ma = os.path.join(TMP, "fd_x16.npy"), os.path.join(TMP, "fd_m8.npy")
    np.save(xa, f32(16, 8))
    np.save(ma, f32(8, 2, 2))
    for args, words in (
        ((f"--input=x=@{xa}", f"--input=m=@{ma}"), (f"--input=x=@{xa}", f"--input=m=@{ma}", "'N'", "16", "8")),
        ((f"--input=x=@{xa}", "--dim=N=4", "--fill=zeros"), ("--dim=N=4", "16")),
        (("--dim=M=4", "--fill=zeros"), ("no free dimension 'M'", "did you mean 'N'")),
        (("--input-shape=x=2x9", "--fill=zeros"), ("dimension 1 of input 'x' is 8 in the model, not 9",)),
        (("--input-shape=x=2", "--fill=zeros"), ("has 1 dimension, but the model's input 'x' has 2",)),
        (("--input-shape=xx=2x8", "--fill=zeros"), ("no input 'xx'", "did you mean 'x'")),
        (("--dim=N=-1",), ("out of range",)),
        (("--dim=N",), ("is not --dim=NAME=N",)),
        (("--input-shape=x=2xx8",), ("not a whole number",)),
    ):
        p = graphrun("run", path, *args)
        check(p.returncode == 2 and all(w in p.stderr for w in words), f"{args}: {p.returncode} {p.stderr}")
    # A text script has no free dimensions to bind.
    script = os.path.join(TMP, "fixed.graph")
    with open(script, "w") as f:
        f.write("x = input(shape=[2], dtype=f32)\ny = x + 1\n")
    p = graphrun("run", script, "--dim=N=2", "--fill=zeros")
    check(p.returncode == 2 and "only an ONNX model has free dimensions" in p.stderr, f".graph --dim: {p.returncode} {p.stderr}")
    # The REPL's :load binds them too, with the same errors.
    p = run_binary(GRAPHRUN, ["repl"], stdin=f":load {path} --dim=N=3 --input-shape=m=3x2x2 --fill=ones\ny\n"
                                            f":load {path} --dim=M=3 --fill=ones\n", timeout=60)
    check("y: f32[3,2,2]" in p.stdout and "no free dimension 'M'" in p.stderr + p.stdout,
          f"repl :load --dim: {p.returncode} {p.stdout[-400:]} {p.stderr[-400:]}")
    # compare feeds its runs the arrays that bound the model; convert writes the bound shapes.
    x, m = f32(4, 8), f32(4, 2, 2)
    np.save(os.path.join(TMP, "fd_x4.npy"), x)
    np.save(os.path.join(TMP, "fd_m4.npy"), m)
    p = graphrun("compare", path, f"--input=x=@{TMP}/fd_x4.npy", f"--input=m=@{TMP}/fd_m4.npy")
    check(p.returncode == 0 and "taken as 1" not in p.stderr, f"compare: {p.returncode} {p.stderr}")
    p = graphrun("convert", path, "--to=text", "--dim=N=4", "--input-shape=m=4x2x2")
    check(p.returncode == 0 and "shape=[4, 8]" in p.stdout.replace("[4,8]", "[4, 8]"), f"convert: {p.returncode} {p.stdout} {p.stderr}")


def tensor_files():
    """The model zoo's test data (issue 27 item 7): ONNX TensorProto .pb files
    as --input / --expected-output (a file, or a test_data_set_N folder), and
    --test-data=DIR running every set, each at its own batch."""
    w = f32(6, 3)
    path = save_model("pbmodel", [helper.make_node("MatMul", ["x", "w"], ["y"])],
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 6])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
                      [numpy_helper.from_array(w, "w")])
    root = os.path.join(TMP, "pbdata")

    def write(t, p):
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(t.SerializeToString())

    sets = {}
    for k, n in enumerate((1, 5, 2)):
        x = f32(n, 6)
        want = (x.astype(np.float64) @ w).astype(np.float32)
        d = os.path.join(root, f"test_data_set_{k}")
        write(numpy_helper.from_array(x, "x"), os.path.join(d, "input_0.pb"))
        write(numpy_helper.from_array(want, ""), os.path.join(d, "output_0.pb"))  # unnamed: the 0th output
        sets[k] = (x, want)
    # A single file, by the tensor's name or NAME=.
    x, want = sets[1]
    p, out = run_with(path, {}, f"--input=@{root}/test_data_set_1/input_0.pb")
    check(p.returncode == 0 and close(out.get("y"), want), f"@input_0.pb: {p.returncode} {p.stderr}")
    p = graphrun("run", path, f"--input=x=@{root}/test_data_set_1/input_0.pb",
                 f"--expected-output=y=@{root}/test_data_set_1/output_0.pb", "--rtol=1e-5", "--atol=1e-6")
    check(p.returncode == 0, f"NAME=@.pb with expected: {p.returncode} {p.stderr}")
    # A folder: every input_K.pb, and output_K.pb for --expected-output.
    p = graphrun("run", path, f"--input=@{root}/test_data_set_2", f"--expected-output=@{root}/test_data_set_2",
                 "--atol=1e-6")
    check(p.returncode == 0, f"@folder: {p.returncode} {p.stderr}")
    # --test-data: every set, in order, each at its own batch; a summary line.
    p = graphrun("run", path, f"--test-data={root}", "--atol=1e-6", "--no-data")
    check(p.returncode == 0 and "test data " + root + ": 3 sets ran, 3 of 3 matched" in p.stdout and
          p.stdout.index("(test_data_set_0)") < p.stdout.index("(test_data_set_1)") < p.stdout.index("(test_data_set_2)")
          and "y: f32[5,3]" in p.stdout and "y: f32[2,3]" in p.stdout, f"--test-data: {p.returncode} {p.stdout} {p.stderr}")
    # A set that differs: exit 5, named in the summary.
    bad = os.path.join(TMP, "pbbad", "test_data_set_0")
    write(numpy_helper.from_array(sets[0][0], "x"), os.path.join(bad, "input_0.pb"))
    write(numpy_helper.from_array(sets[0][1] + 1, "y"), os.path.join(bad, "output_0.pb"))
    p = graphrun("run", path, f"--test-data={os.path.dirname(bad)}", "--no-data")
    check(p.returncode == 5 and "0 of 1 matched" in p.stdout and "failed: test_data_set_0" in p.stdout,
          f"--test-data mismatch: {p.returncode} {p.stdout} {p.stderr}")
    # Hostile and wrong files: exit 2 with the file and what is wrong, never a crash.
    junk = os.path.join(TMP, "junk.pb")
    with open(junk, "wb") as f:
        f.write(b"\xff\xff\xff\xff not a proto")
    short = onnx.TensorProto(name="x", data_type=TensorProto.FLOAT, dims=[1, 6], raw_data=b"\0" * 8)
    write(short, os.path.join(TMP, "short.pb"))
    huge = onnx.TensorProto(name="x", data_type=TensorProto.FLOAT, dims=[2**40, 2**40], raw_data=b"")
    write(huge, os.path.join(TMP, "huge.pb"))
    unnamed = os.path.join(TMP, "unnamed.pb")
    write(numpy_helper.from_array(sets[0][0], ""), unnamed)
    u16 = onnx.TensorProto(name="x", data_type=TensorProto.UINT16, dims=[1, 6], raw_data=b"\0" * 12)
    write(u16, os.path.join(TMP, "u16.pb"))
    extra = os.path.join(TMP, "pbextra")
    write(numpy_helper.from_array(sets[0][0], ""), os.path.join(extra, "input_0.pb"))
    write(numpy_helper.from_array(sets[0][0], ""), os.path.join(extra, "input_1.pb"))
    empty = os.path.join(TMP, "pbempty")
    os.makedirs(empty, exist_ok=True)
    for args, words in (
        ((f"--input=@{junk}",), ("junk.pb", "not an ONNX TensorProto")),
        ((f"--input=@{TMP}/short.pb",), ("short.pb", "raw data has 8 bytes", "needs 24")),
        ((f"--input=@{TMP}/huge.pb",), ("huge.pb", "more elements than graphrun holds")),
        ((f"--input=@{unnamed}",), ("without a name", "--input=NAME=@")),
        ((f"--input=@{TMP}/u16.pb",), ("u16.pb", "UINT16")),
        ((f"--input=@{extra}",), ("input_1.pb", "the graph has 1 input, so it stands for none")),
        ((f"--input=@{empty}",), ("holds no input_K.pb",)),
        ((f"--input=x=@{root}/test_data_set_0",), ("is a folder of tensor files",)),
        ((f"--test-data={empty}",), ("holds no test_data_set_N",)),
        ((f"--test-data={root}", f"--input=@{root}/test_data_set_0"), ("cannot be given with it",)),
        ((f"--test-data={TMP}/nothere",), ("not a folder",)),
    ):
        p = graphrun("run", path, *args)
        check(p.returncode == 2 and all(w in p.stderr for w in words), f"{args}: {p.returncode} {p.stderr}")
    # No output may overwrite a tensor file the run reads.
    target = os.path.join(root, "test_data_set_0", "input_0.pb")
    before = open(target, "rb").read()
    p = graphrun("run", path, f"--input=@{root}/test_data_set_0", f"--output=y=@{target}")
    check(p.returncode == 2 and open(target, "rb").read() == before, f"output over input_0.pb: {p.returncode} {p.stderr}")


def newer_opsets():
    """Opsets 18 to 21 (issue 27 item 3), read through ONNX 1.12 in their
    opset-17 form: the ops whose meaning changed are rewritten, checked against NumPy."""
    from math import erf
    x = f32(2, 3, 4)
    xd = x.astype(np.float64)
    vi = helper.make_tensor_value_info

    def model(name, nodes, out_shape, opset, inits=(), ir=8, out_type=TensorProto.FLOAT):
        graph = helper.make_graph(nodes, name, [vi("x", TensorProto.FLOAT, [2, 3, 4])],
                                  [vi("y", out_type, out_shape)], initializer=list(inits))
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = ir
        path = os.path.join(TMP, name + ".onnx")
        with open(path, "wb") as f:  # onnx.save would check it with ONNX 1.12, which stops at opset 17
            f.write(m.SerializeToString())
        return path

    axes = numpy_helper.from_array(np.array([1, -1], np.int64), "axes")
    gelu_erf = 0.5 * xd * (1 + np.vectorize(erf)(xd / np.sqrt(2)))
    gelu_tanh = 0.5 * xd * (1 + np.tanh(np.sqrt(2 / np.pi) * (xd + 0.044715 * xd**3)))
    cases = [
        ("relu21", [helper.make_node("Relu", ["x"], ["y"])], [2, 3, 4], 21, (), np.maximum(xd, 0), 10),
        ("reducemean18", [helper.make_node("ReduceMean", ["x", "axes"], ["y"], keepdims=0)], [2], 18, (axes,),
         xd.mean(axis=(1, 2)), 8),
        ("reducemax18_all", [helper.make_node("ReduceMax", ["x"], ["y"], keepdims=1)], [1, 1, 1], 18, (),
         xd.max(keepdims=True), 8),
        ("reducemin18_noop", [helper.make_node("ReduceMin", ["x"], ["y"], noop_with_empty_axes=1)], [2, 3, 4], 18,
         (), xd, 9),
        ("split18", [helper.make_node("Split", ["x"], ["y", "z"], axis=2, num_outputs=2)], [2, 3, 2], 18, (),
         xd[:, :, :2], 8),
        ("gelu20", [helper.make_node("Gelu", ["x"], ["y"])], [2, 3, 4], 20, (), gelu_erf, 9),
        ("gelu20_tanh", [helper.make_node("Gelu", ["x"], ["y"], approximate="tanh")], [2, 3, 4], 20, (), gelu_tanh, 9),
    ]
    for name, nodes, shape, opset, inits, want, ir in cases:
        if name == "split18":  # two outputs: y is the first
            graph = helper.make_graph(nodes, name, [vi("x", TensorProto.FLOAT, [2, 3, 4])],
                                      [vi("y", TensorProto.FLOAT, shape), vi("z", TensorProto.FLOAT, shape)])
            m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
            m.ir_version = ir
            path = os.path.join(TMP, name + ".onnx")
            with open(path, "wb") as f:
                f.write(m.SerializeToString())
        else:
            path = model(name, nodes, shape, opset, inits, ir)
        p, out = run_with(path, {"x": x})
        check(p.returncode == 0 and close(out.get("y"), want, rtol=1e-5, atol=1e-6),
              f"{name}: {p.returncode} {p.stderr} {out.get('y')}")
    # Cast's saturate (opset 19, float8 only) is dropped; AveragePool's dilations of 1 (19) too.
    path = model("cast19", [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.DOUBLE, saturate=1)], [2, 3, 4],
                 19, out_type=TensorProto.DOUBLE)
    p, out = run_with(path, {"x": x})
    check(p.returncode == 0 and close(out.get("y"), xd), f"cast19: {p.returncode} {p.stderr}")
    # Refused, exit 3 with the node and why: axes fed at run time, a Pad axes input, an op
    # newer than 17 that graphrun lacks (listed as unsupported), an opset past 21.
    pads = numpy_helper.from_array(np.array([1, 1], np.int64), "pads")
    refused = [
        (model("reduce_fed_axes", [helper.make_node("Shape", ["x"], ["s"]),
                                   helper.make_node("ReduceMean", ["x", "s"], ["y"])], [2], 18),
         ("ReduceMean", "is not a constant", "opset 18")),
        (model("pad_axes", [helper.make_node("Pad", ["x", "pads", "", "axes1"], ["y"])], [2, 3, 6], 18,
               (pads, numpy_helper.from_array(np.array([2], np.int64), "axes1"))),
         ("Pad", "an axes input")),
        (model("col2im", [helper.make_node("Col2Im", ["x", "x", "x"], ["y"])], [2, 3, 4], 18),
         ("does not support", "Col2Im")),
        (model("opset22", [helper.make_node("Relu", ["x"], ["y"])], [2, 3, 4], 22), ("opset 22", "1 to 21")),
    ]
    for path, words in refused:
        p = graphrun("run", path, "--fill=ones")
        check(p.returncode == 3 and all(w in p.stderr for w in words), f"{path}: {p.returncode} {p.stderr}")


def exported_shape_chains():
    """What exporters compute from shapes and constants, folded when the model is
    read (torchvision's ViT, Swin and ShuffleNet-v2): Equal, Where, Expand, Mod,
    ScatterND, Transpose and N-D Slice on constants; a Dropout in training mode
    with a ratio of 0; and shapes past a Reshape that ONNX's inference leaves
    without one (graphrun's own inference of what is built)."""
    vi = helper.make_tensor_value_info
    i64 = lambda v, name: numpy_helper.from_array(np.array(v, np.int64), name)  # noqa: E731

    def model(name, nodes, x_shape, y_shape, inits, opset=17):
        return save_model(name, nodes, [vi("x", TensorProto.FLOAT, x_shape)], [vi("y", TensorProto.FLOAT, y_shape)],
                          inits, opset=opset)

    x = f32(2, 3)
    # ViT's class token: Expand(token, Where(Equal(shape, -1), ones, shape)).
    shape = np.array([2, -1], np.int64)
    nodes = [helper.make_node("Equal", ["shape", "minus1"], ["eq"]),
             helper.make_node("Where", ["eq", "ones", "shape"], ["target"]),
             helper.make_node("Expand", ["tok", "target"], ["e"]),
             helper.make_node("Expand", ["e", "full"], ["big"]),
             helper.make_node("Add", ["x", "big"], ["y"])]
    tok = f32(1, 3)
    path = model("vit_chain", nodes, [2, 3], [2, 3],
                 [i64(shape, "shape"), i64(-1, "minus1"), i64([1, 1], "ones"), numpy_helper.from_array(tok, "tok"),
                  i64([2, 3], "full")])
    p, out = run_with(path, {"x": x})
    check(p.returncode == 0 and close(out.get("y"), x + np.broadcast_to(tok, (2, 3))), f"vit chain: {p.returncode} {p.stderr}")
    # Mod (Python's sign for integers, C's with fmod=1), ScatterND, Transpose and a reversing 2-D Slice, all on
    # constants, added to x so that the folded values are what is checked.
    a, b = np.array([[7, -7, 5], [-5, 9, -9]], np.int64), np.array([3, 3, -4], np.int64)
    fa, fb = np.array([[7.5, -7.5, 5], [-5, 9, -9]], np.float32), np.array([2, 2, -4], np.float32)
    data = np.zeros((2, 3), np.float32)
    upd = f32(1, 3)
    table = np.arange(6, dtype=np.int64).reshape(3, 2)
    nodes = [helper.make_node("Mod", ["a", "b"], ["m"]),
             helper.make_node("Cast", ["m"], ["mf"], to=TensorProto.FLOAT),
             helper.make_node("Mod", ["fa", "fb"], ["fm"], fmod=1),
             helper.make_node("ScatterND", ["data", "idx", "upd"], ["sc"]),
             helper.make_node("Transpose", ["table"], ["tt"], perm=[1, 0]),
             helper.make_node("Slice", ["tt", "st", "en", "ax", "sp"], ["rev"]),
             helper.make_node("Cast", ["rev"], ["revf"], to=TensorProto.FLOAT),
             helper.make_node("Add", ["x", "mf"], ["s1"]), helper.make_node("Add", ["s1", "fm"], ["s2"]),
             helper.make_node("Add", ["s2", "sc"], ["s3"]), helper.make_node("Add", ["s3", "revf"], ["y"])]
    inits = [i64(a, "a"), i64(b, "b"), numpy_helper.from_array(fa, "fa"), numpy_helper.from_array(fb, "fb"),
             numpy_helper.from_array(data, "data"), i64([[1]], "idx"), numpy_helper.from_array(upd, "upd"),
             i64(table, "table"), i64([-1, -1], "st"), i64([-2**63 + 1, -2**63 + 1], "en"), i64([0, 1], "ax"),
             i64([-1, -1], "sp")]
    path = model("const_folds", nodes, [2, 3], [2, 3], inits)
    scattered = data.copy()
    scattered[1] = upd[0]
    want = x + (a % b) + np.fmod(fa, fb) + scattered + table.T[::-1, ::-1]
    p, out = run_with(path, {"x": x})
    check(p.returncode == 0 and close(out.get("y"), want), f"constant folds: {p.returncode} {p.stderr} {out.get('y')} {want}")
    # ... and the refusals: a modulo by zero, an index out of range, each naming the node.
    for name, nodes_, inits_, words in (
        ("mod_zero", [helper.make_node("Mod", ["a", "z"], ["m"], name="modz"),
                      helper.make_node("Cast", ["m"], ["mf"], to=TensorProto.FLOAT),
                      helper.make_node("Add", ["x", "mf"], ["y"])], [i64(a, "a"), i64([1, 0, 1], "z")],
         ("modz", "division by zero")),
        ("scatter_range", [helper.make_node("ScatterND", ["data", "idx", "upd"], ["sc"], name="scat"),
                           helper.make_node("Add", ["x", "sc"], ["y"])],
         [numpy_helper.from_array(data, "data"), i64([[5]], "idx"), numpy_helper.from_array(upd, "upd")],
         ("scat", "out of range")),
    ):
        p = graphrun("run", model(name, nodes_, [2, 3], [2, 3], inits_), "--fill=ones")
        check(p.returncode == 3 and all(w in p.stderr for w in words), f"{name}: {p.returncode} {p.stderr}")
    # Dropout in training mode: the identity with a ratio of 0, refused otherwise.
    for ratio, code in ((0.0, 0), (0.5, 3)):
        nodes = [helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"])]
        path = model(f"dropout_{ratio}", nodes, [2, 3], [2, 3],
                     [numpy_helper.from_array(np.array(ratio, np.float32), "r"),
                      numpy_helper.from_array(np.array(True), "t")], opset=13)
        p, out = run_with(path, {"x": x})
        check(p.returncode == code and (code or close(out.get("y"), x)), f"dropout {ratio}: {p.returncode} {p.stderr}")
    # ShuffleNet-v2's channel shuffle: Reshape targets from Shape(Concat(...)), a Transpose between.
    xs = f32(1, 4, 2, 2)
    nodes = [helper.make_node("Concat", ["x", "x"], ["c"], axis=1),
             helper.make_node("Shape", ["c"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "axis0"], ["n1"]),
             helper.make_node("Concat", ["n1", "g_cpg_hw"], ["t1"], axis=0),
             helper.make_node("Reshape", ["c", "t1"], ["r1"]),
             helper.make_node("Transpose", ["r1"], ["tr"], perm=[0, 2, 1, 3, 4]),
             helper.make_node("Concat", ["n1", "minus1_hw"], ["t2"], axis=0),
             helper.make_node("Reshape", ["tr", "t2"], ["r2"]),
             helper.make_node("Relu", ["r2"], ["y"])]
    path = save_model("shuffle", nodes, [vi("x", TensorProto.FLOAT, ["N", 4, 2, 2])], [vi("y", TensorProto.FLOAT, ["N", 8, 2, 2])],
                      [i64(0, "zero"), i64([0], "axis0"), i64([2, 4, 2, 2], "g_cpg_hw"), i64([-1, 2, 2], "minus1_hw")])
    p, out = run_with(path, {"x": xs})
    c = np.concatenate([xs, xs], axis=1)
    want = np.maximum(c.reshape(1, 2, 4, 2, 2).transpose(0, 2, 1, 3, 4).reshape(1, -1, 2, 2), 0)
    check(p.returncode == 0 and close(out.get("y"), want), f"channel shuffle: {p.returncode} {p.stderr}")


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


def folds_by_the_engines_kernels():
    """Any op whose inputs are all constants folds at load, by the engine's own
    CPU kernels (one evaluator; issue 27): a Reshape target computed with
    ReduceProd, a float Sqrt/Ceil round trip, a variadic Min and a Tile, none
    of which the front end computes itself; the values are the run's, and the
    arithmetic leaves the graph."""
    vi = helper.make_tensor_value_info
    i64 = lambda v, name: numpy_helper.from_array(np.array(v, np.int64), name)  # noqa: E731
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Slice", ["s", "zero1", "one1"], ["batch"]),
        helper.make_node("Slice", ["s", "one1", "big1"], ["rest"]),
        helper.make_node("ReduceProd", ["rest"], ["prod"], keepdims=1),
        helper.make_node("Concat", ["batch", "prod"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["flat"]),
        # ceil(sqrt(12)) = 4 via f32; min(4, 3, 5) = 3: a [2, 3] slice of flat.
        helper.make_node("Cast", ["prod"], ["pf"], to=TensorProto.FLOAT),
        helper.make_node("Sqrt", ["pf"], ["root"]),
        helper.make_node("Ceil", ["root"], ["up"]),
        helper.make_node("Cast", ["up"], ["upi"], to=TensorProto.INT64),
        helper.make_node("Min", ["upi", "three", "five"], ["end"]),
        helper.make_node("Slice", ["flat", "zero1", "end", "one1"], ["cut"]),
        # A tiled constant added to it.
        helper.make_node("Tile", ["row", "reps"], ["tiled"]),
        helper.make_node("Add", ["cut", "tiled"], ["y"]),
    ]
    inits = [i64([0], "zero1"), i64([1], "one1"), i64([9], "big1"), i64([3], "three"), i64([5], "five"),
             numpy_helper.from_array(np.array([[1, 2, 3]], np.float32), "row"), i64([2, 1], "reps")]
    path = save_model("kernel_folds", nodes, [vi("x", TensorProto.FLOAT, [2, 3, 4])],
                      [vi("y", TensorProto.FLOAT, [2, 3])], inits)
    x = f32(2, 3, 4)
    p, out = run_with(path, {"x": x})
    want = x.reshape(2, 12)[:, :3] + np.tile(np.array([[1, 2, 3]], np.float32), (2, 1))
    check(p.returncode == 0 and close(out.get("y"), want), f"kernel folds: {p.returncode} {p.stderr} {out.get('y')}")
    c = graphrun("check", "--format=json", path)
    check(c.returncode == 0, f"kernel folds: check exit {c.returncode}: {c.stderr}")
    if c.returncode == 0:
        ops = sorted(n["op"] for n in json.loads(c.stdout)["nodes"])
        # What is left: x, the reshape, the slice of it, the folded tile as a const and the add.
        check(not {"reduce_prod", "sqrt", "ceil", "minimum", "tile", "cast", "concat"} & set(ops),
              f"kernel folds: ops left {ops}")
    # Inside one node's mapping too: a QLinearConv computes its requantization scale,
    # its bias and its zero points from constants; all of that folds once, at load,
    # and no node that runs reads constants only.
    w = np.random.default_rng(5).integers(-127, 128, (4, 2, 3, 3), dtype=np.int8)
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["q"]),
             helper.make_node("QLinearConv", ["q", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["qy"],
                              kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("DequantizeLinear", ["qy", "ys", "yz"], ["y"])]
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "xs"), numpy_helper.from_array(np.array(128, np.uint8), "xz"),
             numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array([0.01, 0.02, 0.03, 0.04], np.float32), "ws"),
             numpy_helper.from_array(np.zeros(4, np.int8), "wz"), numpy_helper.from_array(np.array(0.1, np.float32), "ys"),
             numpy_helper.from_array(np.array(100, np.uint8), "yz"),
             numpy_helper.from_array(np.array([5, -5, 50, -50], np.int32), "b")]
    path = save_model("qconv_folds", nodes, [vi("x", TensorProto.FLOAT, [1, 2, 6, 6])],
                      [vi("y", TensorProto.FLOAT, [1, 4, 6, 6])], inits)
    c = graphrun("check", "--format=json", path)
    check(c.returncode == 0, f"qconv folds: check exit {c.returncode}: {c.stderr}")
    if c.returncode == 0:
        listed = json.loads(c.stdout)["nodes"]
        op_of = {n["name"]: n["op"] for n in listed}
        const_only = [n["name"] for n in listed if n["op"] not in ("const", "input") and n["inputs"]
                      and all(op_of[i] == "const" for i in n["inputs"])]
        check(not const_only, f"qconv folds: nodes that read constants only: {const_only}")
    x = (np.random.default_rng(6).standard_normal((1, 2, 6, 6)) * 2).astype(np.float32)
    p, out = run_with(path, {"x": x})
    p2, out2 = run_with(path, {"x": x}, "--mode=eager")
    check(p.returncode == 0 and p2.returncode == 0 and np.array_equal(out.get("y"), out2.get("y")),
          f"qconv folds: graph and eager runs differ: {p.stderr} {p2.stderr}")
    # ConstantOfShape and Range are graphrun's fill and range: folded when small, a
    # 4 Mi-element fill runs at run time (no longer refused), every dtype's value.
    nodes = [helper.make_node("ConstantOfShape", ["big_shape"], ["big"],
                              value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.5])),
             helper.make_node("ReduceSum", ["big"], ["total"], keepdims=0),
             helper.make_node("ConstantOfShape", ["two"], ["flags"], value=helper.make_tensor("b", TensorProto.BOOL, [1], [1])),
             helper.make_node("Range", ["fs", "fl", "fd"], ["fr"]),
             helper.make_node("Range", ["is", "il", "idl"], ["ir"])]
    path = save_model("creation", nodes, [], [vi("total", TensorProto.FLOAT, []), vi("flags", TensorProto.BOOL, [2]),
                                              vi("fr", TensorProto.FLOAT, [4]), vi("ir", TensorProto.INT64, [4])],
                      [i64([2048, 2048], "big_shape"), i64([2], "two"),
                       numpy_helper.from_array(np.array(1, np.float32), "fs"),
                       numpy_helper.from_array(np.array(2, np.float32), "fl"),
                       numpy_helper.from_array(np.array(0.25, np.float32), "fd"), i64(10, "is"), i64(-3, "il"),
                       i64(-4, "idl")])
    p, out = run_with(path, {})
    check(p.returncode == 0 and out.get("total") == 0.5 * 2048 * 2048 and out.get("flags").tolist() == [True, True]
          and out.get("fr").tolist() == [1, 1.25, 1.5, 1.75] and out.get("ir").tolist() == [10, 6, 2, -2],
          f"creation: {p.returncode} {p.stderr} {out}")
    c = graphrun("check", "--format=json", path)
    ops = sorted(n["op"] for n in json.loads(c.stdout)["nodes"]) if c.returncode == 0 else []
    check(ops == ["const", "const", "const", "fill", "reduce_sum"], f"creation: ops {ops} {c.stderr}")
    for name, nodes_, inits_, words in (
        ("range_delta0", [helper.make_node("Range", ["a", "b", "d"], ["y"], name="rng")],
         [i64(0, "a"), i64(5, "b"), i64(0, "d")], ("/graph/node/0", "delta must not be 0")),
        ("fill_negative", [helper.make_node("ConstantOfShape", ["s"], ["y"], name="cos",
                                            value=helper.make_tensor("v", TensorProto.INT64, [1], [7]))],
         [i64([-2], "s")],
         ("ConstantOfShape node 'cos'", "[-2] has a negative dimension")),
    ):
        p = graphrun("run", save_model(name, nodes_, [], [vi("y", TensorProto.INT64, ["n"])], inits_))
        check(p.returncode == 3 and all(w in p.stderr for w in words), f"{name}: {p.returncode} {p.stderr}")


def main():
    mlp_path = mlp()
    shape_folding()
    legacy_softmax()
    unsupported_listed()
    bad_files()
    free_dimension()
    tensor_files()
    newer_opsets()
    exported_shape_chains()
    folds_by_the_engines_kernels()
    convert_round_trip(mlp_path)
    if failures:
        print(f"onnx: {len(failures)} failed")
        return 1
    print("onnx: all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
