#!/usr/bin/env python3
"""ONNX external data through the real binary (issue 27 item 2): tensors whose
bytes are in a file beside the model are read relative to the model's folder,
whatever the working directory; ONNX Runtime's rule refuses an absolute
location, a `..` component and a link that leads out of the folder; a file too
short, a length that is not the shape's, a missing file are errors with the
values; the weights count against the memory limit before they are read; no
output may overwrite the data file; and a model of more than 2 GiB of weights
runs and gives the values written at offsets beyond 2^31 (a sparse file, so
the test writes a few bytes, not gigabytes) with its peak resident memory
under the weights plus 256 MiB: each weight is held once.

Usage: onnx_external_test.py GRAPHRUN
"""
import json
import os
import sys
import tempfile

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    print(f"SKIP: the external data tests need numpy and python3-onnx ({e})")
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import asan_build, expect, finish, make_harness, run_binary, run_measured  # noqa: E402

GRAPHRUN = os.path.abspath(sys.argv[1])
TMP = tempfile.mkdtemp(prefix="graphrun-onnx-external-")
_, test, results = make_harness(GRAPHRUN, timeout=300)


def run(*args, cwd=None, stdin=None):
    return run_binary(GRAPHRUN, args, timeout=300, cwd=cwd, stdin=stdin)
rng = np.random.default_rng(11)


def external(name, shape, elem, location, offset=None, length=None):
    """A tensor proto whose data is in `location` (no bytes in the model)."""
    t = TensorProto()
    t.name = name
    t.data_type = elem
    t.dims.extend(shape)
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        if v is not None:
            e = t.external_data.add()
            e.key, e.value = k, str(v)
    return t


def save(folder, name, nodes, inputs, outputs, inits):
    os.makedirs(folder, exist_ok=True)
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = os.path.join(folder, name + ".onnx")
    with open(path, "wb") as f:  # the serialized proto as is: onnx.save would look for the data itself
        f.write(model.SerializeToString())
    return path


W = rng.standard_normal((16, 8)).astype(np.float32)
B = rng.standard_normal(8).astype(np.float32)
X = rng.standard_normal((3, 16)).astype(np.float32)
WANT = X.astype(np.float64) @ W + B


def linear(folder, name, w_loc="weights.bin", w_off=0, w_len=None, write=True):
    """y = x @ w + b, w and b in one data file (b after w, at an offset)."""
    if write:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "weights.bin"), "wb") as f:
            f.write(W.tobytes())
            f.write(B.tobytes())
    return save(folder, name,
                [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["y"])],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 16])],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 8])],
                [external("w", [16, 8], TensorProto.FLOAT, w_loc, w_off, w_len),
                 external("b", [8], TensorProto.FLOAT, "weights.bin", W.nbytes, B.nbytes)])


X_NPY = os.path.join(TMP, "x.npy")
np.save(X_NPY, X)


def run_json(*args, cwd=None):
    r = run(*args, "--format=json", cwd=cwd)
    doc = json.loads(r.stdout.splitlines()[0]) if r.returncode == 0 and r.stdout else None
    return r, doc


@test
def read_relative_to_the_model():
    path = linear(os.path.join(TMP, "models", "lin"), "lin")
    # From another folder: the data is found beside the model, not in the working directory.
    r, doc = run_json("run", path, f"--input=x=@{X_NPY}", "--cleanup=safepoint", cwd=TMP)
    expect(r.returncode == 0, r.stderr)
    got = np.array(doc["outputs"][0]["data"], dtype=np.float64)
    expect(np.allclose(got, WANT, rtol=1e-5, atol=1e-5), f"y differs: {got} vs {WANT}")
    # The weights are counted as weights (SPEC section 4), and given back at teardown.
    cpu = doc["memory"]["before_teardown"]["cpu"]
    expect(cpu["weights"] >= W.nbytes + B.nbytes, f"weights {cpu['weights']}")
    expect(doc["memory"]["after_teardown"]["cpu"]["in_use"] == 0, doc["memory"]["after_teardown"])
    # A relative model path, run from its folder's parent.
    r = run("run", os.path.join("lin", "lin.onnx"), f"--input=x=@{X_NPY}", cwd=os.path.join(TMP, "models"))
    expect(r.returncode == 0, r.stderr)
    # check and convert read it too.
    r = run("check", path)
    expect(r.returncode == 0, r.stderr)
    r = run("convert", path, "--to=text")
    expect(r.returncode == 0 and "w = const(" in r.stdout, r.stdout + r.stderr)


