#!/usr/bin/env python3
"""NumPy-checked tests of the shape ops (README "Ops beyond SPEC section 3"):
slice, gather, expand, split, pad, tile, squeeze, unsqueeze, flatten, on every
dtype, through the real binary. Each graph is written as a .graph script and
as JSON; both must give the same bytes, equal to NumPy's result exactly
(these ops move elements and compute none): Python's slicing (whose clamping
is ONNX Slice's), numpy.take, broadcast_to, split, pad (then cropped for
negative pads), tile, squeeze, expand_dims, reshape. Bad inputs: exit 3 with
the place and the values; a gather index out of range: a run-time error.

Usage: ops_shape_test.py GRAPHRUN [--keep DIR] [-v]
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ops_check  # noqa: E402
from ops_numpy_test import NP, Graph, compare, np, run, to_array  # noqa: E402

ALL = ["f32", "f64", "i32", "i64", "bool"]
BIG = 2 ** 63 - 1


def slice_ref(x, starts, ends, axes=None, steps=None):
    idx = [slice(None)] * x.ndim
    axes = axes if axes is not None else list(range(len(starts)))
    steps = steps if steps is not None else [1] * len(starts)
    for s, e, a, st in zip(starts, ends, axes, steps):
        idx[a] = slice(s, e, st)
    return x[tuple(idx)]


SLICES = [([1], [3], None, None), ([0, 1], [BIG, -1], None, None), ([-2], [-BIG - 1], [2], [-1]),
          ([5, -100], [-100, 100], [0, 1], [-2, 3]), ([3], [1], [1], None), ([0], [10], [-1], [4]),
          ([-1, 0, 1], [-BIG - 1, 5, 5], [0, 1, 2], [-1, 2, 2]), ([2], [2], None, None),
          ([BIG], [-BIG - 1], [1], [-BIG - 1]), ([0], [BIG], [2], [BIG])]


def slice_graphs():
    for dtype in ALL:
        g = Graph(f"slice_{dtype}")
        x, vx = g.rand([4, 5, 6], dtype)
        for starts, ends, axes, steps in SLICES:
            attrs = {"starts": starts, "ends": ends}
            if axes is not None:
                attrs["axes"] = axes
            if steps is not None:
                attrs["steps"] = steps
            g.op(f"s{len(g.outputs)}", "slice", [x], attrs, slice_ref(vx, starts, ends, axes, steps), "exact")
        big, vbig = g.rand([64, 300], dtype)  # a parallel copy of rows
        g.op("rows", "slice", [big], {"starts": [3, 7], "ends": [60, 290]}, vbig[3:60, 7:290], "exact")
        g.op("cols", "slice", [big], {"starts": [0, 299], "ends": [64, 0], "steps": [1, -3]}, vbig[:, 299:0:-3],
             "exact")
        s, vs = g.rand([7], dtype)
        g.op("vec", "slice", [s], {"starts": -3, "ends": BIG}, vs[-3:], "exact")
        yield g


def gather_graphs():
    for dtype in ALL:
        g = Graph(f"gather_{dtype}")
        x, vx = g.rand([4, 5, 3], dtype)
        for itype in ("i32", "i64"):
            for axis in (0, 1, 2, -1, -3):
                n = vx.shape[axis]
                i, vi = g.const(np.array([0, n - 1, -1, -n, 1, 1]), itype)
                g.op(f"g{len(g.outputs)}", "gather", [x, i], {"axis": axis}, np.take(vx, vi, axis=axis),
                     "exact")
            i2, vi2 = g.const(np.array([[1, -2], [0, 3]]), itype)
            g.op(f"g{len(g.outputs)}", "gather", [x, i2], {"axis": 1}, np.take(vx, vi2, axis=1), "exact")
            i0, vi0 = g.const(np.array(2), itype)
            g.op(f"g{len(g.outputs)}", "gather", [x, i0], {}, np.take(vx, vi0, axis=0), "exact")
            ie, vie = g.const(np.zeros([0], dtype=np.int64), itype)
            g.op(f"g{len(g.outputs)}", "gather", [x, ie], {"axis": 2}, np.take(vx, vie.astype(np.int64), axis=2),
                 "exact")
        t, vt = g.rand([1000, 40], dtype)  # embedding-like: many rows
        ii, vii = g.const(g.rng.integers(-1000, 1000, size=[50, 30]), "i64")
        g.op("embed", "gather", [t, ii], {}, np.take(vt, vii, axis=0), "exact")
        yield g


EXPANDS = [([3, 1], [2, 3, 4]), ([], [2, 3]), ([2, 1, 3], [1, 4, 1]), ([4], [4]), ([1, 5], [3, 1]),
           ([1], [0]), ([2, 3], [1]), ([1, 1, 7], [64, 33, 1])]


def expand_graphs():
    for dtype in ALL:
        g = Graph(f"expand_{dtype}")
        for shape, target in EXPANDS:
            x, vx = g.rand(shape, dtype)
            ref = np.broadcast_to(vx, np.broadcast_shapes(vx.shape, tuple(target)))
            g.op(f"e{len(g.outputs)}", "expand", [x], {"shape": target}, ref, "exact")
        yield g


TILES = [([2, 3], [2, 3]), ([3], [4]), ([], []), ([2, 1, 3], [1, 5, 2]), ([2, 3], [0, 2]), ([1, 1], [3, 4]),
         ([40, 50], [3, 2])]


def tile_graphs():
    for dtype in ALL:
        g = Graph(f"tile_{dtype}")
        for shape, reps in TILES:
            x, vx = g.rand(shape, dtype)
            g.op(f"t{len(g.outputs)}", "tile", [x], {"repeats": reps}, np.tile(vx, reps) if reps else vx, "exact")
        yield g


def pad_ref(x, pads, mode, value, axes=None):
    r = x.ndim
    axes = list(range(r)) if axes is None else [a % r for a in axes]
    width = [[0, 0] for _ in range(r)]
    for j, a in enumerate(axes):
        width[a] = [pads[j], pads[j + len(axes)]]
    pos = [[max(b, 0), max(e, 0)] for b, e in width]
    kw = {"constant_values": value} if mode == "constant" else {}
    y = np.pad(x, pos, mode=mode, **kw) if x.ndim else x
    crop = tuple(slice(-min(b, 0), y.shape[k] + min(e, 0)) for k, (b, e) in enumerate(width))
    return y[crop]


PADS = [([1, 2, 0, 3], "constant", None, None), ([2, 0, 1, 1], "constant", 3, None),
        ([1, 2, 2, 1], "reflect", None, None), ([0, 5, 0, 7], "reflect", None, None),
        ([1, 2, 3, 4], "edge", None, None), ([-1, 1, 2, -2], "constant", 1, None),
        ([-1, 2, 1, -3], "reflect", None, None), ([2, 3], "edge", None, [-1]), ([1, 1], "reflect", None, [0])]


def pad_graphs():
    for dtype in ALL:
        g = Graph(f"pad_{dtype}")
        x, vx = g.rand([4, 5], dtype)
        for pads, mode, value, axes in PADS:
            attrs = {"pads": pads}
            if mode != "constant":
                attrs["mode"] = mode
            if value is not None:
                attrs["constant_value"] = bool(value) if dtype == "bool" else value
            if axes is not None:
                attrs["axes"] = axes
            v = value or 0
            ref = pad_ref(vx, pads, mode, NP[dtype](bool(v) if dtype == "bool" else v), axes)
            g.op(f"p{len(g.outputs)}", "pad", [x], attrs, ref, "exact")
        img, vimg = g.rand([2, 3, 30, 40], dtype)  # an image: rows of a 4-D tensor
        for mode in ("constant", "reflect", "edge"):
            pads = [0, 0, 2, 3, 0, 0, 1, 4]
            attrs = {"pads": pads} if mode == "constant" else {"pads": pads, "mode": mode}
            g.op(f"img_{mode}", "pad", [img], attrs, pad_ref(vimg, pads, mode, NP[dtype](0)), "exact")
        e, ve = g.rand([0, 3], dtype)
        g.op("empty", "pad", [e], {"pads": [1, 1, 0, 0]}, pad_ref(ve, [1, 1, 0, 0], "constant", NP[dtype](0)),
             "exact")
        yield g


def run_time_graphs():
    """slice and pad with their index vectors (and pad's constant) as i32/i64
    tensor inputs, the output's shape as the attribute shape (ONNX's form)."""
    for dtype in ALL:
        g = Graph(f"run_time_{dtype}")
        x, vx = g.rand([4, 5, 6], dtype)
        for k, (starts, ends, axes, steps) in enumerate(SLICES):
            itype = ("i32", "i64")[k % 2]
            big = np.iinfo(NP[itype])
            clip = [max(min(v, int(big.max)), int(big.min)) for v in starts + ends]  # i32: the ends of its range
            ins = [x, g.const(np.array(clip[:len(starts)]), itype)[0], g.const(np.array(clip[len(starts):]), itype)[0]]
            if axes is not None or steps is not None:
                ins.append(g.const(np.array(axes if axes is not None else list(range(len(starts)))), "i64")[0])
            if steps is not None:
                ins.append(g.const(np.array([max(min(v, int(big.max)), int(big.min)) for v in steps]), itype)[0])
            ref = slice_ref(vx, starts, ends, axes, steps)
            g.op(f"s{len(g.outputs)}", "slice", ins, {"shape": list(ref.shape)}, ref, "exact")
        for k, (pads, mode, value, axes) in enumerate(PADS):
            itype = ("i32", "i64")[k % 2]
            ins = [x if axes is not None else g.const(vx[0], dtype)[0], g.const(np.array(pads), itype)[0]]
            src = vx if axes is not None else vx[0]
            v = NP[dtype](bool(value) if dtype == "bool" else (value or 0))
            if value is not None or axes is not None:
                ins.append(g.const(np.array(v), dtype)[0])
            if axes is not None:
                ins.append(g.const(np.array(axes), itype)[0])
            attrs = {} if mode == "constant" else {"mode": mode}
            ref = pad_ref(src, pads, mode, v, axes)
            attrs["shape"] = list(ref.shape)
            g.op(f"p{len(g.outputs)}", "pad", ins, attrs, ref, "exact")
        yield g


def reshape_like_graphs():
    for dtype in ALL:
        g = Graph(f"views_{dtype}")
        x, vx = g.rand([1, 3, 1, 4], dtype)
        g.op("sq_all", "squeeze", [x], {}, np.squeeze(vx), "exact")
        g.op("sq_axes", "squeeze", [x], {"axes": [0, -2]}, np.squeeze(vx, axis=(0, 2)), "exact")
        g.op("sq_one", "squeeze", [x], {"axes": 2}, np.squeeze(vx, axis=2), "exact")
        g.op("unsq", "unsqueeze", [x], {"axes": [0, -1]}, np.expand_dims(vx, axis=(0, 5)), "exact")
        g.op("unsq_mid", "unsqueeze", [x], {"axes": [2, 4]}, np.expand_dims(vx, axis=(2, 4)), "exact")
        for axis in (0, 1, 2, 4, -1):
            a = axis + 4 if axis < 0 else axis
            ref = vx.reshape(int(np.prod(vx.shape[:a])), -1) if a else vx.reshape(1, -1)
            g.op(f"flat_{len(g.outputs)}", "flatten", [x], {"axis": axis}, ref, "exact")
        g.op("flat_default", "flatten", [x], {}, vx.reshape(1, -1), "exact")
        s, vs = g.rand([], dtype)
        g.op("unsq_scalar", "unsqueeze", [s], {"axes": 0}, vs.reshape(1), "exact")
        # a view of a slice's result, and of a transposed tensor
        y, vy = g.rand([3, 4, 5], dtype)
        sl = f"sl{len(g.nodes)}"
        g.nodes.append((sl, "slice", [y], {"starts": [1], "ends": [2]}))
        g.op("sq_of_slice", "squeeze", [sl], {"axes": 0}, vy[1], "exact")
        tr = f"tr{len(g.nodes)}"
        g.nodes.append((tr, "transpose", [y], {"perm": [2, 0, 1]}))
        g.op("flat_of_transpose", "flatten", [tr], {"axis": 2}, vy.transpose(2, 0, 1).reshape(15, 4), "exact")
        yield g


def split_graphs():
    for dtype in ALL:
        g = Graph(f"split_{dtype}")
        x, vx = g.rand([6, 5], dtype)
        for i, ref in enumerate(np.split(vx, [2, 5], axis=1)):
            g.op(f"sizes_{i}", "split", [x], {"axis": 1, "sizes": [2, 3, 0], "index": i}, ref, "exact")
        for i, ref in enumerate(np.split(vx, 3)):
            g.op(f"parts_{i}", "split", [x], {"parts": 3, "index": i}, ref, "exact")
        for i, ref in enumerate(np.split(vx, [1], axis=-1)):
            g.op(f"neg_{i}", "split", [x], {"axis": -1, "sizes": [1, 4], "index": i}, ref, "exact")
        yield g


# Bad inputs through the binary: exit 3 (invalid graph), each problem at its place.
ERROR_CASES = [
    ("x = [[1, 2], [3, 4]]\ny = slice(x, starts=[0], ends=[1], steps=[0])\noutput y\n",
     ["2:42: error: y: slice: steps [0]: a step of 0 is not allowed (x is f32[2,2])"]),
    ("x = [[1, 2], [3, 4]]\ny = slice(x, starts=[0, 1], ends=[1])\noutput y\n",
     ["2:34: error: y: slice: ends [1] has 1 entries, starts [0,1] has 2 (x is f32[2,2])"]),
    ("x = [[1, 2], [3, 4]]\ny = gather(x, [0.5])\nf = [1.0]\nz = gather(x, f)\noutput y, z\n",
     ["2:15: error: y: gather: the literal [0.5] cannot be gather's indices: ",
      "4:15: error: z: gather: f is f32[1], but gather's indices must be i32 or i64; use cast(f, dtype=i64)"]),
    ("x = [[1, 2], [3, 4]]\ny = gather(x, [0], axis=2)\noutput y\n",
     ["2:25: error: y: gather: axis 2 is out of range for rank 2 [2,2] (x is f32[2,2])"]),
    ("x = [1, 2, 3]\ny = expand(x, shape=[2, 4])\noutput y\n",
     ["2:21: error: y: expand: cannot expand [3] to [2,4]: dimension 3 vs 4"]),
    ("x = [1, 2, 3]\ny = pad(x, pads=[1, 1], mode=wrap)\nz = pad(x, pads=[1])\noutput y, z\n",
     ['2:30: error: y: pad: mode must be "constant", "reflect" or "edge", got "wrap"',
      "3:17: error: z: pad: pads [1] has 1 entries; 2 expected"]),
    ("x = cast([1, 2, 3], dtype=i32)\ny = pad(x, pads=[1, 1], constant_value=0.5)\noutput y\n",
     ["error: y: pad: constant_value=0.5 cannot be i32"]),
    ("x = [1, 2, 3]\ny = split(x, sizes=[1, 1], index=0)\nz = split(x, parts=2, index=0)\noutput y, z\n",
     ["2:20: error: y: split: sizes [1,1] add up to 2, but axis 0 of [3] has 3",
      "3:20: error: z: split: axis 0 of [3] (3) does not split into 2 equal parts"]),
    ("x = [[1, 2, 3]]\ny = squeeze(x, axes=[1])\nz = unsqueeze(x, axes=[0, 0])\nw = tile(x, repeats=[2])\n"
     "output y, z, w\n",
     ["2:21: error: y: squeeze: axes [1]: axis 1 of [1,3] has length 3, not 1",
      "3:23: error: z: unsqueeze: axes [0,0]: axis 0 appears twice",
      "4:21: error: w: tile: repeats [2] has 1 entries, but the input [1,3] has rank 2"]),
    ('{"graphrun": 1, "nodes": [{"name": "x", "op": "const", "attrs": {"value": [1, 2], "dtype": "i32"}},'
     ' {"name": "y", "op": "flatten", "inputs": ["x"], "attrs": {"axis": 3}}], "outputs": ["y"]}\n',
     ["error: y: flatten: axis 3 is out of range for rank 1 [2]"]),
]

ERROR_CASES += [
    ("x = [[1, 2], [3, 4]]\ns = cast([0], dtype=i64)\ny = slice(x, s, s)\nf = [1.0]\nz = slice(x, f, f, shape=[0, 2])\n"
     "w = slice(x, s, s, starts=[0], shape=[0, 2])\noutput y, z, w\n",
     ["3:5: error: y: slice: with its vectors as run-time inputs it needs shape=[...], the output's shape",
      "error: z: slice: f is f32[1], but the index vectors must be 1-D i32 or i64",
      "error: w: slice: starts is given both as an attribute and, with the run-time inputs, as an input"]),
    ("x = [[1, 2], [3, 4]]\np = cast([1, 1, 0, 0], dtype=i64)\ny = pad(x, p, [1, 2], shape=[4, 2])\n"
     "z = pad(x, p, shape=[4])\nv = pad(x, shape=[2, 2])\noutput y, z, v\n",
     ["error: y: pad: the literal [1, 2] is f32[2], but the constant must be one f32 value (x is f32[2,2])",
      "error: z: pad: shape [4] must have the input's rank 2 (x is f32[2,2])",
      "error: v: pad: shape is for the run-time form (pad(x, pads, ...)) only"]),
]

# Data errors at run time: (script, exit code, message).
RUN_ERRORS = [
    ("x = [[1, 2], [3, 4]]\ny = gather(x, [1, 2, 0])\noutput y\n", "index 2 (entry 1 of the indices) is out of "
     "range for an axis of length 2 (-2..1)"),
    ("x = [[1, 2], [3, 4]]\ni = cast([-3], dtype=i64)\ny = gather(x, i, axis=1)\noutput y\n",
     "index -3 (entry 0 of the indices) is out of range"),
    # the run-time forms: values that do not give the declared shape, or do not fit the input
    ("x = [[1, 2, 3], [4, 5, 6]]\ns = cast([0, 1], dtype=i32)\ne = cast([2, 3], dtype=i64)\n"
     "y = slice(x, s, e, shape=[2, 3])\noutput y\n",
     "4:5: error: node 'y' (slice) on cpu: slice with starts [0,1], ends [2,3] of the input [2,3] gives [2,2], "
     "but the graph expects its output to be [2,3]"),
    ("x = [[1, 2, 3], [4, 5, 6]]\np = cast([1, 0, 0, 0], dtype=i64)\na = cast([0, 0], dtype=i64)\n"
     "y = pad(x, p, 0.0, a, shape=[3, 3])\nz = pad(x, p, mode=edge, shape=[2, 3])\noutput y, z\n",
     "error: node 'y' (pad) on cpu: pad with pads [1,0,0,0], axes [0,0]: axes [0,0]: axis 0 appears twice "
     "(the input is [2,3])"),
    ("x = [[1, 2, 3], [4, 5, 6]]\np = cast([1, 0, 0, 0], dtype=i64)\nz = pad(x, p, mode=edge, shape=[2, 3])\n"
     "output z\n",
     "error: node 'z' (pad) on cpu: pad with pads [1,0,0,0] of the input [2,3] gives [3,3], but the graph "
     "expects its output to be [2,3]"),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("graphrun")
    ap.add_argument("--keep")
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    graphs = [g for gen in (slice_graphs, gather_graphs, expand_graphs, tile_graphs, pad_graphs, reshape_like_graphs,
                            split_graphs, run_time_graphs) for g in gen()]
    with tempfile.TemporaryDirectory() as tmp:
        d = args.keep or tmp
        os.makedirs(d, exist_ok=True)
        texts, jsons = ops_check.write_forms(graphs, d)
        docs_t, docs_j = run(args.graphrun, texts), run(args.graphrun, jsons)
        # bad graphs: exit 3 at their place; bad values found while running (a gather
        # index out of range, fed slice/pad vectors that give another shape): exit 1
        errors = ops_check.bad_inputs(args.graphrun, d, ERROR_CASES)
        errors += ops_check.bad_inputs(args.graphrun, d, RUN_ERRORS, want_exit=1, prefix="run_error")
    failures, checked = ops_check.check_outputs(graphs, docs_t, docs_j,
                                                ops_check.numpy_judge(compare, to_array, np.shape), args.v)
    failures += errors
    print(f"ops_shape_test: {len(graphs)} graphs x 2 forms, {checked} outputs, "
          f"{len(ERROR_CASES) + len(RUN_ERRORS)} bad inputs, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
