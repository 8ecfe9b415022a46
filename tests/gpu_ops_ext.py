"""The cases of tests/gpu_ops_test.py for the ops of README "Ops beyond SPEC
section 3": comparisons, logical ops, where, the unary ops floor ... gelu,
reduce_min/reduce_prod, argmax/argmin and log_softmax, GPU against CPU."""
import itertools

from gpu_ops_test import (ALL, STORAGE, BINARY_SHAPES, ELEMENTWISE, FLOAT, NUM, REDUCTION, ROTATED_SPECIAL_FLOATS, SOFTMAX,
                          SPECIAL_FLOATS, UNARY_SHAPES, Graph, shape_name, shape_text)

COMPARISONS = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]
LOGICAL = ["logical_and", "logical_or", "logical_xor"]
# The unary ops beyond SPEC section 3: (op, dtypes, input range, attributes).
ACTIVATIONS = [("floor", FLOAT, (-10, 10), ""), ("ceil", FLOAT, (-10, 10), ""), ("round", FLOAT, (-10, 10), ""),
               ("erf", FLOAT, (-4, 4), ""), ("reciprocal", FLOAT, (-10, 10), ""),
               ("softplus", FLOAT, (-30, 30), ""), ("sign", NUM, (-100, 100), ""),
               ("clip", NUM, (-100, 100), ", min=-20, max=30"), ("clip", NUM, (-100, 100), ", max=5"),
               ("leaky_relu", FLOAT, (-10, 10), ""), ("leaky_relu", FLOAT, (-10, 10), ", alpha=0.2"),
               ("elu", FLOAT, (-10, 10), ""), ("selu", FLOAT, (-10, 10), ""), ("gelu", FLOAT, (-10, 10), ""),
               ("gelu", FLOAT, (-10, 10), ', approximate="tanh"')]


def beyond_spec_graphs():
    for dtype in NUM:
        g = Graph(f"compare_{dtype}")
        lo, hi = (-5, 5)
        for op in COMPARISONS:
            for sa, sb in BINARY_SHAPES[:8]:
                g.op(f"{op}_{shape_name(sa)}_{shape_name(sb)}",
                     f"{op}({g.rand(sa, dtype, lo, hi)}, {g.rand(sb, dtype, lo, hi)})")
            g.op(f"{op}_literal", f"{op}({g.rand([9], dtype, lo, hi)}, 2)")
            if dtype in FLOAT:
                sp = g.const(SPECIAL_FLOATS, dtype)
                g.op(f"{op}_special", f"{op}({sp}, {g.const(ROTATED_SPECIAL_FLOATS, dtype)})")
        yield g
    g = Graph("logical_bool")
    for op in LOGICAL:
        for sa, sb in BINARY_SHAPES[:8]:
            g.op(f"{op}_{shape_name(sa)}_{shape_name(sb)}", f"{op}({g.rand(sa, 'bool')}, {g.rand(sb, 'bool')})")
    g.op("not", f"logical_not({g.rand([3, 5], 'bool')})")
    for op in ("equal", "not_equal"):
        g.op(f"{op}_bool", f"{op}({g.rand([3, 1], 'bool')}, {g.rand([4], 'bool')})")
    yield g
    for dtype in ALL:
        g = Graph(f"where_{dtype}")
        for sc, sx, sy in (([5], [5], [5]), ([3, 1], [1, 4], [4]), ([], [2, 3], [3]), ([2, 3, 4], [], []),
                           ([4, 1, 3], [2, 1], [1, 1, 1]), ([0, 3], [3], [1])):
            g.op(f"r_{shape_name(sc)}_{shape_name(sx)}_{shape_name(sy)}",
                 f"where({g.rand(sc, 'bool')}, {g.rand(sx, dtype, -100, 100)}, {g.rand(sy, dtype, -100, 100)})")
        yield g
    for k, (op, dtypes, (lo, hi), attrs) in enumerate(ACTIVATIONS):
        for dtype in dtypes:
            g = Graph(f"act{k}_{op}_{dtype}")
            for shape in UNARY_SHAPES:
                g.op(f"r_{shape_name(shape)}", f"{op}({g.rand(shape, dtype, lo, hi)}{attrs})", ELEMENTWISE)
            if dtype in FLOAT:
                g.op("r_special", f"{op}({g.const(SPECIAL_FLOATS, dtype)}{attrs})", ELEMENTWISE)
            yield g
    for op, dtypes in (("reduce_min", NUM), ("reduce_prod", NUM)):
        for dtype in dtypes:
            g = Graph(f"{op}_{dtype}")
            lo, hi = (-3, 3) if dtype not in FLOAT else (0.5, 1.5)
            x = g.rand([2, 3, 4], dtype, lo, hi)
            for axes in (None, [0], [2], [0, 2], [1, 2]):
                attr = "" if axes is None else f", axes={shape_text(axes)}"
                name = "r_" + ("all" if axes is None else "a" + "".join(map(str, axes)))
                g.op(name, f"{op}({x}{attr})", REDUCTION)
            g.op("r_rows", f"{op}({g.rand([300, 40], dtype, lo, hi)}, axes=[1])", REDUCTION)
            g.op("r_cols", f"{op}({g.rand([40, 300], dtype, lo, hi)}, axes=[0], keepdims=true)", REDUCTION)
            if op == "reduce_prod":
                g.op("r_empty", f"{op}({g.rand([0, 3], dtype, lo, hi)}, axes=[0])", REDUCTION)
            if dtype in FLOAT:
                g.op("r_special", f"{op}({g.const('[[1, nan, 3], [4, 5, 6], [-inf, 2, 3]]', dtype)}, axes=[1])",
                     REDUCTION)
            yield g
    for op, dtype in itertools.product(("argmax", "argmin"), NUM):
        g = Graph(f"{op}_{dtype}")
        x = g.rand([3, 4, 5], dtype, -3, 3)  # few values: ties
        for axis, keep, last in ((0, True, False), (1, False, False), (-1, True, True), (2, False, True)):
            g.op(f"r_a{axis}_{int(keep)}{int(last)}".replace("-", "m"),
                 f"{op}({x}, axis={axis}, keepdims={'true' if keep else 'false'}, "
                 f"select_last_index={'true' if last else 'false'})")
        if dtype in FLOAT:
            g.op("r_special", f"{op}({g.const('[[1, nan, 3, nan], [4, 5, 5, -inf]]', dtype)}, axis=1)")
        yield g
    yield from arg_long_graphs()
    for dtype in FLOAT:
        g = Graph(f"log_softmax_{dtype}")
        for shape, axis in (([5], 0), ([3, 4], 0), ([3, 4], -1), ([2, 3, 4], 1), ([10, 3000], -1), ([0, 4], -1)):
            g.op(f"r_{shape_name(shape)}_axis{axis}".replace("-", "m"),
                 f"log_softmax({g.rand(shape, dtype, -10, 10)}, axis={axis})", SOFTMAX)
        sp = g.const("[[1, nan, 3], [1000, 1001, 999], [-inf, 0, 1], [inf, 1, 2], [-inf, -inf, -inf]]", dtype)
        g.op("r_special_rows", f"log_softmax({sp}, axis=-1)", SOFTMAX)
        g.op("r_special_cols", f"log_softmax({sp}, axis=0)", SOFTMAX)
        yield g
    # the norm ops (tests/gpu_ops_norm.py)
    from gpu_ops_norm import norm_graphs
    yield from norm_graphs()
    from gpu_ops_conv import conv_area_graphs  # conv, conv_transpose and the pools
    yield from conv_area_graphs()


