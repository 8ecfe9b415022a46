#!/usr/bin/env python3
"""GPU-vs-CPU op tests through the real binary (ggml's tests/test-backend-ops.cpp
is the model): every op with a GPU kernel, on every dtype it supports, over
many shapes and broadcasting cases, run once with --device=cpu and once with
--device=gpu --no-soft-placement; the CPU's outputs are the reference (the CPU
is itself checked against float64 NumPy), compared with a per-op bound.

Usage: gpu_ops_test.py GRAPHRUN [--cpu-only] [--keep DIR] [-k SUBSTRING] [-v]

Without a usable GPU (`graphrun devices` lists none) it prints SKIP and exits 0.
--cpu-only runs every generated graph on the CPU only (twice, --threads=1 and
the default, compared with the same bounds), which checks that every script is
valid and exercises the comparison; the *_large* graphs (sized for the GPU's
grid-stride loops) are only checked (`graphrun check`), not run. It also fails
when an op with a GPU kernel (engine/ir/ops.cpp) has no graph here. Inputs are made on the CPU in a
`with device("cpu")` block, so the GPU run gives each op the CPU's inputs.
"""
import argparse
import glob
import itertools
import math
import os
import re
import sys
import tempfile

import json

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import BinaryFailed, run_binary  # noqa: E402 (tests/harness.py)

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(os.path.dirname(HERE), "scripts", "examples")

NUM = ["f32", "f64", "i32", "i64"]
FLOAT = ["f32", "f64"]
ALL = NUM + ["bool"]
# The storage dtypes (SPEC section 4, README "Storage dtypes"): computed in
# f32/i32 through the plan's widening casts, moved as they are by the shape ops.
STORAGE_FLOAT = ["f16", "bf16"]
STORAGE = STORAGE_FLOAT + ["i8", "u8"]
STORAGE_RANGE = {"i8": (-128, 127), "u8": (0, 255)}
BATCH = 40  # files per graphrun invocation

# Tolerances: (rtol, atol). Integers and bool are always compared exactly.
ELEMENTWISE = {"f32": (1e-6, 1e-30), "f64": (1e-12, 1e-300)}
REDUCTION = {"f32": (1e-5, 1e-6), "f64": (1e-10, 1e-12)}
SOFTMAX = {"f32": (1e-5, 1e-30), "f64": (1e-10, 1e-300)}
NORMAL = {"f32": (1e-6, 1e-30), "f64": (1e-12, 1e-300)}
EXACT = {"f32": (0.0, 0.0), "f64": (0.0, 0.0)}

SPECIAL_FLOATS = ("[nan, inf, -inf, 0, -0.0, 1e-30, -1e-30, 1e30, -1e30, 0.5, -0.5, 1, -1, 3, -3, "
                  "100, -100, 700, -700]")
# The same values shifted by 5: every pair of kinds meets once.
ROTATED_SPECIAL_FLOATS = ("[1e-30, -1e-30, 1e30, -1e30, 0.5, -0.5, 1, -1, 3, -3, 100, -100, 700, -700, nan, "
                          "inf, -inf, 0, -0.0]")
INT_MIN = {"i32": "-2147483648", "i64": "-9223372036854775808"}
INT_MAX = {"i32": "2147483647", "i64": "9223372036854775807"}


def shape_text(shape):
    return "[" + ", ".join(str(d) for d in shape) + "]"


def shape_name(shape):
    return "x".join(str(d) for d in shape) if shape else "s"


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


class Graph:
    """One .graph file: inputs made on the CPU, ops under test, outputs, and
    for each output its comparison bound."""

    def __init__(self, name, args=(), check_device=True):
        self.name = name
        self.args = tuple(args)
        self.check_device = check_device
        self.inputs = []
        self.body = []
        self.outputs = []
        self.tol = {}  # output name -> {dtype: (rtol, atol)}
        self.expect_error = None
        self.seed = sum(ord(c) * (i + 1) for i, c in enumerate(name)) % 100000 * 100

    def next_seed(self):
        self.seed += 1
        return self.seed

    def _input(self, expr):
        name = f"in{len(self.inputs)}"
        self.inputs.append(f"{name} = {expr}")
        return name

    def rand(self, shape, dtype, lo=-1.0, hi=1.0):
        """A random input: uniform floats, integers truncated from uniform doubles,
        bools from 0/1 integers."""
        if dtype in STORAGE:  # made in the compute type and cast (the cast is itself under test)
            base = "f32" if dtype in STORAGE_FLOAT else "i32"
            if dtype in STORAGE_RANGE:
                lo, hi = max(lo, STORAGE_RANGE[dtype][0]), min(hi, STORAGE_RANGE[dtype][1] + 0.99)
            return self._input(f"cast({self.rand(shape, base, lo, hi)}, dtype={dtype})")
        s, seed = shape_text(shape), self.next_seed()
        if dtype in FLOAT:
            return self._input(f"random_uniform({s}, low={lo}, high={hi}, seed={seed}, dtype={dtype})")
        if dtype in ("i32", "i64"):
            return self._input(f"cast(random_uniform({s}, low={lo}, high={hi}, seed={seed}, dtype=f64), "
                               f"dtype={dtype})")
        return self._input(f"cast(cast(random_uniform({s}, low=0, high=2, seed={seed}, dtype=f64), "
                           f"dtype=i32), dtype=bool)")

    def nonzero(self, shape, dtype, hi=20):
        """Integers in (-hi, -1] and [1, hi): divisors."""
        mag = self.rand(shape, dtype, 1, hi)
        sign = self._input(f"cast(random_uniform({shape_text(shape)}, low=0, high=2, seed={self.next_seed()}, "
                           f"dtype=f64), dtype={dtype}) * 2 - 1")
        return self._input(f"{mag} * {sign}")

    def const(self, values, dtype):
        return self._input(f"const({values}, dtype={dtype})")

    def op(self, out_name, expr, tol=None):
        self.body.append(f"{out_name} = {expr}")
        self.outputs.append(out_name)
        self.tol[out_name] = tol or EXACT

    def text(self):
        lines = [f"# gpu_ops_test: {self.name}"]
        if self.inputs:
            lines.append('with device("cpu") {')
            lines += ["    " + s for s in self.inputs]
            lines.append("}")
        lines += self.body
        lines.append("output " + ", ".join(self.outputs))
        return "\n".join(lines) + "\n"


