#!/usr/bin/env python3
"""ONNX ops composed of graphrun ops (engine/frontend/onnx_ops_more.cpp; issue 27
item 6): each through the real binary against a NumPy reference in float64,
with ONNX's attribute defaults and edge cases (ties, negative k, both
DepthToSpace modes, keepdims), under safepoint and background, and the errors
each refuses with (exit 3, naming the node).

Usage: onnx_ops_more_test.py GRAPHRUN
"""
import json
import os
import sys
import tempfile

try:
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    print(f"SKIP: the ONNX op tests need numpy and python3-onnx ({e})")
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import checks, run_binary  # noqa: E402

GRAPHRUN = os.path.abspath(sys.argv[1])
TMP = tempfile.mkdtemp(prefix="graphrun-onnx-more-")
failures = []
check = checks(failures)
rng = np.random.default_rng(5)
T = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.int64: TensorProto.INT64}


def model(name, nodes, x, out_shape, out_dtype=None, inits=(), opset=17):
    out_dtype = out_dtype or x.dtype.type
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", T[x.dtype.type], list(x.shape))],
                              [helper.make_tensor_value_info("y", T[out_dtype], list(out_shape))],
                              initializer=list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    path = os.path.join(TMP, name + ".onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path


def run(path, x, *extra):
    xin = os.path.join(TMP, "x.npy")
    np.save(xin, x)
    out = os.path.join(TMP, "y.npz")
    p = run_binary(GRAPHRUN, ["run", path, f"--input=x=@{xin}", f"--output=y=@{out}", "--no-data", *extra],
                   timeout=120)
    return p, (np.load(out)["y"] if p.returncode == 0 else None)


def expect_values(name, nodes, x, want, inits=(), opset=17, rtol=1e-5, atol=1e-6, out_dtype=None):
    path = model(name, nodes, x, want.shape, out_dtype or x.dtype.type, inits, opset)
    for cleanup in ("safepoint", "background"):
        p, got = run(path, x, f"--cleanup={cleanup}")
        ok = p.returncode == 0 and got.shape == want.shape and np.allclose(got.astype(np.float64), want, rtol=rtol,
                                                                           atol=atol)
        check(ok, f"{name} ({cleanup}): exit {p.returncode} {p.stderr[-600:]}\n got {got}\n want {want}")


def expect_refused(name, nodes, x, out_shape, words, inits=(), opset=17):
    path = model(name, nodes, x, out_shape, None, inits, opset)
    p, _ = run(path, x)
    check(p.returncode == 3 and all(w in p.stderr for w in words), f"{name}: exit {p.returncode} {p.stderr[-600:]}")


x4 = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
xd = x4.astype(np.float64)

# PRelu: a slope per channel, and a scalar one.
slope = rng.standard_normal((3, 1, 1)).astype(np.float32)
expect_values("prelu", [helper.make_node("PRelu", ["x", "s"], ["y"])], x4, np.where(xd < 0, xd * slope, xd),
              [numpy_helper.from_array(slope, "s")])
expect_values("prelu_scalar", [helper.make_node("PRelu", ["x", "s"], ["y"])], x4, np.where(xd < 0, xd * 0.25, xd),
              [numpy_helper.from_array(np.array(0.25, np.float32), "s")])
# HardSigmoid (defaults and given), HardSwish, Mish.
wide = (x4 * 4).astype(np.float32)
wd = wide.astype(np.float64)
expect_values("hardsigmoid", [helper.make_node("HardSigmoid", ["x"], ["y"])], wide, np.clip(0.2 * wd + 0.5, 0, 1))
expect_values("hardsigmoid_ab", [helper.make_node("HardSigmoid", ["x"], ["y"], alpha=0.3, beta=0.4)], wide,
              np.clip(np.float32(0.3) * wd + np.float32(0.4), 0, 1))
expect_values("hardswish", [helper.make_node("HardSwish", ["x"], ["y"])], wide, wd * np.clip(wd / 6 + 0.5, 0, 1))
expect_values("mish", [helper.make_node("Mish", ["x"], ["y"])], wide, wd * np.tanh(np.log1p(np.exp(wd))), opset=18)
# The composed reductions: axes, keepdims, every axis.
pos = (np.abs(x4) + 0.1).astype(np.float32)
pd = pos.astype(np.float64)
for op, ref in (("ReduceL1", lambda a, ax, k: np.abs(a).sum(axis=ax, keepdims=k)),
                ("ReduceL2", lambda a, ax, k: np.sqrt((a * a).sum(axis=ax, keepdims=k))),
                ("ReduceSumSquare", lambda a, ax, k: (a * a).sum(axis=ax, keepdims=k)),
                ("ReduceLogSum", lambda a, ax, k: np.log(a.sum(axis=ax, keepdims=k))),
                ("ReduceLogSumExp", lambda a, ax, k: np.log(np.exp(a).sum(axis=ax, keepdims=k)))):
    src, ref_in = (pos, pd) if op == "ReduceLogSum" else (x4, xd)
    expect_values(op + "_axes", [helper.make_node(op, ["x"], ["y"], axes=[1, -1], keepdims=0)], src,
                  ref(ref_in, (1, 3), False))
    expect_values(op + "_all", [helper.make_node(op, ["x"], ["y"])], src, ref(ref_in, None, True))
    # Opset 18: axes as an input.
    expect_values(op + "_18", [helper.make_node(op, ["x", "axes"], ["y"], keepdims=1)], src,
                  ref(ref_in, (2,), True), [numpy_helper.from_array(np.array([2], np.int64), "axes")], opset=18)
# LogSumExp of large values does not overflow.
big = (x4 * 100 + 500).astype(np.float32)
bd = big.astype(np.float64)
m = bd.max(axis=1, keepdims=True)
expect_values("logsumexp_big", [helper.make_node("ReduceLogSumExp", ["x"], ["y"], axes=[1])], big,
              np.log(np.exp(bd - m).sum(axis=1, keepdims=True)) + m)
# CastLike: to the other input's dtype.
expect_values("castlike", [helper.make_node("CastLike", ["x", "like"], ["y"])], x4, xd,
              [numpy_helper.from_array(np.zeros(1, np.float64), "like")], out_dtype=np.float64)
# DepthToSpace (both modes) and SpaceToDepth, against ONNX's reference formulas.
xc = rng.standard_normal((2, 8, 3, 2)).astype(np.float32)
b = 2
n, c, h, w = xc.shape
dcr = xc.reshape(n, b, b, c // 4, h, w).transpose(0, 3, 4, 1, 5, 2).reshape(n, c // 4, h * b, w * b)
crd = xc.reshape(n, c // 4, b, b, h, w).transpose(0, 1, 4, 2, 5, 3).reshape(n, c // 4, h * b, w * b)
expect_values("d2s_dcr", [helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2)], xc, dcr.astype(np.float64))
expect_values("d2s_crd", [helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2, mode="CRD")], xc,
              crd.astype(np.float64))
xs = rng.standard_normal((1, 3, 4, 6)).astype(np.float32)
s2d = xs.reshape(1, 3, 2, 2, 3, 2).transpose(0, 3, 5, 1, 2, 4).reshape(1, 12, 2, 3)
expect_values("s2d", [helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=2)], xs, s2d.astype(np.float64))
# InstanceNormalization.
scale = rng.standard_normal(3).astype(np.float32)
bias = rng.standard_normal(3).astype(np.float32)
mean = xd.mean(axis=(2, 3), keepdims=True)
var = xd.var(axis=(2, 3), keepdims=True)
inorm = (xd - mean) / np.sqrt(var + 1e-5) * scale.reshape(3, 1, 1) + bias.reshape(3, 1, 1)
expect_values("instancenorm", [helper.make_node("InstanceNormalization", ["x", "sc", "b"], ["y"])], x4, inorm,
              [numpy_helper.from_array(scale, "sc"), numpy_helper.from_array(bias, "b")], rtol=1e-4, atol=1e-5)
