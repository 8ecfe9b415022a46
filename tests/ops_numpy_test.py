#!/usr/bin/env python3
"""NumPy-checked tests of the ops beyond SPEC section 3 (README "Ops beyond
SPEC section 3") through the real binary: every op on every dtype it takes,
with broadcasting, NaN/inf/-0.0, round's ties and argmax's ties. Each graph is
written twice, as a .graph script and as JSON, both run with --format=json
and must give the same bytes; the values are compared with NumPy computed in
float64 (math.erf/erfc for erf and gelu), then rounded to the dtype:

  exact ops (comparisons, logic, where, floor, ceil, round, sign, clip,
  reciprocal, leaky_relu, reduce_min, argmax, argmin): equal, zeros' signs too;
  f32 results of the other ops (computed in double and rounded once): within
  1 ulp of the rounded reference; f64 results: within 8 ulp (tanh gelu: 512,
  as exp(-2z) magnifies z's rounding; log_softmax and reduce_prod: a
  relative 1e-13 and an absolute 1e-15).

Usage: ops_numpy_test.py GRAPHRUN [--keep DIR] [-v]
"""
import argparse
import itertools
import json
import math
import os
import sys
import tempfile

try:
    import numpy as np
except ImportError:  # the system Python has python3-numpy (scripts/deps.sh)
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    sys.exit("ops_numpy_test: needs NumPy (Debian python3-numpy)")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ops_check  # noqa: E402

NP = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "bool": np.bool_}
FLOAT = ["f32", "f64"]
NUM = ["f32", "f64", "i32", "i64"]
SPECIALS = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1e-30, -1e-30, 1e30, -1e30, 0.5, -0.5, 1.5, -1.5,
            2.5, -2.5, 1.0, -1.0, 3.0, -3.0, 20.0, -20.0, 100.0, -100.0, 4194304.5, -4194303.5, 1e-7]


def literal(v, dtype):
    if dtype == "bool":
        return "true" if v else "false"
    if dtype in ("i32", "i64"):
        return str(int(v))
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(v)


def nested(a, dtype):
    if a.ndim == 0:
        return literal(a.item(), dtype)
    return "[" + ", ".join(nested(x, dtype) for x in a) + "]"


def json_value(a, dtype):
    if a.ndim == 0:
        v = a.item()
        if dtype == "bool":
            return bool(v)
        if dtype in ("i32", "i64"):
            return int(v)
        v = float(v)
        return v if math.isfinite(v) else literal(v, dtype)
    return [json_value(x, dtype) for x in a]


class Graph:
    """Inputs (constants), ops, and for each output its reference and check."""

    def __init__(self, name):
        self.name = name
        self.nodes = []  # (name, op, inputs, attrs)
        self.checks = {}  # output -> (reference array, kind)
        self.outputs = []
        self.rng = np.random.default_rng(sum(ord(c) * (i + 1) for i, c in enumerate(name)))

    def const(self, a, dtype):
        a = np.asarray(a, dtype=NP[dtype])
        name = f"c{len(self.nodes)}"
        if a.size == 0:
            self.nodes.append((name, "zeros", [], {"shape": list(a.shape), "dtype": dtype}))
        else:
            self.nodes.append((name, "const", [], {"value": a, "dtype": dtype}))
        return name, a

    def rand(self, shape, dtype, lo=-5.0, hi=5.0):
        if dtype == "bool":
            a = self.rng.integers(0, 2, size=shape).astype(bool)
        elif dtype in ("i32", "i64"):
            a = self.rng.integers(int(lo), int(hi) + 1, size=shape)
        else:
            a = self.rng.uniform(lo, hi, size=shape)
        return self.const(a, dtype)

    def op(self, out, op, inputs, attrs, ref, kind):
        self.nodes.append((out, op, inputs, attrs))
        self.outputs.append(out)
        self.checks[out] = (np.asarray(ref), kind)

    def text(self):
        lines = [f"# ops_numpy_test: {self.name}"]
        for name, op, inputs, attrs in self.nodes:
            args = list(inputs)
            for k, v in attrs.items():
                if k == "value":
                    args.insert(0, nested(v, attrs["dtype"]))
                    continue
                if isinstance(v, bool):
                    v = "true" if v else "false"
                elif isinstance(v, list):
                    v = "[" + ", ".join(map(str, v)) + "]"
                elif isinstance(v, str) and k != "dtype":
                    v = json.dumps(v)
                elif isinstance(v, float):
                    v = literal(v, "f64")
                args.append(f"{k}={v}")
            lines.append(f"{name} = {op}({', '.join(map(str, args))})")
        lines.append("output " + ", ".join(self.outputs))
        return "\n".join(lines) + "\n"

    def json(self):
        nodes = []
        for name, op, inputs, attrs in self.nodes:
            node = {"name": name, "op": op}
            if inputs:
                node["inputs"] = list(inputs)
            a = {}
            for k, v in attrs.items():
                if k == "value":
                    v = json_value(v, attrs["dtype"])
                elif isinstance(v, float) and not math.isfinite(v):
                    v = literal(v, "f64")
                a[k] = v
            if a:
                node["attrs"] = a
            nodes.append(node)
        return json.dumps({"graphrun": 1, "nodes": nodes, "outputs": self.outputs}) + "\n"


