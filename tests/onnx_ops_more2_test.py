#!/usr/bin/env python3
"""ONNX ops composed of graphrun ops, the second batch (engine/frontend/onnx_ops_more2.cpp;
issue 27 item 6): GroupNormalization (opset 18: scale per group, 21: per channel),
LRN, Mod (both fmod modes, integers and floats), OneHot, CumSum and Einsum, each
through the real binary against a NumPy reference in float64, with ONNX's
defaults and edge cases (negative axes and indices, ties of signs, windows past
the channels), under safepoint and background, and the errors each refuses with
(exit 3, naming the node).

Usage: onnx_ops_more2_test.py GRAPHRUN
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
TMP = tempfile.mkdtemp(prefix="graphrun-onnx-more2-")
failures = []
check = checks(failures)
rng = np.random.default_rng(7)
T = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.int64: TensorProto.INT64,
     np.int32: TensorProto.INT32}


def model(name, nodes, feeds, out_shape, out_dtype, inits=(), opset=17):
    graph = helper.make_graph(nodes, name,
                              [helper.make_tensor_value_info(k, T[v.dtype.type], list(v.shape))
                               for k, v in feeds.items()],
                              [helper.make_tensor_value_info("y", T[out_dtype], list(out_shape))],
                              initializer=list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    path = os.path.join(TMP, name + ".onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path


def run(path, feeds, *extra):
    args = ["run", path]
    for k, v in feeds.items():
        f = os.path.join(TMP, k + ".npy")
        np.save(f, v)
        args.append(f"--input={k}=@{f}")
    out = os.path.join(TMP, "y.npz")
    p = run_binary(GRAPHRUN, [*args, f"--output=y=@{out}", "--no-data", *extra], timeout=120)
    return p, (np.load(out)["y"] if p.returncode == 0 else None)


def as_feeds(x):
    return x if isinstance(x, dict) else {"x": x}


def expect_values(name, nodes, x, want, inits=(), opset=17, rtol=1e-5, atol=1e-6, out_dtype=None, exact=False):
    feeds = as_feeds(x)
    out_dtype = out_dtype or next(iter(feeds.values())).dtype.type
    path = model(name, nodes, feeds, want.shape, out_dtype, inits, opset)
    for cleanup in ("safepoint", "background"):
        p, got = run(path, feeds, f"--cleanup={cleanup}")
        if exact:
            ok = p.returncode == 0 and got.dtype == np.dtype(out_dtype) and np.array_equal(got, want)
        else:
            ok = p.returncode == 0 and got.shape == want.shape and np.allclose(
                got.astype(np.float64), want, rtol=rtol, atol=atol, equal_nan=True)
        check(ok, f"{name} ({cleanup}): exit {p.returncode} {p.stderr[-600:]}\n got {got}\n want {want}")
    # The safepoint run peaks at check's static peak, leaking nothing.
    c = run_binary(GRAPHRUN, ["check", path, "--format=json"], timeout=120)
    p, _ = run(path, feeds, "--cleanup=safepoint", "--check-leaks", "--format=json")
    if check(c.returncode == 0 and p.returncode == 0, f"{name}: check/json run: {c.stderr[-300:]} {p.stderr[-300:]}"):
        static = json.loads(c.stdout)["static_peak"]["cpu"]
        peak = json.loads(p.stdout.splitlines()[0])["memory"]["before_teardown"]["cpu"]["peak"]
        check(peak == static, f"{name}: safepoint peak {peak} != static peak {static}")


def expect_refused(name, nodes, x, out_shape, words, inits=(), opset=17, out_dtype=None, code=3):
    feeds = as_feeds(x)
    out_dtype = out_dtype or next(iter(feeds.values())).dtype.type
    path = model(name, nodes, feeds, out_shape, out_dtype, inits, opset)
    p, _ = run(path, feeds)
    check(p.returncode == code and all(w in p.stderr for w in words),
          f"{name}: exit {p.returncode} {p.stderr[-600:]}")


def const(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


x4 = rng.standard_normal((2, 6, 4, 5)).astype(np.float32)
xd = x4.astype(np.float64)

# ---- GroupNormalization: opset 18 (scale and bias per group), 21 (per channel).
def group_norm_ref(x, g, scale, bias, eps, per_channel):
    n, c = x.shape[:2]
    r = x.reshape(n, g, -1)
    y = ((r - r.mean(axis=2, keepdims=True)) / np.sqrt(r.var(axis=2, keepdims=True) + eps))
    if not per_channel:
        return (y * scale.reshape(g, 1) + bias.reshape(g, 1)).reshape(x.shape)
    shape = (c,) + (1,) * (x.ndim - 2)
    return y.reshape(x.shape) * scale.reshape(shape) + bias.reshape(shape)


for g in (1, 2, 3, 6):
    sg = rng.standard_normal(g).astype(np.float32)
    bg = rng.standard_normal(g).astype(np.float32)
    expect_values(f"groupnorm18_{g}", [helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=g)],
                  x4, group_norm_ref(xd, g, sg.astype(np.float64), bg.astype(np.float64), 1e-5, False),
                  [const("s", sg), const("b", bg)], opset=18, rtol=1e-4, atol=1e-5)
sc = rng.standard_normal(6).astype(np.float32)
bc = rng.standard_normal(6).astype(np.float32)
expect_values("groupnorm21", [helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3,
                                               epsilon=0.01)],
              x4, group_norm_ref(xd, 3, sc.astype(np.float64), bc.astype(np.float64), np.float32(0.01), True),
              [const("s", sc), const("b", bc)], opset=21, rtol=1e-4, atol=1e-5)
x3 = rng.standard_normal((3, 4, 7))
expect_values("groupnorm18_f64_3d", [helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2)],
              x3, group_norm_ref(x3, 2, np.array([1.5, -2.0]), np.array([0.5, 0.25]), 1e-5, False),
              [const("s", np.array([1.5, -2.0])), const("b", np.array([0.5, 0.25]))], opset=18, rtol=1e-9, atol=1e-9)
expect_refused("groupnorm_groups", [helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=4,
                                                     name="gn")], x4, list(x4.shape), ("gn", "does not divide"),
               [const("s", np.ones(4, np.float32)), const("b", np.zeros(4, np.float32))], opset=18)
expect_refused("groupnorm_scale21", [helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3,
                                                      name="gn")], x4, list(x4.shape), ("gn", "[6]", "opset 21"),
               [const("s", np.ones(3, np.float32)), const("b", np.zeros(3, np.float32))], opset=21)
empty = np.zeros((2, 4, 0), np.float32)
expect_refused("groupnorm_empty", [helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2,
                                                    name="gn")], empty, [2, 4, 0], ("gn", "empty"),
               [const("s", np.ones(2, np.float32)), const("b", np.zeros(2, np.float32))], opset=18)


# ---- LRN: windows of ONNX's floor/ceil halves, clipped at the channels' ends.
def lrn_ref(x, size, alpha=1e-4, beta=0.75, bias=1.0):
    c = x.shape[1]
    sq = np.zeros_like(x)
    for ch in range(c):
        lo, hi = max(0, ch - (size - 1) // 2), min(c - 1, ch + -(-(size - 1) // 2))
        sq[:, ch] = (x[:, lo:hi + 1] ** 2).sum(axis=1)
    return x / (bias + alpha / size * sq) ** beta


big = (x4 * 3).astype(np.float32)
bd = big.astype(np.float64)
expect_values("lrn_default", [helper.make_node("LRN", ["x"], ["y"], size=3)], big, lrn_ref(bd, 3))
for size in (1, 2, 4, 5, 11, 1 << 40):
    expect_values(f"lrn_{size}", [helper.make_node("LRN", ["x"], ["y"], size=size, alpha=0.5, beta=0.6, bias=2.0)],
                  big, lrn_ref(bd, size, np.float32(0.5), np.float32(0.6), 2.0))
for beta in (0.5, 1.0):
    expect_values(f"lrn_beta{beta}", [helper.make_node("LRN", ["x"], ["y"], size=3, beta=beta)], big,
                  lrn_ref(bd, 3, beta=beta))
x5 = rng.standard_normal((1, 5, 2, 3, 2))
expect_values("lrn_3d", [helper.make_node("LRN", ["x"], ["y"], size=2, alpha=0.3)], x5,
              lrn_ref(x5, 2, np.float32(0.3)), rtol=1e-9, atol=1e-9)
expect_refused("lrn_size0", [helper.make_node("LRN", ["x"], ["y"], size=0, name="lrn")], big, list(big.shape),
               ("lrn", "size must be at least 1"))

# ---- Mod: both modes, mixed signs, ties (multiples), broadcasting, integers.
ai = np.array([-7, -6, -5, -1, 0, 1, 5, 6, 7, 2**62, -2**63, 13], np.int64)
bi = np.array([3, -3, 3, -3, 5, 3, -3, 3, -2, 7, -1, -5], np.int64)
expect_values("mod_int64", [helper.make_node("Mod", ["a", "b"], ["y"])], {"a": ai, "b": bi}, np.mod(ai, bi),
              exact=True)
expect_values("mod_int64_fmod", [helper.make_node("Mod", ["a", "b"], ["y"], fmod=1)], {"a": ai, "b": bi},
              np.fmod(ai, bi), exact=True)
a32, b32 = ai[:9].astype(np.int32), bi[:9].astype(np.int32)
expect_values("mod_int32", [helper.make_node("Mod", ["a", "b"], ["y"])], {"a": a32, "b": b32}, np.mod(a32, b32),
              exact=True)
af = (rng.standard_normal((3, 4)) * 10).astype(np.float32)
bf = np.array([[1.5], [-2.25], [0.7]], np.float32)
af[0, 0], af[1, 1] = 4.5, -4.5  # exact multiples: 0 and -0
for fm, ref in ((1, np.fmod), (0, np.mod)):
    expect_values(f"mod_f32_{fm}", [helper.make_node("Mod", ["a", "b"], ["y"], fmod=fm)], {"a": af, "b": bf},
                  ref(af.astype(np.float64), bf.astype(np.float64)), rtol=0, atol=0)
    ad = rng.standard_normal(50) * 1000
    bdd = rng.standard_normal(50)
    expect_values(f"mod_f64_{fm}", [helper.make_node("Mod", ["a", "b"], ["y"], fmod=fm)], {"a": ad, "b": bdd},
                  ref(ad, bdd), rtol=0, atol=1e-12)
# Quotients a hair from an integer, where a rounded quotient would leave a remainder of the wrong sign.
bq = rng.standard_normal(1000)
aq = bq * rng.integers(-50, 50, 1000) * (1 + rng.choice([-1, 1], 1000) * 2.0**-52)
for fm, ref in ((1, np.fmod), (0, np.mod)):
    expect_values(f"mod_f64_near_{fm}", [helper.make_node("Mod", ["a", "b"], ["y"], fmod=fm)], {"a": aq, "b": bq},
                  ref(aq, bq), rtol=0, atol=1e-13)
special = np.array([1.0, -1.0, np.inf, 3.0, 0.0, -2.5], np.float32)
sdiv = np.array([np.inf, np.inf, 2.0, 0.0, -np.inf, -np.inf], np.float32)
with np.errstate(all="ignore"):
    for fm, ref in ((1, np.fmod), (0, np.mod)):
        expect_values(f"mod_special_{fm}", [helper.make_node("Mod", ["a", "b"], ["y"], fmod=fm)],
                      {"a": special, "b": sdiv}, ref(special.astype(np.float64), sdiv.astype(np.float64)),
                      rtol=0, atol=0)
# An integer divisor of 0 is graphrun's integer division by zero: a runtime error (exit 1), never a crash.
expect_refused("mod_int_zero", [helper.make_node("Mod", ["a", "b"], ["y"], name="m")],
               {"a": np.array([4, 5], np.int64), "b": np.array([2, 0], np.int64)}, [2], ("division by zero",), code=1)

# ---- OneHot: axes, negative and out-of-range indices, float indices and depth.
def one_hot_ref(idx, depth, off, on, axis=-1):
    idx = np.trunc(np.asarray(idx)).astype(np.int64)
    idx = np.where(idx < 0, idx + depth, idx)
    if axis < 0:
        axis += idx.ndim + 1
    shape = [1] * (idx.ndim + 1)
    shape[axis] = depth
    return np.where(np.expand_dims(idx, axis) == np.arange(depth).reshape(shape), on, off)


ix = np.array([[0, 3, -1], [-4, 4, -5]], np.int64)
for axis in (-1, 0, 1, -2, 2):
    expect_values(f"onehot_{axis}", [helper.make_node("OneHot", ["x", "d", "v"], ["y"], axis=axis)], ix,
                  one_hot_ref(ix, 4, 2.0, 7.5, axis), [const("d", np.array(4, np.int64)),
                                                       const("v", np.array([2.0, 7.5], np.float32))],
                  out_dtype=np.float32)
fx = np.array([1.0, 9.7, -2.2, 3.0], np.float32)
expect_values("onehot_float", [helper.make_node("OneHot", ["x", "d", "v"], ["y"])], fx,
              one_hot_ref(fx, 10, 0, 1), [const("d", np.array([10.0], np.float32)),
                                          const("v", np.array([0, 1], np.int64))], out_dtype=np.int64, exact=True)
# values given at run time, not a constant
expect_values("onehot_values_input", [helper.make_node("OneHot", ["x", "d", "v"], ["y"], axis=0)],
              {"x": ix, "v": np.array([-1.0, 3.0])}, one_hot_ref(ix, 5, -1.0, 3.0, 0),
              [const("d", np.array(5, np.int32))], out_dtype=np.float64)
expect_refused("onehot_depth", [helper.make_node("OneHot", ["x", "d", "v"], ["y"], name="oh")], ix, [2, 3, 4],
               ("oh", "depth must be"), [const("d", np.array(1 << 40, np.int64)), const("v", np.array([0., 1.]))],
               out_dtype=np.float64)
expect_refused("onehot_depth0", [helper.make_node("OneHot", ["x", "d", "v"], ["y"], name="oh")], ix, [2, 3, 4],
               ("oh", "depth must be"), [const("d", np.array(0, np.int64)), const("v", np.array([0., 1.]))],
               out_dtype=np.float64)

# ---- CumSum: every axis, exclusive and reverse, integers exactly.
def cumsum_ref(x, axis, exclusive=0, reverse=0):
    if reverse:
        x = np.flip(x, axis)
    y = np.cumsum(x, axis=axis)
    if exclusive:
        y = y - x
    return np.flip(y, axis) if reverse else y


xc = rng.standard_normal((3, 37, 4)).astype(np.float32)
for axis in (0, 1, -1, -2):
    for exclusive in (0, 1):
        for reverse in (0, 1):
            expect_values(f"cumsum_{axis}_{exclusive}{reverse}",
                          [helper.make_node("CumSum", ["x", "ax"], ["y"], exclusive=exclusive, reverse=reverse)],
                          xc, cumsum_ref(xc.astype(np.float64), axis, exclusive, reverse),
                          [const("ax", np.array(axis, np.int64))], rtol=1e-5, atol=1e-5)
xi = rng.integers(-2**62, 2**62, (5, 9), dtype=np.int64)
for exclusive, reverse in ((0, 0), (1, 1)):
    with np.errstate(over="ignore"):
        want = cumsum_ref(xi, 1, exclusive, reverse)
    expect_values(f"cumsum_int64_{exclusive}{reverse}",
                  [helper.make_node("CumSum", ["x", "ax"], ["y"], exclusive=exclusive, reverse=reverse)], xi, want,
                  [const("ax", np.array([1], np.int32))], exact=True)
one = rng.standard_normal((2, 1)).astype(np.float32)
expect_values("cumsum_len1_excl", [helper.make_node("CumSum", ["x", "ax"], ["y"], exclusive=1)], one,
              np.zeros((2, 1)), [const("ax", np.array(1, np.int64))])
expect_refused("cumsum_axis", [helper.make_node("CumSum", ["x", "ax"], ["y"], name="cs")], xc, list(xc.shape),
               ("cs", "out of range"), [const("ax", np.array(3, np.int64))])


# ---- Einsum: the forms exporters write.
def einsum_case(name, eq, shapes, dtype=np.float32, **kw):
    ops = [rng.standard_normal(s).astype(dtype) for s in shapes]
    feeds = {f"i{k}": v for k, v in enumerate(ops)}
    want = np.einsum(eq, *[o.astype(np.float64) for o in ops])
    expect_values(name, [helper.make_node("Einsum", list(feeds), ["y"], equation=eq)], feeds, np.asarray(want),
                  rtol=1e-5, atol=1e-5, **kw)


einsum_case("einsum_bmm", "bij,bjk->bik", [(2, 3, 4), (2, 4, 5)])
einsum_case("einsum_attn", "bhqd,bhkd->bhqk", [(2, 3, 5, 8), (2, 3, 6, 8)])
einsum_case("einsum_mm", "ij,jk->ik", [(3, 4), (4, 5)])
einsum_case("einsum_dot", "bi,bi->b", [(4, 7), (4, 7)])
einsum_case("einsum_inner", "i,i", [(6,), (6,)])
einsum_case("einsum_outer", "i,j->ij", [(3,), (4,)])
einsum_case("einsum_implicit", "ij,jk", [(3, 4), (4, 2)])
einsum_case("einsum_transpose", "ij->ji", [(3, 4)])
einsum_case("einsum_sum", "ij->i", [(3, 4)])
einsum_case("einsum_sum_all", "ij->", [(3, 4)])
einsum_case("einsum_ellipsis", "...ij,...jk->...ik", [(2, 3, 3, 4), (2, 3, 4, 2)], dtype=np.float64)
einsum_case("einsum_out_perm", "bqd,bkd->kbq", [(2, 3, 4), (2, 5, 4)])
einsum_case("einsum_sum_alone", "ij,jk->k", [(3, 4), (4, 2)])
einsum_case("einsum_ta", "bkq,bkn->bqn", [(2, 5, 3), (2, 5, 4)])  # a read through transpose_a
einsum_case("einsum_ta_tb", "kq,nk->qn", [(5, 3), (4, 5)])  # both through the flags
expect_refused("einsum_diagonal", [helper.make_node("Einsum", ["x"], ["y"], equation="ii->i", name="es")],
               rng.standard_normal((3, 3)).astype(np.float32), [3], ("es", "ii->i", "diagonal"))
expect_refused("einsum_three", [helper.make_node("Einsum", ["x", "x", "x"], ["y"], equation="i,i,i->i",
                                                 name="es")], rng.standard_normal(3).astype(np.float32), [3],
               ("es", "i,i,i->i", "one or two operands"))
expect_refused("einsum_broadcast", [helper.make_node("Einsum", ["x", "z"], ["y"], equation="bi,bi->b", name="es")],
               {"x": rng.standard_normal((3, 2)).astype(np.float32),
                "z": rng.standard_normal((1, 2)).astype(np.float32)}, [3], ("es", "bi,bi->b", "broadcasting"))
expect_refused("einsum_int", [helper.make_node("Einsum", ["x", "x"], ["y"], equation="ij,jk->ik", name="es")],
               np.ones((2, 2), np.int64), [2, 2], ("es", "ij,jk->ik", "f32 or f64"))


# Hostile shapes (declared only: check reads the model, nothing is allocated): refused naming the node, no
# product wraps and no loop runs away.
def expect_check_refused(name, nodes, shape, out_shape, words, inits=()):
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
                              initializer=list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = os.path.join(TMP, name + ".onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    p = run_binary(GRAPHRUN, ["check", path], timeout=60)
    check(p.returncode == 3 and all(w in p.stderr for w in words), f"{name}: exit {p.returncode} {p.stderr[-600:]}")


expect_check_refused("cumsum_huge", [helper.make_node("CumSum", ["x", "a"], ["y"], name="cs")], [2**62 + 1],
                     [2**62 + 1], ("cs", "more elements than graphrun holds"), [const("a", np.array(0, np.int64))])
expect_check_refused("lrn_huge", [helper.make_node("LRN", ["x"], ["y"], size=3, name="l")], [2**31] * 3, [2**31] * 3,
                     ("'l'", "more elements than graphrun holds"))
expect_check_refused("einsum_huge_out", [helper.make_node("Einsum", ["x", "x"], ["y"], equation="ij,kl->ijkl",
                                                          name="es")], [2**19] * 2, [2**19] * 4,
                     ("es", "its output's shape", "more elements than graphrun holds"))

print(f"onnx_ops_more2: {'all passed' if not failures else str(len(failures)) + ' failed'}")
sys.exit(1 if failures else 0)