# Trilu: upper and lower, k from -2 to 6 (past the matrix), batched.
for upper in (1, 0):
    for k in (-2, 0, 1, 6):
        want = np.triu(xd, k) if upper else np.tril(xd, k)
        expect_values(f"trilu_{upper}_{k}", [helper.make_node("Trilu", ["x", "k"], ["y"], upper=upper)], x4, want,
                      [numpy_helper.from_array(np.array(k, np.int64), "k")])
# k at the ends of int64 (a fuzzer's find: i + k overflowed): everything or nothing is kept.
for upper in (1, 0):
    for k in (2 ** 63 - 1, 2 ** 63 - 2, -2 ** 63, -2 ** 63 + 1):
        keep_all = (k < 0) == bool(upper)
        want = xd if keep_all else np.zeros_like(xd)
        expect_values(f"trilu_{upper}_{k}", [helper.make_node("Trilu", ["x", "k"], ["y"], upper=upper)], x4, want,
                      [numpy_helper.from_array(np.array(k, np.int64), "k")])
expect_values("trilu_default", [helper.make_node("Trilu", ["x"], ["y"])], x4, np.triu(xd))
# Hardmax: the first maximum along the axis wins a tie.
ties = np.array([[1, 3, 3, 0], [2, 2, 2, 2], [-1, -5, -1, -0.5]], np.float32)
want = np.zeros_like(ties, dtype=np.float64)
want[np.arange(3), ties.argmax(axis=1)] = 1
expect_values("hardmax", [helper.make_node("Hardmax", ["x"], ["y"])], ties, want)
want0 = np.zeros_like(ties, dtype=np.float64)
want0[ties.argmax(axis=0), np.arange(4)] = 1
expect_values("hardmax_axis0", [helper.make_node("Hardmax", ["x"], ["y"], axis=0)], ties, want0)

