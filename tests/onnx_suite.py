#!/usr/bin/env python3
"""ONNX's own backend test suite, through the real binary.

Usage: onnx_suite.py GRAPHRUN [--ci] [--jobs=N] [--data=DIR] [--passing=FILE] [--update] [--verbose]
                    [-k SUBSTRING]

Runs every test of Debian's libonnx-testdata (suites node, pytorch-converted,
pytorch-operator, simple): each test's model.onnx with the inputs of its
test_data_set_* fed as .npy files (--input=NAME=@FILE), its outputs saved
(--save=DIR) and compared with the expected ones under the suite's tolerances
(rtol 1e-3, atol 1e-7, as onnx.backend.test does). A test is

  passed       every data set matched;
  unsupported  graphrun refused the model before running it (exit 3: an op,
               attribute or dtype it does not support);
  failed       anything else: a mismatch, a runtime error, a crash.

Prints the counts per suite. Fails (exit 1) when a test listed in the
passing list (tests/onnx_passing.txt) does not pass: the list may only grow.
--update rewrites the list with every test that passes now.

--ci (what ctest runs) is the cheap form of the same check: the tests of the
passing list are run and compared as above, --jobs at once (default: the
number of cores); every other model is only loaded, validated and planned
(`graphrun run --iterations=0 --fill=zeros`), many per process, and must be
refused with a diagnostic (exit 1 to 3) or accepted, never crash or hang.
Without --ci every test is run in turn and classified (for --update).
"""
import concurrent.futures
import glob
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import BinaryFailed, run_binary  # noqa: E402 (tests/harness.py)

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
except ImportError as e:  # the suite needs python3-onnx
    print(f"SKIP: the ONNX suite needs numpy and python3-onnx ({e})")
    sys.exit(0)

SUITES = ("node", "pytorch-converted", "pytorch-operator", "simple")
RTOL, ATOL = 1e-3, 1e-7


def arg(name, default):
    for a in sys.argv[2:]:
        if a.startswith(f"--{name}="):
            return a.split("=", 1)[1]
    return default


GRAPHRUN = sys.argv[1]
DATA = arg("data", "/usr/share/libonnx-testdata/data")
PASSING = arg("passing", os.path.join(os.path.dirname(os.path.abspath(__file__)), "onnx_passing.txt"))
UPDATE = "--update" in sys.argv
CI = "--ci" in sys.argv
JOBS = int(arg("jobs", str(os.cpu_count() or 1)))
BATCH = 60  # models per process for the load-only check
VERBOSE = "--verbose" in sys.argv
FILTER = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else None


def read_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    a = numpy_helper.to_array(t)
    if t.data_type == onnx.TensorProto.BFLOAT16 and a.dtype == np.uint16:  # ONNX 1.12 gives the bits
        return BFloat16Bits(a)
    return a


def as_declared(value, value_info):
    """ONNX 1.12's test data stores bfloat16 tensors as UINT16: the bits of a BFLOAT16 input or output."""
    if value_info.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16 and value.dtype == np.uint16:
        return BFloat16Bits(value)
    return value


class BFloat16Bits(np.ndarray):
    """A bfloat16 tensor as its 16-bit patterns: saved as ml_dtypes saves bfloat16 ('|V2'), compared as floats."""

    def __new__(cls, bits):
        return np.asarray(bits, np.uint16).view(cls)

    def as_float(self):
        return (np.asarray(self).astype(np.uint32) << 16).view(np.float32)