# --- the cases ---------------------------------------------------------------

BINARY_OPS = ["add", "sub", "mul", "div", "maximum", "minimum", "pow"]
BINARY_SHAPES = [([], []), ([5], []), ([], [5]), ([3, 1], [1, 4]), ([2, 3, 4], [4]), ([2, 3, 4], [3, 1]),
                 ([4, 1, 3], [2, 1]), ([3, 4, 5, 6], [3, 1, 5, 1]), ([1, 5], [5, 1]), ([17, 33], [17, 33]),
                 ([0, 3], [3]), ([2, 0], [1, 1]), ([2, 1, 3], [2, 1, 3])]


def binary_ranges(op, dtype):
    """(a range, b range) for random inputs; b None: nonzero integers."""
    if op == "pow":
        return ((-10, 10), (0, 6)) if dtype not in FLOAT else ((0.1, 3), (-3, 3))
    if op == "div" and dtype not in FLOAT:
        return (-1000, 1000), None
    return ((-1000, 1000), (-1000, 1000)) if dtype not in FLOAT else ((-2, 2), (-2, 2))


def binary_graphs():
    for op, dtype in itertools.product(BINARY_OPS, NUM):
        g = Graph(f"binary_{op}_{dtype}")
        tol = ELEMENTWISE
        ra, rb = binary_ranges(op, dtype)
        for sa, sb in BINARY_SHAPES:
            a = g.rand(sa, dtype, *ra)
            b = g.nonzero(sb, dtype) if rb is None else g.rand(sb, dtype, *rb)
            g.op(f"r_{shape_name(sa)}_{shape_name(sb)}", f"{op}({a}, {b})", tol)
        # A weakly typed scalar literal, made on the op's device.
        a = g.rand([6], dtype, *ra)
        g.op("r_literal", f"{op}({a}, 2)", tol)
        if dtype in FLOAT:
            specials = g.const(SPECIAL_FLOATS, dtype)
            g.op("r_special_self", f"{op}({specials}, {specials})", tol)
            g.op("r_special_rot", f"{op}({specials}, {g.const(ROTATED_SPECIAL_FLOATS, dtype)})", tol)
            nanrow = g.const("[[nan, 1, -inf], [2, nan, inf]]", dtype)
            g.op("r_special_bcast", f"{op}({nanrow}, {g.const('[[1], [nan]]', dtype)})", tol)
        elif op in ("add", "sub", "mul"):  # wrapping
            lim = 2.1e9 if dtype == "i32" else 9.2e18
            g.op("r_wrap", f"{op}({g.rand([64], dtype, -lim, lim)}, {g.rand([64], dtype, -lim, lim)})")
        elif op == "div":
            a = g.const("[7, -7, 7, -7, 0, 5, 1, -1]", dtype)
            b = g.const("[2, 2, -2, -2, 3, -1, -1, 1]", dtype)
            g.op("r_trunc", f"div({a}, {b})")
            g.op("r_min_by_minus_one", f"div({g.const(f'[{INT_MIN[dtype]}]', dtype)}, {g.const('[-1]', dtype)})")
        elif op == "pow":
            a = g.const("[1, -1, 1, -1, 2, -2, 0, 3, 7]", dtype)
            b = g.const("[-3, -3, -4, -4, 62, 63, 0, 40, 1]", dtype)
            g.op("r_edge", f"pow({a}, {b})")
        yield g
    # Large: 1M elements with broadcasting.
    for dtype in ("f32", "i32"):
        g = Graph(f"binary_large_{dtype}")
        a, b = g.rand([1000, 1000], dtype, -100, 100), g.rand([1000], dtype, -100, 100)
        g.op("r_add", f"add({a}, {b})", ELEMENTWISE)
        g.op("r_mul", f"mul({g.rand([1000, 1], dtype, -100, 100)}, {b})", ELEMENTWISE)
        yield g


UNARY_NUM = ["neg", "abs", "square", "relu"]
UNARY_FLOAT = ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "sin", "cos"]
UNARY_RANGE = {"exp": (-50, 50), "log": (0.001, 100), "sqrt": (0, 100), "rsqrt": (0.001, 100),
               "tanh": (-20, 20), "sigmoid": (-40, 40), "sin": (-100, 100), "cos": (-100, 100)}
UNARY_SHAPES = [[], [0], [7], [3, 5, 7], [2, 0, 3], [1000]]


def unary_graphs():
    for op in UNARY_NUM + UNARY_FLOAT:
        for dtype in (NUM if op in UNARY_NUM else FLOAT):
            g = Graph(f"unary_{op}_{dtype}")
            lo, hi = UNARY_RANGE.get(op, (-1000, 1000) if dtype not in FLOAT else (-10, 10))
            for shape in UNARY_SHAPES:
                g.op(f"r_{shape_name(shape)}", f"{op}({g.rand(shape, dtype, lo, hi)})", ELEMENTWISE)
            if dtype in FLOAT:
                g.op("r_special", f"{op}({g.const(SPECIAL_FLOATS, dtype)})", ELEMENTWISE)
                g.op("r_wide", f"{op}({g.rand([257], dtype, -1000, 1000)})", ELEMENTWISE)
            else:  # wrapping at the ends of the range
                edge = f"[{INT_MIN[dtype]}, {INT_MAX[dtype]}, -1, 0, 1, 46341, 3037000500]" if dtype == "i64" else \
                    f"[{INT_MIN[dtype]}, {INT_MAX[dtype]}, -1, 0, 1, 46341, -46341]"
                g.op("r_edge", f"{op}({g.const(edge, dtype)})")
            yield g
    g = Graph("unary_large_f32")
    g.op("r_exp", f"exp({g.rand([1000, 1000], 'f32', -20, 20)})", ELEMENTWISE)
    g.op("r_relu", f"relu({g.rand([1000, 1000], 'f32', -20, 20)})", ELEMENTWISE)
    yield g


