#!/usr/bin/env python3
"""The index ops top_k, scatter_elements, scatter_nd and gather_elements (README "Ops beyond SPEC
section 3"; issue 27 item 6) through the real binary against NumPy references:
top_k's order (largest and smallest first, ties to the lower index, NaN above
every number), both outputs, every axis, f16 through its compute type; the
scatters with every reduction, negative indices, repeated indices applied in
order, i32 and i64 indices, ScatterND's slices; gather_elements against
NumPy's take_along_axis on every axis and dtype; the errors (an index out of
range stops the run with exit 1 naming the entry, bad attributes are exit 3 at
file:line:col); --device=gpu soft-places them on the CPU. With python3-onnx:
TopK (K as input and as attribute), ScatterElements and ScatterND models whose
indices are fed at run time.

Usage: index_ops_test.py GRAPHRUN
"""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ValueRunner, checks, run_binary  # noqa: E402

GRAPHRUN = os.path.abspath(sys.argv[1])
TMP = tempfile.mkdtemp(prefix="graphrun-index-")
failures = []
check = checks(failures)
rng = np.random.default_rng(27)
VR = ValueRunner(GRAPHRUN, TMP)


script, save, run_values = VR.script, VR.save, VR.run_values


def top_k_ref(x, k, axis, largest):
    """Indices: a stable sort on the key (NaN above every number), ties to the lower index."""
    xm = np.moveaxis(x.astype(np.float64), axis, -1)
    if largest:  # descending: NaN first, then by -value, ties by index
        idx = np.empty(xm.shape, np.int64)
        for pos in np.ndindex(xm.shape[:-1]):
            row = xm[pos]
            idx[pos] = sorted(range(row.size), key=lambda j: (0 if np.isnan(row[j]) else 1,
                                                             0 if np.isnan(row[j]) else -row[j], j))
    else:
        idx = np.empty(xm.shape, np.int64)
        for pos in np.ndindex(xm.shape[:-1]):
            row = xm[pos]
            idx[pos] = sorted(range(row.size), key=lambda j: (1 if np.isnan(row[j]) else 0,
                                                             0 if np.isnan(row[j]) else row[j], j))
    idx = idx[..., :k]
    vals = np.take_along_axis(xm, idx, axis=-1)
    return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)


# --- top_k ----------------------------------------------------------------------------------------
x = rng.integers(-5, 5, size=(3, 7, 4)).astype(np.float32)  # many ties
x[0, 2, 1] = np.nan
x[1, 5, 3] = np.nan
x[1, 6, 3] = np.nan
xin = save("x", x)
for axis in (0, 1, 2, -1):
    for largest in (True, False):
        k = {0: 2, 1: 4, 2: 3, -1: 4}[axis]
        lg = "true" if largest else "false"
        path = script(f"topk_{axis}_{lg}", f"""
x = input([3, 7, 4])
v = top_k(x, k={k}, axis={axis}, largest={lg})
i = top_k(x, k={k}, axis={axis}, largest={lg}, indices=true)
output v, i
""")
        p, got = run_values(path, f"--input=x=@{xin}")
        wv, wi = top_k_ref(x, k, axis, largest)
        check(p.returncode == 0 and got.get("i") is not None and got["i"].dtype == np.int64 and
              np.array_equal(got["i"], wi) and np.array_equal(got["v"], wv.astype(np.float32), equal_nan=True),
              f"top_k axis={axis} largest={lg}: exit {p.returncode} {p.stderr[-400:]}\n got {got}\n want {wv} {wi}")

