#!/usr/bin/env python3
"""NumPy-checked tests of the norm ops (README "Ops beyond SPEC section 3"):
layer_norm, batch_norm (inference) and gemm, on f32 and f64, through the real
binary. Each graph is written as a .graph script and as JSON; both must give
the same bytes; the values are compared with NumPy computed in float64 from
the same inputs (attributes rounded to the dtype, as the ops apply them):

  layer_norm, batch_norm: within 1 ulp (f32) or 8 ulp (f64) of the rounded
  reference, or within 1e-14 (f32) / 1e-13 (f64) of the size of the terms
  (|x| + |mean|) * inv * |scale| + |bias| (x - mean and the bias cancel);
  gemm: within (k + 4) * eps of |alpha| * |op(a)| @ |op(b)| + |beta * c|
  (f32 gemm accumulates in f32, as BLAS does).

Bad inputs go through the binary too: exit 3 with each problem at its place.

Usage: ops_norm_test.py GRAPHRUN [--keep DIR] [-v]
"""
import argparse
import os
import sys
import tempfile
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ops_check  # noqa: E402
from ops_numpy_test import NP, Graph, f64, run, to_array, ulp_close  # noqa: E402 (re-runs under /usr/bin/python3)

import numpy as np  # noqa: E402

FLOAT = ["f32", "f64"]
EPS = {"f32": 2.0 ** -23, "f64": 2.0 ** -52}


def as_dtype(v, dtype):
    """An attribute as the op applies it: a value of the tensor's dtype."""
    return float(NP[dtype](v))


# --- references ---------------------------------------------------------------------

def layer_norm_ref(x, scale, bias, axis, eps, dtype):
    x = f64(x)
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    d = x - mean
    var = (d * d).mean(axis=axes, keepdims=True)
    with np.errstate(all="ignore"):
        inv = 1 / np.sqrt(var + as_dtype(eps, dtype))
        t = d * inv * f64(scale)
        b = f64(bias) if bias is not None else 0.0
        # x - mean cancels: its rounding is relative to |x| + |mean|
        return t + b, (np.abs(x) + np.abs(mean)) * inv * np.abs(f64(scale)) + np.abs(b)


def batch_norm_ref(x, scale, bias, mean, var, eps, dtype):
    x = f64(x)
    shape = [1, -1] + [1] * (x.ndim - 2) if x.ndim >= 2 else [-1]
    r = [f64(v).reshape(shape) for v in (scale, bias, mean, var)]
    with np.errstate(all="ignore"):
        inv = 1 / np.sqrt(r[3] + as_dtype(eps, dtype))
        t = (x - r[2]) * inv * r[0]
        return t + r[1], (np.abs(x) + np.abs(r[2])) * inv * np.abs(r[0]) + np.abs(r[1])


def gemm_ref(a, b, c, alpha, beta, ta, tb, dtype):
    a, b = f64(a), f64(b)
    a = a.T if ta else a
    b = b.T if tb else b
    alpha = as_dtype(alpha, dtype)
    beta = as_dtype(beta, dtype)
    with np.errstate(all="ignore"):
        y = alpha * (a @ b)
        mag = abs(alpha) * (np.abs(a) @ np.abs(b))
        if c is not None and beta != 0:  # ONNX: beta == 0 ignores c
            y = y + beta * f64(c)
            mag = mag + np.abs(beta * f64(c))
    return y, mag


# --- the cases ----------------------------------------------------------------------

def attrs_of(**kw):
    return {k: v for k, v in kw.items() if v is not None}