CAST_SPECIAL_F = ("[nan, inf, -inf, 3.7, -3.7, 0.5, -0.5, 0, -0.0, 1e10, -1e10, 2147483647, -2147483648, "
                  "2147483648, -2147483649, 9.3e18, -9.3e18, 9.2e18, 1e-40, 16777217, 123456789.75]")
CAST_SPECIAL_I = {"i32": "[-2147483648, 2147483647, 0, 1, -1, 16777217, 123456789]",
                  "i64": "[-9223372036854775808, 9223372036854775807, 4294967297, -4294967297, 2147483648, "
                         "-2147483649, 0, 1, -1, 9007199254740993, 16777217]"}


def cast_graphs():
    for src, dst in itertools.product(ALL + STORAGE, ALL + STORAGE):
        g = Graph(f"cast_{src}_to_{dst}")
        lo, hi = {"i32": (-2.1e9, 2.1e9), "i64": (-1e13, 1e13), "i8": (-128, 127), "u8": (0, 255)}.get(src, (-5, 5))
        if src in FLOAT and dst in STORAGE_FLOAT:  # past the 16-bit types' ranges: overflow to inf
            lo, hi = -1e5, 1e5
        for shape in ([], [0], [2, 3, 4], [1001]):
            g.op(f"r_{shape_name(shape)}", f"cast({g.rand(shape, src, lo, hi)}, dtype={dst})")
        if src in STORAGE:
            # The specials of the compute type, rounded or wrapped into the storage type first.
            base = "f32" if src in STORAGE_FLOAT else "i32"
            sp = g.const(CAST_SPECIAL_F if src in STORAGE_FLOAT else CAST_SPECIAL_I["i32"], base)
            g.op("r_special", f"cast({g._input(f'cast({sp}, dtype={src})')}, dtype={dst})")
        elif src in FLOAT:
            g.op("r_special", f"cast({g.const(CAST_SPECIAL_F, src)}, dtype={dst})")
        elif src in CAST_SPECIAL_I:
            g.op("r_special", f"cast({g.const(CAST_SPECIAL_I[src], src)}, dtype={dst})")
        else:
            g.op("r_special", f"cast({g.const('[true, false, true, true]', 'bool')}, dtype={dst})")
        yield g


TRANSPOSE_CASES = [([], None), ([5], None), ([3, 4], None), ([2, 3, 4], None), ([2, 3, 4], [0, 2, 1]),
                   ([2, 3, 4], [1, 0, 2]), ([2, 3, 4], [2, 0, 1]), ([2, 3, 4], [1, 2, 0]),
                   ([2, 3, 4], [0, 1, 2]), ([2, 1, 3], [2, 1, 0]), ([1, 1, 5], [2, 0, 1]), ([0, 3], None),
                   ([2, 3, 4, 5], [3, 1, 2, 0]), ([2, 3, 4, 5], [0, 2, 3, 1]), ([33, 65], None),
                   ([4, 33, 65], [0, 2, 1]), ([3, 40, 2, 70], [2, 3, 0, 1]), ([2, 1, 3, 1, 2, 2], None),
                   ([70, 3, 40], [2, 1, 0])]


def transpose_graphs():
    for dtype in ALL + STORAGE:
        g = Graph(f"transpose_{dtype}")
        for shape, perm in TRANSPOSE_CASES:
            x = g.rand(shape, dtype, -1000, 1000)
            attr = "" if perm is None else f", perm={shape_text(perm)}"
            name = f"r_{shape_name(shape)}" + ("" if perm is None else "_p" + "".join(map(str, perm)))
            g.op(name, f"transpose({x}{attr})")
        yield g
    g = Graph("transpose_large_f32")
    g.op("r_1000x1000", f"transpose({g.rand([1000, 1000], 'f32')})")
    g.op("r_batch", f"transpose({g.rand([10, 300, 200], 'f32')}, perm=[0, 2, 1])")
    yield g


CONCAT_CASES = [([[2, 3], [4, 3]], 0), ([[2, 3], [2, 5]], 1), ([[2, 3, 4], [2, 1, 4], [2, 0, 4]], 1),
                ([[2, 3, 4], [2, 3, 1]], -1), ([[3], [0], [5]], 0), ([[2, 2]], 0), ([[2, 2, 1], [2, 2, 3]], 2),
                ([[1, 3], [2, 3], [3, 3], [4, 3]], 0), ([[0, 2], [0, 3]], 1), ([[5, 7, 3], [5, 7, 3]], -2)]


def concat_graphs():
    for dtype in ALL + STORAGE:
        g = Graph(f"concat_{dtype}")
        for k, (shapes, axis) in enumerate(CONCAT_CASES):
            xs = ", ".join(g.rand(s, dtype, -1000, 1000) for s in shapes)
            g.op(f"r_{k}_axis{axis}".replace("-", "m"), f"concat({xs}, axis={axis})")
        yield g
    g = Graph("concat_large_f32")
    g.op("r_axis1", f"concat({g.rand([1000, 500], 'f32')}, {g.rand([1000, 500], 'f32')}, axis=1)")
    yield g