# k = 0 and k = the whole axis; integers; a larger random case across threads.
xi = rng.integers(-1000, 1000, size=(64, 300)).astype(np.int64)
path = script("topk_int", """
x = input([64, 300], dtype=i64)
a = top_k(x, k=0)
b = top_k(x, k=300, largest=false)
c = top_k(x, k=17, indices=true)
output a, b, c
""")
p, got = run_values(path, f"--input=x=@{save('xi', xi)}", "--threads=2")
check(p.returncode == 0 and got["a"].shape == (64, 0) and np.array_equal(got["b"], np.sort(xi, axis=1)) and
      np.array_equal(got["c"], np.argsort(-xi, axis=1, kind="stable")[:, :17]),
      f"top_k on i64: exit {p.returncode} {p.stderr[-400:]}")

# f16: runs in f32 between the plan's casts; the values come back as f16.
x16 = rng.standard_normal((5, 9)).astype(np.float16)
path = script("topk_f16", """
x = input([5, 9], dtype=f16)
v = top_k(x, k=3)
i = top_k(x, k=3, indices=true)
output v, i
""")
p, got = run_values(path, f"--input=x=@{save('x16', x16)}")
wv, wi = top_k_ref(x16, 3, -1, True)
check(p.returncode == 0 and got["v"].dtype == np.float16 and np.array_equal(got["v"], wv.astype(np.float16)) and
      np.array_equal(got["i"], wi), f"top_k on f16: exit {p.returncode} {p.stderr[-400:]}")

# K as a run-time input (ONNX TopK's form): checked against k when the graph runs.
path = script("topk_fed", """
x = input([3, 7, 4])
kk = input([1], dtype=i64)
v = top_k(x, kk, k=2, axis=1)
""")
p, got = run_values(path, f"--input=x=@{xin}", "--input=kk=[2]")
check(p.returncode == 0 and np.array_equal(got.get("v"), top_k_ref(x, 2, 1, True)[0], equal_nan=True),
      f"top_k with K fed: exit {p.returncode} {p.stderr[-400:]}")
p, got = run_values(path, f"--input=x=@{xin}", "--input=kk=[5]")
check(p.returncode == 1 and "top_k: K is 5, but the graph was built for k=2 (its output's shape [3,2,4])" in p.stderr,
      f"top_k with a K that does not fit: exit {p.returncode} {p.stderr[-400:]}")

# --- scatter_elements -----------------------------------------------------------------------------


def scatter_elements_ref(data, idx, upd, axis, reduction):
    out = data.copy()
    for pos in np.ndindex(idx.shape):
        t = list(pos)
        v = idx[pos]
        t[axis] = v + data.shape[axis] if v < 0 else v
        t = tuple(t)
        u = upd[pos]
        if reduction == "none":
            out[t] = u
        elif reduction == "add":
            out[t] = out[t] + u
        elif reduction == "mul":
            out[t] = out[t] * u
        elif reduction == "max":
            out[t] = max(out[t], u)
        else:
            out[t] = min(out[t], u)
    return out


data = rng.standard_normal((4, 5)).astype(np.float32)
upd = rng.standard_normal((3, 5)).astype(np.float32)
idx = np.array([[0, 3, -1, 2, 0], [1, 0, 3, -4, 0], [3, 3, 0, 1, 0]], np.int64)  # repeats, negatives
for reduction in ("none", "add", "mul", "max", "min"):
    for itype in ("i32", "i64"):
        path = script(f"se_{reduction}_{itype}", f"""
d = input([4, 5])
i = input([3, 5], dtype={itype})
u = input([3, 5])
y = scatter_elements(d, i, u, axis=0{'' if reduction == 'none' else f', reduction="{reduction}"'})
""")
        p, got = run_values(path, f"--input=d=@{save('d', data)}",
                            f"--input=i=@{save('i' + itype, idx.astype(np.int32 if itype == 'i32' else np.int64))}",
                            f"--input=u=@{save('u', upd)}")
        want = scatter_elements_ref(data.astype(np.float64), idx, upd.astype(np.float64), 0, reduction)
        check(p.returncode == 0 and np.allclose(got.get("y"), want, rtol=1e-6, atol=1e-7),
              f"scatter_elements {reduction} {itype}: exit {p.returncode} {p.stderr[-400:]}\n got {got}\n want {want}")

