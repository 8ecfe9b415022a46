#!/usr/bin/env python3
"""Data in and out through the real binary: graph inputs fed from .npy/.npz
files and inline values (--input, --fill), outputs written as .npy/.npz
(--output, --save) and read back with NumPy, expected-output checks
(--expected-output, --rtol, --atol, exit 5), and every error path.
Usage: npy_test.py GRAPHRUN_BINARY"""
import json
import os
import shutil
import sys
import tempfile

from harness import run_binary  # noqa: E402 (tests/harness.py)

try:
    import numpy as np
except ImportError:  # ctest's Python may be a pyenv one; Debian's python3-numpy is under /usr/bin
    if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != "/usr/bin/python3":
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print("npy_test: numpy is not installed (apt-get install python3-numpy)", file=sys.stderr)
    sys.exit(1)

BIN = os.path.abspath(sys.argv[1])
failures = []


def run(*args, cwd):
    return tuple(run_binary(BIN, args, cwd=cwd, timeout=120))


def check(cond, what, detail=""):
    if not cond:
        failures.append(what + (("\n    " + detail.replace("\n", "\n    ")) if detail else ""))


def expect(args, code, cwd, stderr_has=(), stdout_has=()):
    rc, out, err = run(*args, cwd=cwd)
    what = "graphrun " + " ".join(args)
    check(rc == code, f"{what}: exit {rc}, expected {code}", err[-2000:])
    for s in stderr_has:
        check(s in err, f"{what}: stderr lacks {s!r}", err[-2000:])
    for s in stdout_has:
        check(s in out, f"{what}: stdout lacks {s!r}", out[-2000:])
    return out, err


DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "bool": np.bool_}


def sample(name, shape):
    n = int(np.prod(shape))
    if name == "bool":
        return (np.arange(n) % 3 == 0).reshape(shape)
    if name in ("i32", "i64"):
        return (np.arange(n) * 7 - 20).astype(DTYPES[name]).reshape(shape)
    return ((np.arange(n) - 3.25) / 3).astype(DTYPES[name]).reshape(shape)


def test_every_dtype_round_trip(d):
    # One input of each dtype, passed through identity; fed little-endian C,
    # big-endian and Fortran order; read back from --save DIR and an .npz.
    shape = (2, 3, 4)
    lines = [f"{t}_in = input([2, 3, 4], dtype={t})" for t in DTYPES] + [f"{t} = identity({t}_in)" for t in DTYPES]
    lines.append("output " + ", ".join(DTYPES))
    with open(os.path.join(d, "all.graph"), "w") as f:
        f.write("\n".join(lines) + "\n")
    for order in ("C", "F"):
        for endian in ("<", ">"):
            args = ["run", "all.graph", f"--save=out_{order}{endian}", f"--output=@all_{order}{endian}.npz"]
            for t, np_t in DTYPES.items():
                a = sample(t, shape)
                a = a.astype(np.dtype(np_t).newbyteorder(endian) if t != "bool" else np_t)
                if order == "F":
                    a = np.asfortranarray(a)
                np.save(os.path.join(d, f"{t}_{order}{endian}.npy"), a)
                args.append(f"--input={t}_in=@{t}_{order}{endian}.npy")
            rc, out, err = run(*args, cwd=d)
            check(rc == 0, f"every dtype, order {order}, byte order {endian}: exit {rc}", err)
            if rc != 0:
                continue
            z = np.load(os.path.join(d, f"all_{order}{endian}.npz"))
            check(sorted(z.files) == sorted(DTYPES), f"npz members {z.files}")
            for t, np_t in DTYPES.items():
                got = np.load(os.path.join(d, f"out_{order}{endian}", f"{t}.npy"))
                want = sample(t, shape)
                check(got.dtype == np.dtype(np_t) and got.shape == shape and np.array_equal(got, want),
                      f"{t} ({order}, {endian}) read back as {got.dtype}{got.shape}", f"{got}\nvs\n{want}")
                check(np.array_equal(z[t], want) and z[t].dtype == np.dtype(np_t), f"{t} in the npz")


