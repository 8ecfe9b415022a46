#!/usr/bin/env python3
"""GPU session tests through the real binary (issue 17), beside gpu_ops_test.py's
op-by-op comparison: what only whole sessions on a GPU show.

  big        tensors past 2^24 elements and past 65535 rows, so that every
             grid-stride loop (65535 blocks at most) and the batched cuBLAS
             call (65535 matrices at most) takes a second step; the GPU's
             values are compared with the CPU's inside the graph
  resident   GPU-resident chains: inputs made on the GPU, nothing copied in
             (copied_in 0), the CPU's values
  limit      --memory-limit out of memory on the GPU under all three
             strategies: close runs out, safepoint and background do not;
             all zero after teardown (--check-leaks), workspace included
  conv_limit a conv whose whole-image im2col scratch is past --memory-limit
             runs on the GPU in tiles (smaller ones when a tile of 8 MiB does
             not fit either) and matches the CPU; a conv with no tile that
             fits fails with the CPU's kind of message; zero after teardown
  reset      `graphrun run --reset-device a.graph b.graph`: the second file's
             cuBLAS work after the first file's context was ended, and a
             third file after that; the CPU's values
  peak       the safepoint peak of every example on the GPU equals the static
             peak that `graphrun check` prints, per device
  two_gpus   copies between gpu:0 and gpu:1 (peer or through the host), where
             the machine has two GPUs

Usage: gpu_session_test.py GRAPHRUN [SOURCE_DIR] [-k NAME] [-v] [--scripts-only]

Without a usable GPU (`graphrun devices` lists none) it prints SKIP with the
reason and exits 0; `two_gpus` skips the same way on a machine with one.
"""
import argparse
import glob
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gpu_ops_test import gpu_usable, listed_gpus, run_bin  # noqa: E402

TEARDOWN_ZERO = ("in_use", "pending", "reserved", "live", "weights", "workspace")


class Skip(Exception):
    pass


def run_docs(binary, files, args, expect_code=0):
    """The JSON documents of `graphrun run FILES --format=json ARGS`, one per file."""
    code, out, err = run_bin(binary, ["run", *files, "--format=json", *args])
    if code != expect_code:
        raise AssertionError(f"exit {code}, expected {expect_code}: {err.strip()[-1500:]}")
    docs = [json.loads(ln) for ln in out.splitlines() if ln.strip()]
    if len(docs) != len(files):
        raise AssertionError(f"{len(docs)} JSON documents for {len(files)} files: {err.strip()[-1500:]}")
    return docs


def torn_down(doc):
    """Problems with the figures after teardown, every device."""
    bad = []
    for dev, m in doc["memory"]["after_teardown"].items():
        for k in TEARDOWN_ZERO:
            if m.get(k) != 0:
                bad.append(f"{dev} {k} = {m.get(k)} after teardown")
        if m.get("allocs") != m.get("frees"):
            bad.append(f"{dev} allocs {m.get('allocs')} != frees {m.get('frees')} after teardown")
    return bad


def outputs(doc):
    if "error" in doc:
        raise AssertionError(f"{doc['file']}: {doc['error']['message']}")
    return {o["name"]: o for o in doc["outputs"]}


def scalar(doc, name):
    return outputs(doc)[name]["data"]


def write(workdir, name, text):
    path = os.path.join(workdir, name)
    with open(path, "w") as f:
        f.write(text)
    return path


# --- the tests: each returns a list of failures, or raises Skip --------------