# axis 1 with indices shorter than the data; integer sums wrap as NumPy's do.
di = np.array([[2147483647, 5, 6], [1, 2, 3]], np.int32)
ii = np.array([[0, 0], [2, 1]], np.int64)
ui = np.array([[1, 1], [7, 8]], np.int32)
path = script("se_wrap", """
d = input([2, 3], dtype=i32)
i = input([2, 2], dtype=i64)
u = input([2, 2], dtype=i32)
y = scatter_elements(d, i, u, axis=1, reduction="add")
""")
p, got = run_values(path, f"--input=d=@{save('di', di)}", f"--input=i=@{save('ii', ii)}", f"--input=u=@{save('ui', ui)}")
with np.errstate(over="ignore"):
    want = scatter_elements_ref(di, ii, ui, 1, "add")
check(p.returncode == 0 and np.array_equal(got.get("y"), want), f"scatter_elements wrapping: {p.stderr[-300:]} {got}")

# --- scatter_nd -----------------------------------------------------------------------------------
data = rng.standard_normal((4, 3, 2)).astype(np.float64)
cases = [
    ("elements", np.array([[0, 1, 1], [3, 2, 0], [-1, 0, 1]]), (3,)),
    ("rows", np.array([[1], [-4], [1]]), (3, 3, 2)),
    ("planes", np.array([[[2, 1]], [[0, 0]]]), (2, 1, 2)),
]
for name, nidx, ushape in cases:
    for reduction in ("none", "add", "mul", "max", "min"):
        u = rng.standard_normal(ushape)
        want = data.copy()
        for j in np.ndindex(nidx.shape[:-1]):
            t = tuple(int(v) for v in nidx[j])
            if reduction == "none":
                want[t] = u[j]
            elif reduction == "add":
                want[t] = want[t] + u[j]
            elif reduction == "mul":
                want[t] = want[t] * u[j]
            elif reduction == "max":
                want[t] = np.maximum(want[t], u[j])
            else:
                want[t] = np.minimum(want[t], u[j])
        path = script(f"snd_{name}_{reduction}", f"""
d = input([4, 3, 2], dtype=f64)
i = input({list(nidx.shape)}, dtype=i64)
u = input({list(ushape)}, dtype=f64)
y = scatter_nd(d, i, u{'' if reduction == 'none' else f', reduction="{reduction}"'})
""")
        p, got = run_values(path, f"--input=d=@{save('dn', data)}", f"--input=i=@{save('in', nidx.astype(np.int64))}",
                            f"--input=u=@{save('un', u)}")
        check(p.returncode == 0 and np.array_equal(got.get("y"), want),
              f"scatter_nd {name} {reduction}: exit {p.returncode} {p.stderr[-400:]}")

# Under --device=gpu the index ops are placed on the CPU (soft placement), with the same values.
path = script("soft", """
x = const([[3, 1, 2], [0, 5, 4]])
v = top_k(x, k=2)
s = scatter_nd(x, const([[1, 2]], dtype=i64), const([9]))
output v, s
""")
p, got = run_values(path, "--device=gpu")
check(p.returncode == 0 and np.array_equal(got.get("v"), [[3, 2], [5, 4]]) and
      np.array_equal(got.get("s"), [[3, 1, 2], [0, 5, 9]]), f"soft placement: exit {p.returncode} {p.stderr[-400:]}")

# The index workspace under --memory-limit: one buffer per worker, one when only that fits,
# and a run-time error (exit 1) naming it when not even that does. x is 1.6 MB, a row's buffer 0.8 MB.
path = script("topk_limit", """
x = random_uniform([4, 100000], seed=1)
v = top_k(x, k=3)
""")
p, got = run_values(path, "--memory-limit=2500000", "--threads=2")
check(p.returncode == 0 and got.get("v") is not None and got["v"].shape == (4, 3),
      f"top_k with room for one workspace buffer: exit {p.returncode} {p.stderr[-400:]}")
