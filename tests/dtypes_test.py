#!/usr/bin/env python3
"""The storage dtypes f16, bf16, i8 and u8 (issue 27 item 4) through the real
binary: literals and their range errors, arithmetic computed in f32/i32 and
rounded back after each op (NumPy's float16 and int8 results, bit for bit
where NumPy computes so), cast among all nine dtypes, printing in NumPy's
format, .npy in and out, --input JSON values, --expected-output, and the plan
(the widening casts are counted in the static peak, which the safepoint run
reaches). With python3-onnx: QuantizeLinear, DequantizeLinear, MatMulInteger,
ConvInteger, QLinearMatMul, QLinearConv and a float16 model against NumPy
references, and a QDQ-quantized CNN.

Usage: dtypes_test.py GRAPHRUN
"""
import json
import os
import re
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ValueRunner, checks, run_binary  # noqa: E402

GRAPHRUN = os.path.abspath(sys.argv[1])
TMP = tempfile.mkdtemp(prefix="graphrun-dtypes-")
failures = []
check = checks(failures)
rng = np.random.default_rng(11)
VR = ValueRunner(GRAPHRUN, TMP)


script, run_values = VR.script, VR.run_values


def bf16_bits(a):
    """float32 -> bfloat16 bits, round to nearest even (NaN kept quiet)."""
    u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(a), np.uint16(0x7FC0), r)


def bf16_value(bits):
    return (np.asarray(bits, np.uint32) << 16).view(np.float32)


# --- f16: literals, arithmetic rounded per op, printing -------------------------------------------
a16 = (rng.standard_normal(64) * 3).astype(np.float16)
b16 = (rng.standard_normal(64) + 4).astype(np.float16)
np.save(os.path.join(TMP, "a16.npy"), a16)
np.save(os.path.join(TMP, "b16.npy"), b16)
p = script("f16_ops", """
a = input(shape=[64], dtype=f16)
b = input(shape=[64], dtype=f16)
s = a + b
p = a * b
q = a / b
e = exp(a)
r = relu(a - 1)
m = reduce_sum(a)
h = cast(a, dtype=f32)
w = cast(h * 1000, dtype=f16)
""")
proc, v = run_values(p, f"--input=a=@{TMP}/a16.npy", f"--input=b=@{TMP}/b16.npy", "--cleanup=safepoint",
                     fetch="s p q e r m h w".split())
check(proc.returncode == 0, f"f16 ops: exit {proc.returncode} {proc.stderr[-800:]}")
if proc.returncode == 0:
    check(v["s"].dtype == np.float16 and np.array_equal(v["s"], a16 + b16), f"f16 add: {v['s'][:4]} vs {(a16 + b16)[:4]}")
    check(np.array_equal(v["p"], a16 * b16), "f16 mul is NumPy's (f32 product rounded to f16)")
    check(np.array_equal(v["q"], a16 / b16), "f16 div is NumPy's")
    ref_e = np.exp(a16.astype(np.float64)).astype(np.float16)
    ulps = np.abs(v["e"].view(np.int16).astype(np.int32) - ref_e.view(np.int16).astype(np.int32))
    check(v["e"].dtype == np.float16 and ulps.max() <= 1, f"f16 exp within 1 ulp of float64's, {ulps.max()}")
    check(np.array_equal(v["r"], np.maximum(a16 - np.float16(1), np.float16(0))), "f16 relu(a - 1)")
    check(v["m"].dtype == np.float16 and abs(float(v["m"]) - float(a16.astype(np.float64).sum())) <= 0.01 * 64,
          f"f16 reduce_sum {v['m']} vs {a16.astype(np.float64).sum()}")
    check(v["h"].dtype == np.float32 and np.array_equal(v["h"], a16.astype(np.float32)), "f16 -> f32 exact")
    check(np.array_equal(v["w"], (a16.astype(np.float32) * np.float32(1000)).astype(np.float16)),
          "f32 -> f16 rounds to nearest even, overflow to inf")

# Printing: NumPy's shortest float16 digits.
p = script("f16_print", """
x = const([0.1, 1.5, -2.25, 65504, 0.0001], dtype=f16)
y = const([1, -128, 127], dtype=i8)
z = const([0, 255, 7], dtype=u8)
""")
proc = run_binary(GRAPHRUN, ["run", p, "--fetch=x", "--fetch=y", "--fetch=z"])
want_x = np.array2string(np.array([0.1, 1.5, -2.25, 65504, 0.0001], np.float16), separator=" ")
check(proc.returncode == 0 and "x: f16[5] (cpu)" in proc.stdout and want_x in proc.stdout,
      f"f16 printing: want {want_x!r} in\n{proc.stdout[:600]} {proc.stderr[-400:]}")
