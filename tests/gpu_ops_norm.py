"""The cases of tests/gpu_ops_test.py for the norm ops (README "Ops beyond
SPEC section 3"): layer_norm, batch_norm and gemm, GPU against CPU. Both
devices compute layer_norm and batch_norm in double (an f32 result rounded
once), in another order of summation: the bound is a rounding of the result
plus what the cancellation of x - mean and of the bias leaves. gemm is BLAS
against cuBLAS: matmul's bound."""
from gpu_ops_test import FLOAT, Graph, matmul_tol, shape_name

NORM = {"f32": (2e-6, 2e-6), "f64": (1e-12, 1e-12)}


def norm_graphs():
    for dtype in FLOAT:
        g = Graph(f"layer_norm_{dtype}")
        for shape, axis, ss, bs in (([5], -1, None, None), ([3, 4], 0, None, None), ([2, 3, 4], 1, None, False),
                                    ([2, 3, 4], -2, [4], [3, 1]), ([2, 3, 4], -1, [], [1]),
                                    ([64, 768], -1, None, None), ([1000, 7], -1, None, None),
                                    ([4, 3000], -1, None, False), ([0, 4], -1, None, None),
                                    ([70000, 2], -1, None, None)):
            row = shape[axis % len(shape):]
            args = [g.rand(shape, dtype, -5, 5), g.rand(row if ss is None else ss, dtype, -2, 2)]
            if bs is not False:
                args.append(g.rand(row if bs is None else bs, dtype, -2, 2))
            g.op(f"r_{shape_name(shape)}_a{axis}".replace("-", "m"),
                 f"layer_norm({', '.join(args)}, axis={axis})", NORM)
        c = g.const("[[3, 3, 3, 3], [1, nan, 2, 3], [inf, 1, 2, 3], [-1000000, -1000000, -1000000, -1000000]]",
                    dtype)
        g.op("r_special", f"layer_norm({c}, {g.rand([4], dtype, 0.5, 2)}, {g.rand([4], dtype)}, epsilon=0.001)",
             NORM)
        yield g
        g = Graph(f"batch_norm_{dtype}")
        for shape in ([2, 3, 4, 5], [1, 3], [5], [2, 3, 0, 4], [8, 16, 7, 7], [2, 70, 33]):
            ch = shape[1] if len(shape) >= 2 else 1
            params = [g.rand([ch], dtype, lo, hi) for lo, hi in ((-2, 2), (-1, 1), (-1, 1), (0.1, 3))]
            g.op(f"r_{shape_name(shape)}",
                 f"batch_norm({g.rand(shape, dtype, -5, 5)}, {', '.join(params)}, epsilon=0.01)", NORM)
        yield g
        g = Graph(f"gemm_{dtype}")
        for m, k, n in ((2, 3, 4), (1, 1, 1), (17, 33, 9), (3, 0, 4), (0, 3, 4), (64, 128, 96)):
            for ta, tb in ((False, False), (True, False), (False, True), (True, True)):
                a = g.rand([k, m] if ta else [m, k], dtype)
                b = g.rand([n, k] if tb else [k, n], dtype)
                flags = (", transpose_a=true" if ta else "") + (", transpose_b=true" if tb else "")
                for j, (cshape, ab) in enumerate(((None, ""), ([n], ", alpha=0.5, beta=2"), ([m, 1], ", beta=-1"),
                                                  ([m, n], ""), ([], ", alpha=2"))):
                    c = "" if cshape is None else f", {g.rand(cshape, dtype)}"
                    g.op(f"r_{m}_{k}_{n}_t{int(ta)}{int(tb)}_c{j}",
                         f"gemm({a}, {b}{c}{flags}{ab})", {dtype: matmul_tol(dtype, k)})
        g.op("r_beta0", f"gemm({g.rand([4, 6], dtype)}, {g.rand([6, 5], dtype)}, "
                        f"{g.const('[nan, nan, nan, nan, nan]', dtype)}, beta=0)", {dtype: matmul_tol(dtype, 6)})
        yield g