p, got = run_values(path, "--memory-limit=2000000", "--threads=2")
check(p.returncode == 1 and "top_k: no memory for its 800000-byte index workspace under the memory limit" in p.stderr,
      f"top_k without room for its workspace: exit {p.returncode} {p.stderr[-400:]}")

# The scatters' positions are workspace too (8 bytes an index): 2 MB of tensors here and 0.8 MB of
# positions, so 3 MB runs and 2.5 MB is a run-time error naming the workspace, not a process that
# grows past its limit.
path = script("scatter_limit", """
d = zeros([100000])
i = range(100000, dtype=i64)
u = ones([100000])
y = scatter_elements(d, i, u, reduction="add")
""")
p, got = run_values(path, "--memory-limit=3000000")
check(p.returncode == 0 and got.get("y") is not None and np.array_equal(got["y"], np.ones(100000, np.float32)),
      f"scatter_elements with room for its positions: exit {p.returncode} {p.stderr[-400:]}")
p, got = run_values(path, "--memory-limit=2500000")
check(p.returncode == 1 and
      "scatter_elements: no memory for its 800000-byte position workspace under the memory limit" in p.stderr,
      f"scatter_elements without room for its positions: exit {p.returncode} {p.stderr[-400:]}")

# --- gather_elements ------------------------------------------------------------------------------
# NumPy's take_along_axis (negative indices counted from the end) on every axis of a rank-3
# tensor, indices shorter than the data on the other axes, i32 and i64 indices, every dtype.
gdata = rng.standard_normal((3, 4, 5))
for axis in (0, 1, 2, -1):
    ishape = [2, 3, 4]
    ishape[axis] = 6  # along the axis: any length, repeats allowed
    length = gdata.shape[axis]
    gidx = rng.integers(-length, length, size=ishape)
    sl = tuple(slice(0, n) if d != (axis % 3) else slice(None) for d, n in enumerate(ishape))
    for itype, dtype in (("i32", "f32"), ("i64", "f64"), ("i64", "i32"), ("i32", "i64")):
        npd = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64}[dtype]
        src = (gdata * 100).astype(npd) if dtype.startswith("i") else gdata.astype(npd)
        path = script(f"ge_{axis}_{itype}_{dtype}", f"""
d = input([3, 4, 5], dtype={dtype})
i = input({ishape}, dtype={itype})
y = gather_elements(d, i, axis={axis})
""")
        p, got = run_values(path, f"--input=d=@{save('gd' + dtype, src)}",
                            f"--input=i=@{save('gi' + itype + str(axis), gidx.astype(np.int32 if itype == 'i32' else np.int64))}")
        ref = np.take_along_axis(src[sl], np.where(gidx < 0, gidx + length, gidx), axis=axis)
        check(p.returncode == 0 and got.get("y") is not None and got["y"].dtype == npd and
              np.array_equal(got["y"], ref),
              f"gather_elements axis {axis} {itype} {dtype}: exit {p.returncode} {p.stderr[-400:]}\n got {got}\n want {ref}")
# bool data, empty indices, and --device=gpu soft-placing it on the CPU.
p, got = run_values(script("ge_bool", "d = const([[true, false], [false, true]])\n"
                                      "y = gather_elements(d, const([[1, 1], [0, 0]], dtype=i64), axis=1)\n"))
check(p.returncode == 0 and np.array_equal(got.get("y"), np.array([[False, False], [False, False]])),
      f"gather_elements bool: exit {p.returncode} {p.stderr[-400:]} {got}")
p, got = run_values(script("ge_empty", "y = gather_elements(ones([2, 3]), zeros([2, 0], dtype=i64), axis=1)\n"))
check(p.returncode == 0 and got.get("y") is not None and got["y"].shape == (2, 0),
      f"gather_elements of no indices: exit {p.returncode} {p.stderr[-400:]} {got}")
