#!/usr/bin/env python3
"""The include rules of engine/README.md, enforced: each layer of the engine
includes only itself and the layers below it; cli/ only engine/api and the IR;
gpu/ only the runtime's interfaces, kernels/common, the IR (and base, below
it); nothing in engine/ includes CUDA, gpu/ or cli/.

    scripts/check-layers.py [ROOT]     exit 0 when every include keeps the rules,
                                       1 with one line per broken include
"""
import os
import re
import sys

# Lowest first. A file in layer i may include a header of layer j <= i.
ENGINE_LAYERS = ["base", "ir", "frontend", "check", "plan", "kernels/common", "kernels/cpu", "runtime", "api"]
# What cli/ and gpu/ may include from the engine (a folder, or one header).
CLI_ALLOWED = ["engine/api/", "engine/ir/"]
GPU_ALLOWED = ["engine/runtime/device.h", "engine/runtime/allocator.h", "engine/kernels/common/",
               "engine/ir/", "engine/base/"]
# Headers of CUDA and its libraries: never in engine/ or cli/.
CUDA_HEADER = re.compile(r"^(cuda|cublas|cublasLt|cufft|curand|cusparse|cudnn|nvml|nvrtc|cooperative_groups)"
                         r"[\w/]*\.h|^(cuda|thrust|cub)/")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCE_EXT = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")


def engine_layer(path):
    """The layer of an engine path ("engine/kernels/cpu/x.h" -> "kernels/cpu"), or None."""
    if not path.startswith("engine/"):
        return None
    rest = path[len("engine/"):]
    for layer in sorted(ENGINE_LAYERS, key=len, reverse=True):
        if rest.startswith(layer + "/"):
            return layer
    return "?"  # a file straight in engine/ or in an unknown folder


def check_file(path, text):
    """Yields one message per include that breaks a rule."""
    own = engine_layer(path)
    top = path.split("/", 1)[0]
    if own == "?":
        yield f"{path}: not in a layer folder ({', '.join('engine/' + l for l in ENGINE_LAYERS)})"
        return
    for lineno, line in enumerate(text.splitlines(), 1):
        m = INCLUDE.match(line)
        if not m:
            continue
        kind, inc = m.groups()
        where = f"{path}:{lineno}"
        if kind == "<":
            if top in ("engine", "cli") and CUDA_HEADER.search(inc):
                yield f"{where}: includes the CUDA header <{inc}>; only gpu/ may"
            continue
        if top in ("engine", "cli") and inc.startswith("gpu/"):
            yield f"{where}: includes \"{inc}\"; only gpu/ may include gpu/"
        elif top == "engine" and inc.startswith("cli/"):
            yield f"{where}: includes \"{inc}\"; the engine never includes cli/"
        elif top == "engine" and inc.startswith("engine/"):
            theirs = engine_layer(inc)
            if theirs == "?" or ENGINE_LAYERS.index(theirs) > ENGINE_LAYERS.index(own):
                yield (f"{where}: engine/{own} includes \"{inc}\" (engine/{theirs}), a layer above it; "
                       f"the order is {' < '.join(ENGINE_LAYERS)}")
        elif top == "cli" and inc.startswith("engine/"):
            if not any(inc.startswith(a) for a in CLI_ALLOWED):
                yield f"{where}: cli/ includes \"{inc}\"; cli/ may include only {' and '.join(CLI_ALLOWED)}"
        elif top == "gpu" and inc.startswith("engine/"):
            if not any(inc == a or (a.endswith("/") and inc.startswith(a)) for a in GPU_ALLOWED):
                yield f"{where}: gpu/ includes \"{inc}\"; gpu/ may include only {', '.join(GPU_ALLOWED)}"


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    problems, files = [], 0
    for top in ("engine", "cli", "gpu"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith(SOURCE_EXT):
                    continue
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root).replace(os.sep, "/")
                with open(full, encoding="utf-8", errors="replace") as f:
                    problems.extend(check_file(rel, f.read()))
                files += 1
    for p in problems:
        print(p)
    print(f"check-layers: {files} files, {len(problems)} broken include rule(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