check("y: i8[3] (cpu)" in proc.stdout and "[   1 -128  127]" in proc.stdout, f"i8 printing:\n{proc.stdout[:600]}")
check("z: u8[3] (cpu)" in proc.stdout and "[  0 255   7]" in proc.stdout, f"u8 printing:\n{proc.stdout[:600]}")
proc = run_binary(GRAPHRUN, ["run", p, "--format=json", "--fetch=x", "--fetch=y", "--fetch=z"])
ok = proc.returncode == 0
if ok:
    doc = json.loads(proc.stdout)
    outs = {o["name"]: o for o in doc["outputs"]}
    # NumPy's digits (the fewest that read back as the same float16: 65504 is 65500.0).
    ok = outs["x"]["dtype"] == "f16" and outs["x"]["data"] == [0.1, 1.5, -2.25, 65500.0, 0.0001] and \
        np.array_equal(np.array(outs["x"]["data"], np.float16), np.array([0.1, 1.5, -2.25, 65504, 0.0001], np.float16)) and \
        outs["y"]["data"] == [1, -128, 127] and outs["z"]["dtype"] == "u8"
check(ok, f"JSON output of f16/i8/u8: {proc.stdout[:800]} {proc.stderr[-300:]}")

# --- i8/u8: NumPy's wrapping arithmetic, saturating float casts ------------------------------------
ai = rng.integers(-128, 128, 200, dtype=np.int8)
bi = rng.integers(-128, 128, 200, dtype=np.int8)
au = rng.integers(0, 256, 200, dtype=np.uint8)
np.save(os.path.join(TMP, "ai.npy"), ai)
np.save(os.path.join(TMP, "bi.npy"), bi)
np.save(os.path.join(TMP, "au.npy"), au)
p = script("i8_ops", """
a = input(shape=[200], dtype=i8)
b = input(shape=[200], dtype=i8)
u = input(shape=[200], dtype=u8)
s = a + b
d = a - b
m = a * b
g = greater(a, b)
mx = maximum(a, b)
uu = u + u
f = cast(cast(a, dtype=f32) * 3.7, dtype=i8)
back = cast(u, dtype=i8)
wide = cast(a, dtype=i64)
""")
with np.errstate(over="ignore"):
    proc, v = run_values(p, f"--input=a=@{TMP}/ai.npy", f"--input=b=@{TMP}/bi.npy", f"--input=u=@{TMP}/au.npy",
                         fetch="s d m g mx uu f back wide".split())
    check(proc.returncode == 0, f"i8 ops: exit {proc.returncode} {proc.stderr[-800:]}")
    if proc.returncode == 0:
        check(v["s"].dtype == np.int8 and np.array_equal(v["s"], ai + bi), "i8 add wraps as NumPy's")
        check(np.array_equal(v["d"], ai - bi), "i8 sub wraps")
        check(np.array_equal(v["m"], ai * bi), "i8 mul wraps")
        check(v["g"].dtype == np.bool_ and np.array_equal(v["g"], ai > bi), "i8 comparison")
        check(np.array_equal(v["mx"], np.maximum(ai, bi)), "i8 maximum")
        check(v["uu"].dtype == np.uint8 and np.array_equal(v["uu"], au + au), "u8 add wraps")
        f = np.clip(np.trunc(ai.astype(np.float32) * np.float32(3.7)), -128, 127).astype(np.int8)
        check(np.array_equal(v["f"], f), "f32 -> i8 truncates and saturates")
        check(np.array_equal(v["back"], au.astype(np.int8)), "u8 -> i8 wraps as astype")
        check(v["wide"].dtype == np.int64 and np.array_equal(v["wide"], ai.astype(np.int64)), "i8 -> i64")

# --- bf16 ------------------------------------------------------------------------------------------
xb = (rng.standard_normal(32) * 10).astype(np.float32)
p = script("bf16_ops", "x = input(shape=[32])\nb = cast(x, dtype=bf16)\ny = b * b\nz = cast(y, dtype=f32)\n")
np.save(os.path.join(TMP, "xb.npy"), xb)
proc, v = run_values(p, f"--input=x=@{TMP}/xb.npy", "--fetch=z")
bb = bf16_value(bf16_bits(xb))
want = bf16_value(bf16_bits(bb * bb))
check(proc.returncode == 0 and np.array_equal(v.get("z"), want),
      f"bf16: cast rounds to nearest even and mul rounds back: {proc.stderr[-400:]} {v.get('z', [])[:4]} {want[:4]}")
# bf16 .npy: written as ml_dtypes writes it ('|V2'), and read back.
out = os.path.join(TMP, "b.npy")
proc = run_binary(GRAPHRUN, ["run", p, f"--input=x=@{TMP}/xb.npy", "--fetch=b", f"--output=b=@{out}", "--no-data"])
ok = proc.returncode == 0 and os.path.exists(out)
if ok:
    raw = np.load(out)
    ok = raw.dtype.itemsize == 2 and np.array_equal(raw.view(np.uint16), bf16_bits(xb))