p, got = run_values(script("ge_gpu", "y = gather_elements(const([[1, 2], [3, 4]]), const([[1], [0]], dtype=i32), "
                                     "axis=1)\n"), "--device=gpu")
check(p.returncode == 0 and np.array_equal(got.get("y"), np.array([[2], [3]], np.float32)),
      f"gather_elements --device=gpu: exit {p.returncode} {p.stderr[-400:]} {got}")

# --- errors ---------------------------------------------------------------------------------------
# An index out of range: exit 1, the entry and the axis named, nothing else written.
for text, words in [
    ("y = scatter_elements(zeros([2, 3]), const([[0, 3]], dtype=i64), ones([1, 2]), axis=1)",
     ["scatter_elements: index 3 (entry 1 of the indices) is out of range for axis 1", "length 3"]),
    ("y = scatter_elements(zeros([2, 3]), const([[-3]], dtype=i32), ones([1, 1]))",
     ["index -3 (entry 0 of the indices) is out of range for axis 0", "length 2"]),
    ("y = scatter_nd(zeros([2, 3]), const([[1, 0], [0, 7]], dtype=i64), ones([2]))",
     ["scatter_nd: index 7 (entry 3 of the indices) is out of range for axis 1", "length 3"]),
    ("y = gather_elements(zeros([2, 3]), const([[0, 1], [2, 3]], dtype=i64), axis=1)",
     ["gather_elements: index 3 (entry 3 of the indices) is out of range for axis 1 of the data [2,3]", "length 3"]),
    ("y = gather_elements(zeros([2, 3]), const([[-3, 0]], dtype=i32))",
     ["gather_elements: index -3 (entry 0 of the indices) is out of range for axis 0", "length 2"]),
]:
    p = run_binary(GRAPHRUN, ["run", script("err_run", text + "\n")], timeout=60)
    check(p.returncode == 1 and all(w in p.stderr for w in words), f"{text}: exit {p.returncode} {p.stderr[-400:]}")

# Wrong attributes and shapes: exit 3 at the place.
for text, words in [
    ("y = top_k(zeros([2, 3]), k=4)", ["1:", "k=4 must be between 0 and the length of axis 1, 3"]),
    ("y = top_k(zeros([2, 3]), k=-1)", ["k=-1 must be between 0"]),
    ("y = top_k(zeros([2, 3]), k=1, axis=2)", ["axis 2 is out of range for rank 2"]),
    ("y = top_k(zeros([2, 3]), k=1, indices=\"both\")", ["indices"]),
    ("y = top_k(zeros([]), k=0)", ["a scalar; top_k needs at least 1 dimension"]),
    ("y = top_k(const([true, false]), k=1)", ["top_k"]),
    ("y = top_k(zeros([2, 3]), const([1, 2], dtype=i64), k=1)", ["K input holds one value"]),
    ("y = scatter_elements(zeros([2, 3]), const([[0]]), ones([1, 2]))", ["must have one shape"]),
    ("y = scatter_elements(zeros([2, 3]), const([[0, 1]]), ones([1, 2]), reduction=\"sum\")",
     ["reduction must be \"none\", \"add\", \"mul\", \"max\" or \"min\", got \"sum\""]),
    ("y = scatter_elements(zeros([2, 3]), const([[0.5]]), ones([1, 1]))", ["indices"]),
    ("y = scatter_elements(zeros([2, 3]), const([[0, 1, 2, 0]], dtype=i64), ones([1, 4]), axis=0)",
     ["is longer than the data", "on axis 1"]),
    ("y = scatter_elements(zeros([2, 3], dtype=bool), const([[0]], dtype=i64), zeros([1, 1], dtype=bool), "
     "reduction=\"add\")", ["reduction \"add\" needs numbers"]),
    ("y = scatter_nd(zeros([2, 3]), const([[0, 1, 2]], dtype=i64), ones([1]))", ["more than the rank of the data"]),
    ("y = scatter_nd(zeros([2, 3]), const([[0]], dtype=i64), ones([1, 2]))", ["must be [1,3]"]),
    ("y = scatter_nd(zeros([2, 3]), const([[0]], dtype=i64), ones([1, 3], dtype=f64))", ["dtype"]),
    ("y = gather_elements(zeros([2, 3]), const([0, 1], dtype=i64))", ["must have the rank of its data"]),
    ("y = gather_elements(zeros([2, 3]), const([[0, 1, 0, 1]], dtype=i64))",
     ["is longer than the data", "on axis 1, which is not the gather's axis 0"]),
    ("y = gather_elements(zeros([2, 3]), const([[0]], dtype=i64), axis=2)", ["axis 2 is out of range for rank 2"]),
    ("y = gather_elements(zeros([2, 3]), const([[0.5]]))", ["indices"]),
    ("y = gather_elements(zeros([]), const(0, dtype=i64))", ["a scalar; gather_elements needs at least 1 dimension"]),
]:
    path = script("err_check", text + "\n")
    p = run_binary(GRAPHRUN, ["run", path], timeout=60)
    check(p.returncode == 3 and f"{path}:1:" in p.stderr and all(w in p.stderr for w in words),
          f"{text}: exit {p.returncode} {p.stderr[-400:]}")