def layer_norm_graphs():
    cases = [  # x shape, axis, scale shape (None: the row's), bias shape (False: none)
        ([5], -1, None, None), ([3, 4], -1, None, None), ([3, 4], 0, None, None), ([3, 4], 1, None, False),
        ([2, 3, 4], 1, None, None), ([2, 3, 4], -2, [4], [3, 1]), ([2, 3, 4], 0, [1, 4], []),
        ([2, 3, 4], 1, [3, 1], [1]), ([2, 3, 4], -1, [], False), ([1, 1, 2, 3, 4], 2, [1, 1, 3, 4], [2, 1, 1]),
        ([64, 768], -1, None, None), ([1000, 7], -1, None, None), ([4, 3000], -1, None, False),
        ([0, 4], -1, None, None), ([3, 0], -1, None, None), ([1, 1], -1, None, None)]
    for dtype in FLOAT:
        g = Graph(f"layer_norm_{dtype}")
        for k, (shape, axis, ss, bs) in enumerate(cases):
            row = shape[axis % len(shape):]
            x, vx = g.rand(shape, dtype, -5, 5)
            s, vs = g.rand(row if ss is None else ss, dtype, -2, 2)
            inputs, vb = [x, s], None
            if bs is not False:
                b, vb = g.rand(row if bs is None else bs, dtype, -2, 2)
                inputs.append(b)
            attrs = {} if axis == -1 else {"axis": axis}
            ref, mag = layer_norm_ref(vx, vs, vb, axis, 1e-5, dtype)
            g.op(f"ln_{k}", "layer_norm", inputs, attrs, (ref, mag), "norm")
        # epsilon; constant rows (variance 0: the output is the bias); a NaN row
        x, vx = g.rand([6, 10], dtype, -1, 1)
        s, vs = g.rand([10], dtype, 0.5, 2)
        b, vb = g.rand([10], dtype, -1, 1)
        for eps in (1e-3, 0.1, 1e-12):
            ref, mag = layer_norm_ref(vx, vs, vb, -1, eps, dtype)
            g.op(f"ln_eps_{len(g.outputs)}", "layer_norm", [x, s, b], {"epsilon": eps}, (ref, mag), "norm")
        c, vc = g.const(np.array([[3.0] * 10, [-1e6] * 10, list(range(10))]), dtype)
        for eps in (1e-5, 0.0):
            ref, mag = layer_norm_ref(vc, vs, vb, -1, eps, dtype)
            g.op(f"ln_const_{len(g.outputs)}", "layer_norm", [c, s, b], {"epsilon": eps}, (ref, mag), "norm")
        n, vn = g.const(np.array([[1.0, np.nan, 3.0], [1.0, 2.0, 3.0], [np.inf, 1.0, 2.0]]), dtype)
        s3, vs3 = g.rand([3], dtype, 0.5, 2)
        ref, mag = layer_norm_ref(vn, vs3, None, -1, 1e-5, dtype)
        g.op("ln_special", "layer_norm", [n, s3], {}, (ref, mag), "norm")
        yield g


def batch_norm_graphs():
    for dtype in FLOAT:
        g = Graph(f"batch_norm_{dtype}")
        for shape in ([2, 3, 4, 5], [1, 3], [5], [2, 3, 0, 4], [8, 16, 7, 7], [3, 2, 5], [2, 70, 33]):
            ch = shape[1] if len(shape) >= 2 else 1
            x, vx = g.rand(shape, dtype, -5, 5)
            params = [g.rand([ch], dtype, lo, hi) for lo, hi in ((-2, 2), (-1, 1), (-1, 1), (0.1, 3))]
            for eps in (None, 0.01):
                ref, mag = batch_norm_ref(vx, *[v for _, v in params], 1e-5 if eps is None else eps, dtype)
                g.op(f"bn_{len(g.outputs)}", "batch_norm", [x] + [p for p, _ in params],
                     attrs_of(epsilon=eps), (ref, mag), "norm")
        x, vx = g.const(np.array([[1.0, np.nan], [np.inf, -2.0], [0.0, -0.0]]), dtype)
        params = [g.const(np.array(v), dtype) for v in ([1.0, -2.0], [0.5, 0.0], [1.0, -1.0], [0.0, 4.0])]
        ref, mag = batch_norm_ref(vx, *[v for _, v in params], 0.0, dtype)
        g.op("bn_special", "batch_norm", [x] + [p for p, _ in params], {"epsilon": 0.0}, (ref, mag), "norm")
        yield g