def spiked(g, n, dtype, spikes=None):
    """A vector of n values drawn from 0..3 (ties everywhere), with the values
    of spikes {position: literal} put in: random runs and one-element
    constants concatenated on the CPU."""
    def run(length):
        x = g.rand([length], dtype, 0, 4)  # integers truncate to 0..3
        return g._input(f"floor({x})") if dtype in FLOAT else x
    parts, at = [], 0
    for pos, value in sorted((spikes or {}).items()):
        if pos > at:
            parts.append(run(pos - at))
        parts.append(g.const(f"[{value}]", dtype))
        at = pos + 1
    if at < n:
        parts.append(run(n - at))
    return parts[0] if len(parts) == 1 else g._input(f"concat({', '.join(parts)}, axis=0)")


def arg_long_graphs():
    """argmax/argmin over long axes with few columns, which the GPU splits over
    blocks and threads (gpu/kernels/arg_reduce.cu), against the CPU's index:
    ties, NaNs and infinities at several places, select_last_index both ways.
    With the kernel's present constants 4081/4082 straddle the first chunk
    border of a 1000000-vector, and 300043/300299 are one thread's stride
    apart in a block."""
    hi, lo = 9, -9  # above and below the runs' 0..3
    for dtype in NUM:
        g = Graph(f"arg_long_{dtype}")
        n = 1000000

        def shaped(length, spikes, shape):
            return g._input(f"reshape({spiked(g, length, dtype, spikes)}, shape={shape_text(shape)})")

        cases = [
            ("dense", spiked(g, n, dtype), 0),
            ("spikes", spiked(g, n, dtype, {17: lo, 4081: hi, 4082: hi, 4083: lo, 300043: hi, 300044: hi,
                                            300299: hi, 777777: hi, 999999: lo}), 0),
            # logits along the last axis, each row with its own extremes
            ("logits", shaped(200000, {3: hi, 49999: hi, 60000: lo, 60256: lo, 100042: hi, 100043: lo,
                                       199999: hi}, [4, 50000]), -1),
            # axes before others (inner > 1): threads walk chunks of each column
            ("cols", shaped(300000, {30: hi, 299997: hi, 1501: lo, 210001: lo}, [100000, 3]), 0),
            ("mid", shaped(300000, {37: hi, 299999: lo}, [3, 20000, 5]), 1),
            # many short rows: one block per row, no chunks
            ("short", shaped(1500000, {}, [5000, 300]), 1),
            ("odd", shaped(2 * 8193, {8192: hi, 13193: lo}, [2, 8193]), -1),
        ]
        if dtype in FLOAT:
            cases += [
                ("nan", spiked(g, n, dtype, {100: "inf", 200: "-inf", 5000: "nan", 5001: "nan", 600000: "nan",
                                             600001: "inf", 999999: "-inf"}), 0),
                ("nan_late", spiked(g, 300000, dtype, {10: "inf", 20: "-inf", 30: "inf", 40: "-inf",
                                                       299998: "nan"}), 0),
                ("inf", spiked(g, n, dtype, {7: "inf", 9: "-inf", 12: "-0.0", 13: "0", 4082: "inf",
                                             500000: "-inf", 999998: "inf", 999999: "-inf"}), 0),
                ("logits_nan", shaped(200000, {5: "nan", 49000: "nan", 50007: "inf", 100003: "nan",
                                               100004: "inf"}, [4, 50000]), -1),
                ("cols_nan", shaped(300000, {61: "nan", 270001: "nan", 1202: "inf", 299999: "-inf"},
                                    [100000, 3]), 0),
                # -0.0 equals 0: all ties (a bitwise compare would pick the -0.0s)
                ("zeros", g._input(f"mul({spiked(g, 300000, dtype, {500: '-0.0', 200000: '-0.0'})}, 0)"), 0),
            ]
        for (name, x, axis), op, last in itertools.product(cases, ("argmax", "argmin"), (False, True)):
            keep = "true" if name in ("dense", "logits", "mid") else "false"
            g.op(f"{op}_{name}_{'last' if last else 'first'}",
                 f"{op}({x}, axis={axis}, keepdims={keep}, select_last_index={'true' if last else 'false'})")
        yield g


