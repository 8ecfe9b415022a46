#!/usr/bin/env python3
"""The build without ONNX (-DGRAPHRUN_ONNX=OFF), through its binary
(tests/CMakeLists.txt links it from the engine with the stand-in
engine/frontend/onnx_unavailable.cpp): every command that reads a file refuses
a model with the rebuild hint (exit 3, no signal), `--version` and a script
still work.
Usage: without_onnx_test.py GRAPHRUN_WITHOUT_ONNX_BINARY"""
import os
import shutil
import sys
import tempfile

from harness import expect, finish, make_harness

BIN = os.path.abspath(sys.argv[1])
run, test, results = make_harness(BIN, timeout=60)
D = tempfile.mkdtemp(prefix="graphrun_without_onnx_")
HINT = "this graphrun was built without ONNX support (install libonnx-dev and libprotobuf-dev, then rebuild"


def path(name, data):
    p = os.path.join(D, name)
    with open(p, "wb") as f:
        f.write(data)
    return p


@test
def a_model_is_refused_with_the_hint():
    # The stand-in refuses before parsing: any bytes will do.
    model = path("m.onnx", b"\x08\x07\x12\x04test")
    for args in (["run", model], ["check", model], ["compare", model], ["dot", model],
                 ["convert", model, "--to=text"]):
        code, out, err = run(*args)
        expect(code == 3, f"graphrun {' '.join(args)}: exit {code}\n{err}")
        expect(HINT in err, f"graphrun {' '.join(args)}: stderr lacks the hint\n{err}")


@test
def a_script_still_runs():
    script = path("s.graph", b"x = ones([2, 2])\ny = x @ x\noutput y\n")
    code, out, err = run("run", script, "--device=cpu", "--check-leaks")
    expect(code == 0, f"exit {code}\n{err}")
    expect("[[2. 2.]\n [2. 2.]]" in out, out)
    code, out, err = run("--version")
    expect(code == 0 and out.strip(), f"exit {code}\n{out}{err}")


try:
    code = finish("without_onnx", results)
finally:
    shutil.rmtree(D, ignore_errors=True)
sys.exit(code)