# --- references --------------------------------------------------------------------

def f64(a):
    return np.asarray(a, dtype=np.float64)


def vec(fn):
    return np.vectorize(fn, otypes=[np.float64])


def erf_ref(x):
    return vec(math.erf)(f64(x))


def gelu_ref(x, approximate):
    x = f64(x)
    with np.errstate(all="ignore"):
        if approximate == "tanh":
            z = math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)
            return x / (1 + np.exp(-2 * z))  # = x/2 * (1 + tanh z), without its cancellation
        return 0.5 * x * vec(math.erfc)(-x / math.sqrt(2))  # = x/2 * (1 + erf(x / sqrt 2))


def softplus_ref(x):
    x = f64(x)
    with np.errstate(all="ignore"):
        return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def attr_value(v, dtype):
    """An attribute as the op's dtype applies it (ONNX: a float attribute of the tensor's type)."""
    return float(NP[dtype](v))


SELU_ALPHA, SELU_GAMMA = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


# --- the cases ---------------------------------------------------------------------

COMPARE = {"equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
           "greater": np.greater, "greater_equal": np.greater_equal}
LOGICAL = {"logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor}
SHAPES2 = [([], []), ([5], []), ([], [5]), ([3, 1], [1, 4]), ([2, 3, 4], [4]), ([2, 3, 4], [3, 1]),
           ([4, 1, 3], [2, 1]), ([17, 33], [17, 33]), ([0, 3], [3]), ([1, 5], [5, 1])]


def logic_graphs():
    for dtype in NUM:
        g = Graph(f"compare_{dtype}")
        for op, fn in COMPARE.items():
            for sa, sb in SHAPES2:
                (a, va), (b, vb) = g.rand(sa, dtype, -3, 3), g.rand(sb, dtype, -3, 3)
                g.op(f"{op}_{len(g.outputs)}", op, [a, b], {}, fn(va, vb), "exact")
            if dtype in FLOAT:
                (s, vs), (t, vt) = g.const(SPECIALS, dtype), g.const(SPECIALS[5:] + SPECIALS[:5], dtype)
                g.op(f"{op}_special", op, [s, t], {}, fn(vs, vt), "exact")
                g.op(f"{op}_self", op, [s, s], {}, fn(vs, vs), "exact")
            # A bare literal takes the other operand's dtype.
            a, va = g.rand([7], dtype, -3, 3)
            g.op(f"{op}_literal", op, [a, 1], {}, fn(va, NP[dtype](1)), "exact")
        yield g
    g = Graph("logical")
    for op, fn in LOGICAL.items():
        for sa, sb in SHAPES2:
            (a, va), (b, vb) = g.rand(sa, "bool"), g.rand(sb, "bool")
            g.op(f"{op}_{len(g.outputs)}", op, [a, b], {}, fn(va, vb), "exact")
    for op in ("equal", "not_equal"):  # bools too, as ONNX Equal
        for sa, sb in SHAPES2[:5]:
            (a, va), (b, vb) = g.rand(sa, "bool"), g.rand(sb, "bool")
            g.op(f"{op}_{len(g.outputs)}", op, [a, b], {}, COMPARE[op](va, vb), "exact")
    for shape in ([], [6], [3, 4], [0]):
        a, va = g.rand(shape, "bool")
        g.op(f"not_{len(g.outputs)}", "logical_not", [a], {}, np.logical_not(va), "exact")
    yield g
    for dtype in NUM + ["bool"]:
        g = Graph(f"where_{dtype}")
        for sc, sx, sy in (([5], [5], [5]), ([3, 1], [1, 4], [4]), ([], [2, 3], [3]), ([2, 3, 4], [], []),
                           ([4, 1, 3], [2, 1], [1, 1, 1]), ([0, 3], [3], [1]), ([2, 1], [2, 2], [1, 2])):
            (c, vc), (x, vx), (y, vy) = g.rand(sc, "bool"), g.rand(sx, dtype), g.rand(sy, dtype)
            g.op(f"r_{len(g.outputs)}", "where", [c, x, y], {}, np.where(vc, vx, vy), "exact")
        if dtype in FLOAT:
            (c, vc), (s, vs) = g.rand([len(SPECIALS)], "bool"), g.const(SPECIALS, dtype)
            g.op("r_special", "where", [c, s, 2], {}, np.where(vc, vs, NP[dtype](2)), "exact")
        yield g


def unary_cases(dtype):
    """(op, attrs, reference function of the input, kind, input range)."""
    exact = "exact"
    approx = "ulp"
    cases = [("sign", {}, np.sign, exact, (-5, 5)),
             ("clip", {"min": -2, "max": 3}, None, exact, (-5, 5)),
             ("clip", {"max": 1}, None, exact, (-5, 5)),
             ("clip", {"min": 0}, None, exact, (-5, 5)),
             ("clip", {"min": 2, "max": -1}, None, exact, (-5, 5)),  # min > max: max (ONNX)
             ("clip", {}, None, exact, (-5, 5))]
    if dtype in FLOAT:
        cases += [("floor", {}, np.floor, exact, (-5, 5)), ("ceil", {}, np.ceil, exact, (-5, 5)),
                  ("round", {}, np.round, exact, (-5, 5)),
                  ("reciprocal", {}, lambda x: 1 / f64(x), exact, (-5, 5)),
                  ("erf", {}, erf_ref, approx, (-4, 4)),
                  ("softplus", {}, softplus_ref, approx, (-30, 30)),
                  ("leaky_relu", {}, None, exact, (-5, 5)), ("leaky_relu", {"alpha": 0.3}, None, exact, (-5, 5)),
                  ("elu", {}, None, approx, (-8, 3)), ("elu", {"alpha": 0.5}, None, approx, (-8, 3)),
                  ("selu", {}, None, approx, (-8, 3)), ("selu", {"alpha": 1.5, "gamma": 2.0}, None, approx, (-8, 3)),
                  ("gelu", {}, None, approx, (-8, 8)), ("gelu", {"approximate": "none"}, None, approx, (-8, 8)),
                  # exp(-2z) magnifies the rounding of z (ours and the reference's) by 2|z|, ~50 at x = -8:
                  # a few hundred ulp of f64 (f32 results are still rounded once from double)
                  ("gelu", {"approximate": "tanh"}, None, "ulp512", (-8, 8))]
    return cases


def unary_ref(op, attrs, fn, x, dtype):
    with np.errstate(all="ignore"):
        if fn is not None:
            return fn(f64(x) if dtype in FLOAT else x)
        xd = f64(x)
        if op == "leaky_relu":
            a = attr_value(attrs.get("alpha", 0.01), dtype)
            return np.where(xd < 0, a * xd, xd)
        if op == "elu":
            a = attr_value(attrs.get("alpha", 1.0), dtype)
            return np.where(xd < 0, a * np.expm1(xd), xd)
        if op == "selu":
            a = attr_value(attrs.get("alpha", SELU_ALPHA), dtype)
            gm = attr_value(attrs.get("gamma", SELU_GAMMA), dtype)
            return np.where(xd > 0, gm * xd, gm * (a * np.expm1(xd)))
        if op == "gelu":
            return gelu_ref(xd, attrs.get("approximate", "none"))
    raise AssertionError(op)


def clip_ref(x, attrs, dtype):
    """ONNX Clip: min(max(x, lo), hi), NaN kept."""
    out = x.copy()
    if "min" in attrs:
        lo = NP[dtype](attrs["min"])
        out = np.where(out < lo, lo, out)
    if "max" in attrs:
        hi = NP[dtype](attrs["max"])
        out = np.where(out > hi, hi, out)
    return out


def unary_graphs():
    for dtype in NUM:
        g = Graph(f"unary_{dtype}")
        for op, attrs, fn, kind, (lo, hi) in unary_cases(dtype):
            inputs = [g.rand(shape, dtype, lo, hi) for shape in ([], [7], [3, 5], [0, 2], [1000])]
            if dtype in FLOAT:
                inputs.append(g.const(SPECIALS, dtype))
            else:
                big = np.iinfo(NP[dtype])
                inputs.append(g.const([big.min, big.max, 0, -1, 1], dtype))
            for name, x in inputs:
                ref = clip_ref(x, attrs, dtype) if op == "clip" else unary_ref(op, attrs, fn, x, dtype)
                g.op(f"{op}_{len(g.outputs)}", op, [name], dict(attrs), ref, kind)
        yield g
    # Large enough to run on both workers and through the vectorized loops.
    g = Graph("unary_large")
    x, vx = g.rand([300, 1000], "f32", -10, 10)
    for op in ("floor", "round", "clip", "leaky_relu", "gelu"):
        attrs = {"min": -1.5, "max": 2.5} if op == "clip" else {}
        ref = clip_ref(vx, attrs, "f32") if op == "clip" else unary_ref(op, attrs, {
            "floor": np.floor, "round": np.round}.get(op), vx, "f32")
        g.op(f"{op}_large", op, [x], attrs, ref, "exact" if op != "gelu" else "ulp")
    yield g


def reduce_graphs():
    for op, dtype in itertools.product(("reduce_min", "reduce_prod"), NUM):
        g = Graph(f"{op}_{dtype}")
        fn = np.min if op == "reduce_min" else np.prod
        kind = "exact0" if op == "reduce_min" or dtype not in FLOAT else "prod"
        lo, hi = (0.5, 1.6) if op == "reduce_prod" and dtype in FLOAT else (-4, 4)
        x, vx = g.rand([2, 3, 4], dtype, lo, hi)
        ref_in = vx if dtype not in FLOAT else f64(vx)
        for axes, keep in itertools.product((None, [0], [1], [2], [0, 2], [-1], [0, 1, 2]), (False, True)):
            attrs = {} if axes is None else {"axes": axes}
            attrs["keepdims"] = keep
            ax = None if axes is None else tuple(axes)
            with np.errstate(all="ignore"):
                ref = fn(ref_in, axis=ax, keepdims=keep)
            g.op(f"r_{len(g.outputs)}", op, [x], attrs, ref, kind)
        for shape, axes in (([300, 50], [1]), ([50, 300], [0]), ([5, 7, 9, 11], [1, 3]), ([40000], [0])):
            x, vx = g.rand(shape, dtype, lo if op == "reduce_min" else 0.999, hi if op == "reduce_min" else 1.001)
            with np.errstate(all="ignore"):
                ref = fn(vx if dtype not in FLOAT else f64(vx), axis=tuple(axes))
            g.op(f"r_{len(g.outputs)}", op, [x], {"axes": axes}, ref, kind)
        if op == "reduce_prod":
            z, _ = g.const(np.zeros([0, 3]), dtype)
            g.op("r_empty", op, [z], {"axes": [0]}, np.ones([3]), "exact")  # the empty product
            if dtype in ("i32", "i64"):  # wrapping
                w, vw = g.const([1 << 20, 1 << 20, 3, -5], dtype)
                bits = 32 if dtype == "i32" else 64
                p = 1
                for v in vw.tolist():
                    p *= v
                p = (p + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))
                g.op("r_wrap", op, [w], {}, np.array(p, dtype=NP[dtype]), "exact")
        if dtype in FLOAT:
            s, vs = g.const([[1, math.nan, 3], [4, 5, 6], [-math.inf, 2, 3], [0.0, -0.0, 1]], dtype)
            with np.errstate(all="ignore"):
                g.op("r_special", op, [s], {"axes": [1]}, fn(f64(vs), axis=1), kind)
        yield g


