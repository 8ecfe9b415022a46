#!/usr/bin/env python3
"""Checks that every C++ and CUDA compile command of the project's own sources
(engine/, cli/, gpu/, tests/unit/) builds host code with -ffp-contract=off, so
that no a*b + c is fused where the target has an fma (see CMakeLists.txt).
Usage: fp_contract_test.py BUILD_DIR/compile_commands.json SOURCE_DIR"""
import json
import os
import sys


def main():
    commands, source = sys.argv[1], os.path.realpath(sys.argv[2])
    with open(commands) as f:
        entries = json.load(f)
    checked, bad = 0, []
    for e in entries:
        path = os.path.realpath(os.path.join(e.get("directory", ""), e["file"]))
        rel = os.path.relpath(path, source)
        if not rel.startswith(("engine/", "cli/", "gpu/", "tests/unit/")):
            continue
        if not rel.endswith((".cpp", ".cu")):
            continue
        cmd = e.get("command") or " ".join(e.get("arguments", []))
        checked += 1
        if "-ffp-contract=off" not in cmd:
            bad.append(rel)
    need = ("engine/kernels/cpu/create.cpp", "engine/kernels/common/kernel_common.cpp")
    seen = {os.path.relpath(os.path.realpath(os.path.join(e.get("directory", ""), e["file"])), source)
            for e in entries}
    missing = [p for p in need if p not in seen]
    if missing:
        print("FAIL: no compile command for " + ", ".join(missing))
        return 1
    if bad:
        print("FAIL: built without -ffp-contract=off: " + ", ".join(sorted(bad)))
        return 1
    print(f"ok: {checked} compile commands use -ffp-contract=off")
    return 0


if __name__ == "__main__":
    sys.exit(main())