def gemm_graphs():
    for dtype in FLOAT:
        g = Graph(f"gemm_{dtype}")
        mkn = [(2, 3, 4), (1, 1, 1), (5, 7, 3), (17, 33, 9), (3, 0, 4), (0, 3, 4), (3, 4, 0)]
        for k, (m, kk, n) in enumerate(mkn):
            for ta, tb in ((False, False), (True, False), (False, True), (True, True)):
                a, va = g.rand([kk, m] if ta else [m, kk], dtype, -2, 2)
                b, vb = g.rand([n, kk] if tb else [kk, n], dtype, -2, 2)
                for cshape, alpha, beta in ((None, None, None), ([n], 0.5, 2.0), ([m, n], None, None),
                                            ([m, 1], -1.5, None), ([1, n], None, 0.1), ([], 2.0, -1.0),
                                            ([1], None, None)):
                    inputs, vc = [a, b], None
                    if cshape is not None:
                        c, vc = g.rand(cshape, dtype, -3, 3)
                        inputs.append(c)
                    attrs = attrs_of(alpha=alpha, beta=beta, transpose_a=ta or None, transpose_b=tb or None)
                    ref, mag = gemm_ref(va, vb, vc, 1.0 if alpha is None else alpha,
                                        1.0 if beta is None else beta, ta, tb, dtype)
                    g.op(f"g_{len(g.outputs)}", "gemm", inputs, attrs, (ref, mag), ("gemm", kk))
        # beta = 0 ignores c (NaN in it included), as ONNX's Gemm; alpha = 0.1 is f32(0.1) for f32
        a, va = g.rand([4, 6], dtype, -2, 2)
        b, vb = g.rand([6, 5], dtype, -2, 2)
        c, vc = g.const(np.full([4, 5], np.nan), dtype)
        ref, mag = gemm_ref(va, vb, None, 0.1, 0.0, False, False, dtype)
        g.op("g_beta0", "gemm", [a, b, c], {"alpha": 0.1, "beta": 0.0}, (ref, mag), ("gemm", 6))
        # large enough for OpenBLAS's threads and the parallel broadcast of c
        a, va = g.rand([256, 300], dtype, -1, 1)
        b, vb = g.rand([200, 300], dtype, -1, 1)
        c, vc = g.rand([200], dtype, -1, 1)
        ref, mag = gemm_ref(va, vb, vc, 1.0, 1.0, False, True, dtype)
        g.op("g_large", "gemm", [a, b, c], {"transpose_b": True}, (ref, mag), ("gemm", 300))
        yield g


# --- comparing ----------------------------------------------------------------------

def compare(got, check, kind, dtype):
    ref, mag = (f64(v) for v in check)
    g = f64(got)
    if kind == "norm":
        close = ulp_close(g, ref, dtype, 1 if dtype == "f32" else 8)
        with np.errstate(all="ignore"):
            close |= np.abs(g - ref) <= (1e-14 if dtype == "f32" else 1e-13) * mag
    else:
        k = kind[1]
        with np.errstate(all="ignore"):
            close = np.abs(g - ref) <= EPS[dtype] * (k + 4) * mag
    with np.errstate(all="ignore"):
        ok = (np.isnan(ref) & np.isnan(g)) | (~np.isnan(ref) & ~np.isfinite(ref) & (ref == g)) | \
             (np.isfinite(ref) & np.isfinite(g) & close)
    bad = np.argwhere(~np.asarray(ok).reshape(np.shape(ok)))
    return [(tuple(i), ref[tuple(i)], got[tuple(i)]) for i in bad[:5]]