def arg_ref(x, axis, keep, last, is_max):
    """numpy.argmax/argmin (NaN first); select_last_index via the flipped axis."""
    f = np.argmax if is_max else np.argmin
    if last:
        n = x.shape[axis]
        r = n - 1 - f(np.flip(x, axis=axis), axis=axis)
    else:
        r = f(x, axis=axis)
    if keep:
        r = np.expand_dims(r, axis)
    return r.astype(np.int64)


def arg_graphs():
    for op, dtype in itertools.product(("argmax", "argmin"), NUM):
        g = Graph(f"{op}_{dtype}")
        x, vx = g.rand([3, 4, 5], dtype, -2, 2)
        if dtype in FLOAT:  # few distinct values: ties
            x, vx = g.const(np.round(vx), dtype)
        for axis, keep, last in itertools.product((0, 1, 2, -1, -3), (True, False), (False, True)):
            attrs = {"axis": axis, "keepdims": keep, "select_last_index": last}
            g.op(f"r_{len(g.outputs)}", op, [x], attrs, arg_ref(vx, axis, keep, last, op == "argmax"), "exact")
        # Defaults: axis 0, keepdims.
        g.op("r_default", op, [x], {}, arg_ref(vx, 0, True, False, op == "argmax"), "exact")
        y, vy = g.rand([7, 300], dtype, -1000, 1000)
        g.op("r_rows", op, [y], {"axis": 1}, arg_ref(vy, 1, True, False, op == "argmax"), "exact")
        if dtype in FLOAT:
            s, vs = g.const([[1, math.nan, 3, math.nan], [4, 5, 5, -math.inf], [-0.0, 0.0, -1, -1]], dtype)
            for last in (False, True):
                g.op(f"r_special_{int(last)}", op, [s], {"axis": 1, "select_last_index": last},
                     arg_ref(vs, 1, True, last, op == "argmax"), "exact")
        yield g