def shape_graphs():
    """The shape ops (slice gather expand split pad tile squeeze unsqueeze
    flatten) on every dtype, the storage dtypes too: exact copies, GPU against CPU."""
    for dtype in ALL + STORAGE:
        g = Graph(f"shape_{dtype}")
        x = g.rand([4, 5, 6], dtype, -100, 100)
        g.op("slice_fwd", f"slice({x}, starts=[1, 0], ends=[3, 9223372036854775807], axes=[0, 2], steps=[1, 2])")
        g.op("slice_back", f"slice({x}, starts=[-1], ends=[-9223372036854775808], axes=[1], steps=[-2])")
        g.op("slice_rows", f"slice({g.rand([300, 257], dtype, -100, 100)}, starts=[5, 1], ends=[290, 256])")
        g.op("slice_empty", f"slice({x}, starts=[3], ends=[1])")
        for itype in ("i32", "i64"):
            idx = g.const("[[0, -1], [3, 2]]", itype)
            g.op(f"gather0_{itype}", f"gather({x}, {idx})")
            g.op(f"gather2_{itype}", f"gather({x}, {idx}, axis=-1)")
        g.op("gather_big", f"gather({g.rand([1000, 64], dtype, -100, 100)}, {g.const('[999, 0, -1000, 17, 512]', 'i64')})")
        g.op("expand", f"expand({g.rand([3, 1], dtype, -100, 100)}, shape=[2, 3, 70])")
        g.op("expand_scalar", f"expand({g.rand([], dtype, -100, 100)}, shape=[5, 7])")
        g.op("tile", f"tile({g.rand([2, 1, 3], dtype, -100, 100)}, repeats=[3, 40, 2])")
        for mode in ("constant", "reflect", "edge"):
            g.op(f"pad_{mode}", f'pad({g.rand([2, 3, 17, 19], dtype, -100, 100)}, '
                                f'pads=[0, 0, 2, 5, 0, 1, 3, -1], mode="{mode}")')
        value = "true" if dtype == "bool" else "1"
        g.op("pad_value", f"pad({x}, pads=[1, 2], axes=[1], constant_value={value})")
        # slice and pad with their vectors as run-time inputs (read back to the host on the GPU)
        s, e, a, st = (g.const(v, "i32") for v in ("[1, -1]", "[3, -1000]", "[0, 2]", "[1, -2]"))
        g.op("slice_run_time", f"slice({x}, {s}, {e}, {a}, {st}, shape=[2, 5, 3])")
        pads = g.const("[0, 2, 1, 1, 0, -1]", "i64")
        g.op("pad_run_time", f'pad({x}, {pads}, mode="reflect", shape=[5, 7, 6])')
        if dtype != "bool":
            g.op("pad_run_time_value", f"pad({x}, {pads}, {g.const('3', dtype)}, shape=[5, 7, 6])")
        g.op("split", f"split({x}, axis=2, sizes=[1, 2, 3], index=2)")
        g.op("split_parts", f"split({x}, parts=2, index=1)")
        g.op("squeeze", f"squeeze({g.rand([1, 3, 1], dtype, -100, 100)})")
        g.op("unsqueeze", f"unsqueeze({x}, axes=[0, -1])")
        g.op("flatten", f"flatten({x}, axis=2)")
        yield g


_beyond_spec = beyond_spec_graphs


def beyond_spec_graphs():  # noqa: F811 (the shape ops join the generator gpu_ops_test imports)
    yield from _beyond_spec()
    yield from shape_graphs()