BIG = """
# 17,000,000 elements: past 65535 blocks x 256 threads = 16,776,960
xg = random_uniform([17000000], low=-2, high=2, seed=11)
rg = range(limit=17000000, dtype=i64)
with device("cpu") {
  xc = random_uniform([17000000], low=-2, high=2, seed=11)
  rc = range(limit=17000000, dtype=i64)
}
d_random = reduce_max(abs(xg - xc))
d_range = reduce_max(abs(rg - rc))
d_binary = reduce_max(abs((xg * 3 - 1) - (xc * 3 - 1)))
d_unary = reduce_max(abs(neg(square(xg)) - neg(square(xc))))
d_cast = reduce_max(abs(cast(xg * 1000, dtype=i32) - cast(xc * 1000, dtype=i32)))
sum_g = reduce_sum(cast(xg, dtype=f64))
with device("cpu") { sum_c = reduce_sum(cast(xc, dtype=f64)) }
# 8200 x 8200: 66049 tiles of 32 x 32, past 65535 blocks
tg = reshape(random_uniform([67240000], seed=12), shape=[8200, 8200])
with device("cpu") { tc = reshape(random_uniform([67240000], seed=12), shape=[8200, 8200]) }
d_transpose = reduce_max(abs(transpose(tg) - transpose(tc)))
# 70,000 rows: past 65535 blocks of one row each
mg = random_uniform([70000, 16], low=-5, high=5, seed=13)
with device("cpu") { mc = random_uniform([70000, 16], low=-5, high=5, seed=13) }
d_softmax = reduce_max(abs(softmax(mg) - softmax(mc)))
d_rows = reduce_max(abs(reduce_sum(mg, axes=[1]) - reduce_sum(mc, axes=[1])))
d_concat = reduce_max(abs(concat(mg, mg * 2, axis=1) - concat(mc, mc * 2, axis=1)))
# 70,000 matrices: past cuBLAS's 65535 per strided-batched call
ag = reshape(random_uniform([420000], seed=14), shape=[70000, 2, 3])
bg = reshape(random_uniform([420000], seed=15), shape=[70000, 3, 2])
with device("cpu") {
  ac = reshape(random_uniform([420000], seed=14), shape=[70000, 2, 3])
  bc = reshape(random_uniform([420000], seed=15), shape=[70000, 3, 2])
}
d_matmul = reduce_max(abs(matmul(ag, bg) - matmul(ac, bc)))
output d_random, d_range, d_binary, d_unary, d_cast, sum_g, sum_c, d_transpose, d_softmax, d_rows, d_concat, d_matmul
"""


def test_big(binary, workdir, gpu):
    # Each pair: the op on the GPU (the default device) and on the CPU; the
    # differences are reduced on the GPU and only scalars come back.
    path = write(workdir, "big.graph", BIG)
    doc = run_docs(binary, [path], ["--device=gpu", "--no-soft-placement", "--cleanup=safepoint"])[0]
    out = outputs(doc)
    failures = []
    exact = ("d_random", "d_range", "d_binary", "d_unary", "d_cast", "d_transpose", "d_concat")
    for name in exact:
        if out[name]["data"] != 0:
            failures.append(f"{name} = {out[name]['data']}, expected 0 (GPU and CPU bit for bit)")
    bounds = {"d_softmax": 1e-5, "d_rows": 1e-4, "d_matmul": 1e-5}
    for name, bound in bounds.items():
        v = out[name]["data"]
        if not isinstance(v, (int, float)) or v > bound:
            failures.append(f"{name} = {v}, expected at most {bound}")
    sg, sc = out["sum_g"]["data"], out["sum_c"]["data"]
    if abs(sg - sc) > 1e-9 * max(1.0, abs(sc)) * 17000000 ** 0.5:
        failures.append(f"reduce_sum of 17M f64: GPU {sg!r}, CPU {sc!r}")
    for name in exact + tuple(bounds):
        if out[name]["device"] != gpu:
            failures.append(f"{name} computed on {out[name]['device']}, not {gpu}")
    return failures + torn_down(doc)


RESIDENT = """
x = random_normal([256, 256], seed=21)
w = random_uniform([256, 256], low=-0.1, high=0.1, seed=22)
b = range(limit=256)
repeat 4 { x = relu(x @ w + b / 256) }
y = softmax(x * 0.5)
s = reduce_mean(y, axes=[0])
output s
"""


def test_resident(binary, workdir, gpu):
    path = write(workdir, "resident.graph", RESIDENT)
    got = run_docs(binary, [path], ["--device=gpu", "--no-soft-placement", "--iterations=3"])[0]
    ref = run_docs(binary, [path], ["--device=cpu"])[0]
    failures = torn_down(got)
    before = got["memory"]["before_teardown"]
    if set(before) != {gpu}:
        failures.append(f"devices used: {sorted(before)}, expected only {gpu}")
    elif before[gpu]["copied_in"] != 0:
        failures.append(f"{gpu} copied_in = {before[gpu]['copied_in']}: the chain was not GPU-resident")
    g, c = outputs(got)["s"], outputs(ref)["s"]
    if g["device"] != gpu:
        failures.append(f"s computed on {g['device']}")
    for i, (a, b) in enumerate(zip(g["data"], c["data"])):
        if abs(a - b) > 1e-4 * max(abs(b), 1e-6):
            failures.append(f"s[{i}]: GPU {a!r}, CPU {b!r}")
            break
    return failures