def log_softmax_ref(x, axis):
    x = f64(x)
    with np.errstate(all="ignore"):
        m = np.max(x, axis=axis, keepdims=True)
        return x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


def log_softmax_graphs():
    for dtype in FLOAT:
        g = Graph(f"log_softmax_{dtype}")
        for shape, axis in (([5], 0), ([3, 4], 0), ([3, 4], -1), ([2, 3, 4], 1), ([2, 3, 4], 2), ([10, 3000], -1),
                            ([3000, 10], 0), ([0, 4], -1), ([64, 33], 1)):
            x, vx = g.rand(shape, dtype, -20, 20)
            g.op(f"r_{len(g.outputs)}", "log_softmax", [x], {"axis": axis}, log_softmax_ref(vx, axis), "logsm")
        x, vx = g.rand([4, 6], dtype)
        g.op("r_default", "log_softmax", [x], {}, log_softmax_ref(vx, -1), "logsm")
        s, vs = g.const([[1, math.nan, 3], [1000, 1001, 999], [-math.inf, 0, 1], [math.inf, 1, 2],
                         [-math.inf, -math.inf, -math.inf], [0, -30, -60]], dtype)
        for axis in (-1, 0):
            g.op(f"r_special_{axis}".replace("-", "m"), "log_softmax", [s], {"axis": axis},
                 log_softmax_ref(vs, axis), "logsm")
        yield g