def run_test(test_dir, tmp):
    """Returns (status, detail)."""
    model_path = os.path.join(test_dir, "model.onnx")
    try:
        model = onnx.load(model_path)
    except Exception as e:  # noqa: BLE001 - a model the Python package cannot read
        return "unsupported", f"onnx.load: {e}"
    inits = {t.name for t in model.graph.initializer}
    if any(not v.type.HasField("tensor_type") for v in list(model.graph.input) + list(model.graph.output)):
        return "unsupported", "an input or output is not a tensor (a sequence, map or optional)"
    input_names = [i.name for i in model.graph.input if i.name not in inits]
    output_names = [o.name for o in model.graph.output]
    sets = sorted(glob.glob(os.path.join(test_dir, "test_data_set_*")))
    if not sets:
        return "unsupported", "no test data"
    for ds in sets:
        try:
            declared_in = [i for i in model.graph.input if i.name not in inits]
            inputs = [as_declared(read_pb(os.path.join(ds, f"input_{i}.pb")), declared_in[i])
                      for i in range(len(input_names))]
            expected = [as_declared(read_pb(os.path.join(ds, f"output_{i}.pb")), model.graph.output[i])
                        for i in range(len(output_names))]
        except Exception as e:  # noqa: BLE001 - data the Python package cannot read as tensors
            return "unsupported", f"test data: {e}"
        args = [GRAPHRUN, "run", "--cleanup=safepoint", model_path]
        for i, (name, value) in enumerate(zip(input_names, inputs)):
            if value.dtype == object:
                return "unsupported", f"input {name} is not numeric"
            path = os.path.join(tmp, f"in{i}.npy")
            np.save(path, np.asarray(value).view("V2") if isinstance(value, BFloat16Bits) else value)
            args.append(f"--input={name}=@{path}")
        out_dir = os.path.join(tmp, "out")
        args.append(f"--save={out_dir}")
        for f in glob.glob(os.path.join(out_dir, "*")):
            os.remove(f)
        try:
            p = run_binary(args[0], args[1:], timeout=120)
        except BinaryFailed as e:  # a timeout or a crash
            return "failed", str(e)[:300]
        if p.returncode == 3:
            return "unsupported", p.stderr.strip().splitlines()[0] if p.stderr.strip() else "exit 2"
        if p.returncode != 0:
            return "failed", f"exit {p.returncode}: {p.stderr.strip()[:300]}"
        saved = sorted(os.listdir(out_dir)) if os.path.isdir(out_dir) else []
        for name, want in zip(output_names, expected):
            files = [f for f in saved if f == f"{name}.npy"] or [f for f in saved if f.endswith(".npy")
                                                                 and f[:-4] == name.replace("/", "_")]
            if not files:
                return "failed", f"output {name} was not saved (saved: {saved})"
            got = np.load(os.path.join(out_dir, files[0]))
            if got.dtype.kind == "V" and got.dtype.itemsize == 2:  # bf16 ('|V2'): its bits are float32's top half
                got = (got.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
            if isinstance(want, BFloat16Bits):
                want = want.as_float()
            if got.shape != want.shape:
                return "failed", f"output {name}: shape {got.shape}, expected {want.shape}"
            if want.dtype == bool or got.dtype == bool:
                ok = np.array_equal(got.astype(bool), want.astype(bool))
            else:
                ok = np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=RTOL, atol=ATOL, equal_nan=True)
            if not ok:
                diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
                return "failed", f"output {name}: max abs error {np.nanmax(diff) if diff.size else 0:.3g}"
    return "passed", ""


def load_only(models):
    """Problems of `graphrun run --iterations=0 --fill=zeros MODELS...`, BATCH
    models per process: each must be refused with an exit code of 1 to 3 and a
    message, or accepted; no crash, no hang. A batch that fails is rerun model
    by model to name the one at fault. Returns (problems, refused count)."""
    problems, refused = [], 0

    def batch(files):
        args = ["run", "--format=json", "--no-data", "--iterations=0", "--fill=zeros", "--cleanup=safepoint", *files]
        try:
            p = run_binary(GRAPHRUN, args, timeout=60 + 5 * len(files))
        except BinaryFailed as e:
            return None, str(e)
        docs = [json.loads(ln) for ln in p.stdout.splitlines() if ln.strip()]
        if len(docs) != len(files):
            return None, f"exit {p.returncode}: {len(docs)} JSON documents for {len(files)} models: {p.stderr[-500:]}"
        return docs, ""

    for i in range(0, len(models), BATCH):
        chunk = models[i:i + BATCH]
        docs, why = batch(chunk)
        if docs is None:
            docs = []
            for m in chunk:
                one, why = batch([m])
                if one is None:
                    problems.append(f"{m}: {why}")
                else:
                    docs += one
        for d in docs:
            err = d.get("error")
            if err is None:
                continue
            if err.get("code") not in (1, 2, 3) or not err.get("message"):
                problems.append(f"{d.get('file')}: error without a code of 1 to 3 and a message: {err}")
            else:
                refused += err["code"] == 3
    return problems, refused