LIMIT = "x = random_uniform([65536], seed=2)\n" + "x = x * 1.0001\n" * 40 + "output x\n"


def test_limit(binary, workdir, gpu):
    # One pass holds 41 tensors of 256 KiB under close (10.25 MiB); in place, 512 KiB.
    path = write(workdir, "limit.graph", LIMIT)
    failures = []
    for cleanup in ("background", "safepoint", "close"):
        args = ["--device=gpu", "--no-soft-placement", f"--cleanup={cleanup}", "--memory-limit=8MiB",
                "--check-leaks"]
        expect = 1 if cleanup == "close" else 0
        try:
            doc = run_docs(binary, [path], args, expect_code=expect)[0]
        except AssertionError as e:
            failures.append(f"--cleanup={cleanup}: {e}")
            continue
        if cleanup == "close" and "out of memory on " + gpu not in doc.get("error", {}).get("message", ""):
            failures.append(f"--cleanup=close: no out-of-memory error: {doc.get('error')}")
        m = doc["memory"]["before_teardown"][gpu]
        if m["workspace"] <= 0:
            failures.append(f"--cleanup={cleanup}: no workspace counted on {gpu}")
        if m["peak"] + m["workspace"] + m["weights"] > 8 << 20:
            failures.append(f"--cleanup={cleanup}: peak {m['peak']} + workspace {m['workspace']} + weights "
                            f"{m['weights']} past the limit")
        failures += [f"--cleanup={cleanup}: {p}" for p in torn_down(doc)]
    return failures


# im2col's columns for the whole image: k = 32 * 3 * 3 = 288 rows of 128 * 128 pixels,
# 18 MiB of f32, past both limits of test_conv_limit; the tensors take 2.6 MiB.
CONV_LIMIT = """
x = random_uniform([1, 32, 128, 128], seed=51)
w = random_uniform([8, 32, 3, 3], seed=52)
b = random_uniform([8], seed=53)
y = conv(x, w, b, pads=1)
output y
"""
# One output pixel: no tile is smaller than its column, k = 512 * 32 * 32 = 524288
# f32 (2 MiB), which has no room under 6 MiB beside x and w (4 MiB) and the cuBLAS
# workspace (512 KiB).
CONV_NO_TILE = """
x = random_uniform([1, 512, 32, 32], seed=54)
w = random_uniform([1, 512, 32, 32], seed=55)
y = conv(x, w)
output y
"""


def test_conv_limit(binary, workdir, gpu):
    path = write(workdir, "conv_limit.graph", CONV_LIMIT)
    ref = flatten(outputs(run_docs(binary, [path], ["--device=cpu"])[0])["y"]["data"])
    failures = []
    # Under 16 MiB the 8 MiB tile fits beside the tensors and the cuBLAS workspace (2 MiB);
    # under 8 MiB (1 MiB of cuBLAS workspace) it does not, and a quarter of it does.
    for limit, cleanup in ((16, "background"), (8, "background"), (8, "safepoint"), (8, "close")):
        where = f"--memory-limit={limit}MiB --cleanup={cleanup}"
        args = ["--device=gpu", "--no-soft-placement", f"--cleanup={cleanup}", f"--memory-limit={limit}MiB",
                "--check-leaks"]
        try:
            doc = run_docs(binary, [path], args)[0]
            y = outputs(doc)["y"]
        except AssertionError as e:
            failures.append(f"{where}: {e}")
            continue
        if y["device"] != gpu:
            failures.append(f"{where}: y computed on {y['device']}, not {gpu}")
        got = flatten(y["data"])
        worst = max((abs(a - c) / max(abs(c), 1.0) for a, c in zip(got, ref)), default=0.0)
        if len(got) != len(ref) or worst > 1e-4:
            failures.append(f"{where}: y differs from the CPU by {worst:.3g} (relative)")
        m = doc["memory"]["before_teardown"][gpu]
        if m["peak"] + m["workspace"] + m["weights"] > limit << 20:
            failures.append(f"{where}: peak {m['peak']} + workspace {m['workspace']} + weights {m['weights']} "
                            "past the limit")
        failures += [f"{where}: {p}" for p in torn_down(doc)]
    path = write(workdir, "conv_no_tile.graph", CONV_NO_TILE)
    args = ["--device=gpu", "--no-soft-placement", "--memory-limit=6MiB", "--check-leaks"]
    try:
        doc = run_docs(binary, [path], args, expect_code=1)[0]
    except AssertionError as e:
        return failures + [f"no tile fits: {e}"]
    want = "out of memory: 2097152 bytes of scratch for conv's im2col columns (workspace) exceed the memory limit"
    if want not in doc.get("error", {}).get("message", ""):
        failures.append(f"no tile fits: expected '{want}': {doc.get('error')}")
    return failures + [f"no tile fits: {p}" for p in torn_down(doc)]