# --- running and comparing ---------------------------------------------------------

def ulp_close(got, ref, dtype, ulps):
    """Elementwise: within `ulps` units in the last place of the reference
    rounded to the dtype (tiny references: also within their own spacing)."""
    t = NP[dtype]
    r = ref.astype(t)
    with np.errstate(all="ignore"):
        spacing = np.abs(np.spacing(r)).astype(np.float64)
    spacing = np.maximum(spacing, np.float64(np.finfo(t).smallest_subnormal))
    with np.errstate(all="ignore"):
        return np.abs(f64(got) - f64(r)) <= ulps * spacing


def compare(got, ref, kind, dtype):
    """A list of (index, reference, got) that fail, or []."""
    if dtype in ("bool", "i32", "i64"):
        ok = got.astype(np.int64) == np.asarray(ref).astype(np.int64) if dtype != "bool" else got == ref
    else:
        ref = f64(ref)
        g = f64(got)
        both_nan = np.isnan(ref) & np.isnan(g)
        finite = np.isfinite(ref) & np.isfinite(g)
        same_inf = ~np.isnan(ref) & ~np.isfinite(ref) & (ref == g)
        if kind in ("exact", "exact0"):  # exact0: either zero for a zero (min of 0 and -0)
            r = ref.astype(NP[dtype]).astype(np.float64)
            close = (g == r) & ((np.signbit(g) == np.signbit(r)) | (kind == "exact0"))
        elif kind in ("logsm", "prod") and dtype == "f64":
            close = np.abs(g - ref) <= 1e-13 * np.abs(ref) + 1e-15
        elif kind == "logsm":
            close = ulp_close(g, ref, dtype, 1) | (np.abs(g - ref) <= 1e-6 * np.abs(ref))
        elif kind == "ulp512":
            close = ulp_close(g, ref, dtype, 1 if dtype == "f32" else 512)
        else:
            close = ulp_close(g, ref, dtype, 1 if dtype == "f32" else 8)
        with np.errstate(all="ignore"):
            ok = both_nan | same_inf | (finite & close)
    bad = np.argwhere(~np.asarray(ok).reshape(np.shape(ok)))
    return [(tuple(i), np.asarray(ref)[tuple(i)], got[tuple(i)]) for i in bad[:5]]