def reduce_graphs():
    every_axes = [None, [], [0], [1], [2], [0, 1], [0, 2], [1, 2], [0, 1, 2], [-1], [-3, -1], [2, 0]]
    for op, dtypes in (("reduce_sum", NUM), ("reduce_max", NUM), ("reduce_mean", FLOAT)):
        for dtype in dtypes:
            g = Graph(f"{op}_{dtype}")
            lo, hi = (-1000, 1000) if dtype not in FLOAT else (-1, 1)
            x = g.rand([2, 3, 4], dtype, lo, hi)
            for axes, keep in itertools.product(every_axes, (False, True)):
                attr = "" if axes is None else f", axes={shape_text(axes)}"
                name = "r_" + ("all" if axes is None else "a" + "".join(str(a) for a in axes).replace("-", "m"))
                g.op(name + ("_keep" if keep else ""), f"{op}({x}{attr}, keepdims={'true' if keep else 'false'})",
                     REDUCTION)
            g.op("r_scalar", f"{op}({g.rand([], dtype, lo, hi)})", REDUCTION)
            g.op("r_scalar_none", f"{op}({g.rand([], dtype, lo, hi)}, axes=[])", REDUCTION)
            z = g.rand([0, 3], dtype, lo, hi)
            g.op("r_zero_keep_axis1", f"{op}({z}, axes=[1])", REDUCTION)
            if op != "reduce_max":  # reduce_max of an empty dimension is refused
                g.op("r_zero_axis0", f"{op}({z}, axes=[0])", REDUCTION)
                g.op("r_zero_all", f"{op}({z})", REDUCTION)
            for shape, axes in (([1000, 3], [1]), ([300, 300], [1]), ([300, 300], [0]), ([5, 7, 9, 11], [1, 3]),
                                ([5, 7, 9, 11], [0, 2]), ([40, 1, 50], [0, 2]), ([3, 4000], [1]),
                                ([4000, 3], [0])):
                g.op(f"r_{shape_name(shape)}_a" + "".join(map(str, axes)),
                     f"{op}({g.rand(shape, dtype, lo, hi)}, axes={shape_text(axes)})", REDUCTION)
            # Sizes where one output's inputs are split over several blocks or threads.
            for shape, axes in (([20000], None), ([3, 20000], [1]), ([20000, 3], [0]), ([9000, 2, 3], [0, 2]),
                                ([9000, 2, 3], [0, 1])):
                attr = "" if axes is None else f", axes={shape_text(axes)}"
                g.op(f"r_split_{shape_name(shape)}" + ("" if axes is None else "_a" + "".join(map(str, axes))),
                     f"{op}({g.rand(shape, dtype, lo, hi)}{attr})", REDUCTION)
            if dtype in FLOAT:
                # Infinities only for reduce_max: the CPU's compensated f64 sum turns
                # inf + inf into NaN where NumPy gives inf (reported, not a GPU matter).
                sp = "[[1, nan, 3], [4, 5, 6], [-inf, -inf, -inf], [inf, 1, 2]]" if op == "reduce_max" else \
                    "[[1, nan, 3], [4, 5, 6], [-1e30, 2, 3], [nan, nan, 2]]"
                nan = g.const(sp, dtype)
                g.op("r_special_rows", f"{op}({nan}, axes=[1])", REDUCTION)
                g.op("r_special_cols", f"{op}({nan}, axes=[0])", REDUCTION)
            yield g
    # Large: reduce everything, last axis, leading axes; each splits into partial sums.
    for op, dtype in (("reduce_sum", "f32"), ("reduce_sum", "f64"), ("reduce_sum", "i32"), ("reduce_max", "f32"),
                      ("reduce_mean", "f32"), ("reduce_max", "i64")):
        g = Graph(f"{op}_large_{dtype}")
        lo, hi = (-2.1e9, 2.1e9) if dtype == "i32" else (-1000, 1000) if dtype == "i64" else (-1, 1)
        g.op("r_all", f"{op}({g.rand([1000000], dtype, lo, hi)})", REDUCTION)
        g.op("r_last", f"{op}({g.rand([4, 250000], dtype, lo, hi)}, axes=[1])", REDUCTION)
        g.op("r_leading", f"{op}({g.rand([250000, 4], dtype, lo, hi)}, axes=[0])", REDUCTION)
        g.op("r_rows", f"{op}({g.rand([1000, 1000], dtype, lo, hi)}, axes=[-1], keepdims=true)", REDUCTION)
        g.op("r_outer", f"{op}({g.rand([100, 100, 100], dtype, lo, hi)}, axes=[0, 1])", REDUCTION)
        yield g


def softmax_graphs():
    for dtype in FLOAT:
        g = Graph(f"softmax_{dtype}")
        for shape, axis in (([5], 0), ([5], -1), ([3, 4], 0), ([3, 4], 1), ([3, 4], -1), ([2, 3, 4], 0),
                            ([2, 3, 4], 1), ([2, 3, 4], 2), ([2, 3, 4], -2), ([0, 4], -1), ([3, 0], 0),
                            ([10, 3000], -1), ([3000, 10], 0), ([7, 300], -1), ([1, 1], -1), ([64, 33], 1)):
            g.op(f"r_{shape_name(shape)}_axis{axis}".replace("-", "m"),
                 f"softmax({g.rand(shape, dtype, -10, 10)}, axis={axis})", SOFTMAX)
        sp = g.const("[[1, nan, 3], [1000, 1001, 999], [-inf, 0, 1], [inf, 1, 2], [-inf, -inf, -inf], "
                     "[-1000, -1000, -1000]]", dtype)
        g.op("r_special_rows", f"softmax({sp}, axis=-1)", SOFTMAX)
        g.op("r_special_cols", f"softmax({sp}, axis=0)", SOFTMAX)
        yield g
    g = Graph("softmax_large_f32")
    g.op("r_rows", f"softmax({g.rand([1000, 1000], 'f32', -10, 10)}, axis=-1)", SOFTMAX)
    g.op("r_cols", f"softmax({g.rand([1000, 1000], 'f32', -10, 10)}, axis=0)", SOFTMAX)
    yield g