# Bad inputs through the binary: exit 3 (invalid graph), each problem at its place.
ERROR_CASES = [
    ("x = [[1.5, 2, 3], [4, 5, 6]]\ns = [1, 2]\ny = layer_norm(x, s)\noutput y\n",
     ["3:19: error: y: layer_norm: s is f32[2], but layer_norm's scale must broadcast to the normalized "
      "shape [3] (the dimensions of x from axis 1; x is f32[2,3])"]),
    ("x = [[1.5, 2, 3], [4, 5, 6]]\ny = layer_norm(x, [1, 2, 3], axis=2)\nz = layer_norm(x)\noutput y, z\n",
     ["2:35: error: y: layer_norm: axis 2 is out of range for rank 2 (x is f32[2,3])",
      "3:5: error: z: layer_norm: takes 2 or 3 inputs, got 1"]),
    ("x = [[1.5, 2, 3], [4, 5, 6]]\ns = const([1, 2, 3], dtype=f64)\ny = layer_norm(x, s, epsilon=-1)\noutput y\n",
     ["3:19: error: y: layer_norm: s is f64[3], but layer_norm's scale must be f32 as x is f32[2,3]; "
      "use cast(s, dtype=f32)",
      "3:30: error: y: layer_norm: epsilon must be a finite number >= 0, got -1"]),
    ("x = [[1.5, 2, 3], [4, 5, 6]]\nm = [1, 2, 3]\ny = batch_norm(x, m, m, m, [1, 2])\nz = batch_norm(2.5, m, m, m, m)"
     "\noutput y, z\n",
     ["3:28: error: y: batch_norm: the literal [1, 2] is f32[2], but batch_norm's var must be f32[3]: one value "
      "per channel (x is f32[2,3], channels on axis 1)",
      "4:16: error: z: batch_norm: the literal 2.5 is f32[], a scalar; batch_norm needs [N, C, ...] or [N]"]),
    ("x = [[1.5, 2, 3], [4, 5, 6]]\ny = gemm(x, x)\nz = gemm(x, [1, 2, 3])\nw = gemm(x, x, [1, 2, 3], transpose_b=true)"
     "\noutput y, z, w\n",
     ["2:5: error: y: gemm: inner dimensions differ: x is f32[2,3], x is f32[2,3]: 3 vs 2",
      "3:13: error: z: gemm: the literal [1, 2, 3] is f32[3], but gemm's b must be a matrix (2 dimensions)",
      "4:16: error: w: gemm: the literal [1, 2, 3] is f32[3], but gemm's c must broadcast to the result's "
      "shape [2,2]"]),
    ('{"graphrun": 1, "nodes": [{"name": "x", "op": "const", "attrs": {"value": [[1, 2]], "dtype": "f64"}},'
     ' {"name": "y", "op": "gemm", "inputs": ["x", "x"], "attrs": {"transpose_b": true, "alpha": true}}],'
     ' "outputs": ["y"]}\n',
     ["/nodes/1/attrs/alpha: error: y: gemm: alpha must be a number, got true"]),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("graphrun")
    ap.add_argument("--keep")
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    np.seterr(all="ignore")  # NaN, inf and empty rows are compared on purpose
    warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's mean of an empty row
    graphs = [g for gen in (layer_norm_graphs, batch_norm_graphs, gemm_graphs) for g in gen()]
    with tempfile.TemporaryDirectory() as tmp:
        d = args.keep or tmp
        os.makedirs(d, exist_ok=True)
        texts, jsons = ops_check.write_forms(graphs, d)
        docs_t, docs_j = run(args.graphrun, texts), run(args.graphrun, jsons)
        errors = ops_check.bad_inputs(args.graphrun, d, ERROR_CASES)
    # A check is (the float64 reference, its magnitude...): its shape is the reference's.
    judge = ops_check.numpy_judge(compare, to_array, lambda check: np.shape(check[0]))
    failures, checked = ops_check.check_outputs(graphs, docs_t, docs_j, judge, args.v)
    failures += errors
    print(f"ops_norm_test: {len(graphs)} graphs x 2 forms, {checked} outputs, {len(ERROR_CASES)} bad inputs, "
          f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
