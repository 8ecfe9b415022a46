#!/usr/bin/env python3
"""The ONNX mappings of the shape ops through the real binary: Slice, Gather,
Expand, Split, Pad, Tile, Squeeze, Unsqueeze, Flatten in models built here
with ONNX's helper API (their index vectors as initializers, as exporters
write them, and Slice's and Pad's also as graph inputs fed at run time;
data fed at run time so that nothing is folded), at the opsets
where their forms differ, compared with NumPy exactly.

Usage: onnx_shape_test.py GRAPHRUN
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    print(f"SKIP: the ONNX tests need numpy and python3-onnx ({e})")
    sys.exit(0)
import onnx_test as t  # noqa: E402  (its helpers: save_model, run_with, graphrun)

rng = np.random.default_rng(18)
X = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)


def ints(name, v):
    return numpy_helper.from_array(np.asarray(v, dtype=np.int64), name)


def model(name, nodes, inits, want, opset=13, extra_inputs=(), x=X):
    """A model of x (and extra_inputs) whose outputs are want's names, declared with their shapes."""
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape)), *extra_inputs]
    outputs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, list(r.shape)) for o, r in want.items()]
    return t.save_model(name, nodes, inputs, outputs, inits=inits, opset=opset)


def expect(name, path, feeds, want):
    p, got = t.run_with(path, feeds)
    t.check(p.returncode == 0, f"{name}: exit {p.returncode}: {p.stderr[-500:]}")
    for out, ref in want.items():
        g = got.get(out)
        t.check(g is not None and g.shape == ref.shape and np.array_equal(g, ref),
                f"{name}/{out}: got {None if g is None else g.shape}, want {ref.shape}")


def slices():
    big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    nodes = [helper.make_node("Slice", ["x", "s1", "e1", "a1", "st1"], ["y1"]),
             helper.make_node("Slice", ["x", "s2", "e2"], ["y2"]),
             helper.make_node("Slice", ["x", "s3", "e3", "a3", "st3"], ["y3"])]
    inits = [ints("s1", [-1, 1]), ints("e1", [small, big]), ints("a1", [3, -3]), ints("st1", [-2, 1]),
             ints("s2", [1]), ints("e2", [2]), ints("s3", [0, 10]), ints("e3", [4, -10]), ints("a3", [2, 3]),
             ints("st3", [3, -1])]
    want = {"y1": X[:, 1:, :, -1::-2], "y2": X[1:2], "y3": X[:, :, 0:4:3, 10:-10:-1]}
    expect("slice", model("slice13", nodes, inits, want), {"x": X}, want)
    want = {"y": X[:, 1:, -3:-1]}
    path = model("slice9", [helper.make_node("Slice", ["x"], ["y"], starts=[1, -3], ends=[100, -1], axes=[1, 2])], [],
                 want, opset=9)
    expect("slice opset 9", path, {"x": X}, want)


def gathers():
    idx = helper.make_tensor_value_info("i", TensorProto.INT32, [2, 2])
    nodes = [helper.make_node("Gather", ["x", "i"], ["y"], axis=2),
             helper.make_node("Gather", ["x", "k"], ["z"], axis=-1)]
    i = np.array([[0, -1], [3, -4]], dtype=np.int32)
    want = {"y": np.take(X, i, axis=2), "z": np.take(X, 3, axis=-1)}
    expect("gather", model("gather", nodes, [ints("k", 3)], want, extra_inputs=[idx]), {"x": X, "i": i}, want)


def expand_tile_pad():
    nodes = [helper.make_node("Slice", ["x", "z0", "o1", "z0"], ["x1"]),
             helper.make_node("Expand", ["x1", "shape"], ["e"]),
             helper.make_node("Tile", ["x", "reps"], ["tl"]),
             helper.make_node("Pad", ["x", "pads"], ["pc"]),
             helper.make_node("Pad", ["x", "pads", "cv"], ["pv"]),
             helper.make_node("Pad", ["x", "pads"], ["pr"], mode="reflect"),
             helper.make_node("Pad", ["x", "pads"], ["pe"], mode="edge")]
    pads = [0, 0, 1, 2, 0, 1, 3, -1]
    inits = [ints("z0", [0]), ints("o1", [1]), ints("shape", [3, 1, 4, 1]), ints("reps", [1, 2, 1, 3]),
             ints("pads", pads), numpy_helper.from_array(np.array(2.5, dtype=np.float32), "cv")]
    width = [(0, 0), (0, 1), (1, 3), (2, 0)]

    def pad(mode, **kw):
        y = np.pad(X, width, mode=mode, **kw)
        return y[:, :, :, :-1]  # the end pad of -1 on the last axis crops
    want = {"e": np.broadcast_to(X[0:1], (3, 3, 4, 5)), "tl": np.tile(X, (1, 2, 1, 3)), "pc": pad("constant"),
            "pv": pad("constant", constant_values=2.5), "pr": pad("reflect"), "pe": pad("edge")}
    expect("expand/tile/pad", model("expand_tile_pad", nodes, inits, want), {"x": X}, want)