MATMUL_A = """
a = random_uniform([128, 96], seed=31)
b = random_uniform([96, 64], seed=32)
c = a @ b
output c
"""
MATMUL_B = """
x = random_normal([3, 64, 64], seed=33)
y = matmul(x, x, transpose_b=true)
z = reduce_sum(softmax(y), axes=[2])
output y, z
"""


def test_reset(binary, workdir, gpu):
    a = write(workdir, "reset_a.graph", MATMUL_A)
    b = write(workdir, "reset_b.graph", MATMUL_B)
    files = [a, b, a, b]
    failures = []
    for cleanup in ("background", "safepoint", "close"):
        try:
            got = run_docs(binary, files, ["--device=gpu", "--no-soft-placement", "--reset-device",
                                           "--check-leaks", f"--cleanup={cleanup}", "--iterations=2"])
        except AssertionError as e:
            failures.append(f"--cleanup={cleanup}: {e}")
            continue
        ref = run_docs(binary, files, ["--device=cpu"])
        for i, (g, r) in enumerate(zip(got, ref)):
            where = f"--cleanup={cleanup} file {i + 1} ({os.path.basename(files[i])})"
            failures += [f"{where}: {p}" for p in torn_down(g)]
            go, ro = outputs(g), outputs(r)
            for name, o in go.items():
                flat_g, flat_r = flatten(o["data"]), flatten(ro[name]["data"])
                worst = max((abs(x - y) / max(abs(y), 1.0) for x, y in zip(flat_g, flat_r)), default=0.0)
                if len(flat_g) != len(flat_r) or worst > 1e-5:
                    failures.append(f"{where}: {name} differs from the CPU by {worst:.3g} (relative)")
        # The same file gives the same bits before and after a reset.
        if outputs(got[0])["c"]["data"] != outputs(got[2])["c"]["data"]:
            failures.append(f"--cleanup={cleanup}: reset_a.graph gave other values after a reset")
    return failures


def flatten(v):
    if isinstance(v, list):
        out = []
        for x in v:
            out += flatten(x)
        return out
    return [v]


def test_peak(binary, workdir, gpu, source_dir):
    failures = []
    for path in sorted(glob.glob(os.path.join(source_dir, "scripts", "examples", "*.graph"))):
        name = os.path.basename(path)
        code, out, err = run_bin(binary, ["check", path, "--format=json", "--device=gpu"])
        if code != 0:
            failures.append(f"{name}: check exited {code}: {err.strip()[-500:]}")
            continue
        static = json.loads(out)["static_peak"]
        doc = run_docs(binary, [path], ["--device=gpu", "--cleanup=safepoint"])[0]
        before = doc["memory"]["before_teardown"]
        for dev, bytes_ in static.items():
            got = before.get(dev, {}).get("peak")
            if got != bytes_:
                failures.append(f"{name}: {dev} safepoint peak {got}, static plan {bytes_}")
        failures += [f"{name}: {p}" for p in torn_down(doc)]
    return failures


TWO_GPUS = """
with device("gpu:0") {
  a = random_uniform([512, 512], seed=41)
  b = a * 2
}
with device("gpu:1") {
  c = b @ b
  d = c + a
}
with device("gpu:0") { e = reduce_sum(d, axes=[0]) }
output e
"""