# Refused, each naming the node and why.
expect_refused("d2s_channels", [helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=3, name="d2s")], xc,
               [2, 1, 9, 6], ("d2s", "DepthToSpace"))
expect_refused("trilu_two_k", [helper.make_node("Trilu", ["x", "k"], ["y"], name="tri")], x4, list(x4.shape),
               ("tri", "must hold one value"), [numpy_helper.from_array(np.array([1, 2], np.int64), "k")])
expect_refused("hardmax_old", [helper.make_node("Hardmax", ["x"], ["y"], name="hm")], ties, [3, 4],
               ("hm", "before opset 13"), opset=11)

# GatherElements: along each axis, negative indices, indices shorter than the data; an index out of
# range stops the run (exit 1) naming its entry of the indices, instead of reading a neighbouring element.
g = rng.standard_normal((3, 4, 5)).astype(np.float32)
gd = g.astype(np.float64)
for axis in (0, 1, -1):
    ax = axis % 3
    shape = list(g.shape)
    shape[ax] = 6
    shape[(ax + 1) % 3] -= 1  # shorter than the data on another axis
    idx = rng.integers(-g.shape[ax], g.shape[ax], shape).astype(np.int64)
    expect_values(f"gather_elements_{axis}", [helper.make_node("GatherElements", ["x", "i"], ["y"], axis=axis)], g,
                  np.take_along_axis(gd[tuple(slice(0, n) for n in [shape[d] if d != ax else g.shape[d]
                                                                     for d in range(3)])],
                                     np.where(idx < 0, idx + g.shape[ax], idx), axis=ax),
                  [numpy_helper.from_array(idx, "i")])
bad = np.zeros((3, 4, 5), np.int64)
bad[1, 2, 3] = 4  # axis 1 has length 4
path = model("gather_elements_bad", [helper.make_node("GatherElements", ["x", "i"], ["y"], axis=1)], g, bad.shape,
             None, [numpy_helper.from_array(bad, "i")])
p, _ = run(path, g)
check(p.returncode == 1 and "index 4 (entry 33 of the indices) is out of range for axis 1 of the data [3,4,5]" in p.stderr
      and "length 4" in p.stderr, f"GatherElements index out of range: {p.returncode} {p.stderr[-300:]}")

# NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (weights, ignore_index, every reduction) against
# NumPy; a target outside [0, C) stops the run.
scores = rng.standard_normal((4, 5, 3)).astype(np.float32)
target = rng.integers(0, 5, (4, 3)).astype(np.int64)
target[0, 1] = -1  # ignored
wts = (rng.random(5) + 0.5).astype(np.float32)
sd = scores.astype(np.float64)
logp = sd - sd.max(axis=1, keepdims=True)
logp = logp - np.log(np.exp(logp).sum(axis=1, keepdims=True))
keep = target != -1
safe = np.where(keep, target, 0)
for op, inp in (("NegativeLogLikelihoodLoss", sd), ("SoftmaxCrossEntropyLoss", logp)):
    picked = np.take_along_axis(inp, safe[:, None, :], axis=1)[:, 0, :]
    w = wts.astype(np.float64)[safe] * keep
    per = -picked * w
    for reduction, want in (("none", per), ("sum", per.sum()), ("mean", per.sum() / w.sum())):
        expect_values(f"{op}_{reduction}", [helper.make_node(op, ["x", "t", "w"], ["y"], reduction=reduction,
                                                             ignore_index=-1)],
                      scores, np.asarray(want), [numpy_helper.from_array(target, "t"), numpy_helper.from_array(wts, "w")])
bad_t = np.zeros((4, 3), np.int64)
bad_t[2, 2] = 5
path = model("nll_bad", [helper.make_node("NegativeLogLikelihoodLoss", ["x", "t"], ["y"])], scores, (), None,
             [numpy_helper.from_array(bad_t, "t")])
p, _ = run(path, scores)
check(p.returncode == 1 and "out of range" in p.stderr, f"NLL target out of range: {p.returncode} {p.stderr[-300:]}")

print(f"onnx_ops_more: {'all passed' if not failures else str(len(failures)) + ' failed'}")
sys.exit(1 if failures else 0)
