#!/usr/bin/python3
"""Which torchvision architectures graphrun runs (issue 27's "done" check):
each model with random weights (fixed seed) is exported by torch.onnx.export
at opset 17 with a dynamic batch, run by graphrun at batch 1 on the CPU, and
compared with torch's own output. Prints one line per model: ok with the
largest relative error, or the first line of graphrun's refusal.

Usage: torchvision_check.py GRAPHRUN [--models resnet18,vit_b_16] [--size 224] [--keep DIR]
Needs Debian's python3-torch and python3-torchvision (a benchmark-side tool,
like scripts/bench: never a dependency of graphrun or its tests).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torchvision

CLASSIFICATION = ["alexnet", "convnext_tiny", "densenet121", "efficientnet_b0", "efficientnet_v2_s", "googlenet",
                  "inception_v3", "mnasnet0_5", "mobilenet_v2", "mobilenet_v3_small", "regnet_x_400mf",
                  "regnet_y_400mf", "resnet18", "resnet50", "resnext50_32x4d", "shufflenet_v2_x0_5",
                  "squeezenet1_1", "swin_t", "vgg11", "vit_b_16", "wide_resnet50_2", "maxvit_t"]
SEGMENTATION = ["fcn_resnet50", "deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large"]


def build(name):
    torch.manual_seed(0)
    if name in SEGMENTATION:
        m = getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None, aux_loss=None)
    else:
        kw = {"aux_logits": False, "init_weights": True} if name in ("googlenet", "inception_v3") else {}
        m = getattr(torchvision.models, name)(weights=None, **kw)
    # A layer torchvision starts at zero (ViT's head) would make the output a
    # constant and the comparison empty: such weights get small random values.
    with torch.no_grad():
        for p in m.parameters():
            if p.dim() >= 2 and not p.any():
                p.normal_(0, 0.02)
    return m.eval()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("graphrun")
    ap.add_argument("--models")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--keep")
    ap.add_argument("--timeout", type=int, default=300)
    a = ap.parse_args()
    names = a.models.split(",") if a.models else CLASSIFICATION + SEGMENTATION
    work = a.keep or tempfile.mkdtemp(prefix="graphrun-tv-")
    os.makedirs(work, exist_ok=True)
    results = []
    for name in names:
        t0 = time.time()
        size = 299 if name == "inception_v3" else a.size
        try:
            m = build(name)
        except (AttributeError, TypeError, ValueError) as e:
            print(f"{name:32} skip: torchvision {torchvision.__version__} cannot build it ({e})", flush=True)
            continue
        x = torch.randn(1, 3, size, size)
        path = os.path.join(work, name + ".onnx")
        try:
            with torch.no_grad():
                y = m(x)
                if isinstance(y, dict):
                    y = y["out"]
            # Outside no_grad: torch 1.13's attention fast path (no ONNX export) is off with grad on.
            torch.onnx.export(m, (x,), path, input_names=["x"], opset_version=17, dynamic_axes={"x": {0: "batch"}})
        except Exception as e:  # noqa: BLE001 (torch's exporter raises many kinds)
            print(f"{name:32} skip: torch cannot export it ({str(e).splitlines()[0][:120]})", flush=True)
            continue
        xin = os.path.join(work, name + ".x.npy")
        np.save(xin, x.numpy())
        out = os.path.join(work, name + ".out")
        try:
            p = subprocess.run([a.graphrun, "run", path, f"--input=x=@{xin}", f"--save={out}", "--no-data"],
                               capture_output=True, text=True, timeout=a.timeout)
        except subprocess.TimeoutExpired:
            print(f"{name:32} FAIL: no result within {a.timeout} s", flush=True)
            results.append((name, False))
            continue
        if p.returncode != 0:
            err = [line for line in p.stderr.splitlines() if "error" in line]
            print(f"{name:32} FAIL (exit {p.returncode}): {(err or p.stderr.splitlines() or [''])[0][:300]}", flush=True)
            results.append((name, False))
            continue
        files = sorted(os.listdir(out))
        got = np.load(os.path.join(out, files[0])).astype(np.float64)
        want = y.numpy().astype(np.float64)
        rel = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30) if got.shape == want.shape else float("inf")
        ok = got.shape == want.shape and rel <= 1e-4
        print(f"{name:32} {'ok  ' if ok else 'DIFF'} max error {rel:.1e} of the largest |value|, "
              f"{time.time() - t0:.0f} s", flush=True)
        results.append((name, ok))
    passed = sum(ok for _, ok in results)
    print(f"{passed} of {len(results)} exported models run and match torch")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