def to_array(out):
    data = out["data"]

    def conv(v):
        if isinstance(v, list):
            return [conv(x) for x in v]
        if isinstance(v, str):
            return float(v)
        return v
    return np.array(conv(data), dtype=NP[out["dtype"]]).reshape(out["shape"])


def run(binary, files):
    return ops_check.run_json(binary, files)


# Bad inputs through the binary: exit 3 (invalid graph), each problem at its place.
ERROR_CASES = [
    ("x = [1.5, 2]\ny = logical_and(x, x)\noutput y\n",
     ["2:17: error: y: logical_and: x is f32[2], but logical_and takes bool; use cast(x, dtype=bool)"]),
    ("x = [1.5, 2]\nc = [true, false]\ny = add(c, x)\noutput y\n",
     ["3:9: error: y: add: c is bool[2], but add takes f32, f64, i32 or i64; use cast(c, dtype=f32)"]),
    ("x = [1.5, 2]\ny = where(x, x, 0)\noutput y\n",
     ["2:11: error: y: where: x is f32[2], but where's condition must be bool"]),
    ("x = [[1, 2], [3, 4]]\ny = argmax(x, axis=2)\nz = gelu(cast(x, dtype=f32), approximate=fast)\noutput y, z\n",
     ["2:20: error: y: argmax: axis 2 is out of range for rank 2 (x is f32[2,2])",
      '3:42: error: z: gelu: approximate must be "none" or "tanh", got "fast"']),
    ('{"graphrun": 1, "nodes": [{"name": "x", "op": "const", "attrs": {"value": [1, 2], "dtype": "i32"}},'
     ' {"name": "y", "op": "clip", "inputs": ["x"], "attrs": {"min": 0.5}}], "outputs": ["y"]}\n',
     ["error: y: clip: min=0.5 cannot be i32 (x is i32[2])"]),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("graphrun")
    ap.add_argument("--keep")
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    np.seterr(all="ignore")  # NaN and inf are compared on purpose
    graphs = [g for gen in (logic_graphs, unary_graphs, reduce_graphs, arg_graphs, log_softmax_graphs)
              for g in gen()]
    with tempfile.TemporaryDirectory() as tmp:
        d = args.keep or tmp
        os.makedirs(d, exist_ok=True)
        texts, jsons = ops_check.write_forms(graphs, d)
        docs_t, docs_j = run(args.graphrun, texts), run(args.graphrun, jsons)
        errors = ops_check.bad_inputs(args.graphrun, d, ERROR_CASES)
    failures, checked = ops_check.check_outputs(graphs, docs_t, docs_j,
                                                ops_check.numpy_judge(compare, to_array, np.shape), args.v)
    failures += errors
    print(f"ops_numpy_test: {len(graphs)} graphs x 2 forms, {checked} outputs, {len(ERROR_CASES)} bad inputs, "
          f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