MATMUL_CASES = [([3], [3], "", ""), ([3], [3, 4], "", ""), ([2, 3], [3], "", ""), ([2, 3], [3, 4], "", ""),
                ([5, 2, 3], [5, 3, 4], "", ""), ([5, 2, 3], [3, 4], "", ""), ([2, 3], [5, 3, 4], "", ""),
                ([2, 1, 2, 3], [3, 3, 4], "", ""), ([4], [2, 4, 3], "", ""), ([2, 3, 4], [4], "", ""),
                ([3, 2], [3, 4], "a", ""), ([2, 3], [4, 3], "", "b"), ([3, 2], [4, 3], "a", "b"),
                ([5, 3, 2], [5, 4, 3], "a", "b"), ([2, 1, 3, 2], [1, 4, 4, 3], "a", "b"),
                ([2, 0], [0, 3], "", ""), ([0, 3], [3, 4], "", ""), ([0, 2, 3], [3, 4], "", ""),
                ([3, 0], [0], "", ""), ([1, 1], [1, 1], "", ""), ([64, 128], [128, 96], "", ""),
                ([100, 8, 16], [16, 8], "", ""), ([3, 1, 8, 16], [1, 5, 16, 8], "", "")]


def matmul_tol(dtype, k, tf32=False):
    if tf32:
        return (1e-2, 3e-3 * math.sqrt(max(k, 1)))
    return (1e-5, 1e-6 * k) if dtype == "f32" else (1e-10, 1e-13 * k)


def matmul_graphs():
    for dtype in FLOAT:
        g = Graph(f"matmul_{dtype}")
        for k, (sa, sb, ta, tb) in enumerate(MATMUL_CASES):
            a, b = g.rand(sa, dtype), g.rand(sb, dtype)
            attrs = (", transpose_a=true" if ta else "") + (", transpose_b=true" if tb else "")
            inner = sa[-2] if ta else sa[-1]
            name = f"r{k}_{shape_name(sa)}_{shape_name(sb)}" + (f"_t{ta}{tb}" if ta or tb else "")
            g.op(name, f"matmul({a}, {b}{attrs})", {dtype: matmul_tol(dtype, inner)})
        g.op("r_infix", f"{g.rand([4, 5], dtype)} @ {g.rand([5, 6], dtype)}", {dtype: matmul_tol(dtype, 5)})
        yield g
    g = Graph("matmul_large_f32")
    g.op("r_512", f"matmul({g.rand([256, 512], 'f32')}, {g.rand([512, 256], 'f32')})", {"f32": matmul_tol("f32", 512)})
    g.op("r_batch_tb", f"matmul({g.rand([8, 64, 128], 'f32')}, {g.rand([8, 96, 128], 'f32')}, transpose_b=true)",
         {"f32": matmul_tol("f32", 128)})
    yield g
    g = Graph("matmul_tf32", args=("--allow-tf32",))
    g.op("r_256", f"matmul({g.rand([128, 256], 'f32')}, {g.rand([256, 64], 'f32')})",
         {"f32": matmul_tol("f32", 256, tf32=True)})
    g.op("r_f64", f"matmul({g.rand([16, 32], 'f64')}, {g.rand([32, 8], 'f64')})", {"f64": matmul_tol("f64", 32)})
    yield g


def creation_graphs():
    g = Graph("create_random")
    for dtype in FLOAT:
        for shape in ([], [0], [7], [5, 3], [1001]):
            g.op(f"u_{dtype}_{shape_name(shape)}", f"random_uniform({shape_text(shape)}, seed=42, dtype={dtype})")
            g.op(f"n_{dtype}_{shape_name(shape)}", f"random_normal({shape_text(shape)}, seed=42, dtype={dtype})",
                 NORMAL)
        g.op(f"u_{dtype}_range", f"random_uniform([999], low=-3.5, high=7.25, seed=12345678901, dtype={dtype})")
        g.op(f"n_{dtype}_ms", f"random_normal([999], mean=2.5, stddev=0.125, seed=12345678901, dtype={dtype})",
             NORMAL)
        g.op(f"u_{dtype}_seed0", f"random_uniform([33], dtype={dtype})")
    yield g
    g = Graph("create_random_large")
    g.op("u_f32", "random_uniform([1000, 1000], seed=7)")
    g.op("n_f64", "random_normal([500000], seed=8, dtype=f64)", NORMAL)
    yield g
    g = Graph("create_fill")
    values = {"f32": "2.5", "f64": "-0.1", "i32": "-7", "i64": "9007199254740993", "bool": "true"}
    for dtype in ALL:
        for shape in ([], [0], [3, 4]):
            sn = shape_name(shape)
            g.op(f"z_{dtype}_{sn}", f"zeros({shape_text(shape)}, dtype={dtype})")
            g.op(f"o_{dtype}_{sn}", f"ones({shape_text(shape)}, dtype={dtype})")
            g.op(f"f_{dtype}_{sn}", f"fill({shape_text(shape)}, {values[dtype]}, dtype={dtype})")
        lit = "[[true, false], [false, true]]" if dtype == "bool" else "[[1, -2], [3, 4]]"
        g.op(f"c_{dtype}", f"const({lit}, dtype={dtype})")
        g.op(f"c1_{dtype}", f"const({'[true]' if dtype == 'bool' else '[5]'}, dtype={dtype})")
    for dtype in STORAGE:
        g.op(f"z_{dtype}", f"zeros([3, 4], dtype={dtype})")
        g.op(f"o_{dtype}", f"ones([5], dtype={dtype})")
        g.op(f"f_{dtype}", f"fill([2, 3], {'-7' if dtype != 'u8' else '200'}, dtype={dtype})")
        g.op(f"c_{dtype}", f"const([[1, 2], [3, 4]], dtype={dtype})")
    g.op("f_nan", "fill([3], nan, dtype=f32)")
    g.op("c_special", f"const({SPECIAL_FLOATS}, dtype=f32)")
    yield g
    # input nodes on the device under test (the fed bytes copied in, like
    # const's; --fill gives both runs the same values), and identity of each.
    g = Graph("create_input_identity", args=("--fill=random", "--seed=3"))
    for dtype in ALL:
        for shape in ([], [0], [3, 4]):
            x = f"x_{dtype}_{shape_name(shape)}"
            g.body.append(f"{x} = input({shape_text(shape)}, dtype={dtype})")
            g.outputs.append(x)
            g.tol[x] = EXACT
            g.op(f"id_{dtype}_{shape_name(shape)}", f"identity({x})")
    yield g
    g = Graph("create_range")
    for dtype in NUM:
        g.op(f"r10_{dtype}", f"range(10, dtype={dtype})")
        g.op(f"rstep_{dtype}", f"range(-5, 100, 7, dtype={dtype})")
        g.op(f"rneg_{dtype}", f"range(10, -10, -3, dtype={dtype})")
        g.op(f"rempty_{dtype}", f"range(5, 5, dtype={dtype})")
    for dtype in FLOAT:
        g.op(f"rfrac_{dtype}", f"range(0.1, 2.3, 0.1, dtype={dtype})")
        g.op(f"rbig_{dtype}", f"range(0.5, 300000, 0.7, dtype={dtype})")
    yield g


