#!/usr/bin/env python3
"""NumPy-checked tests of the conv area's ops (conv, conv_transpose, max_pool,
avg_pool, global_avg_pool, global_max_pool) through the real binary, with
ONNX's semantics: 1-D and 2-D, strides, pads (asymmetric), auto_pad
SAME_UPPER/SAME_LOWER/VALID, dilations, groups (depthwise too), bias,
ceil_mode, count_include_pad, output_padding and output_shape, f32 and f64.
Each graph is written as a .graph script and as JSON; both must give the same
bytes. References are direct loops in float64 (independent of graphrun's
im2col); results must be within 1e-5 (f32) or 1e-12 (f64) of the reference
relative to the sum of the magnitudes of each output's terms; the pools'
max and the pools on exact inputs must match exactly. Large cases run with
--threads=1 and --threads=3 (graphrun's two parallel paths) and must agree.
Bad inputs: exit 3 with file:line:col and the values involved.

Usage: ops_conv_test.py GRAPHRUN [--keep DIR] [-v]
"""
import argparse
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ops_check  # noqa: E402
from harness import run_binary  # noqa: E402 (tests/harness.py)
import ops_numpy_test as base  # noqa: E402  (Graph, run, to_array; re-execs under /usr/bin/python3 without NumPy)
import numpy as np  # noqa: E402


# --- the window, as ONNX defines it (independently of engine/ir/conv_geometry.cpp) ----

def per_axis(v, s, d):
    if v is None:
        return [d] * s
    return list(v) * s if len(v) == 1 else list(v)