@test
def a_link_inside_the_folder_is_followed():
    folder = os.path.join(TMP, "link_in")
    path = linear(folder, "m", w_loc="alias.bin")
    os.symlink("weights.bin", os.path.join(folder, "alias.bin"))
    r = run("run", path, f"--input=x=@{X_NPY}")
    expect(r.returncode == 0, r.stderr)


@test
def refused_locations():
    """ONNX Runtime's rule: relative, inside the model's folder; exit 3 with the location."""
    outside = os.path.join(TMP, "outside.bin")
    with open(outside, "wb") as f:
        f.write(W.tobytes())
    cases = [
        ("absolute", outside, "is an absolute path"),
        ("dotdot", "../outside.bin", "leads out of the model's folder ('..')"),
        ("dotdot_mid", "sub/../../outside.bin", "leads out of the model's folder ('..')"),
        ("missing", "nothere.bin", "'nothere.bin' cannot be opened: No such file or directory"),
        ("folder", "sub", "is not a regular file"),
    ]
    for name, loc, words in cases:
        folder = os.path.join(TMP, "refused_" + name)
        os.makedirs(os.path.join(folder, "sub"), exist_ok=True)
        path = linear(folder, "m", w_loc=loc)
        r = run("run", path, f"--input=x=@{X_NPY}")
        expect(r.returncode == 3 and words in r.stderr and "initializer 'w'" in r.stderr,
               f"{name}: {r.returncode} {r.stderr}")
    # A link that leads out of the folder.
    folder = os.path.join(TMP, "link_out")
    path = linear(folder, "m", w_loc="escape.bin")
    os.symlink(outside, os.path.join(folder, "escape.bin"))
    r = run("run", path, f"--input=x=@{X_NPY}")
    expect(r.returncode == 3 and "a link that leads out of the model's folder" in r.stderr, r.stderr)


@test
def sizes_that_lie():
    folder = os.path.join(TMP, "lies")
    # A length that is not the shape's.
    path = linear(folder, "len", w_len=W.nbytes - 4)
    r = run("run", path, f"--input=x=@{X_NPY}")
    expect(r.returncode == 3 and f"length is {W.nbytes - 4} bytes where shape [16,8] of FLOAT needs {W.nbytes}"
           in r.stderr, r.stderr)
    # Past the end of the file.
    path = linear(folder, "past", w_off=64)
    r = run("run", path, f"--input=x=@{X_NPY}")
    size = W.nbytes + B.nbytes
    expect(r.returncode == 3 and f"({W.nbytes} bytes at offset 64) runs past the end of 'weights.bin' ({size} bytes)"
           in r.stderr, r.stderr)
    # An offset that is not a number, and one past 2^64.
    for bad in ("-1", "12abc", "99999999999999999999999"):
        path = linear(folder, "off", w_off=bad)
        r = run("run", path, f"--input=x=@{X_NPY}")
        expect(r.returncode == 3 and "offset" in r.stderr and "is not a whole number" in r.stderr, f"{bad}: {r.stderr}")
    # No location at all.
    t = external("w", [16, 8], TensorProto.FLOAT, "weights.bin")
    del t.external_data[:]
    path = save(folder, "noloc", [helper.make_node("Identity", ["w"], ["y"])], [],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, 8])], [t])
    r = run("run", path)
    expect(r.returncode == 3 and "names no file" in r.stderr, r.stderr)


@test
def memory_limit_before_reading():
    """External weights count as declared: over the limit is exit 1 before a byte is read."""
    folder = os.path.join(TMP, "limit")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "big.bin"), "wb") as f:
        f.truncate(64 << 20)
    path = save(folder, "big", [helper.make_node("ReduceSum", ["w"], ["y"], keepdims=0)], [],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
                [external("w", [16 << 20], TensorProto.FLOAT, "big.bin")])
    r = run("run", path, "--memory-limit=16MiB")
    expect(r.returncode == 1 and "initializer 'w'" in r.stderr and "more than the memory limit" in r.stderr,
           f"{r.returncode} {r.stderr}")