# Arithmetic on the storage dtypes runs on the GPU in f32/i32 between the
# plan's casts and rounds back after each op, as on the CPU: the f32 kernels
# of the two devices may differ in the last f32 bit, which rounding to f16 or
# bf16 can turn into one unit of the storage type's last place.
STORAGE_ARITH = {"f16": (2e-3, 1e-3), "bf16": (1.6e-2, 1e-2)}


def storage_arith_graphs():
    for dtype in STORAGE:
        g = Graph(f"storage_arith_{dtype}")
        lo, hi = (-2, 2) if dtype in STORAGE_FLOAT else (-100, 100)
        tol = STORAGE_ARITH
        for op in ("add", "sub", "mul", "maximum", "minimum"):
            for sa, sb in (([5], []), ([3, 1], [1, 4]), ([2, 3, 4], [4]), ([17, 33], [17, 33])):
                g.op(f"{op}_{shape_name(sa)}_{shape_name(sb)}", f"{op}({g.rand(sa, dtype, lo, hi)}, "
                     f"{g.rand(sb, dtype, lo, hi)})", tol)
        g.op("div", f"div({g.rand([40], dtype, lo, hi)}, {g.rand([40], dtype, 1, 20)})", tol)
        g.op("literal", f"{g.rand([6], dtype, lo, hi)} * 3 + 1", tol)
        for op in ("neg", "abs", "relu", "square"):
            g.op(op, f"{op}({g.rand([3, 7], dtype, lo, hi)})", tol)
        g.op("reduce_sum", f"reduce_sum({g.rand([30, 40], dtype, lo, hi)}, axes=[1])", tol)
        g.op("reduce_max", f"reduce_max({g.rand([30, 40], dtype, lo, hi)}, axes=[0])", tol)
        if dtype in STORAGE_FLOAT:
            for op in ("exp", "tanh", "sigmoid", "sqrt"):
                g.op(op, f"{op}({g.rand([257], dtype, 0.01, 4)})", tol)
            g.op("softmax", f"softmax({g.rand([8, 33], dtype, -5, 5)}, axis=-1)", tol)
            g.op("matmul", f"matmul({g.rand([16, 64], dtype)}, {g.rand([64, 24], dtype)})", tol)
            g.op("large", f"exp({g.rand([1000, 1000], dtype, -4, 4)})", tol)
        yield g


def beyond_spec_graphs():
    """The ops of README "Ops beyond SPEC section 3" (tests/gpu_ops_ext.py)."""
    from gpu_ops_ext import beyond_spec_graphs as ext
    yield from ext()


def all_graphs():
    for gen in (binary_graphs, unary_graphs, cast_graphs, transpose_graphs, concat_graphs, reduce_graphs,
                softmax_graphs, matmul_graphs, creation_graphs, storage_arith_graphs, beyond_spec_graphs):
        yield from gen()


def gpu_op_table(src):
    """{op name: dtype class} of every op engine/ir/ops.cpp gives a GPU kernel (G)."""
    with open(os.path.join(src, "engine", "ir", "ops.cpp")) as f:
        text = f.read()
    rows = re.findall(r'add\(OpKind::\w+, "(\w+)", -?\d+, -?\d+, C::(\w+), F::\w+, (\w+),', text)
    if not rows or len(rows) != text.count("add(OpKind::"):
        raise SystemExit(f"gpu_ops_test: cannot read the op table of engine/ir/ops.cpp ({len(rows)} rows)")
    return {name: cls for name, cls, gpu in rows if gpu != "false"}


def uncovered_ops(src, graphs):
    """The ops with a GPU kernel (engine/ir/ops.cpp) that no graph here calls:
    a kernel this test would never compare with the CPU."""
    texts = [getattr(g, "source", None) or g.text() for g in graphs]
    return sorted(op for op in gpu_op_table(src)
                  if not any(re.search(r"\b" + op + r"\(", t) for t in texts))


def error_graphs():
    """Graphs whose GPU run must fail with exit 1 and this text on stderr."""
    for dtype in ("i32", "i64"):
        g = Graph(f"error_div_by_zero_{dtype}")
        a = g.rand([4, 5], dtype, -100, 100)
        b = g._input(f"const([1, 2, 0, -3, 4], dtype={dtype})")
        g.op("r", f"div({a}, {b})")
        g.expect_error = "division by zero"
        yield g
    g = Graph("error_negative_power_i32")
    g.op("r", f"pow({g.const('[2, 3]', 'i32')}, {g.const('[1, -1]', 'i32')})")
    g.expect_error = "negative integer powers"
    yield g
    g = Graph("error_gather_index")
    g.op("r", f"gather({g.rand([4, 5], 'f32')}, {g.const('[1, 4, 0]', 'i64')})")
    g.expect_error = "index 4 (entry 1 of the indices) is out of range for an axis of length 4"
    yield g
    # An empty output reads nothing, but its indices are checked all the same.
    g = Graph("error_gather_index_empty_output")
    g.op("r", f"gather({g.rand([0, 5], 'f32')}, {g.const('[2, -6]', 'i32')}, axis=1)")
    g.expect_error = "index -6 (entry 1 of the indices) is out of range for an axis of length 5"
    yield g


