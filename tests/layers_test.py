#!/usr/bin/env python3
"""Tests scripts/check-layers.py: it passes on a tree that keeps the include
rules of engine/README.md and names each broken rule, with its place, in one
that does not. The real tree is checked by the `layers` test itself."""
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "check-layers.py")


def tree(files):
    root = tempfile.mkdtemp(prefix="layers-")
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
    return root


def run(root):
    p = subprocess.run([sys.executable, SCRIPT, root], capture_output=True, text=True)
    return p.returncode, p.stdout


def main():
    failures = []

    def expect(cond, what, out):
        if not cond:
            failures.append(f"{what}\n--- output:\n{out}")

    good = tree({
        "engine/base/a.h": '#include <vector>\n',
        "engine/ir/graph.h": '#include "engine/base/a.h"\n',
        "engine/kernels/cpu/k.cpp": '#include "engine/kernels/common/kernel.h"\n#include "engine/ir/graph.h"\n',
        "engine/runtime/session.cpp": '#include "engine/plan/plan.h"\n#include "engine/kernels/cpu/k.h"\n',
        "engine/api/run.h": '#include "engine/runtime/session.h"\n',
        "cli/run.cpp": '#include "engine/api/run.h"\n#include "engine/ir/graph.h"\n#include "cli/app.h"\n',
        "gpu/dev.cu": '#include <cuda_runtime.h>\n#include "engine/runtime/device.h"\n#include "engine/kernels/common/kernel.h"\n',
    })
    code, out = run(good)
    expect(code == 0 and "0 broken" in out, "a tree that keeps the rules passes", out)

    bad = tree({
        "engine/ir/graph.h": '#include "engine/runtime/session.h"\n',                  # upward
        "engine/kernels/common/k.h": '\n#include "engine/kernels/cpu/cpu_kernel.h"\n',  # upward, line 2
        "engine/runtime/x.cpp": '#include <cuda_runtime.h>\n',                        # CUDA in the engine
        "engine/plan/p.cpp": '#include "gpu/cuda_device.h"\n#include "cli/app.h"\n',   # gpu/ and cli/
        "engine/loose.h": '',                                                          # not in a layer
        "cli/check.cpp": '#include "engine/plan/plan.h"\n',                           # cli past api
        "gpu/k.cu": '#include "engine/runtime/session.h"\n#include "engine/kernels/cpu/cpu_kernel.h"\n',
    })
    code, out = run(bad)
    expect(code == 1, "a tree that breaks the rules fails", out)
    for needle in [
        'engine/ir/graph.h:1: engine/ir includes "engine/runtime/session.h"',
        'engine/kernels/common/k.h:2: engine/kernels/common includes "engine/kernels/cpu/cpu_kernel.h"',
        "engine/runtime/x.cpp:1: includes the CUDA header <cuda_runtime.h>",
        'engine/plan/p.cpp:1: includes "gpu/cuda_device.h"',
        'engine/plan/p.cpp:2: includes "cli/app.h"',
        "engine/loose.h: not in a layer folder",
        'cli/check.cpp:1: cli/ includes "engine/plan/plan.h"',
        'gpu/k.cu:1: gpu/ includes "engine/runtime/session.h"',
        'gpu/k.cu:2: gpu/ includes "engine/kernels/cpu/cpu_kernel.h"',
        "9 broken include rule(s)",
    ]:
        expect(needle in out, f"reports: {needle}", out)

    for f in failures:
        print("FAIL:", f)
    print(f"layers_test: {'FAILED' if failures else 'passed'} ({len(failures)} failure(s))")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