# --device=gpu --no-soft-placement: refused where a GPU is usable; the CPU where none is
# (then placement reports that first); never a wrong answer or a crash.
p = run_binary(GRAPHRUN, ["run", script("hard", "y = top_k(const([1, 3, 2]), k=1)\n"), "--device=gpu",
                          "--no-soft-placement"], timeout=60)
check(p.returncode in (0, 1, 3) and (p.returncode == 0 or "top_k" in p.stderr or "gpu" in p.stderr.lower()),
      f"top_k with --no-soft-placement: exit {p.returncode} {p.stderr[-300:]}")

# --- ONNX -----------------------------------------------------------------------------------------
try:
    from onnx import helper, numpy_helper
except ImportError as e:
    print(f"SKIP (ONNX part): python3-onnx is missing ({e})")
    helper = None

if helper is not None:
    onnx_model, onnx_run = VR.onnx_model, VR.onnx_run

    xt = rng.standard_normal((3, 10)).astype(np.float32)
    wv, wi = top_k_ref(xt, 4, 1, True)
    path = onnx_model("topk11", [helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1)], [("x", xt)],
                      [("v", np.float32, (3, 4)), ("i", np.int64, (3, 4))],
                      [numpy_helper.from_array(np.array([4], np.int64), "k")], opset=11)
    p, got = onnx_run(path, [("x", xt)], "--fetch=v", "--fetch=i")
    check(p.returncode == 0 and np.array_equal(got.get("v"), wv) and np.array_equal(got.get("i"), wi),
          f"ONNX TopK (opset 11): exit {p.returncode} {p.stderr[-400:]}")
    wv, wi = top_k_ref(xt, 2, 0, False)
    path = onnx_model("topk_smallest", [helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=0, largest=0)],
                      [("x", xt)], [("v", np.float32, (2, 10)), ("i", np.int64, (2, 10))],
                      [numpy_helper.from_array(np.array([2], np.int64), "k")], opset=11)
    p, got = onnx_run(path, [("x", xt)], "--fetch=v", "--fetch=i")
    check(p.returncode == 0 and np.array_equal(got.get("v"), wv) and np.array_equal(got.get("i"), wi),
          f"ONNX TopK largest=0: exit {p.returncode} {p.stderr[-400:]}")
    path = onnx_model("topk1", [helper.make_node("TopK", ["x"], ["v", "i"], k=3)], [("x", xt)],
                      [("v", np.float32, (3, 3)), ("i", np.int64, (3, 3))], opset=9)
    p, got = onnx_run(path, [("x", xt)], "--fetch=i")
    check(p.returncode == 0 and np.array_equal(got.get("i"), top_k_ref(xt, 3, -1, True)[1]),
          f"ONNX TopK (opset 9, k attribute): exit {p.returncode} {p.stderr[-400:]}")
    # K fed at run time: k from the output's declared shape, the fed K checked against it when the
    # graph runs (exit 1 on a mismatch); refused at load where the output's shape is not static.
    path = onnx_model("topk_dyn", [helper.make_node("TopK", ["x", "k"], ["v", "i"])],
                      [("x", xt), ("k", np.array([2], np.int64))], [("v", np.float32, (3, 2)), ("i", np.int64, (3, 2))],
                      opset=11)
    p, got = onnx_run(path, [("x", xt), ("k", np.array([2], np.int64))], "--fetch=v")
    check(p.returncode == 0 and np.array_equal(got.get("v"), top_k_ref(xt, 2, -1, True)[0]),
          f"ONNX TopK with a fed K: exit {p.returncode} {p.stderr[-400:]}")
    p, _ = onnx_run(path, [("x", xt), ("k", np.array([3], np.int64))])
    check(p.returncode == 1 and "top_k: K is 3, but the graph was built for k=2" in p.stderr,
          f"ONNX TopK with a fed K that does not fit: exit {p.returncode} {p.stderr[-400:]}")
    path = onnx_model("topk_free", [helper.make_node("TopK", ["x", "k"], ["v", "i"])],
                      [("x", xt), ("k", np.array([2], np.int64))], [("v", np.float32, ("a", "b")),
                                                                   ("i", np.int64, ("a", "b"))], opset=11)
    p, _ = onnx_run(path, [("x", xt), ("k", np.array([2], np.int64))])
    check(p.returncode == 3 and "TopK" in p.stderr and "K input 'k' is not a constant" in p.stderr,
          f"ONNX TopK with a fed K and a free output shape: exit {p.returncode} {p.stderr[-400:]}")

    # ScatterElements and ScatterND with the indices and updates fed at run time.
    d = rng.standard_normal((4, 5)).astype(np.float32)
    i = np.array([[1, 0, 3, 2, 1]], np.int64)
    u = rng.standard_normal((1, 5)).astype(np.float32)
    path = onnx_model("scatter_elements", [helper.make_node("ScatterElements", ["d", "i", "u"], ["y"], axis=0,
                                                            reduction="add")],
                      [("d", d), ("i", i), ("u", u)], [("y", np.float32, (4, 5))], opset=16)
    p, got = onnx_run(path, [("d", d), ("i", i), ("u", u)])
    want = scatter_elements_ref(d.astype(np.float64), i, u.astype(np.float64), 0, "add")
    check(p.returncode == 0 and np.allclose(got.get("y"), want, rtol=1e-6),
          f"ONNX ScatterElements: exit {p.returncode} {p.stderr[-400:]}")
    ni = np.array([[2], [0]], np.int64)
    nu = rng.standard_normal((2, 5)).astype(np.float32)
    path = onnx_model("scatter_nd", [helper.make_node("ScatterND", ["d", "i", "u"], ["y"])],
                      [("d", d), ("i", ni), ("u", nu)], [("y", np.float32, (4, 5))], opset=13)
    p, got = onnx_run(path, [("d", d), ("i", ni), ("u", nu)])
    want = d.copy()
    want[[2, 0]] = nu
    check(p.returncode == 0 and np.array_equal(got.get("y"), want), f"ONNX ScatterND: exit {p.returncode} {p.stderr[-400:]}")

if failures:
    print(f"FAILED: {len(failures)} index-op checks")
    sys.exit(1)
print("OK: top_k, scatter_elements, scatter_nd, gather_elements")