# --- running and comparing ---------------------------------------------------

def run_bin(binary, args, timeout=600):
    """(code, stdout, stderr); a crash is a negative code (a batch that crashes is
    rerun file by file); a timeout raises harness.BinaryFailed."""
    return tuple(run_binary(binary, args, timeout=timeout, allow_signal=True))


def run_json(binary, files, device_args):
    """{path: doc} for each file, running them in batches; a batch that crashes
    is rerun file by file so the crash is pinned to one graph."""
    docs = {}
    for i in range(0, len(files), BATCH):
        chunk = files[i:i + BATCH]
        got = run_batch(binary, chunk, device_args)
        if got is None:
            for f in chunk:
                one = run_batch(binary, [f], device_args)
                docs[f] = one[f] if one else {"error": {"message": "graphrun crashed or printed no JSON"}}
        else:
            docs.update(got)
    return docs


def run_batch(binary, files, device_args):
    try:
        code, out, err = run_bin(binary, ["run", *files, "--format=json", *device_args])
    except BinaryFailed:  # timed out
        return None
    lines = [ln for ln in out.splitlines() if ln.strip()]
    if code not in (0, 1) or len(lines) != len(files):
        if len(files) == 1:
            sys.stderr.write(f"{files[0]}: exit {code}\n{err[-2000:]}\n")
        return None
    docs = {}
    for f, ln in zip(files, lines):
        try:
            docs[f] = json.loads(ln)
        except ValueError as e:
            docs[f] = {"error": {"message": f"bad JSON: {e}"}}
    return docs


def flatten(data, shape):
    if not shape:
        return [data]
    out = []
    for row in data:
        out += flatten(row, shape[1:])
    return out


def as_float(v):
    if isinstance(v, str):
        return float(v)  # "nan", "inf", "-inf"
    return float(v)


def compare_values(ref, got, dtype, tol):
    """Indices and values that differ beyond the bound, the first few."""
    bad = []
    if dtype in FLOAT + STORAGE_FLOAT:
        rtol, atol = tol.get(dtype, (0.0, 0.0))
        for i, (r, g) in enumerate(zip(ref, got)):
            r, g = as_float(r), as_float(g)
            if math.isnan(r) or math.isnan(g):
                ok = math.isnan(r) and math.isnan(g)
            elif math.isinf(r) or math.isinf(g):
                ok = r == g
            else:
                ok = abs(r - g) <= rtol * abs(r) + atol
            if not ok:
                bad.append((i, r, g))
                if len(bad) >= 5:
                    break
    else:
        for i, (r, g) in enumerate(zip(ref, got)):
            if r != g:
                bad.append((i, r, g))
                if len(bad) >= 5:
                    break
    return bad


def check_memory(doc, device):
    after = doc.get("memory", {}).get("after_teardown", {})
    if device not in after:
        return [f"no {device} statistics after teardown"]
    m = after[device]
    problems = [f"{device} {k} = {m.get(k)} after teardown"
                for k in ("in_use", "pending", "reserved", "live", "workspace") if m.get(k) != 0]
    if m.get("allocs") != m.get("frees"):
        problems.append(f"{device} allocs {m.get('allocs')} != frees {m.get('frees')} after teardown")
    return problems


def compare_docs(graph, ref, got, device):
    """(passed, failures) for one graph: one check per output (each computed on
    `device` unless the graph pins its own), plus the device's memory check."""
    if "error" in ref:
        return 0, [f"reference run failed: {ref['error'].get('message')}"]
    if "error" in got:
        return 0, [f"run failed: {got['error'].get('message')}"]
    passed, failures = 0, []
    ref_out = {o["name"]: o for o in ref.get("outputs", [])}
    for o in got.get("outputs", []):
        name = o["name"]
        r = ref_out.get(name)
        where = f"{name}"
        if r is None:
            failures.append(f"{where}: not in the reference outputs")
            continue
        if (o["dtype"], o["shape"]) != (r["dtype"], r["shape"]):
            failures.append(f"{where}: {o['dtype']}{o['shape']} vs reference {r['dtype']}{r['shape']}")
            continue
        if graph.check_device and o.get("device") != device:
            failures.append(f"{where}: computed on {o.get('device')}, not {device}")
            continue
        a, b = flatten(r["data"], r["shape"]), flatten(o["data"], o["shape"])
        if len(a) != len(b) or len(a) != numel(r["shape"]):
            failures.append(f"{where}: {len(b)} values vs reference {len(a)}")
            continue
        bad = compare_values(a, b, o["dtype"], graph.tol.get(name, EXACT))
        if bad:
            shown = ", ".join(f"[{i}] ref {x!r} got {y!r}" for i, x, y in bad)
            failures.append(f"{where} ({o['dtype']}{o['shape']}): {shown}")
        else:
            passed += 1
    if len(got.get("outputs", [])) != len(ref_out):
        failures.append(f"{len(got.get('outputs', []))} outputs vs reference {len(ref_out)}")
    # A pinned graph may leave the device unused; a graph under test never does.
    if graph.check_device or device in got.get("memory", {}).get("after_teardown", {}):
        mem = check_memory(got, device)
        failures += [f"memory: {m}" for m in mem]
        if not mem:
            passed += 1
    return passed, failures


def example_graphs():
    """The shipped examples, whole programs, with soft placement (they may pin devices)."""
    out = []
    for path in sorted(glob.glob(os.path.join(EXAMPLES, "*.graph"))):
        g = Graph("example_" + os.path.basename(path)[:-6], check_device=False)
        with open(path) as f:
            g.source = f.read()
        g.tol = {}
        out.append(g)
    return out