check(ok, f"bf16 .npy: {proc.stderr[-400:]}")
p2 = script("bf16_in", "b = input(shape=[32], dtype=bf16)\nz = cast(b, dtype=f32)\n")
proc, v = run_values(p2, f"--input=b=@{out}")
check(proc.returncode == 0 and np.array_equal(v.get("z"), bb), f"bf16 .npy read back: {proc.stderr[-400:]}")

# --- the plan: the compute-type casts are counted, and the safepoint run reaches the static peak ---
p = script("f16_peak", "a = ones(shape=[1000], dtype=f16)\nb = exp(a)\nc = b + a\n")
chk = run_binary(GRAPHRUN, ["check", p, "--format=json"])
run_ = run_binary(GRAPHRUN, ["run", p, "--cleanup=safepoint", "--format=json", "--no-data"])
ok = chk.returncode == 0 and run_.returncode == 0
if ok:
    static = json.loads(chk.stdout)["static_peak"]["cpu"]
    peak = json.loads(run_.stdout)["memory"]["before_teardown"]["cpu"]["peak"]
    ok = static == peak and static >= 1000 * 2 * 2 + 1000 * 4
    check(ok, f"f16 static peak {static} vs safepoint peak {peak}")
else:
    check(False, f"f16 peak: {chk.stderr[-400:]} {run_.stderr[-400:]}")

# --- errors: a literal its dtype cannot hold, a feed out of range, a mismatched .npy ---------------
p = script("err_i8", "x = const([1, 300], dtype=i8)\n")
proc = run_binary(GRAPHRUN, ["run", p])
check(proc.returncode == 3 and re.search(r"err_i8.graph:1:\d+: error: .*out of range \(-128 to 127\)", proc.stderr),
      f"i8 literal out of range: exit {proc.returncode} {proc.stderr[-400:]}")
p = script("err_f16", "x = const([70000], dtype=f16)\n")
proc = run_binary(GRAPHRUN, ["run", p])
check(proc.returncode == 3 and "out of range (-65504 to 65504)" in proc.stderr,
      f"f16 literal out of range: exit {proc.returncode} {proc.stderr[-400:]}")
p = script("feed_u8", "u = input(shape=[2], dtype=u8)\ny = u + u\n")
proc = run_binary(GRAPHRUN, ["run", p, "--input=u=[1, 256]"])
check(proc.returncode == 2 and "out of range for u8 (0..255)" in proc.stderr,
      f"u8 JSON feed out of range: exit {proc.returncode} {proc.stderr[-400:]}")
proc = run_binary(GRAPHRUN, ["run", p, f"--input=u=@{TMP}/ai.npy"])
check(proc.returncode == 2 and "i8" in proc.stderr and "u8" in proc.stderr,
      f"an i8 .npy for a u8 input: exit {proc.returncode} {proc.stderr[-400:]}")
proc, v = run_values(p, "--input=u=[200, 7]")
check(proc.returncode == 0 and list(v.get("y", [])) == [144, 14], f"u8 JSON feed: {proc.stderr[-300:]} {v}")
# --expected-output in the storage type.
np.save(os.path.join(TMP, "want_y.npy"), np.array([144, 14], np.uint8))
proc = run_binary(GRAPHRUN, ["run", p, "--input=u=[200, 7]", f"--expected-output=y=@{TMP}/want_y.npy"])
check(proc.returncode == 0, f"--expected-output for u8: {proc.stderr[-300:]}")
np.save(os.path.join(TMP, "want_y.npy"), np.array([144, 15], np.uint8))
proc = run_binary(GRAPHRUN, ["run", p, "--input=u=[200, 7]", f"--expected-output=y=@{TMP}/want_y.npy"])
check(proc.returncode == 5 and "got 14, expected 15" in proc.stderr + proc.stdout, f"u8 mismatch: {proc.returncode} {proc.stderr[-400:]}")

# f16 values in a mismatch report read as NumPy prints them (0.1, not 0.0999755859375).
p = script("f16_want", "y = const([0.1, 0.2], dtype=f16)\n")
np.save(os.path.join(TMP, "want16.npy"), np.array([0.1, 0.3], np.float16))
proc = run_binary(GRAPHRUN, ["run", p, f"--expected-output=y=@{TMP}/want16.npy"])
check(proc.returncode == 5 and "got 0.2, expected 0.3" in proc.stderr + proc.stdout,
      f"f16 mismatch report: {proc.returncode} {proc.stderr[-400:]}")

# --- ONNX: a float16 model and the quantization ops --------------------------------------------------
try:
    from onnx import helper, numpy_helper
except ImportError as e:
    print(f"SKIP (ONNX part): needs python3-onnx ({e})")
    helper = None

