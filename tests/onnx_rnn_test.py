#!/usr/bin/env python3
"""ONNX RNN, GRU and LSTM (engine/frontend/onnx_ops_rnn.cpp, unrolled into
graphrun ops; issue 27 item 6) through the real binary against a NumPy
reference in float64 written from ONNX's operator definitions: forward,
reverse and bidirectional, layout 0 and 1, biases, initial states, LSTM's
peepholes, GRU's linear_before_reset, clip, other activations (with their
alpha/beta), sequence_lens fed at run time (the state kept and Y zero past
each entry's length), every output; and the refusals (exit 3, naming the node).

Usage: onnx_rnn_test.py GRAPHRUN
"""
import os
import sys
import tempfile

try:
    import numpy as np
    from onnx import helper, numpy_helper
except ImportError as e:
    print(f"SKIP: the ONNX RNN tests need numpy and python3-onnx ({e})")
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ValueRunner, checks  # noqa: E402

GRAPHRUN = os.path.abspath(sys.argv[1])
TMP = tempfile.mkdtemp(prefix="graphrun-onnx-rnn-")
failures = []
check = checks(failures)
rng = np.random.default_rng(42)
VR = ValueRunner(GRAPHRUN, TMP)


def act(name, x, alpha=None, beta=None):
    if name == "Sigmoid":
        return 1 / (1 + np.exp(-x))
    if name == "Tanh":
        return np.tanh(x)
    if name == "Relu":
        return np.maximum(x, 0)
    if name == "LeakyRelu":
        return np.where(x < 0, (0.01 if alpha is None else alpha) * x, x)
    if name == "HardSigmoid":
        return np.clip((0.2 if alpha is None else alpha) * x + (0.5 if beta is None else beta), 0, 1)
    if name == "Softplus":
        return np.log1p(np.exp(x))
    raise ValueError(name)


def reference(kind, x, w, r, b=None, lens=None, h0=None, c0=None, p=None, direction="forward", layout=0,
              acts=None, alphas=(), betas=(), clip=None, lbr=0):
    """ONNX's equations, step by step, in float64: (Y, Y_h, Y_c) in the layout's shapes."""
    g = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    x = x.astype(np.float64)
    if layout:
        x = x.transpose(1, 0, 2)
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
        c0 = None if c0 is None else c0.transpose(1, 0, 2)
    seq, batch, _ = x.shape
    dirs = 2 if direction == "bidirectional" else 1
    hid = r.shape[2]
    per = {"RNN": 1, "GRU": 2, "LSTM": 3}[kind]
    if acts is None:
        acts = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[kind] * dirs
    y = np.zeros((seq, dirs, batch, hid))
    yh = np.zeros((dirs, batch, hid))
    yc = np.zeros((dirs, batch, hid))
    lens = np.full(batch, seq) if lens is None else lens
    for d in range(dirs):
        a = [(lambda v, k=k: act(acts[d * per + k], v, alphas[d * per + k] if d * per + k < len(alphas) else None,
                                   betas[d * per + k] if d * per + k < len(betas) else None)) for k in range(per)]
        cl = (lambda v: v) if clip is None else (lambda v: np.clip(v, -clip, clip))
        W, R = w[d].astype(np.float64), r[d].astype(np.float64)
        B = np.zeros(2 * g * hid) if b is None else b[d].astype(np.float64)
        Wb, Rb = B[:g * hid], B[g * hid:]
        H = np.zeros((batch, hid)) if h0 is None else h0[d].astype(np.float64)
        C = np.zeros((batch, hid)) if c0 is None else c0[d].astype(np.float64)
        P = np.zeros(3 * hid) if p is None else p[d].astype(np.float64)
        steps = range(seq - 1, -1, -1) if (direction == "reverse" or d == 1) else range(seq)
        for t in steps:
            xt = x[t]
            if kind == "RNN":
                Hn = a[0](cl(xt @ W.T + H @ R.T + Wb + Rb))
                Cn = C
            elif kind == "LSTM":
                gates = xt @ W.T + H @ R.T + Wb + Rb
                gi, go, gf, gc = np.split(gates, 4, axis=1)
                i = a[0](cl(gi + P[:hid] * C))
                f = a[0](cl(gf + P[2 * hid:] * C))
                c = a[1](cl(gc))
                Cn = f * C + i * c
                o = a[0](cl(go + P[hid:2 * hid] * Cn))
                Hn = o * a[2](Cn)
            else:
                Wz, Wr, Wh = np.split(W, 3)
                Rz, Rr, Rh = np.split(R, 3)
                Wbz, Wbr, Wbh = np.split(Wb, 3)
                Rbz, Rbr, Rbh = np.split(Rb, 3)
                z = a[0](cl(xt @ Wz.T + H @ Rz.T + Wbz + Rbz))
                rr = a[0](cl(xt @ Wr.T + H @ Rr.T + Wbr + Rbr))
                if lbr:
                    hh = a[1](cl(xt @ Wh.T + rr * (H @ Rh.T + Rbh) + Wbh))
                else:
                    hh = a[1](cl(xt @ Wh.T + (rr * H) @ Rh.T + Rbh + Wbh))
                Hn = (1 - z) * hh + z * H
                Cn = C
            valid = (t < lens)[:, None]
            y[t, d] = np.where(valid, Hn, 0)
            H = np.where(valid, Hn, H)
            C = np.where(valid, Cn, C)
        yh[d], yc[d] = H, C
    if layout:
        return y.transpose(2, 0, 1, 3), yh.transpose(1, 0, 2), yc.transpose(1, 0, 2)
    return y, yh, yc