def test_values_and_formats(d):
    with open(os.path.join(d, "m.graph"), "w") as f:
        f.write("x = input([2, 3], dtype=f32)\nw = input([3], dtype=i32)\ny = x * 2 + cast(w, dtype=f32)\n"
                "s = reduce_sum(y)\noutput y, s\n")
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
    w = np.array([1, -2, 3], dtype=np.int32)
    y = x * np.float32(2) + w.astype(np.float32)
    np.save(os.path.join(d, "x.npy"), x)
    np.save(os.path.join(d, "w.npy"), w)
    np.save(os.path.join(d, "y.npy"), y)
    np.save(os.path.join(d, "y_off.npy"), y + np.float32(1e-3) * (np.arange(6).reshape(2, 3) == 4))
    np.savez(os.path.join(d, "in.npz"), x=x, w=w)
    np.savez_compressed(os.path.join(d, "inz.npz"), x=x, w=w)
    np.savez(os.path.join(d, "exp.npz"), y=y)

    # Feeds from .npy, an .npz (stored and deflated), a member by name, inline.
    expect(["run", "m.graph", "--input=x=@x.npy", "--input=w=@w.npy", "--output=y=@got_y.npy"], 0, d)
    check(np.array_equal(np.load(os.path.join(d, "got_y.npy")), y), "--output=y=@got_y.npy holds y")
    expect(["run", "m.graph", "--input=@in.npz", "--expected-output=y=@y.npy"], 0, d)
    expect(["run", "m.graph", "--input=@inz.npz", "--expected-output=@exp.npz"], 0, d)
    expect(["run", "m.graph", "--input=x=@in.npz", "--input=w=[1,-2,3]", "--expected-output=y=@y.npy"], 0, d)
    # An .npz written to --save keeps several outputs; --output=NAME=@FILE.npz one.
    expect(["run", "m.graph", "--input=@in.npz", "--save=both.npz", "--output=s=@s.npz"], 0, d)
    both = np.load(os.path.join(d, "both.npz"))
    check(sorted(both.files) == ["s", "y"], f"--save=both.npz members {both.files}")
    check(np.allclose(both["s"], y.sum(), rtol=1e-6), "--save=both.npz s")
    check(np.load(os.path.join(d, "s.npz")).files == ["s"], "--output=s=@s.npz")
    # --save creates nested directories.
    expect(["run", "m.graph", "--input=@in.npz", "--save=deep/er/dir"], 0, d)
    check(np.array_equal(np.load(os.path.join(d, "deep/er/dir/y.npy")), y), "--save=deep/er/dir/y.npy")

    # Expected outputs: a mismatch is exit 5 with the first index, both values, the errors.
    out, err = expect(["run", "m.graph", "--input=@in.npz", "--expected-output=y=@y_off.npy"], 5, d,
                      stderr_has=["output 'y' differs from y_off.npy: 1 of 6 elements",
                                  "the first at [1,1]: got ", "max abs error 0.000999", "max rel error"])
    expect(["run", "m.graph", "--input=@in.npz", "--expected-output=y=@y_off.npy", "--atol=0.002"], 0, d)
    expect(["run", "m.graph", "--input=@in.npz", "--expected-output=y=@y_off.npy", "--rtol=2e-3"], 0, d)
    expect(["run", "m.graph", "--input=@in.npz", "--expected-output=y=@y_off.npy", "--rtol=1e-4"], 5, d)
    expect(["run", "m.graph", "--input=@in.npz", "--expected-output=s=@x.npy"], 5, d,
           stderr_has=["output 's' is f32[], x.npy holds f32[2,3] (the shapes differ)"])
    expect(["run", "m.graph", "--input=@in.npz", "--expected-output=s=@w.npy"], 5, d,
           stderr_has=["output 's' is f32[], w.npy holds i32[3] (the dtypes differ)"])
    # --format=json: the checks in "expected_outputs", a mismatch in "error" with code 5.
    out, _ = expect(["run", "m.graph", "--input=@in.npz", "--expected-output=y=@y_off.npy", "--format=json"], 5, d)
    doc = json.loads(out)
    eo = doc.get("expected_outputs", {})
    check(eo.get("matched") == 0 and eo.get("checks", [{}])[0].get("first_mismatch", {}).get("index") == [1, 1],
          "json expected_outputs of a mismatch", out)
    check(doc.get("error", {}).get("code") == 5, "json error code 5", out)
    out, _ = expect(["run", "m.graph", "--input=@in.npz", "--expected-output=@exp.npz", "--format=json"], 0, d)
    doc = json.loads(out)
    check(doc.get("expected_outputs", {}).get("matched") == 1 and "error" not in doc, "json of a match", out)

    # NaN equals NaN; infinities match by sign.
    with open(os.path.join(d, "nan.graph"), "w") as f:
        f.write("a = input([4], dtype=f64)\nb = a * 1\n")
    np.save(os.path.join(d, "nan.npy"), np.array([np.nan, np.inf, -np.inf, 1.0]))
    np.save(os.path.join(d, "nan_bad.npy"), np.array([np.nan, -np.inf, -np.inf, 1.0]))
    expect(["run", "nan.graph", "--input=a=@nan.npy", "--expected-output=b=@nan.npy"], 0, d)
    expect(["run", "nan.graph", "--input=a=@nan.npy", "--expected-output=b=@nan_bad.npy"], 5, d,
           stderr_has=["the first at [1]: got inf, expected -inf"])
    # Inline expected values.
    expect(["run", "nan.graph", "--input=a=[1,2,3,4]", "--expected-output=b=[1,2,3,4]"], 0, d)
    expect(["run", "nan.graph", "--input=a=[1,2,3,4]", "--expected-output=b=[1,2,3,5]"], 5, d)

    # --fill: zeros, ones, random (the same values for the same seed).
    expect(["run", "m.graph", "--fill=zeros", "--expected-output=s=0"], 0, d)
    expect(["run", "m.graph", "--fill=ones", "--expected-output=s=18"], 0, d)
    expect(["run", "m.graph", "--fill=zeros", "--input=w=[1,1,1]", "--expected-output=s=6"], 0, d)
    a1 = os.path.join(d, "r1.npz")
    expect(["run", "m.graph", "--fill=random", "--seed=3", "--save=" + a1], 0, d)
    expect(["run", "m.graph", "--fill=random", "--seed=3", "--expected-output=@" + a1, "--rtol=0", "--atol=0"], 0, d)
    expect(["run", "m.graph", "--fill=random", "--seed=4", "--expected-output=@" + a1], 5, d)

    # JSON graphs take the input op too; convert round-trips it.
    out, _ = expect(["convert", "m.graph", "--to=json"], 0, d, stdout_has=['"op": "input"'])
    with open(os.path.join(d, "m.json"), "w") as f:
        f.write(out)
    expect(["run", "m.json", "--input=@in.npz", "--expected-output=y=@y.npy"], 0, d)
    out, _ = expect(["convert", "m.json", "--to=text"], 0, d, stdout_has=["x = input("])
    with open(os.path.join(d, "m2.graph"), "w") as f:
        f.write(out)
    expect(["run", "m2.graph", "--input=@in.npz", "--expected-output=y=@y.npy"], 0, d)
    # check lists the inputs, in text and JSON.
    expect(["check", "m.graph"], 0, d, stdout_has=["inputs (give each with --input=NAME=@FILE.npy", "  x: f32[2,3] (cpu)"])
    out, _ = expect(["check", "m.graph", "--format=json"], 0, d)
    ins = json.loads(out).get("inputs")
    check(ins == [{"name": "x", "dtype": "f32", "shape": [2, 3], "device": "cpu"},
                  {"name": "w", "dtype": "i32", "shape": [3], "device": "cpu"}], f"check json inputs: {ins}")
    # The input counts as a tensor in the statistics, copied in each pass like a literal.
    out, _ = expect(["run", "m.graph", "--input=@in.npz", "--iterations=3", "--format=json"], 0, d)
    doc = json.loads(out)
    check(doc["memory"]["after_teardown"]["cpu"]["allocs"] >= 3 * 2, "inputs allocated each pass", out)