def main_ci(passing_before):
    """The --ci form: the passing list run in parallel, every other model loaded only."""
    everything = []
    for suite in SUITES:
        everything += [f"{suite}/{os.path.basename(d)}" for d in sorted(glob.glob(os.path.join(DATA, suite, "test_*")))]
    if FILTER:
        everything = [k for k in everything if FILTER in k]
    listed = [k for k in everything if k in passing_before]
    missing = sorted(passing_before - set(everything)) if not FILTER else []
    failed = []

    def one(key):
        with tempfile.TemporaryDirectory() as tmp:
            return key, run_test(os.path.join(DATA, key), tmp)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, JOBS)) as pool:
        for key, (status, detail) in pool.map(one, listed):
            if status != "passed":
                failed.append(f"{key}: {status}: {detail}")
            elif VERBOSE:
                print(f"passed       {key}")
    others = [os.path.join(DATA, k, "model.onnx") for k in everything if k not in passing_before]
    others = [m for m in others if os.path.exists(m)]
    problems, refused = load_only(others)
    print(f"onnx_suite --ci: {len(listed) - len(failed)} of {len(listed)} listed tests pass; "
          f"{len(others)} other models loaded: {refused} refused (exit 3), "
          f"{len(others) - refused - len(problems)} accepted or refused otherwise, {len(problems)} problems")
    for f in failed:
        print(f"FAIL (listed as passing): {f}")
    for p in problems:
        print(f"FAIL (load only): {p}")
    if missing:  # another version of the test data: as without --ci, not a failure
        print(f"note: {len(missing)} listed test(s) are not in the test data: {', '.join(missing[:20])}")
    return 1 if failed or problems or not listed else 0


def main():
    if not os.path.isdir(DATA):
        print(f"SKIP: no ONNX test data at {DATA} (Debian's libonnx-testdata)")
        return 0
    passing_before = set()
    if os.path.exists(PASSING):
        passing_before = {l.strip() for l in open(PASSING) if l.strip() and not l.startswith("#")}
    if CI:
        return main_ci(passing_before)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for suite in SUITES:
            for test_dir in sorted(glob.glob(os.path.join(DATA, suite, "test_*"))):
                key = f"{suite}/{os.path.basename(test_dir)}"
                if FILTER and FILTER not in key:
                    continue
                status, detail = run_test(test_dir, tmp)
                results[key] = status
                if VERBOSE or (status == "failed" and key in passing_before):
                    print(f"{status:12s} {key}  {detail}")
    print("suite               passed  failed  unsupported  total")
    for suite in SUITES:
        mine = [s for k, s in results.items() if k.startswith(suite + "/")]
        print(f"{suite:18s} {mine.count('passed'):7d} {mine.count('failed'):7d} {mine.count('unsupported'):12d} "
              f"{len(mine):6d}")
    regressed = sorted(k for k in passing_before if k in results and results[k] != "passed")
    if UPDATE:
        now = sorted(k for k, s in results.items() if s == "passed")
        if FILTER:
            now = sorted(set(now) | (passing_before - set(results)))
        with open(PASSING, "w") as f:
            f.write("# ONNX backend tests graphrun passes (tests/onnx_suite.py --update); this list may only grow.\n")
            f.write("\n".join(now) + "\n")
        print(f"{PASSING}: {len(now)} passing tests")
    if regressed:
        print(f"FAIL: {len(regressed)} test(s) that passed before do not pass now: {', '.join(regressed[:20])}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