def case(name, kind, seq=4, batch=3, inp=5, hid=4, direction="forward", layout=0, bias=True, init=False,
         peep=False, lens=None, dtype=np.float32, **attrs):
    g = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    dirs = 2 if direction == "bidirectional" else 1
    x = rng.standard_normal((batch, seq, inp) if layout else (seq, batch, inp)).astype(dtype)
    w = (rng.standard_normal((dirs, g * hid, inp)) * 0.5).astype(dtype)
    r = (rng.standard_normal((dirs, g * hid, hid)) * 0.5).astype(dtype)
    b = (rng.standard_normal((dirs, 2 * g * hid)) * 0.3).astype(dtype) if bias else None
    st = (batch, dirs, hid) if layout else (dirs, batch, hid)
    h0 = rng.standard_normal(st).astype(dtype) if init else None
    c0 = rng.standard_normal(st).astype(dtype) if init and kind == "LSTM" else None
    p = (rng.standard_normal((dirs, 3 * hid)) * 0.3).astype(dtype) if peep else None
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(r, "R")]
    names = ["X", "W", "R"]
    feeds = [("X", x)]
    for nm, v in (("B", b), ("sequence_lens", lens), ("initial_h", h0), ("initial_c", c0), ("P", p)):
        if nm == "initial_c" and kind != "LSTM" or nm == "P" and kind != "LSTM":
            continue
        if v is None:
            names.append("")
        elif nm in ("sequence_lens", "initial_h", "initial_c"):  # fed at run time
            names.append(nm)
            feeds.append((nm, v))
        else:
            names.append(nm)
            inits.append(numpy_helper.from_array(v, nm))
    while names and names[-1] == "":
        names.pop()
    node_attrs = dict(attrs)
    acts, alphas, betas = node_attrs.get("activations"), node_attrs.get("activation_alpha", ()), \
        node_attrs.get("activation_beta", ())
    node = helper.make_node(kind, names, ["Y", "Y_h"] + (["Y_c"] if kind == "LSTM" else []), hidden_size=hid,
                            direction=direction, **({"layout": layout} if layout else {}), **node_attrs)
    wy, wh, wc = reference(kind, x, w, r, b, lens, h0, c0, p, direction, layout, acts, alphas, betas,
                           attrs.get("clip"), attrs.get("linear_before_reset", 0))
    outs = [("Y", dtype, wy.shape), ("Y_h", dtype, wh.shape)] + ([("Y_c", dtype, wc.shape)] if kind == "LSTM" else [])
    path = VR.onnx_model(name, [node], feeds, outs, inits, opset=14)
    fetch = [o[0] for o in outs]
    for cleanup in ("safepoint", "background"):
        proc, got = VR.onnx_run(path, feeds, f"--cleanup={cleanup}", *[f"--fetch={f}" for f in fetch])
        tol = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)
        ok = proc.returncode == 0 and all(
            got.get(k) is not None and got[k].shape == want.shape and np.allclose(got[k], want, **tol)
            for k, want in zip(fetch, (wy, wh, wc)))
        detail = {k: (np.abs(got[k] - want).max() if k in got and got[k].shape == want.shape else got.get(k))
                  for k, want in zip(fetch, (wy, wh, wc))}
        check(ok, f"{name} ({cleanup}): exit {proc.returncode} {proc.stderr[-500:]} max errors {detail}")


lens = np.array([4, 1, 3], np.int32)
case("rnn_forward", "RNN")
case("rnn_reverse_init", "RNN", direction="reverse", init=True)
case("rnn_bidir_lens", "RNN", direction="bidirectional", lens=lens)
case("rnn_relu_layout1", "RNN", layout=1, init=True, activations=["Relu"])
case("gru_forward", "GRU", init=True)
case("gru_lbr", "GRU", linear_before_reset=1)
case("gru_bidir_lens_lbr", "GRU", direction="bidirectional", lens=lens, linear_before_reset=1, init=True)
case("gru_reverse_nobias", "GRU", direction="reverse", bias=False)
case("gru_hardsigmoid", "GRU", activations=["HardSigmoid", "LeakyRelu"], activation_alpha=[0.3, 0.05],
     activation_beta=[0.4])
case("lstm_forward", "LSTM")
case("lstm_peephole_init", "LSTM", peep=True, init=True)
case("lstm_bidir_lens", "LSTM", direction="bidirectional", lens=lens, init=True, peep=True)
case("lstm_reverse_layout1", "LSTM", direction="reverse", layout=1, init=True)
case("lstm_clip", "LSTM", clip=0.5, init=True)
case("lstm_f64_one_step", "LSTM", seq=1, batch=1, dtype=np.float64)

# Refused with the node named (exit 3).
x = rng.standard_normal((3, 2, 4)).astype(np.float32)
w = rng.standard_normal((1, 4, 4)).astype(np.float32)
r = rng.standard_normal((1, 4, 1)).astype(np.float32)
for nm, attrs, words in [
    ("bad_activation", {"activations": ["Sigmoid", "Elu", "Tanh"]}, ["LSTM", "activation Elu is not supported"]),
    ("input_forget", {"input_forget": 1}, ["LSTM", "input_forget=1 is not supported"]),
]:
    path = VR.onnx_model(nm, [helper.make_node("LSTM", ["X", "W", "R"], ["Y"], hidden_size=1, **attrs)],
                         [("X", x)], [("Y", np.float32, (3, 1, 2, 1))],
                         [numpy_helper.from_array(w, "W"), numpy_helper.from_array(r, "R")], opset=14)
    proc, _ = VR.onnx_run(path, [("X", x)])
    check(proc.returncode == 3 and all(s in proc.stderr for s in words), f"{nm}: exit {proc.returncode} {proc.stderr[-400:]}")

if failures:
    print(f"FAILED: {len(failures)} RNN checks")
    sys.exit(1)
print("OK: ONNX RNN, GRU and LSTM")