def geometry(in_sp, k, strides, pads, dil, auto_pad, ceil_mode=False):
    s = len(in_sp)
    st, dl = per_axis(strides, s, 1), per_axis(dil, s, 1)
    pb, pe = ([0] * s, [0] * s) if pads is None else (list(pads[:s]), list(pads[s:]))
    out = []
    for a in range(s):
        e = (k[a] - 1) * dl[a] + 1
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            o = -(-in_sp[a] // st[a])
            total = max(0, (o - 1) * st[a] + e - in_sp[a])
            small = total // 2
            pb[a] = small if auto_pad == "SAME_UPPER" else total - small
            pe[a] = total - pb[a]
        else:
            if auto_pad == "VALID":
                pb[a] = pe[a] = 0
            span = in_sp[a] + pb[a] + pe[a] - e
            o = span // st[a] + 1
            if ceil_mode and span % st[a]:
                o += 1
                if (o - 1) * st[a] >= in_sp[a] + pb[a]:
                    o -= 1
        out.append(o)
    return out, st, dl, pb, pe


def conv_ref(x, w, b, strides=None, pads=None, dil=None, group=1, auto_pad=None):
    x, w = base.f64(x), base.f64(w)
    n, c = x.shape[:2]
    m, cg = w.shape[:2]
    out, st, dl, pb, _ = geometry(list(x.shape[2:]), list(w.shape[2:]), strides, pads, dil, auto_pad)
    if x.ndim == 3:  # 1-D as 2-D of height 1
        x, w = x[:, :, None, :], w[:, :, None, :]
        out, st, dl, pb = [1] + out, [1] + st, [1] + dl, [0] + pb
    y = np.zeros((n, m, out[0], out[1]))
    mag = np.zeros_like(y)
    mg = m // group
    for oc in range(m):
        gi = oc // mg
        for i in range(w.shape[2]):
            for j in range(w.shape[3]):
                for oh in range(out[0]):
                    ih = oh * st[0] + i * dl[0] - pb[0]
                    if not 0 <= ih < x.shape[2]:
                        continue
                    ow = np.arange(out[1])
                    iw = ow * st[1] + j * dl[1] - pb[1]
                    ok = (iw >= 0) & (iw < x.shape[3])
                    xs = x[:, gi * cg:(gi + 1) * cg, ih, :][:, :, iw[ok]]  # n, cg, ow
                    t = xs * w[oc, :, i, j][None, :, None]
                    y[:, oc, oh, ow[ok]] += t.sum(axis=1)
                    mag[:, oc, oh, ow[ok]] += np.abs(t).sum(axis=1)
    if b is not None:
        y += base.f64(b)[None, :, None, None]
        mag += np.abs(base.f64(b))[None, :, None, None]
    return y, mag


def conv_transpose_ref(x, w, b, strides=None, pads=None, dil=None, group=1, output_padding=None,
                       output_shape=None, auto_pad=None):
    x, w = base.f64(x), base.f64(w)
    s = x.ndim - 2
    n, c = x.shape[:2]
    cg, mg = c // group, w.shape[1]
    m = mg * group
    k = list(w.shape[2:])
    st, dl, op = per_axis(strides, s, 1), per_axis(dil, s, 1), per_axis(output_padding, s, 0)
    pb, pe = ([0] * s, [0] * s) if pads is None else (list(pads[:s]), list(pads[s:]))
    out = []
    for a in range(s):
        full = st[a] * (x.shape[2 + a] - 1) + op[a] + (k[a] - 1) * dl[a] + 1
        if output_shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            want = output_shape[a] if output_shape is not None else x.shape[2 + a] * st[a]
            total = max(0, full - want)  # a larger output is extended at the end
            small = total // 2
            pb[a] = small if auto_pad == "SAME_UPPER" else total - small
            out.append(want)
        else:
            out.append(full - pb[a] - pe[a])
    if s == 1:
        x, w = x[:, :, None, :], w[:, :, None, :]
        out, st, dl, pb = [1] + out, [1] + st, [1] + dl, [0] + pb
    y = np.zeros((n, m, out[0], out[1]))
    mag = np.zeros_like(y)
    for ic in range(c):
        gi = ic // cg
        for ih in range(x.shape[2]):
            for iw in range(x.shape[3]):
                for i in range(w.shape[2]):
                    oh = ih * st[0] + i * dl[0] - pb[0]
                    if not 0 <= oh < out[0]:
                        continue
                    for j in range(w.shape[3]):
                        ow = iw * st[1] + j * dl[1] - pb[1]
                        if not 0 <= ow < out[1]:
                            continue
                        t = x[:, ic, ih, iw][:, None] * w[ic, :, i, j][None, :]  # n, mg
                        y[:, gi * mg:(gi + 1) * mg, oh, ow] += t
                        mag[:, gi * mg:(gi + 1) * mg, oh, ow] += np.abs(t)
    if b is not None:
        y += base.f64(b)[None, :, None, None]
        mag += np.abs(base.f64(b))[None, :, None, None]
    if s == 1:
        y, mag = y[:, :, 0, :], mag[:, :, 0, :]
    return y, mag


def pool_ref(x, is_max, kernel, strides=None, pads=None, dil=None, auto_pad=None, ceil_mode=False,
             count_include_pad=False):
    x = base.f64(x)
    s = x.ndim - 2
    out, st, dl, pb, pe = geometry(list(x.shape[2:]), per_axis(kernel, s, 1), strides, pads, dil, auto_pad,
                                   ceil_mode)
    k = per_axis(kernel, s, 1)
    if s == 1:
        x = x[:, :, None, :]
        out, st, dl, pb, pe, k = [1] + out, [1] + st, [1] + dl, [0] + pb, [0] + pe, [1] + k
    y = np.zeros(x.shape[:2] + tuple(out))
    for oh in range(out[0]):
        for ow in range(out[1]):
            vals = []
            for i in range(k[0]):
                for j in range(k[1]):
                    ih, iw = oh * st[0] + i * dl[0] - pb[0], ow * st[1] + j * dl[1] - pb[1]
                    if 0 <= ih < x.shape[2] and 0 <= iw < x.shape[3]:
                        vals.append(x[:, :, ih, iw])
            if is_max:
                y[:, :, oh, ow] = np.max(np.stack(vals), axis=0) if vals else -np.inf
            else:
                def count(a, o):
                    start = o * st[a] - pb[a]
                    lo, hi = (-pb[a], x.shape[2 + a] + pe[a]) if count_include_pad else (0, x.shape[2 + a])
                    return max(0, min(start + k[a], hi) - max(start, lo))
                y[:, :, oh, ow] = np.sum(np.stack(vals), axis=0) / (count(0, oh) * count(1, ow))
    return y[:, :, 0, :] if s == 1 else y


# --- the cases -------------------------------------------------------------------------

CONV_CASES = [  # x shape, w shape, bias, attrs
    ([1, 3, 7, 7], [4, 3, 3, 3], True, {}),
    ([2, 3, 8, 9], [5, 3, 3, 2], False, {"strides": [2, 2]}),
    ([1, 2, 6, 7], [3, 2, 3, 3], True, {"pads": [1, 0, 2, 1]}),
    ([1, 2, 9, 9], [2, 2, 3, 3], False, {"dilations": [2, 3], "pads": [2, 2, 2, 2]}),
    ([2, 4, 6, 6], [6, 2, 3, 3], True, {"group": 2, "pads": [1, 1, 1, 1]}),
    ([2, 4, 7, 7], [4, 1, 3, 3], True, {"group": 4, "pads": [1, 1, 1, 1], "strides": 2}),  # depthwise
    ([1, 3, 6, 5], [6, 1, 3, 3], False, {"group": 3, "dilations": 2, "pads": [2, 1, 2, 1]}),  # x2 multiplier
    ([2, 8, 5, 6], [4, 8, 1, 1], True, {}),  # 1x1: direct GEMM
    ([1, 8, 5, 6], [4, 8, 1, 1], False, {"strides": [2, 2]}),
    ([1, 3, 7, 8], [2, 3, 3, 3], False, {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ([1, 3, 7, 8], [2, 3, 4, 4], False, {"auto_pad": "SAME_LOWER", "strides": [2, 3]}),
    ([1, 3, 7, 8], [2, 3, 3, 2], True, {"auto_pad": "VALID", "strides": [2, 1]}),
    ([3, 5, 10], [4, 5, 3], True, {}),  # 1-D
    ([2, 4, 11], [6, 2, 4], False, {"strides": 3, "pads": [2, 1], "dilations": 2, "group": 2}),
    ([1, 2, 9], [2, 2, 3], False, {"auto_pad": "SAME_UPPER", "strides": 2}),
    ([1, 1, 5, 5], [3, 1, 3, 3], True, {}),  # one input channel (the direct loop)
    ([0, 3, 5, 5], [2, 3, 3, 3], True, {}),  # empty batch
]

TRANSPOSE_CASES = [
    ([1, 2, 3, 3], [2, 3, 3, 3], True, {}),
    ([2, 3, 4, 3], [3, 2, 3, 3], False, {"strides": [2, 2]}),
    ([1, 2, 4, 4], [2, 2, 3, 3], True, {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]}),
    ([1, 4, 3, 3], [4, 1, 2, 2], False, {"group": 2, "dilations": [2, 2]}),
    ([1, 2, 3, 4], [2, 2, 3, 3], False, {"strides": [3, 2], "output_shape": [10, 8]}),
    ([1, 2, 3, 3], [2, 2, 3, 3], False, {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ([2, 3, 5], [3, 2, 3], True, {"strides": 2, "pads": [1, 0]}),  # 1-D
]

POOL_CASES = [  # op, x shape, attrs
    ("max_pool", [2, 3, 7, 7], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ("max_pool", [1, 2, 6, 6], {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": True}),
    ("max_pool", [1, 2, 8, 8], {"kernel_shape": [2, 2], "dilations": [2, 2]}),
    ("max_pool", [1, 2, 7, 6], {"kernel_shape": [3, 2], "auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ("max_pool", [2, 3, 10], {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
    ("avg_pool", [2, 3, 7, 7], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ("avg_pool", [2, 3, 7, 7], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
                                "count_include_pad": True}),
    ("avg_pool", [1, 2, 6, 6], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
                                "ceil_mode": True, "count_include_pad": True}),
    ("avg_pool", [1, 2, 5, 8], {"kernel_shape": [2, 3], "auto_pad": "SAME_LOWER", "strides": [1, 2]}),
    ("avg_pool", [2, 3, 10], {"kernel_shape": [4], "strides": [3], "pads": [2, 1]}),
]


def attrs_for_ref(attrs):
    a = dict(attrs)
    for k in ("strides", "dilations", "output_padding", "kernel_shape"):
        if isinstance(a.get(k), int):
            a[k] = [a[k]]
    return a


def conv_graphs():
    for dtype in base.FLOAT:
        g = base.Graph(f"conv_{dtype}")
        g.tol = {}
        for k, (xs, ws, bias, attrs) in enumerate(CONV_CASES):
            (x, vx), (w, vw) = g.rand(xs, dtype, -1, 1), g.rand(ws, dtype, -1, 1)
            ins, vb = [x, w], None
            if bias:
                b, vb = g.rand([ws[0]], dtype, -1, 1)
                ins.append(b)
            a = attrs_for_ref(attrs)
            ref, mag = conv_ref(vx, vw, vb, a.get("strides"), a.get("pads"), a.get("dilations"), a.get("group", 1),
                                a.get("auto_pad"))
            if len(xs) == 3:
                ref, mag = ref[:, :, 0, :], mag[:, :, 0, :]
            g.op(f"conv_{k}", "conv", ins, attrs, ref, "tol")
            g.tol[f"conv_{k}"] = mag
        for k, (xs, ws, bias, attrs) in enumerate(TRANSPOSE_CASES):
            (x, vx), (w, vw) = g.rand(xs, dtype, -1, 1), g.rand(ws, dtype, -1, 1)
            ins, vb = [x, w], None
            if bias:
                b, vb = g.rand([ws[1] * attrs.get("group", 1)], dtype, -1, 1)
                ins.append(b)
            a = attrs_for_ref(attrs)
            ref, mag = conv_transpose_ref(vx, vw, vb, a.get("strides"), a.get("pads"), a.get("dilations"),
                                          a.get("group", 1), a.get("output_padding"), a.get("output_shape"),
                                          a.get("auto_pad"))
            g.op(f"convt_{k}", "conv_transpose", ins, attrs, ref, "tol")
            g.tol[f"convt_{k}"] = mag
        yield g


def pool_graphs():
    for dtype in base.FLOAT:
        g = base.Graph(f"pool_{dtype}")
        g.tol = {}
        for k, (op, xs, attrs) in enumerate(POOL_CASES):
            x, vx = g.rand(xs, dtype, -4, 4)
            a = attrs_for_ref(attrs)
            ref = pool_ref(vx, op == "max_pool", a["kernel_shape"], a.get("strides"), a.get("pads"),
                           a.get("dilations"), a.get("auto_pad"), a.get("ceil_mode", False),
                           a.get("count_include_pad", False))
            g.op(f"{op}_{k}", op, [x], attrs, ref, "exact" if op == "max_pool" else "tol")
            g.tol[f"{op}_{k}"] = pool_ref(np.abs(vx), False, a["kernel_shape"], a.get("strides"), a.get("pads"),
                                          a.get("dilations"), a.get("auto_pad"), a.get("ceil_mode", False),
                                          a.get("count_include_pad", False)) if op == "avg_pool" else None
        for shape in ([2, 3, 5, 4], [2, 3, 7], [1, 2, 3, 2, 2]):
            x, vx = g.rand(shape, dtype, -4, 4)
            axes = tuple(range(2, len(shape)))
            g.op(f"gmax_{len(shape)}", "global_max_pool", [x], {}, np.max(base.f64(vx), axis=axes, keepdims=True),
                 "exact")
            g.op(f"gavg_{len(shape)}", "global_avg_pool", [x], {}, np.mean(base.f64(vx), axis=axes, keepdims=True),
                 "tol")
            g.tol[f"gavg_{len(shape)}"] = np.mean(np.abs(base.f64(vx)), axis=axes, keepdims=True)
        # NaN propagates through max_pool's window (ONNX, PyTorch).
        x, vx = g.const([[[[1.0, math.nan, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]]], dtype)
        g.op("max_nan", "max_pool", [x], {"kernel_shape": [2, 2], "strides": [2, 2]},
             np.array([[[[math.nan, 8.0]]]]), "exact")
        g.op("gmax_nan", "global_max_pool", [x], {}, np.array([[[[math.nan]]]]), "exact")
        yield g


def big_graph():
    """ResNet-ish sizes: im2col in tiles (64*9 rows x 4096 pixels > the 8 MiB tile), batch-parallel path."""
    g = base.Graph("conv_big")
    g.tol = {}
    (x, vx), (w, vw), (b, vb) = g.rand([4, 16, 40, 40], "f32", -1, 1), g.rand([24, 16, 3, 3], "f32", -1, 1), \
        g.rand([24], "f32", -1, 1)
    ref, mag = conv_ref(vx, vw, vb, pads=[1, 1, 1, 1])
    g.op("big", "conv", [x, w, b], {"pads": [1, 1, 1, 1]}, ref, "tol")
    g.tol["big"] = mag
    (x2, vx2), (w2, vw2) = g.rand([1, 64, 64, 64], "f32", -1, 1), g.rand([4, 64, 3, 3], "f32", -1, 1)
    ref2, mag2 = conv_ref(vx2, vw2, None, pads=[1, 1, 1, 1])
    g.op("tiled", "conv", [x2, w2], {"pads": [1, 1, 1, 1]}, ref2, "tol")
    g.tol["tiled"] = mag2
    return g


# --- running -------------------------------------------------------------------------

def check(g, name, got, dtype):
    ref, kind = g.checks[name]
    if list(got.shape) != list(np.shape(ref)):
        return f"shape {list(got.shape)}, NumPy {list(np.shape(ref))}"
    if kind == "tol":
        mag = g.tol[name]
        tol = (1e-5 if dtype == "f32" else 1e-12) * (mag + 1e-30) + (1e-30 if dtype == "f64" else 1e-7)
        bad = np.argwhere(~(np.abs(base.f64(got) - ref) <= tol))
        if len(bad):
            i = tuple(bad[0])
            return f"{len(bad)} elements off, first at {i}: NumPy {ref[i]!r}, graphrun {got[i]!r}"
        return None
    bad = base.compare(got, ref, kind, dtype)
    return "; ".join(f"at {i}: NumPy {r!r}, graphrun {v!r}" for i, r, v in bad) or None


ERROR_CASES = [  # body, expected pieces of the message
    ("x = random_uniform([1, 4, 5, 5])\nw = random_uniform([2, 4, 3, 3])\ny = conv(x, w, group=3)\noutput y\n",
     ["3:22: error: y: conv: the input's 4 channels ([1,4,5,5]) do not divide into group 3"]),
    ("x = random_uniform([1, 4, 5, 5])\nw = random_uniform([2, 3, 3, 3])\ny = conv(x, w)\noutput y\n",
     ["3:13: error: y: conv: the weight [2,3,3,3] takes 3 channels per group, but the input [1,4,5,5] has 4"]),
    ("x = random_uniform([1, 2, 5, 5])\nw = random_uniform([2, 2, 3, 3])\ny = conv(x, w, strides=[1, 0])\noutput y\n",
     ["3:24: error: y: conv: strides [1,0] has 0; each must be at least 1"]),
    ("x = random_uniform([1, 2, 5, 5])\nw = random_uniform([2, 2, 3, 3])\ny = conv(x, w, pads=[1, 1, 1])\noutput y\n",
     ["3:21: error: y: conv: pads [1,1,1] has 3 entries; a 2-D input takes 4"]),
    ("x = random_uniform([1, 2, 2, 2])\ny = max_pool(x, kernel_shape=[3, 3])\noutput y\n",
     ["2:14: error: y: max_pool: the height of the window (3: kernel 3, dilation 1) is larger than the padded "
      "input's (2: [1,2,2,2] with pads 0+0)"]),
    ("x = random_uniform([2, 5])\ny = avg_pool(x, kernel_shape=2)\noutput y\n",
     ["error: y: avg_pool: avg_pool needs an input of rank 3 (N, C, W) or 4 (N, C, H, W), got [2,5] (rank 2)"]),
    ("x = random_uniform([1, 2, 5, 5])\nw = random_uniform([2, 2, 3, 3])\n"
     "y = conv(x, w, auto_pad=\"SAME\")\noutput y\n",
     ["error: y: conv: auto_pad must be \"NOTSET\", \"SAME_UPPER\", \"SAME_LOWER\" or \"VALID\", got \"SAME\""]),
    ("x = random_uniform([1, 2, 5, 5])\nw = random_uniform([2, 2, 3, 3])\nb = random_uniform([3])\n"
     "y = conv(x, w, b)\noutput y\n",
     ["4:16: error: y: conv: b is f32[3], but the bias must be f[2], one value per output channel"]),
    ("x = random_uniform([1, 2, 5, 5])\nw = random_uniform([2, 2, 3, 3], dtype=f64)\ny = conv(x, w)\noutput y\n",
     ["3:13: error: y: conv: w is f64[2,2,3,3], but x is f32[1,2,5,5]; conv takes operands of one dtype"]),
    ("x = random_uniform([1, 2, 5, 5])\ny = conv(x)\noutput y\n",
     ["error: y: conv: takes 2 or 3 inputs, got 1"]),
    ("x = random_uniform([1, 2, 3, 3])\nw = random_uniform([2, 2, 3, 3])\n"
     "y = conv_transpose(x, w, strides=2, output_padding=[2, 2])\noutput y\n",
     ["error: y: conv_transpose: output_padding 2 must be less than the stride (2) or the dilation (1)"]),
]


SCRATCH_GRAPH = ("x = random_uniform([1, 64, 64, 64], seed=1)\nw = random_uniform([64, 64, 3, 3], seed=2)\n"
                 "y = conv(x, w, pads=1)\ns = reduce_sum(y)\noutput s\n")


def scratch_checks(binary, d):
    """im2col's scratch is counted under the memory limit as workspace: a tighter limit takes smaller
    tiles (same result), one without room for the smallest tile is a runtime error (exit 1), and no
    workspace is left after the run."""
    path = os.path.join(d, "conv_scratch.graph")
    with open(path, "w") as f:
        f.write(SCRATCH_GRAPH)
    results, failures = [], 0
    # Built with oneDNN, the f32 conv runs oneDNN's kernel where its scratch (blocked input and output,
    # the filter reordered, about 4.3 MiB here) fits, and ours (im2col) where it does not.
    dnnl = "oneDNN" in run_binary(binary, ["devices"], timeout=60).stdout
    for limit in ("64MiB", "2400KiB"):
        p = run_binary(binary, ["run", "--format=json", "--threads=1", f"--memory-limit={limit}", path], timeout=120)
        import json
        doc = json.loads(p.stdout.splitlines()[0]) if p.returncode == 0 else {}
        mem = doc.get("memory", {})
        left = [mem.get(k, {}).get("cpu", {}).get("workspace") for k in ("before_teardown", "after_teardown")]
        # The scratch came from the counting allocator: its cache (reserved) holds the 8 MiB tile
        # (oneDNN's 4 MiB of blocked buffers).
        reserved = mem.get("before_teardown", {}).get("cpu", {}).get("reserved", 0)
        if p.returncode != 0 or left != [0, 0] or (limit == "64MiB" and reserved < ((4 if dnnl else 8) << 20)):
            print(f"FAIL scratch at {limit}: exit {p.returncode}, workspace {left}, reserved {reserved}: "
                  f"{p.stderr[-500:]}")
            failures += 1
            continue
        results.append(base.to_array(doc["outputs"][0]))
    if len(results) == 2 and abs(float(results[0]) - float(results[1])) > 1e-5 * abs(float(results[0])):
        print(f"FAIL scratch: tiles of another size give {results[1]} instead of {results[0]}")
        failures += 1
    p = run_binary(binary, ["run", "--threads=1", "--memory-limit=2200KiB", path], timeout=120)
    want = "error: node 'y' (conv) on cpu: out of memory: 36864 bytes of scratch for conv's im2col columns"
    if p.returncode != 1 or want not in p.stderr:
        print(f"FAIL scratch over the limit: exit {p.returncode} (want 1), missing {want!r} in:\n{p.stderr}")
        failures += 1
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("graphrun")
    ap.add_argument("--keep")
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    np.seterr(all="ignore")
    graphs = list(conv_graphs()) + list(pool_graphs()) + [big_graph()]
    with tempfile.TemporaryDirectory() as tmp:
        d = args.keep or tmp
        os.makedirs(d, exist_ok=True)
        texts, jsons = ops_check.write_forms(graphs, d)
        # The text forms on one thread, the JSON forms on three: both parallel paths.
        docs_t = ops_check.run_json(args.graphrun, texts, ["--threads=1"])
        docs_j = ops_check.run_json(args.graphrun, jsons, ["--threads=3"])
        errors = ops_check.bad_inputs(args.graphrun, d, ERROR_CASES, prefix="conv_error", need_place=True)
        errors += scratch_checks(args.graphrun, d)
    failures, checked = ops_check.check_outputs(
        graphs, docs_t, docs_j, lambda g, name, out: check(g, name, base.to_array(out), out["dtype"]), args.v,
        same_forms=False, labels=("graph --threads=1", "json --threads=3"))
    failures += errors
    print(f"ops_conv_test: {len(graphs)} graphs x 2 forms, {checked} outputs, {len(ERROR_CASES)} bad inputs, "
          f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