if helper is not None:
    onnx_model, onnx_run = VR.onnx_model, VR.onnx_run

    def quantize(x, scale, zp, dtype):
        info = np.iinfo(dtype)
        return np.clip(np.rint(x / scale) + zp, info.min, info.max).astype(dtype)

    # float16 model: MatMul + Add + Relu in f16 (ONNX Runtime's CPU computes these in f32 too).
    x16 = rng.standard_normal((4, 16)).astype(np.float16)
    w16 = (rng.standard_normal((16, 8)) * 0.3).astype(np.float16)
    b16 = rng.standard_normal(8).astype(np.float16)
    path = onnx_model("f16_mlp", [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["s"]),
                                  helper.make_node("Relu", ["s"], ["y"])],
                      [("x", x16)], [("y", np.float16, (4, 8))],
                      [numpy_helper.from_array(w16, "w"), numpy_helper.from_array(b16, "b")])
    proc, v = onnx_run(path, [("x", x16)])
    ref = np.maximum((x16.astype(np.float64) @ w16.astype(np.float64)).astype(np.float16).astype(np.float64) + b16, 0)
    check(proc.returncode == 0 and v["y"].dtype == np.float16 and
          np.allclose(v["y"].astype(np.float64), ref, rtol=2e-3, atol=2e-3),
          f"f16 ONNX model: {proc.stderr[-600:]}")

    # QuantizeLinear / DequantizeLinear, per tensor and per axis, i8 and u8; ties round to even.
    xq = np.concatenate([rng.standard_normal(94).astype(np.float32) * 3,
                         np.array([0.5, 1.5, 2.5, -0.5, -1.5, 1000], np.float32) * 0.02]).reshape(2, 50)
    for dt in (np.uint8, np.int8):
        zp = np.array(3 if dt == np.uint8 else -2, dt)
        path = onnx_model(f"qdq_{dt.__name__}", [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
                                                 helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])],
                          [("x", xq)], [("q", dt, xq.shape), ("y", np.float32, xq.shape)],
                          [numpy_helper.from_array(np.array(0.02, np.float32), "s"), numpy_helper.from_array(zp, "z")])
        proc, v = onnx_run(path, [("x", xq)])
        q = quantize(xq, np.float32(0.02), zp.astype(np.float32), dt)
        y = (q.astype(np.int32) - np.int32(zp)).astype(np.float32) * np.float32(0.02)
        check(proc.returncode == 0 and v["q"].dtype == dt and np.array_equal(v["q"], q) and np.array_equal(v["y"], y),
              f"QuantizeLinear/DequantizeLinear {dt.__name__}: {proc.stderr[-500:]} "
              f"{v.get('q', np.zeros(0))[:1]} vs {q[:1]}")
    # Per-axis dequantization of a weight (axis 0).
    wq = rng.integers(-128, 128, (4, 6), dtype=np.int8)
    ws = (rng.random(4) * 0.1 + 0.01).astype(np.float32)
    wz = rng.integers(-3, 4, 4, dtype=np.int8)
    path = onnx_model("dq_axis", [helper.make_node("DequantizeLinear", ["w", "s", "z"], ["y"], axis=0)],
                      [("w", wq)], [("y", np.float32, wq.shape)],
                      [numpy_helper.from_array(ws, "s"), numpy_helper.from_array(wz, "z")])
    proc, v = onnx_run(path, [("w", wq)])
    want = (wq.astype(np.int32) - wz[:, None]).astype(np.float32) * ws[:, None]
    check(proc.returncode == 0 and np.array_equal(v.get("y"), want), f"per-axis DequantizeLinear: {proc.stderr[-500:]}")

    # The same of constants (a QDQ model's weights) is folded when the model is
    # read: one f32 constant, the same values; per axis 0 and 1, i8 and u8.
    for axis, wt in ((0, np.int8), (1, np.uint8)):
        wc = rng.integers(np.iinfo(wt).min, np.iinfo(wt).max + 1, (4, 6), dtype=wt)
        sc = (rng.random(wc.shape[axis]) * 0.1 + 0.01).astype(np.float32)
        zc = rng.integers(0 if wt == np.uint8 else -3, 4, wc.shape[axis], dtype=wt)
        path = onnx_model(f"dq_const_{axis}", [helper.make_node("DequantizeLinear", ["w", "s", "z"], ["d"], axis=axis),
                                               helper.make_node("Add", ["d", "x"], ["y"])],
                          [("x", np.zeros((4, 6), np.float32))], [("y", np.float32, (4, 6))],
                          [numpy_helper.from_array(wc, "w"), numpy_helper.from_array(sc, "s"),
                           numpy_helper.from_array(zc, "z")])
        proc, v = onnx_run(path, [("x", np.zeros((4, 6), np.float32))])
        shape = (4, 1) if axis == 0 else (1, 6)
        want = (wc.astype(np.int32) - zc.reshape(shape).astype(np.int32)).astype(np.float32) * sc.reshape(shape)
        check(proc.returncode == 0 and np.array_equal(v.get("y"), want),
              f"DequantizeLinear of constants, axis {axis}: {proc.stderr[-500:]}")
        listing = run_binary(GRAPHRUN, ["check", path]).stdout
        check(re.search(r"^\s*d\s+const\s+f32\[4,6\]", listing, re.M) is not None and " cast " not in listing,
              f"DequantizeLinear of constants is one f32 constant: {listing[-800:]}")

    # MatMulInteger and QLinearMatMul against exact integer arithmetic.
    A = rng.integers(0, 256, (5, 64), dtype=np.uint8)
    B = rng.integers(-128, 128, (64, 7), dtype=np.int8)
    path = onnx_model("mmi", [helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])],
                      [("a", A)], [("y", np.int32, (5, 7))],
                      [numpy_helper.from_array(B, "b"), numpy_helper.from_array(np.array(128, np.uint8), "az"),
                       numpy_helper.from_array(np.array(3, np.int8), "bz")])
    proc, v = onnx_run(path, [("a", A)])
    acc = (A.astype(np.int64) - 128) @ (B.astype(np.int64) - 3)
    check(proc.returncode == 0 and v["y"].dtype == np.int32 and np.array_equal(v["y"], acc),
          f"MatMulInteger: {proc.stderr[-500:]}")
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "as"), numpy_helper.from_array(np.array(128, np.uint8), "az"),
             numpy_helper.from_array(B, "b"), numpy_helper.from_array(np.array(0.01, np.float32), "bs"),
             numpy_helper.from_array(np.array(0, np.int8), "bz"), numpy_helper.from_array(np.array(0.7, np.float32), "ys"),
             numpy_helper.from_array(np.array(120, np.uint8), "yz")]
    path = onnx_model("qlmm", [helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])],
                      [("a", A)], [("y", np.uint8, (5, 7))], inits)
    proc, v = onnx_run(path, [("a", A)])
    acc = ((A.astype(np.int64) - 128) @ B.astype(np.int64)).astype(np.float32)
    mult = np.float32(np.float32(0.05) * np.float32(0.01)) / np.float32(0.7)
    want = np.clip(np.rint(acc * mult) + 120, 0, 255).astype(np.uint8)
    got = v.get("y")
    check(proc.returncode == 0 and got is not None and got.dtype == np.uint8 and
          np.abs(got.astype(np.int32) - want).max() <= 1 and (got == want).mean() > 0.97,
          f"QLinearMatMul: {proc.stderr[-500:]}")

    # ConvInteger and QLinearConv (per-channel weight scales, i32 bias).
    X = rng.integers(0, 256, (1, 3, 9, 9), dtype=np.uint8)
    W = rng.integers(-128, 128, (4, 3, 3, 3), dtype=np.int8)

    def conv_ref(x, w, stride=1, pad=1):
        n, c, h, wd = x.shape
        m, _, kh, kw = w.shape
        xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
        out = np.zeros((n, m, oh, ow), np.result_type(x, w))
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
                out[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
        return out

    path = onnx_model("convi", [helper.make_node("ConvInteger", ["x", "w", "xz"], ["y"], pads=[1, 1, 1, 1])],
                      [("x", X)], [("y", np.int32, (1, 4, 9, 9))],
                      [numpy_helper.from_array(W, "w"), numpy_helper.from_array(np.array(100, np.uint8), "xz")])
    proc, v = onnx_run(path, [("x", X)])
    acc = conv_ref(X.astype(np.int64) - 100, W.astype(np.int64))
    check(proc.returncode == 0 and np.array_equal(v.get("y"), acc), f"ConvInteger: {proc.stderr[-500:]}")
    wsc = (rng.random(4) * 0.01 + 0.001).astype(np.float32)
    bias = rng.integers(-1000, 1000, 4, dtype=np.int32)
    inits = [numpy_helper.from_array(np.array(0.02, np.float32), "xs"), numpy_helper.from_array(np.array(100, np.uint8), "xz"),
             numpy_helper.from_array(W, "w"), numpy_helper.from_array(wsc, "ws"),
             numpy_helper.from_array(np.zeros(4, np.int8), "wz"), numpy_helper.from_array(np.array(0.5, np.float32), "ys"),
             numpy_helper.from_array(np.array(-5, np.int8), "yz"), numpy_helper.from_array(bias, "bias")]
    path = onnx_model("qlconv", [helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "bias"], ["y"],
                                                  pads=[1, 1, 1, 1], strides=[2, 2])],
                      [("x", X)], [("y", np.int8, (1, 4, 5, 5))], inits)
    proc, v = onnx_run(path, [("x", X)])
    acc = (conv_ref(X.astype(np.int64) - 100, W.astype(np.int64), stride=2) + bias[None, :, None, None]).astype(np.float32)
    mult = (np.float32(0.02) * wsc / np.float32(0.5)).astype(np.float32)[None, :, None, None]
    want = np.clip(np.rint(acc * mult) - 5, -128, 127).astype(np.int8)
    got = v.get("y")
    check(proc.returncode == 0 and got is not None and got.dtype == np.int8 and
          np.abs(got.astype(np.int32) - want).max() <= 1 and (got == want).mean() > 0.97,
          f"QLinearConv: {proc.stderr[-500:]}")

    # The integer products run in f32 where the constant weights bound every
    # partial sum below 2^24 (oneDNN's conv, sgemm), else in f64: exact either
    # way. `check` shows which; the values are the int64 reference's.
    def listed_type(path, op):
        proc = run_binary(GRAPHRUN, ["check", path])
        m = re.search(r"^\s*\S+\s+" + op + r"\s+(f32|f64)\[", proc.stdout, re.M)
        return m.group(1) if m else f"no {op} in: {proc.stdout[-600:]} {proc.stderr[-300:]}"

    check(listed_type(os.path.join(TMP, "convi.onnx"), "conv") == "f32",
          f"ConvInteger's conv runs in f32 (27 products of at most 228 * 128): {listed_type(os.path.join(TMP, 'convi.onnx'), 'conv')}")
    check(listed_type(os.path.join(TMP, "qlconv.onnx"), "conv") == "f32", "QLinearConv's conv runs in f32")
    check(listed_type(os.path.join(TMP, "mmi.onnx"), "matmul") == "f32", "MatMulInteger's matmul runs in f32 (K 64)")
    # K = 2048 products of up to 255 * 128: past 2^24, so f64; u8 weights with a zero point, per column.
    A2 = rng.integers(0, 256, (3, 2048), dtype=np.uint8)
    B2 = rng.integers(0, 256, (2048, 5), dtype=np.uint8)
    bz2 = np.array([0, 128, 255, 7, 200], np.uint8)
    path = onnx_model("mmi_f64", [helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])],
                      [("a", A2)], [("y", np.int32, (3, 5))],
                      [numpy_helper.from_array(B2, "b"), numpy_helper.from_array(np.array(0, np.uint8), "az"),
                       numpy_helper.from_array(bz2, "bz")])
    proc, v = onnx_run(path, [("a", A2)])
    acc = A2.astype(np.int64) @ (B2.astype(np.int64) - bz2.astype(np.int64))
    check(proc.returncode == 0 and np.array_equal(v.get("y"), acc), f"MatMulInteger past 2^24: {proc.stderr[-500:]}")
    check(listed_type(path, "matmul") == "f64", f"MatMulInteger past 2^24 runs in f64: {listed_type(path, 'matmul')}")
    # The same product with the zero point computed (not a constant): f64, as nothing bounds it.
    path = onnx_model("mmi_zp_input", [helper.make_node("MatMulInteger", ["a", "b", "az"], ["y"])],
                      [("a", A[:, :8]), ("az", np.array(3, np.uint8))], [("y", np.int32, (5, 7))],
                      [numpy_helper.from_array(B[:8], "b")])
    proc, v = onnx_run(path, [("a", A[:, :8]), ("az", np.array(3, np.uint8))])
    acc = (A[:, :8].astype(np.int64) - 3) @ B[:8].astype(np.int64)
    check(proc.returncode == 0 and np.array_equal(v.get("y"), acc), f"MatMulInteger, zero point fed: {proc.stderr[-500:]}")
    check(listed_type(path, "matmul") == "f64", "MatMulInteger with a fed zero point runs in f64")
    # QLinearConv, 64 channels of 3x3 (K 576) with per-channel u8 weights and
    # zero points, conv in f32; a bias near 2^24 takes the sum to f64 for the add.
    X3 = rng.integers(0, 256, (1, 64, 6, 6), dtype=np.uint8)
    W3 = rng.integers(100, 156, (8, 64, 3, 3), dtype=np.uint8)
    wz3 = rng.integers(120, 136, 8, dtype=np.uint8)
    for big_bias in (False, True):
        bias3 = rng.integers(-1000, 1000, 8, dtype=np.int32)
        if big_bias:
            bias3[3] = 16000000
        wsc3 = (rng.random(8) * 0.001 + 0.0001).astype(np.float32)
        inits = [numpy_helper.from_array(np.array(0.02, np.float32), "xs"), numpy_helper.from_array(np.array(128, np.uint8), "xz"),
                 numpy_helper.from_array(W3, "w"), numpy_helper.from_array(wsc3, "ws"), numpy_helper.from_array(wz3, "wz"),
                 numpy_helper.from_array(np.array(0.25, np.float32), "ys"), numpy_helper.from_array(np.array(100, np.uint8), "yz"),
                 numpy_helper.from_array(bias3, "bias")]
        path = onnx_model(f"qlconv64_{big_bias}", [helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "bias"],
                                                                    ["y"], pads=[1, 1, 1, 1])],
                          [("x", X3)], [("y", np.uint8, (1, 8, 6, 6))], inits)
        proc, v = onnx_run(path, [("x", X3)])
        acc64 = conv_ref(X3.astype(np.int64) - 128, W3.astype(np.int64) - wz3.astype(np.int64)[:, None, None, None])
        acc = (acc64 + bias3[None, :, None, None]).astype(np.float32)  # one rounding to f32, as ONNX Runtime
        mult = (np.float32(0.02) * wsc3 / np.float32(0.25)).astype(np.float32)[None, :, None, None]
        want = np.clip(np.rint(acc * mult) + 100, 0, 255).astype(np.uint8)
        check(proc.returncode == 0 and np.array_equal(v.get("y"), want),
              f"QLinearConv K 576, bias {'past' if big_bias else 'within'} 2^24: {proc.stderr[-500:]}")
        check(listed_type(path, "conv") == "f32", "QLinearConv K 576 runs its conv in f32")
        check(listed_type(path, "add") == ("f64" if big_bias else "f32"),
              f"QLinearConv's bias is added in {'f64' if big_bias else 'f32'}: {listed_type(path, 'add')}")

    # i8 x with a zero point, stride 2; then 2 groups (oneDNN's grouped int8
    # conv here is its s8 GEMM, not named VNNI: left to the f32 conv).
    X4 = rng.integers(-128, 128, (1, 4, 7, 7), dtype=np.int8)
    for groups in (1, 2):
        W4 = rng.integers(-128, 128, (6, 4 // groups, 3, 3), dtype=np.int8)
        path = onnx_model(f"qlconv_i8_g{groups}", [helper.make_node("ConvInteger", ["x", "w", "xz"], ["y"],
                                                                    pads=[1, 1, 1, 1], strides=[2, 2], group=groups)],
                          [("x", X4)], [("y", np.int32, (1, 6, 4, 4))],
                          [numpy_helper.from_array(W4, "w"), numpy_helper.from_array(np.array(-3, np.int8), "xz")])
        proc, v = onnx_run(path, [("x", X4)])
        c_in, c_out = 4 // groups, 6 // groups
        acc = np.concatenate([conv_ref(X4[:, c_in * g:c_in * (g + 1)].astype(np.int64) + 3,
                                       W4[c_out * g:c_out * (g + 1)].astype(np.int64), stride=2)
                              for g in range(groups)], axis=1)
        check(proc.returncode == 0 and np.array_equal(v.get("y"), acc),
              f"ConvInteger, i8 x, {groups} group(s): {proc.stderr[-500:]}")

    # Where oneDNN sums int8 products exactly (VNNI or AMX; `graphrun devices`
    # names its ISA), the fusion pass runs these convs as int8 convs reading
    # the 8-bit x; elsewhere, with oneDNN held to AVX2 (whose int8 code halves
    # the weights), without oneDNN, with --no-fuse or --memory-limit (where our
    # kernel must be able to take the conv over), the f32 conv. The values
    # are the same bits every way.
    def same_bits_every_way(name, path, input_name, value, ways):
        """Runs PATH fed VALUE as INPUT_NAME each of WAYS [(extra args, env)]:
        (whether every way gave the first one's outputs, bit for bit; what each gave)."""
        feed = VR.save(f"{name}.{input_name}", value)
        outs = []
        for extra, env in ways:
            out = os.path.join(TMP, f"{name}.{len(outs)}.npz")
            p = run_binary(GRAPHRUN, ["run", path, f"--input={input_name}=@{feed}", f"--output=@{out}", "--no-data",
                                      *extra], env=env)
            outs.append(dict(np.load(out)) if p.returncode == 0 and os.path.exists(out) else {"error": p.stderr[-300:]})
        same = all(o.keys() == outs[0].keys() and all(np.array_equal(o[k], outs[0][k]) for k in o) for o in outs)
        return same, [sorted(o) for o in outs]

    isa = re.search(r"oneDNN [\d.]+ \((\w+)\)", run_binary(GRAPHRUN, ["devices"]).stdout)
    isa = isa.group(1) if isa else ""
    exact_int8 = any(t in isa for t in ("vnni", "bf16", "amx"))
    print(f"oneDNN ISA {isa or 'none'}: int8 convs {'expected' if exact_int8 else 'not expected'}")
    feeds = {"convi": X, "qlconv": X, "qlconv64_False": X3, "qlconv64_True": X3, "qlconv_i8_g1": X4}
    for name, xin in feeds.items():
        path = os.path.join(TMP, name + ".onnx")
        listing = run_binary(GRAPHRUN, ["check", path]).stdout
        check(("cast + sub + conv" in listing) == exact_int8,
              f"{name}: the int8 conv {'is' if exact_int8 else 'is not'} fused on {isa}: {listing[-700:]}")
        same, outs = same_bits_every_way(name, path, "x", xin, (
            ([], None), ([], {"ONEDNN_MAX_CPU_ISA": "AVX2"}), ([], {"GRAPHRUN_NO_DNNL": "1"}), (["--no-fuse"], None),
            (["--memory-limit=1GiB"], None)))
        check(same, f"{name}: the same values fused (int8) and not: {outs}")
        avx2 = run_binary(GRAPHRUN, ["check", path], env={"ONEDNN_MAX_CPU_ISA": "AVX2"}).stdout
        check("cast + sub + conv" not in avx2, f"{name}: no int8 conv where oneDNN has no VNNI")
    # The same for QLinearMatMul (b_zero_point 0: b fits i8) as an int8 matmul;
    # MatMulInteger's b - 3 does not fit i8 (-131): an f32 matmul.
    for name, xin, fused in (("qlmm", A, exact_int8), ("mmi", A, False)):
        path = os.path.join(TMP, name + ".onnx")
        listing = run_binary(GRAPHRUN, ["check", path]).stdout
        check(("cast + sub + matmul" in listing) == fused,
              f"{name}: the int8 matmul {'is' if fused else 'is not'} fused on {isa}: {listing[-700:]}")
        same, outs = same_bits_every_way(name, path, "a", xin, (
            ([], None), ([], {"ONEDNN_MAX_CPU_ISA": "AVX2"}), (["--no-fuse"], None)))
        check(same, f"{name}: the same values fused (int8) and not: {outs}")

    # A QDQ-quantized CNN (as ONNX Runtime's quantizer writes it): Q/DQ around Conv, Relu, pooling, Gemm.
    xc = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    w1 = (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)
    w2 = (rng.standard_normal((10, 8)) * 0.3).astype(np.float32)
    s_act, s_w = np.float32(0.05), np.float32(0.01)
    w1q = quantize(w1, s_w, np.float32(0), np.int8)
    w2q = quantize(w2, s_w, np.float32(0), np.int8)
    nodes = [helper.make_node("QuantizeLinear", ["x", "sa", "za"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "sa", "za"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w1q", "sw", "zw"], ["w1d"]),
             helper.make_node("Conv", ["xd", "w1d"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "sa", "za"], ["rq"]),
             helper.make_node("DequantizeLinear", ["rq", "sa", "za"], ["rd"]),
             helper.make_node("GlobalAveragePool", ["rd"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("DequantizeLinear", ["w2q", "sw", "zw"], ["w2d"]),
             helper.make_node("Gemm", ["f", "w2d"], ["y"], transB=1)]
    inits = [numpy_helper.from_array(np.array(s_act), "sa"), numpy_helper.from_array(np.array(0, np.uint8), "za"),
             numpy_helper.from_array(np.array(s_w), "sw"), numpy_helper.from_array(np.array(0, np.int8), "zw"),
             numpy_helper.from_array(w1q, "w1q"), numpy_helper.from_array(w2q, "w2q")]
    path = onnx_model("qdq_cnn", nodes, [("x", xc)], [("y", np.float32, (2, 10))], inits)
    proc, v = onnx_run(path, [("x", xc)], "--cleanup=safepoint")
    xd = quantize(xc, s_act, 0, np.uint8).astype(np.float64) * s_act
    c = conv_ref(xd, w1q.astype(np.float64) * s_w)
    rd = quantize(np.maximum(c, 0).astype(np.float32), s_act, 0, np.uint8).astype(np.float64) * s_act
    want = rd.mean(axis=(2, 3)) @ (w2q.astype(np.float64) * s_w).T
    check(proc.returncode == 0 and np.allclose(v.get("y"), want, rtol=1e-3, atol=float(s_act)),
          f"QDQ CNN: {proc.stderr[-500:]} {v.get('y', np.zeros((1, 1)))[0, :3]} vs {want[0, :3]}")

    # Refused: a 16-bit quantized type names the node and the type.
    path = onnx_model("q16", [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"])], [("x", xq)],
                      [("q", np.int32, xq.shape)],
                      [numpy_helper.from_array(np.array(0.02, np.float32), "s"), numpy_helper.from_array(np.array(0, np.int32), "z")])
    proc, _ = onnx_run(path, [("x", xq)])
    check(proc.returncode == 3 and "QuantizeLinear" in proc.stderr and "i8 and u8" in proc.stderr,
          f"QuantizeLinear to i32 refused: exit {proc.returncode} {proc.stderr[-400:]}")

if failures:
    print(f"FAILED: {len(failures)} dtype checks")
    sys.exit(1)
print("OK: the storage dtypes f16, bf16, i8, u8")
