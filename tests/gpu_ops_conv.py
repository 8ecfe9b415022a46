"""The cases of tests/gpu_ops_test.py for the conv area (conv, conv_transpose,
max_pool, avg_pool, global_avg_pool, global_max_pool), GPU against CPU: every
path of both devices' kernels (im2col + GEMM, the 1x1 direct GEMM, depthwise,
col2im, the pools and the global pools), f32 and f64, with scratch of one tile
and of several (8 MiB a tile, engine/kernels/cpu/conv.cpp, gpu/kernels/conv.cu)."""
from gpu_ops_test import EXACT, FLOAT, Graph

# Sums of up to a few hundred products of values in [-1, 1]: GEMMs of either
# device sum in their own order.
CONV = {"f32": (1e-4, 1e-4), "f64": (1e-10, 1e-11)}
POOL_AVG = {"f32": (1e-5, 1e-6), "f64": (1e-12, 1e-14)}

CONVS = [([2, 3, 9, 9], [4, 3, 3, 3], True, ""), ([1, 4, 8, 7], [6, 2, 3, 2], False, ", group=2, strides=[2, 1]"),
         ([2, 6, 7, 7], [6, 1, 3, 3], True, ", group=6, pads=[1, 1, 1, 1]"),
         ([1, 3, 7, 7], [6, 1, 3, 3], False, ", group=3, dilations=2, pads=[2, 1, 2, 1]"),
         ([2, 8, 6, 6], [5, 8, 1, 1], True, ""), ([1, 3, 8, 9], [2, 3, 4, 3], False, ', auto_pad="SAME_LOWER", strides=2'),
         ([2, 5, 12], [3, 5, 3], True, ", strides=2, pads=[1, 2]"), ([1, 32, 30, 30], [16, 32, 3, 3], True, ", pads=1"),
         # No input channels: the output is the bias (no GEMM, whose ldb would be 0).
         ([1, 0, 5, 5], [4, 0, 3, 3], True, ""), ([2, 0, 4], [3, 0, 1], False, ""),
         # im2col's columns for a plane past one tile of 8 MiB: 144 x 16384 elements, tiles of
         # 14563 (f32) or 7281 (f64) output pixels that end mid-row; two images, two groups.
         ([2, 32, 128, 128], [4, 16, 3, 3], True, ", group=2, pads=1")]
TRANSPOSES = [([1, 3, 4, 4], [3, 2, 3, 3], True, ", strides=2, pads=[1, 1, 1, 1], output_padding=[1, 1]"),
              ([2, 4, 3, 5], [4, 1, 2, 2], False, ", group=2, dilations=2"),
              ([1, 2, 3, 4], [2, 2, 3, 3], False, ", strides=[3, 2], output_shape=[10, 8]"),
              ([2, 3, 6], [3, 2, 3], True, ", strides=2"),
              # No input pixels, the output's extent given: the output is the bias.
              ([1, 2, 0, 3], [2, 3, 2, 2], True, ", output_shape=[4, 4]"),
              # The GPU's columns past one tile of 8 MiB: 24 output channels of 25 x 4096
              # elements each, tiles of 20 (f32) or 10 (f64) channels.
              ([1, 2, 64, 64], [2, 24, 5, 5], True, "")]
POOLS = [("max_pool", [2, 3, 9, 9], ", kernel_shape=[3, 3], strides=2, pads=1"),
         ("max_pool", [1, 2, 8, 8], ", kernel_shape=2, dilations=2, ceil_mode=true"),
         ("avg_pool", [2, 3, 9, 9], ", kernel_shape=[3, 3], strides=2, pads=1"),
         ("avg_pool", [2, 3, 9, 9], ", kernel_shape=[3, 3], strides=2, pads=1, count_include_pad=true, ceil_mode=true"),
         ("avg_pool", [2, 3, 11], ", kernel_shape=3, strides=2, pads=[1, 0]")]


def conv_area_graphs():
    for dtype in FLOAT:
        g = Graph(f"conv_{dtype}")
        for k, (xs, ws, bias, attrs) in enumerate(CONVS):
            b = f", {g.rand([ws[0]], dtype)}" if bias else ""
            g.op(f"conv_{k}", f"conv({g.rand(xs, dtype)}, {g.rand(ws, dtype)}{b}{attrs})", CONV)
        for k, (xs, ws, bias, attrs) in enumerate(TRANSPOSES):
            group = 2 if "group=2" in attrs else 1
            b = f", {g.rand([ws[1] * group], dtype)}" if bias else ""
            g.op(f"convt_{k}", f"conv_transpose({g.rand(xs, dtype)}, {g.rand(ws, dtype)}{b}{attrs})", CONV)
        yield g
        g = Graph(f"pool_{dtype}")
        for k, (op, xs, attrs) in enumerate(POOLS):
            g.op(f"{op}_{k}", f"{op}({g.rand(xs, dtype, -5, 5)}{attrs})", EXACT if op == "max_pool" else POOL_AVG)
        for shape in ([2, 3, 5, 4], [2, 3, 300], [1, 2, 3, 2, 2]):
            x = g.rand(shape, dtype, -5, 5)
            g.op(f"gmax_{len(shape)}", f"global_max_pool({x})", EXACT)
            g.op(f"gavg_{len(shape)}", f"global_avg_pool({x})", POOL_AVG)
        sp = g.const("[[[[1, nan, 3, 4], [5, 6, 7, 8]]]]", dtype)
        g.op("max_nan", f"max_pool({sp}, kernel_shape=2, strides=2)", EXACT)
        g.op("gmax_nan", f"global_max_pool({sp})", EXACT)
        yield g