def splits_and_views():
    for opset in (11, 13):
        nodes = [helper.make_node("Split", ["x"], ["a", "b", "c"], axis=3),
                 helper.make_node("Unsqueeze", ["a", "ax"] if opset >= 13 else ["a"], ["u"],
                                  **({} if opset >= 13 else {"axes": [0, -1]})),
                 helper.make_node("Squeeze", ["u", "ax"] if opset >= 13 else ["u"], ["s"],
                                  **({} if opset >= 13 else {"axes": [0, -1]})),
                 helper.make_node("Flatten", ["b"], ["f"], axis=2)]
        if opset >= 13:
            nodes.append(helper.make_node("Split", ["x", "sizes"], ["p", "q"], axis=1))
        else:
            nodes.append(helper.make_node("Split", ["x"], ["p", "q"], axis=1, split=[1, 2]))
        inits = [ints("ax", [0, -1]), ints("sizes", [1, 2])]
        x = np.concatenate([X, X[..., :1]], axis=3)  # 6 on the last axis: three equal parts
        a, b, c = np.split(x, 3, axis=3)
        want = {"s": a, "f": b.reshape(6, 8), "c": c, "p": x[:, :1], "q": x[:, 1:]}
        expect(f"split/views opset {opset}", model(f"split{opset}", nodes, inits, want, opset=opset, x=x), {"x": x},
               want)


def run_time_vectors():
    """Slice's starts/ends/axes/steps and Pad's pads/constant_value/axes as
    graph inputs fed at run time (ONNX's backend node tests do this): the
    output's declared shape is what graphrun checks the fed values against."""
    vec = lambda name, dt=TensorProto.INT64, n=2: helper.make_tensor_value_info(name, dt, [n])  # noqa: E731
    feeds = {"x": X, "s": np.array([-1, 1], np.int64), "e": np.array([np.iinfo(np.int64).min, 100], np.int64),
             "a": np.array([3, -3], np.int64), "st": np.array([-2, 1], np.int64),
             "s32": np.array([1, 0], np.int32), "e32": np.array([3, -1], np.int32), "st32": np.array([-2, 1], np.int32),
             "p": np.array([0, 1, 0, 2, 0, 0, 0, 1], np.int64),
             "cv": np.array(-7.5, np.float32)}
    nodes = [helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y1"]),
             helper.make_node("Slice", ["x", "s32", "e32"], ["y2"]),
             # axes left out, steps given (of the one index type ONNX requires: int32 as starts/ends)
             helper.make_node("Slice", ["x", "s32", "e32", "", "st32"], ["y3"]),
             helper.make_node("Pad", ["x", "p", "cv"], ["pc"]),  # (Pad's axes input is opset 18's)
             helper.make_node("Pad", ["x", "p"], ["pz"]),
             helper.make_node("Pad", ["x", "p", "cv"], ["pr"], mode="reflect"),
             helper.make_node("Pad", ["x", "p8"], ["pe"], mode="edge")]
    feeds["p8"] = np.array([0, 1, 0, 2, 1, 0, 1, 0], np.int64)
    width = [(0, 0), (1, 0), (0, 0), (2, 1)]  # p
    want = {"y1": X[:, 1:, :, -1::-2], "y2": X[1:3, 0:-1], "y3": X[1:3:-2, 0:-1:1],
            "pc": np.pad(X, width, constant_values=-7.5), "pz": np.pad(X, width), "pr": np.pad(X, width, "reflect"),
            "pe": np.pad(X, [(0, 1), (1, 0), (0, 1), (2, 0)], "edge")}
    inputs = [vec("s"), vec("e"), vec("a"), vec("st"), vec("s32", TensorProto.INT32),
              vec("e32", TensorProto.INT32), vec("st32", TensorProto.INT32), vec("p", n=8),
              helper.make_tensor_value_info("cv", TensorProto.FLOAT, []), vec("p8", n=8)]
    path = model("run_time_vectors", nodes, [], want, extra_inputs=inputs)
    expect("slice/pad with run-time vectors", path, feeds, want)
    # values that give another shape than the declared one: a run-time error naming them
    bad = dict(feeds, s=np.array([0, 1], np.int64))
    p, _ = t.run_with(path, bad)
    t.check(p.returncode == 1 and "slice with starts [0,1], ends [-9223372036854775808,100], axes [3,-3], steps [-2,1] "
            "of the input [2,3,4,5] gives [2,2,4,1], but the graph expects its output to be [2,2,4,3]" in p.stderr,
            f"slice with run-time vectors of another shape: exit {p.returncode}: {p.stderr[-400:]}")
    bad = dict(feeds, p8=np.array([0, 1, 0, 2, 1, 0, 1, 1], np.int64))
    p, _ = t.run_with(path, bad)
    t.check(p.returncode == 1 and "pad with pads [0,1,0,2,1,0,1,1] of the input [2,3,4,5] gives [3,4,5,8], but the "
            "graph expects its output to be [3,4,5,7]" in p.stderr,
            f"pad with run-time pads of another shape: exit {p.returncode}: {p.stderr[-400:]}")


def main():
    slices()
    run_time_vectors()
    gathers()
    expand_tile_pad()
    splits_and_views()
    if t.failures:
        print(f"onnx shape ops: {len(t.failures)} failed")
        return 1
    print("onnx shape ops: all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
