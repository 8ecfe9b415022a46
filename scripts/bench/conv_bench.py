#!/usr/bin/python3
"""graphrun's CPU conv against PyTorch's (when importable) on ResNet- and
MobileNet-shaped layers, batch 1 and 16, in the same run.

Usage: conv_bench.py GRAPHRUN [--threads N] [--iterations K] [--quick]

graphrun's figure is the conv op's time from --profile over K iterations of
one session (the first iteration included), divided by K; PyTorch's the median
of K calls of torch.nn.functional.conv2d under torch.no_grad() after one
untimed call, with torch.set_num_threads(N). GFLOP/s counts 2 flops per
multiply-add. Not a timed test: figures depend on the machine and its load.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

# name, input [C, H, W], weight [M, C/group, kh, kw], stride, pad, group
LAYERS = [("resnet 3x3 64->64 @56", [64, 56, 56], [64, 64, 3, 3], 1, 1, 1),
          ("resnet stem 7x7/2 3->64 @224", [3, 224, 224], [64, 3, 7, 7], 2, 3, 1),
          ("resnet 1x1 256->64 @56", [256, 56, 56], [64, 256, 1, 1], 1, 0, 1),
          ("resnet 3x3/2 128->256 @28", [128, 28, 28], [256, 128, 3, 3], 2, 1, 1),
          ("mobilenet dw 3x3 32 @112", [32, 112, 112], [32, 1, 3, 3], 1, 1, 32)]


def out_size(n, k, s, p):
    return (n + 2 * p - k) // s + 1


def flops(batch, x, w, s, p):
    oh, ow = out_size(x[1], w[2], s, p), out_size(x[2], w[3], s, p)
    return 2 * batch * w[0] * w[1] * w[2] * w[3] * oh * ow


def graphrun_ms(binary, batch, x, w, s, p, g, threads, iterations, d):
    path = os.path.join(d, "conv.graph")
    with open(path, "w") as f:
        f.write(f"x = random_uniform({[batch] + x})\nw = random_uniform({w})\nb = random_uniform([{w[0]}])\n"
                f"y = conv(x, w, b, strides={s}, pads={p}, group={g})\ns = reduce_sum(y)\noutput s\n")
    r = subprocess.run([binary, "run", "--profile", f"--threads={threads}", f"--iterations={iterations}", path],
                       capture_output=True, text=True, timeout=600)
    for line in r.stdout.splitlines() + r.stderr.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "conv":
            return float(parts[2]) / int(parts[1])
    raise SystemExit(f"conv_bench: no conv profile line (exit {r.returncode}): {r.stderr[-500:]}")


def torch_ms(batch, x, w, s, p, g, threads, iterations):
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(threads)
    xt, wt, bt = torch.rand([batch] + x), torch.rand(w), torch.rand(w[0])
    times = []
    with torch.no_grad():
        torch.nn.functional.conv2d(xt, wt, bt, s, p, 1, g)
        for _ in range(iterations):
            t0 = time.perf_counter()
            torch.nn.functional.conv2d(xt, wt, bt, s, p, 1, g)
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("graphrun")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="batch 1 only")
    args = ap.parse_args()
    print(f"threads {args.threads}, {args.iterations} iterations")
    print(f"{'layer':32} {'batch':>5} {'graphrun ms':>12} {'GFLOP/s':>8} {'torch ms':>9} {'GFLOP/s':>8} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as d:
        for name, x, w, s, p, g in LAYERS:
            for batch in (1,) if args.quick else (1, 16):
                f = flops(batch, x, w, s, p)
                ms = graphrun_ms(args.graphrun, batch, x, w, s, p, g, args.threads, args.iterations, d)
                tm = torch_ms(batch, x, w, s, p, g, args.threads, args.iterations)
                torch_cols = f"{tm:9.2f} {f / tm / 1e6:8.1f} {tm / ms:6.2f}" if tm else f"{'-':>9} {'-':>8} {'-':>6}"
                print(f"{name:32} {batch:5} {ms:12.2f} {f / ms / 1e6:8.1f} {torch_cols}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
