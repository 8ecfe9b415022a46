#!/usr/bin/env python3
"""ONNX Resize and Upsample (engine/frontend/onnx_ops_resize.cpp) against ONNX's
own expected outputs: the backend suite's resize and upsample node tests feed
their scales or sizes as graph inputs, which graphrun needs as constants
(the output's shape depends on them), so this test moves those inputs into
initializers holding the test's own values and runs each model through the
real binary with --input=@DIR and --expected-output=@DIR (test data as .pb).
A model the mapping refuses must say why, naming the node (exit 3).

Usage: onnx_resize_test.py GRAPHRUN [--data=DIR]
"""
import glob
import os
import sys
import tempfile

try:
    import onnx
    from onnx import numpy_helper
except ImportError as e:
    print(f"SKIP: the Resize tests need python3-onnx ({e})")
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import checks, run_binary  # noqa: E402

GRAPHRUN = os.path.abspath(sys.argv[1])
DATA = next((a.split("=", 1)[1] for a in sys.argv[2:] if a.startswith("--data=")),
            "/usr/share/libonnx-testdata/data/node")
if not os.path.isdir(DATA):
    print(f"SKIP: no ONNX backend test data in {DATA} (Debian's libonnx-testdata)")
    sys.exit(0)
TMP = tempfile.mkdtemp(prefix="graphrun-resize-")
failures = []
check = checks(failures)
# What graphrun refuses, and the words that must say why.
REFUSED = {"tf_crop_and_resize": "tf_crop_and_resize", "tf_half_pixel_for_nn": "tf_half_pixel_for_nn"}

passed = 0
tests = sorted(glob.glob(os.path.join(DATA, "test_resize_*")) + glob.glob(os.path.join(DATA, "test_upsample_*")))
for d in tests:
    name = os.path.basename(d)
    m = onnx.load(os.path.join(d, "model.onnx"))
    data_dir = os.path.join(d, "test_data_set_0")
    inputs = [numpy_helper.to_array(onnx.load_tensor(f))
              for f in sorted(glob.glob(os.path.join(data_dir, "input_*.pb")))]
    g = m.graph
    # Every input but the first (X) becomes an initializer with the test's value.
    for i in range(len(g.input) - 1, 0, -1):
        vi = g.input[i]
        g.initializer.append(numpy_helper.from_array(inputs[i], vi.name))
        del g.input[i]
    work = os.path.join(TMP, name)
    os.makedirs(work)
    path = os.path.join(work, "model.onnx")
    onnx.save(m, path)
    x = os.path.join(work, "x")
    os.makedirs(x)
    with open(os.path.join(x, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(inputs[0], g.input[0].name).SerializeToString())
    p = run_binary(GRAPHRUN, ["run", path, f"--input=@{x}", f"--expected-output=@{data_dir}", "--rtol=1e-5",
                              "--atol=1e-6", "--no-data"], timeout=60)
    refused = next((w for k, w in REFUSED.items() if k in name), None)
    if refused:
        check(p.returncode == 3 and refused in p.stderr and "Resize node" in p.stderr,
              f"{name}: refused? exit {p.returncode} {p.stderr[-400:]}")
        continue
    ok = p.returncode == 0
    check(ok, f"{name}: exit {p.returncode} {p.stderr[-600:]}")
    passed += ok

# Hostile scales: an output too large to index is refused before anything is made for it.
import numpy as np  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402
for mode in ("nearest", "linear"):
    graph = helper.make_graph([helper.make_node("Resize", ["x", "", "s"], ["y"], mode=mode, name="rz")], "big",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, "h", "w"])],
                              [numpy_helper.from_array(np.array([1, 1, 1e9, 1e9], np.float32), "s")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = os.path.join(TMP, f"big_{mode}.onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    p = run_binary(GRAPHRUN, ["check", path], timeout=60)
    check(p.returncode == 3 and "rz" in p.stderr, f"huge scales ({mode}): exit {p.returncode} {p.stderr[-400:]}")

print(f"onnx_resize: {passed} of {len(tests)} resize/upsample node tests match ONNX's expected outputs"
      f"{'' if not failures else f'; {len(failures)} failed'}")
sys.exit(1 if failures else 0)