class ExampleTol(dict):
    def get(self, _key, _default=None):
        return {"f32": (1e-4, 1e-5), "f64": (1e-10, 1e-12)}


def listed_gpus(devices_out):
    """The GPUs `graphrun devices` lists: (name, why it is not usable, or "")."""
    gpus = []
    for ln in devices_out.splitlines():
        if m := re.match(r"^(gpu:\d+): .*?(?:\(not usable: (.*)\))?$", ln):
            gpus.append((m.group(1), m.group(2) or ""))
    return gpus


def gpu_usable(binary):
    code, out, err = run_bin(binary, ["devices"], timeout=120)
    if code != 0:
        return None, f"`graphrun devices` exited {code}: {err.strip()}"
    gpus = listed_gpus(out)
    if gpus:
        # The GPU tests place on gpu:0 (--device=gpu, with device("gpu:0")):
        # a machine whose gpu:0 this build cannot use skips them with the
        # reason rather than failing every case on a fallback or an error.
        if gpus[0][1]:
            return None, (f"gpu:0 is not usable ({gpus[0][1]}); the GPU tests run on gpu:0: "
                          "name a usable GPU with CUDA_VISIBLE_DEVICES")
        return "gpu:0", ""
    m = re.search(r"^gpu: none usable: (.*)$", out, re.M)
    return None, m.group(1) if m else "no GPU listed by `graphrun devices`"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("graphrun")
    ap.add_argument("--cpu-only", action="store_true", help="run every graph on the CPU only (checks the scripts)")
    ap.add_argument("--keep", metavar="DIR", help="write the graphs to DIR and keep them")
    ap.add_argument("-k", metavar="SUBSTRING", default="", help="only graphs whose name contains SUBSTRING")
    ap.add_argument("-v", "--verbose", action="store_true")
    opts = ap.parse_args()
    binary = os.path.abspath(opts.graphrun)

    gpu = None
    if not opts.cpu_only:
        gpu, why = gpu_usable(binary)
        if gpu is None:
            print(f"SKIP: no usable GPU: {why}")
            return 0

    graphs = [g for g in all_graphs() if opts.k in g.name]
    errors = [g for g in error_graphs() if opts.k in g.name]
    examples = [g for g in example_graphs() if opts.k in g.name]
    for g in examples:
        g.tol = ExampleTol()

    workdir = opts.keep or tempfile.mkdtemp(prefix="gpu_ops_test.")
    os.makedirs(workdir, exist_ok=True)
    paths = {}
    for g in graphs + errors + examples:
        path = os.path.join(workdir, g.name + ".graph")
        with open(path, "w") as f:
            f.write(getattr(g, "source", None) or g.text())
        paths[g.name] = path

    passed, failed = 0, 0
    if not opts.k:  # every op with a GPU kernel is compared, by at least one graph
        missing = uncovered_ops(os.path.dirname(HERE), graphs + errors)
        if missing:
            failed += 1
            print(f"FAIL coverage: no graph here runs {', '.join(missing)} (engine/ir/ops.cpp gives them GPU kernels)")

    def report(g, n_ok, failures):
        nonlocal passed, failed
        passed += n_ok
        failed += len(failures)
        if failures:
            print(f"FAIL {g.name} ({paths[g.name]})")
            for msg in failures[:20]:
                print(f"     {msg}")
        elif opts.verbose:
            print(f"ok   {g.name} ({n_ok} checks)")

    # Ops and examples: reference on the CPU, then the GPU (or the CPU again, single-threaded).
    if opts.cpu_only:
        ref_args, test_args, dev = ["--device=cpu"], ["--device=cpu", "--threads=1"], "cpu"
    else:
        ref_args, test_args, dev = ["--device=cpu"], ["--device=gpu", "--no-soft-placement"], gpu
    # The *_large* graphs are sized for the GPU's grid-stride loops (past 65535
    # blocks); on the CPU they would add only time (most of this run's), so
    # --cpu-only checks that their scripts are valid and does not run them.
    large = [g for g in graphs if "_large" in g.name] if opts.cpu_only else []
    for g in large:
        code, _, err = run_bin(binary, ["check", paths[g.name], *ref_args, *g.args])
        report(g, 1 if code == 0 else 0, [] if code == 0 else [f"check exited {code}: {err.strip()[-500:]}"])
    groups = {}
    for g in graphs + examples:
        if g not in large:
            groups.setdefault(g.args, []).append(g)
    for args, gs in groups.items():
        soft = [g for g in gs if not g.check_device]
        strict = [g for g in gs if g.check_device]
        for subset, targs in ((strict, test_args),
                              (soft, [a for a in test_args if a != "--no-soft-placement"])):
            if not subset:
                continue
            files = [paths[g.name] for g in subset]
            ref = run_json(binary, files, [*ref_args, *args])
            got = run_json(binary, files, [*targs, *args])
            for g in subset:
                n_ok, failures = compare_docs(g, ref[paths[g.name]], got[paths[g.name]], dev)
                report(g, n_ok, failures)

    # Data errors: exit 1 and the message on stderr, on the CPU and on the device under test.
    for g in errors:
        failures = []
        for args in ([*ref_args], [*test_args]):
            code, _, err = run_bin(binary, ["run", paths[g.name], *args])
            if code != 1 or g.expect_error not in err:
                failures.append(f"{' '.join(args)}: exit {code}, expected 1 with '{g.expect_error}' on stderr: "
                                f"{err.strip()[-300:]}")
        report(g, 0 if failures else 1, failures)

    mode = "gpu ops (cpu-only)" if opts.cpu_only else "gpu ops"
    print(f"{mode}: {passed} passed, {failed} failed")
    if failed and not opts.keep:
        print(f"graphs kept in {workdir}")
    elif not opts.keep:
        for p in paths.values():
            os.remove(p)
        os.rmdir(workdir)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