@test
def outputs_spare_the_data_file():
    folder = os.path.join(TMP, "spare")
    path = linear(folder, "m")
    data = os.path.join(folder, "weights.bin")
    before = open(data, "rb").read()
    r = run("run", path, f"--input=x=@{X_NPY}", f"--output=y=@{data}")
    expect(r.returncode == 2 and "external data file" in r.stderr, f"{r.returncode} {r.stderr}")
    expect(open(data, "rb").read() == before, "the data file changed")


@test
def standard_input_has_no_folder():
    path = linear(os.path.join(TMP, "stdin"), "m")
    with open(path, "rb") as f:
        model = f.read()
    r = run("check", "-", stdin=model)
    # "-" is read as text or JSON (only a .onnx name is a model): it is refused either way, never run.
    expect(r.returncode != 0, r.stdout)


@test
def over_two_gib():
    """A model whose weights pass 2 GiB (protobuf's limit for one message) runs:
    two initializers in one sparse data file, values written past 2^31."""
    folder = os.path.join(TMP, "big2g")
    os.makedirs(folder, exist_ok=True)
    n1, n2 = 300 << 20, 260 << 20  # f32 elements: 1.17 GiB + 1.02 GiB
    data = os.path.join(folder, "model.data")
    marks1 = {0: 1.5, n1 - 1: -2.25, 123456789: 3.0}
    marks2 = {0: 0.5, n2 - 1: 7.0, 200000000: -1.0}
    with open(data, "wb") as f:
        f.truncate(4 * (n1 + n2))
        for base, marks in ((0, marks1), (4 * n1, marks2)):
            for i, v in marks.items():
                f.seek(base + 4 * i)
                f.write(np.float32(v).tobytes())
    idx1, idx2 = sorted(marks1), sorted(marks2)
    nodes = [helper.make_node("Gather", ["w1", "i1"], ["g1"], axis=0),
             helper.make_node("Gather", ["w2", "i2"], ["g2"], axis=0),
             helper.make_node("Concat", ["g1", "g2"], ["y"], axis=0)]
    inits = [external("w1", [n1], TensorProto.FLOAT, "model.data", 0, 4 * n1),
             external("w2", [n2], TensorProto.FLOAT, "model.data", 4 * n1, 4 * n2)]
    # The indices are fed (constant ones would fold the gathers away at load,
    # and the weights with them): the run reads the weights.
    ins = [helper.make_tensor_value_info(k, TensorProto.INT64, [3]) for k in ("i1", "i2")]
    path = save(folder, "big", nodes, ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6])], inits)
    feeds = []
    for k, idx in (("i1", idx1), ("i2", idx2)):
        np.save(os.path.join(folder, k + ".npy"), np.array(idx, np.int64))
        feeds.append(f"--input={k}=@" + os.path.join(folder, k + ".npy"))
    r, doc = run_json("run", path, *feeds)
    expect(r.returncode == 0, r.stderr)
    want = [marks1[i] for i in idx1] + [marks2[i] for i in idx2]
    expect(doc["outputs"][0]["data"] == want, f"{doc['outputs'][0]['data']} vs {want}")
    expect(doc["memory"]["before_teardown"]["cpu"]["weights"] >= 4 * (n1 + n2), doc["memory"]["before_teardown"])
    # Each weight is held once: read from its file straight into its value, not
    # into the model and again into the graph (the peak would be twice the weights).
    if not asan_build(GRAPHRUN):
        code, err, _, rss = run_measured(GRAPHRUN, ["run", path, *feeds], timeout=300)
        weights = 4 * (n1 + n2)
        expect(code == 0 and rss < weights + (256 << 20),
               f"peak resident memory {rss} bytes for {weights} bytes of weights: {err[-500:]}")
    os.remove(data)


sys.exit(finish("onnx_external", results))