def test_two_gpus(binary, workdir, gpu):
    code, out, _ = run_bin(binary, ["devices"])
    gpus = listed_gpus(out)
    if len(gpus) < 2:
        raise Skip(f"one GPU on this machine ({len(gpus)} listed by `graphrun devices`)")
    if gpus[1][1]:
        raise Skip(f"gpu:1 is not usable: {gpus[1][1]}")
    text = TWO_GPUS
    path = write(workdir, "two_gpus.graph", text)
    failures = []
    for cleanup in ("background", "safepoint", "close"):
        got = run_docs(binary, [path], ["--no-soft-placement", f"--cleanup={cleanup}", "--iterations=2",
                                        "--check-leaks"])[0]
        ref_path = write(workdir, "two_gpus_cpu.graph", text.replace('"gpu:0"', '"cpu"').replace('"gpu:1"', '"cpu"'))
        ref = run_docs(binary, [ref_path], ["--device=cpu"])[0]
        failures += [f"--cleanup={cleanup}: {p}" for p in torn_down(got)]
        before = got["memory"]["before_teardown"]
        # b and a cross to gpu:1, d comes back to gpu:0: 3 copies of 1 MiB a pass.
        if before.get("gpu:1", {}).get("copied_in") != 2 * 2 * 512 * 512 * 4:
            failures.append(f"--cleanup={cleanup}: gpu:1 copied_in {before.get('gpu:1', {}).get('copied_in')}")
        if before.get("gpu:0", {}).get("copied_in") != 2 * 512 * 512 * 4:
            failures.append(f"--cleanup={cleanup}: gpu:0 copied_in {before.get('gpu:0', {}).get('copied_in')}")
        g, r = outputs(got)["e"]["data"], outputs(ref)["e"]["data"]
        worst = max(abs(x - y) / max(abs(y), 1.0) for x, y in zip(g, r))
        if worst > 1e-5:
            failures.append(f"--cleanup={cleanup}: e differs from the CPU by {worst:.3g} (relative)")
    return failures


TESTS = ["big", "resident", "limit", "conv_limit", "reset", "peak", "two_gpus"]
GRAPHS = {"big": BIG, "resident": RESIDENT, "limit": LIMIT, "conv_limit": CONV_LIMIT, "conv_no_tile": CONV_NO_TILE,
          "reset_a": MATMUL_A, "reset_b": MATMUL_B, "two_gpus": TWO_GPUS}


def check_scripts(binary, workdir):
    """--scripts-only: every graph above passes `graphrun check` here (any
    machine), so that a GPU session never finds a broken script first."""
    failed = 0
    for name, text in GRAPHS.items():
        path = write(workdir, name + ".graph", text)
        code, _, err = run_bin(binary, ["check", path, "--device=cpu"])
        if code != 0:
            failed += 1
            print(f"FAIL {name}: check exited {code}: {err.strip()[-1000:]}")
        else:
            print(f"ok   {name}")
    print(f"gpu session scripts: {len(GRAPHS) - failed} passed, {failed} failed")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("graphrun")
    ap.add_argument("source_dir", nargs="?", default=os.path.dirname(HERE))
    ap.add_argument("-k", metavar="NAME", default="", help="only tests whose name contains NAME")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--scripts-only", action="store_true", help="only check that every graph is valid (no GPU needed)")
    opts = ap.parse_args()
    binary = os.path.abspath(opts.graphrun)
    if opts.scripts_only:
        with tempfile.TemporaryDirectory(prefix="gpu_session_test.") as workdir:
            return check_scripts(binary, workdir)

    gpu, why = gpu_usable(binary)
    if gpu is None:
        print(f"SKIP: no usable GPU: {why}")
        return 0

    failed = 0
    with tempfile.TemporaryDirectory(prefix="gpu_session_test.") as workdir:
        for name in TESTS:
            if opts.k not in name:
                continue
            fn = globals()["test_" + name]
            try:
                failures = fn(binary, workdir, gpu, opts.source_dir) if name == "peak" else fn(binary, workdir, gpu)
            except Skip as s:
                print(f"SKIP {name}: {s}")
                continue
            except (AssertionError, KeyError, json.JSONDecodeError) as e:
                failures = [f"{type(e).__name__}: {e}"]
            if failures:
                failed += 1
                print(f"FAIL {name}")
                for f in failures[:20]:
                    print(f"     {f}")
            else:
                print(f"ok   {name}")
    print(f"gpu session: {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