def test_errors(d):
    with open(os.path.join(d, "e.graph"), "w") as f:
        f.write("x = input([2, 3], dtype=f32)\ny = x + 1\n")
    x = np.zeros((2, 3), np.float32)
    np.save(os.path.join(d, "good.npy"), x)
    good = open(os.path.join(d, "good.npy"), "rb").read()
    with open(os.path.join(d, "trunc.npy"), "wb") as f:
        f.write(good[:-5])
    with open(os.path.join(d, "trunc_header.npy"), "wb") as f:
        f.write(good[:40])
    with open(os.path.join(d, "magic.npy"), "wb") as f:
        f.write(b"NOTNUMPY" + good[8:])
    hdr = good[10:good.index(b"}") + 1]
    bad = hdr.replace(b"'shape': (2, 3)", b"'shape': [2, 3]")
    with open(os.path.join(d, "dict.npy"), "wb") as f:
        f.write(good[:8] + len(bad).to_bytes(2, "little") + bad + good[10 + len(hdr):])
    np.save(os.path.join(d, "shape.npy"), np.zeros((3, 2), np.float32))
    np.save(os.path.join(d, "dtype.npy"), np.zeros((2, 3), np.float64))
    np.save(os.path.join(d, "u8.npy"), np.zeros((2, 3), np.uint8))
    np.savez(os.path.join(d, "two.npz"), a=x, b=x)

    run_x = ["run", "e.graph"]
    expect(run_x, 2, d, stderr_has=["e.graph: input 'x' (f32[2,3]) has no value: give --input=x=@FILE.npy (f32[2,3])",
                                    "--fill=random|zeros|ones"])
    expect(run_x + ["--input=x=@trunc.npy"], 2, d,
           stderr_has=["--input=x=@trunc.npy: trunc.npy: offset 128: the data is truncated: shape [2,3] of <f4 needs "
                       "24 bytes, the file has 19"])
    expect(run_x + ["--input=x=@trunc_header.npy"], 2, d,
           stderr_has=["trunc_header.npy: offset 8: header length 118 runs past the end of the file (40 bytes)"])
    expect(run_x + ["--input=x=@magic.npy"], 2, d, stderr_has=["magic.npy: offset 0: bad magic"])
    expect(run_x + ["--input=x=@dict.npy"], 2, d,
           stderr_has=["dict.npy: offset 60: header field 'shape': expected a tuple of integers"])
    expect(run_x + ["--input=x=@shape.npy"], 2, d,
           stderr_has=["--input=x=@shape.npy: shape.npy holds f32[3,2] ('<f4'), but input 'x' is f32[2,3] "
                       "(the shapes differ)"])
    expect(run_x + ["--input=x=@dtype.npy"], 2, d,
           stderr_has=["dtype.npy holds f64[2,3] ('<f8'), but input 'x' is f32[2,3] (the dtypes differ"])
    expect(run_x + ["--input=x=@u8.npy"], 2, d, stderr_has=["dtype '|u1' (uint8) is not one graphrun has"])
    expect(run_x + ["--input=x=@missing.npy"], 2, d, stderr_has=["--input=x=@missing.npy: cannot read missing.npy"])
    expect(run_x + ["--input=xx=@good.npy"], 2, d,
           stderr_has=["--input=xx=@good.npy: e.graph has no input 'xx'; did you mean 'x'?"])
    expect(run_x + ["--input=@two.npz"], 2, d, stderr_has=["--input=@two.npz: e.graph has no input 'a'"])
    expect(run_x + ["--input=x=@two.npz"], 2, d, stderr_has=["two.npz has no member 'x' (it holds a, b)"])
    expect(run_x + ["--input=@good.npy"], 2, d, stderr_has=["holds one unnamed array: write --input=NAME=@good.npy"])
    expect(run_x + ["--input=x=@good.npy", "--input=x=@good.npy"], 2, d, stderr_has=["is already given by"])
    expect(run_x + ["--input=x=[[1,2,3],[4,5]]"], 2, d, stderr_has=["the value is ragged"])
    expect(run_x + ["--input=x=[1,2,3,4,5,6]"], 2, d,
           stderr_has=["the value holds f32[6], but input 'x' is f32[2,3] (the shapes differ)"])
    expect(run_x + ["--input=x=[[1e39,0,0],[0,0,0]]"], 2, d, stderr_has=["out of range for f32"])
    expect(run_x + ["--input=x"], 2, d, stderr_has=["--input=x: expected NAME=@FILE.npy, @FILE.npz or NAME=VALUE"])
    expect(run_x + ["--fill=some"], 2, d)
    # Outputs and expected values name fetched outputs; files must be writable.
    expect(run_x + ["--fill=zeros", "--output=z=@z.npy"], 2, d,
           stderr_has=["--output=z=@z.npy: e.graph has no fetched output 'z'; did you mean 'y'?"])
    expect(run_x + ["--fill=zeros", "--output=@z.npy"], 2, d, stderr_has=["name the output (--output=NAME=@z.npy)"])
    expect(run_x + ["--fill=zeros", "--expected-output=x=@good.npy"], 2, d,
           stderr_has=["e.graph has no fetched output 'x'"])
    expect(run_x + ["--fill=zeros", "--expected-output=y=@trunc.npy"], 2, d, stderr_has=["the data is truncated"])
    expect(run_x + ["--fill=zeros", "--output=y=@nodir/y.npy"], 1, d, stderr_has=["cannot write nodir/y.npy"])
    open(os.path.join(d, "afile"), "w").close()
    expect(run_x + ["--fill=zeros", "--save=afile"], 1, d, stderr_has=["--save=afile: cannot create directory afile"])
    expect(run_x + ["--rtol=-1"], 2, d, stderr_has=["expected a finite number >= 0"])
    expect(["run", "e.graph", "e.graph", "--fill=zeros", "--save=o"], 2, d, stderr_has=["give one graph file"])
    # A file that fails before running reports the error with --format=json too.
    out, _ = expect(run_x + ["--format=json"], 2, d)
    check(json.loads(out).get("error", {}).get("code") == 2, "json error for a missing input", out)
    # Bad graphs: an input needs a shape; dtypes are checked.
    with open(os.path.join(d, "bad.graph"), "w") as f:
        f.write("x = input(dtype=f32)\n")
    expect(["check", "bad.graph"], 3, d, stderr_has=["shape"])
    with open(os.path.join(d, "bad2.graph"), "w") as f:
        f.write("x = input([2], dtype=f16)\n")
    expect(["check", "bad2.graph"], 3, d)
    # --help documents the options and exit code 5.
    expect(["--help"], 0, d, stdout_has=["5 an output differs from --expected-output"])
    expect(["run", "--help"], 0, d, stdout_has=["--input TEXT", "--fill TEXT:{random,zeros,ones}", "--output TEXT",
                                                 "--save TEXT", "--expected-output TEXT", "--rtol TEXT=1e-05",
                                                 "--atol TEXT=1e-08"])


def main():
    d = tempfile.mkdtemp(prefix="graphrun_npy_test_")
    try:
        for t in (test_every_dtype_round_trip, test_values_and_formats, test_errors):
            before = len(failures)
            try:
                t(d)
            except AssertionError as e:  # a timeout or a crash (tests/harness.py)
                failures.append(f"{t.__name__}: {e}")
            print(f"{t.__name__}: {'ok' if len(failures) == before else 'FAILED'}")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    for f in failures:
        print("FAIL:", f)
    print(f"npy_test: {len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
