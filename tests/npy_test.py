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
    np.save(os.path.join(d, "u16.npy"), np.zeros((2, 3), np.uint16))
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
    expect(run_x + ["--input=x=@u16.npy"], 2, d, stderr_has=["dtype '<u2' (uint16) is not one graphrun has"])
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
        f.write("x = input([2], dtype=u16)\n")
    expect(["check", "bad2.graph"], 3, d)
    # --help documents the options and exit code 5.
    expect(["--help"], 0, d, stdout_has=["5 an output differs from --expected-output"])
    expect(["run", "--help"], 0, d, stdout_has=["--input TEXT", "--fill TEXT:{random,zeros,ones}", "--output TEXT",
                                                 "--save TEXT", "--expected-output TEXT", "--rtol TEXT=1e-05",
                                                 "--atol TEXT=1e-08"])


NP_DTYPE_NAME = {np.dtype(v): k for k, v in DTYPES.items()}


def expected_report(d, got, want, rtol=None, atol=None):
    """Feeds `got` through a graph that outputs it and compares it with `want`
    (--expected-output), in JSON and in text. Returns the JSON check, the text
    run's stdout and stderr, and both exit codes."""
    dt = NP_DTYPE_NAME[got.dtype]
    with open(os.path.join(d, "report.graph"), "w") as f:
        f.write(f"a = input({list(got.shape)}, dtype={dt})\noutput a\n")
    np.save(os.path.join(d, "report_got.npy"), got)
    np.save(os.path.join(d, "report_want.npy"), want)
    args = ["run", "report.graph", "--input=a=@report_got.npy", "--expected-output=a=@report_want.npy", "--no-data"]
    if rtol is not None:
        args.append(f"--rtol={rtol!r}")
    if atol is not None:
        args.append(f"--atol={atol!r}")
    rc, out, err = run(*args, "--format=json", cwd=d)
    try:
        c = json.loads(out)["expected_outputs"]["checks"][0]
    except (ValueError, KeyError, IndexError):
        check(False, f"expected-output report of {got!r} vs {want!r}: no JSON check", out + err)
        c = {}
    trc, tout, terr = run(*args, cwd=d)
    return c, rc, tout, terr, trc


def allclose(got, want, rtol, atol):
    with np.errstate(all="ignore"):  # float32 overflow in |got - want| is NumPy's answer too
        return bool(np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True))


def confirm_report(d, got, want, rtol=1e-5, atol=1e-8, numpy_exact=True, what=""):
    """graphrun's report of got vs want, against NumPy: the verdict and count
    are numpy.isclose's; the errors are float64's (Python ints for integers);
    the smallest rtol (atol) passes numpy.allclose with the given atol (rtol),
    the next lower double and 0.99 of it do not; the text line's rounded-up
    figures pass too. Returns the JSON check."""
    c, rc, tout, terr, trc = expected_report(d, got, want, rtol, atol)
    what = f"{what or got.dtype} vs expected (rtol {rtol}, atol {atol})"
    with np.errstate(all="ignore"):
        close = np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    if numpy_exact:
        check(c.get("matched") == bool(close.all()) and rc == (0 if close.all() else 5) and trc == rc,
              f"{what}: matched {c.get('matched')} (exit {rc}, text {trc}), numpy.allclose says {bool(close.all())}",
              json.dumps(c))
        check(c.get("mismatched") == int((~close).sum()),
              f"{what}: mismatched {c.get('mismatched')}, numpy.isclose {int((~close).sum())}", json.dumps(c))
    check(c.get("elements") == got.size, f"{what}: elements {c.get('elements')}")
    # The errors, over the pairs where both are finite; "inf" where expected is 0 and got differs.
    if got.dtype.kind in "iub":
        diffs = [abs(int(x) - int(y)) for x, y in zip(got.ravel().tolist(), want.ravel().tolist())]
        max_abs = float(max(diffs, default=0))
        rels = [float(e) / abs(float(y)) if y else (float("inf") if e else 0.0)
                for e, y in zip(diffs, want.ravel().tolist())]
        check(float(c.get("max_abs_error", -1)).is_integer(), f"{what}: max_abs_error not whole", json.dumps(c))
    else:
        g64, w64 = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
        fin = np.isfinite(g64) & np.isfinite(w64)
        with np.errstate(all="ignore"):
            err = np.abs(g64[fin] - w64[fin])
        max_abs = float(err.max()) if err.size else 0.0
        rels = [e / abs(y) if y else (float("inf") if e else 0.0) for e, y in zip(err.tolist(), w64[fin].tolist())]
    max_rel = max(rels, default=0.0)
    as_json = lambda v: "inf" if v == float("inf") else v  # noqa: E731
    check(c.get("max_abs_error") == as_json(max_abs) and c.get("max_rel_error") == as_json(max_rel),
          f"{what}: max errors {c.get('max_abs_error')}, {c.get('max_rel_error')}; float64 says {max_abs}, {max_rel}",
          json.dumps(c))
    # The smallest tolerances, each with the other as given.
    for key, kw in (("min_rtol", "rtol"), ("min_atol", "atol")):
        v = c.get(key, "missing")
        tol = {"rtol": rtol, "atol": atol}
        if v is None:  # no finite value passes: not even a huge one
            tol[kw] = 1e300
            check(not allclose(got, want, **tol), f"{what}: {key} null, but {kw}=1e300 passes numpy.allclose")
            continue
        if not isinstance(v, float) and not isinstance(v, int):
            check(False, f"{what}: {key} is {v!r}", json.dumps(c))
            continue
        if not numpy_exact:
            continue
        tol[kw] = v
        check(allclose(got, want, **tol), f"{what}: numpy.allclose fails at {key}={v!r}", json.dumps(c))
        if v > 0:
            for lower in (float(np.nextafter(v, 0)), v * 0.99):
                tol[kw] = lower
                check(not allclose(got, want, **tol), f"{what}: numpy.allclose passes below {key}={v!r} ({lower!r})",
                      json.dumps(c))
    # Text: a matched output's line on stdout, a mismatch's on stderr; the figures shown pass.
    name_line = [ln for ln in tout.splitlines() if ln.startswith("expected a: ok, ")]
    fail_line = [ln for ln in terr.splitlines() if "output 'a' differs from report_want.npy" in ln]
    check(len(name_line) == (1 if c.get("matched") else 0) and len(fail_line) == (0 if c.get("matched") else 1),
          f"{what}: text lines {name_line} {fail_line}", tout[-1500:] + terr[-1500:])
    import re
    for line in name_line + fail_line:
        if got.size == 0:
            check("0 elements (nothing to compare)" in line, f"{what}: {line}")
            continue
        m_r = re.search(r"rtol >= (\S+) \(atol ", line)
        m_a = re.search(r"atol >= (\S+) \(rtol ", line)
        check(bool(m_r) == (c.get("min_rtol") is not None) and bool(m_a) == (c.get("min_atol") is not None),
              f"{what}: text figures {line!r} vs {c.get('min_rtol')}, {c.get('min_atol')}")
        if c.get("min_rtol") is None:
            check("no rtol" in line, f"{what}: says no rtol passes: {line!r}")
        if numpy_exact and m_r:
            check(allclose(got, want, rtol=float(m_r.group(1)), atol=atol), f"{what}: {m_r.group(0)} fails", line)
        if numpy_exact and m_a:
            check(allclose(got, want, rtol=rtol, atol=float(m_a.group(1))), f"{what}: {m_a.group(0)} fails", line)
    return c


def test_expected_report(d):
    # How close each compared output is, on success and on failure, as NumPy confirms it.
    rng = np.random.default_rng(27)
    tolerances = [(1e-5, 1e-8), (0.0, 1e-6), (1e-3, 0.0), (3e-6, 1e-7)]
    for dt in (np.float32, np.float64):
        want = rng.standard_normal(3000).astype(dt)
        want[::97] = 0  # where only atol covers a difference
        for scale in (3e-6, 3e-5):
            got = (want * (1 + rng.uniform(-scale, scale, want.size)) + (want == 0) * 4e-9).astype(dt)
            for rtol, atol in tolerances:
                confirm_report(d, got, want, rtol, atol, what=f"{np.dtype(dt).name} noise {scale}")
        # Every magnitude float32 holds: subnormals, the largest, and |got - want| past FLT_MAX.
        if dt == np.float32:
            want = np.array([1e-40, 3e-39, 1e-45, 3e38, 3e38, -3e38, 1.0, 7.0], dt)
            got = np.array([2e-40, 1e-39, 3e-45, 3.3e38, -3e38, -3.4e38, 1.0000001, 7.0], dt)
            for rtol, atol in tolerances + [(1.0, 0.0), (2.0, 0.0)]:
                confirm_report(d, got, want, rtol, atol, what="float32 extremes")
    # The verdict is NumPy's at the boundary: float32 in float32 (the rtol rounds up to float32's
    # 2^-23 here; compared in float64 it would fail).
    one, ulp = np.array([1 + 2.0**-23], np.float32), 2.0**-23
    c = confirm_report(d, one, np.array([1], np.float32), ulp * (1 - 1e-9), 0.0, what="float32 at the boundary")
    check(c.get("matched") is True and c.get("min_rtol", 0) < ulp, "float32 at the boundary matches", json.dumps(c))
    # Expected 0 and got not: no rtol passes, the smallest atol is that difference.
    c = confirm_report(d, np.array([0.5, 1, 2], np.float32), np.array([0, 1, 2], np.float32))
    # (NumPy rounds a float32 output's tolerances to float32: the smallest double that rounds to 0.5.)
    check(c.get("min_rtol") is None and np.float32(c.get("min_atol")) == 0.5 and c.get("max_rel_error") == "inf",
          "expected 0 vs 0.5: min_rtol null, min_atol 0.5 in float32", json.dumps(c))
    _, _, _, terr, _ = expected_report(d, np.array([0.5, 1, 2], np.float32), np.array([0, 1, 2], np.float32))
    check("no rtol passes with atol 1e-08 (at [0]: got 0.5, expected 0); it would pass with atol >= 0.5 (rtol 1e-05)"
          in terr, "expected 0 vs 0.5: the text says why no rtol passes", terr)
    # NaN equals NaN and infinities of one sign pass; a NaN against a number,
    # infinities of other signs or an infinity against a number pass no tolerance.
    nan, inf = float("nan"), float("inf")
    for dt in (np.float32, np.float64):
        same = np.array([nan, inf, -inf, 1.0], dt)
        c = confirm_report(d, same, same.copy(), what="NaN and infinities equal")
        check(c.get("matched") and c.get("max_abs_error") == 0 and c.get("min_rtol") == 0 and c.get("min_atol") == 0,
              "NaN and infinities equal: all zero", json.dumps(c))
        for g, w in (([nan, 1.0], [1.0, 1.0]), ([1.0, inf], [1.0, -inf]), ([inf, 2.0], [1.0, 2.0]),
                     ([2.0, 1.0], [2.0, nan]), ([0.5, -inf], [0.0, 3.0])):
            c = confirm_report(d, np.array(g, dt), np.array(w, dt), what=f"{g} vs {w}")
            check(c.get("min_rtol") is None and c.get("min_atol") is None, f"{g} vs {w}: no tolerance", json.dumps(c))
        _, _, _, terr, _ = expected_report(d, np.array([1.0, nan], dt), np.array([1.0, 1.0], dt))
        check("no rtol or atol passes (at [1]: got nan, expected 1)" in terr, "NaN vs 1: the text says so", terr)
    # Integers and bools: exact whole errors, also where an i64 difference overflows int64.
    want = rng.integers(-1000, 1000, 500).astype(np.int32)
    want[::50] = 0
    got = want + rng.integers(-2, 3, 500).astype(np.int32)
    for rtol, atol in tolerances + [(0.0, 0.0), (0.01, 1.0)]:
        confirm_report(d, got, want, rtol, atol, what="int32")
        confirm_report(d, got.astype(np.int64) * 2**40, want.astype(np.int64) * 2**40, rtol, atol, what="int64")
    lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    c = confirm_report(d, np.array([lo, 2**62 + 1, 5], np.int64), np.array([hi, 2**62, 5], np.int64), 0.0, 0.0,
                       numpy_exact=False, what="int64 past 2^53")
    check(c.get("max_abs_error") == float(2**64 - 1) and c.get("mismatched") == 2 and not c.get("matched"),
          "int64: |min - max| is 2^64 - 1, 2^62 + 1 vs 2^62 differs by 1 (exact, unlike float64)", json.dumps(c))
    c = confirm_report(d, np.array([2**62 + 1], np.int64), np.array([2**62], np.int64), 0.0, 1.0, numpy_exact=False)
    check(c.get("matched") and c.get("max_abs_error") == 1 and c.get("min_atol") == 1 and c.get("min_rtol") == 0,
          "int64: a difference of 1 at 2^62 is 1", json.dumps(c))
    b = np.array([[True, False, True], [False, False, True]])
    c = confirm_report(d, b, b.copy(), what="bool equal")
    check(c.get("matched") and c.get("max_abs_error") == 0 and c.get("max_rel_error") == 0, "bool equal: error 0",
          json.dumps(c))
    _, _, tout, _, _ = expected_report(d, b, b.copy())
    check("expected a: ok, 6 elements, max abs error 0, max rel error 0; passes with rtol >= 0 (atol 1e-08) or "
          "atol >= 0 (rtol 1e-05)" in tout, "bool equal: the ok line", tout)
    c = confirm_report(d, ~b, b, what="bool differs")
    check(c.get("max_abs_error") == 1 and c.get("max_rel_error") == "inf" and c.get("min_rtol") is None
          and c.get("min_atol") == 1, "bool differs: error 1, rel inf, atol 1", json.dumps(c))
    # No elements: nothing differs; a scalar.
    for dt in (np.float32, np.int64, np.bool_):
        e = np.zeros((2, 0), dt)
        c = confirm_report(d, e, e.copy(), what=f"{np.dtype(dt).name}[2,0]")
        check(c.get("matched") and c.get("elements") == 0 and c.get("mismatched") == 0 and c.get("min_rtol") == 0
              and c.get("min_atol") == 0 and c.get("max_abs_error") == 0, "no elements", json.dumps(c))
    confirm_report(d, np.array(2.5, np.float64), np.array(2.5000001, np.float64), what="f64 scalar")


def main():
    d = tempfile.mkdtemp(prefix="graphrun_npy_test_")
    try:
        for t in (test_every_dtype_round_trip, test_values_and_formats, test_expected_report, test_errors):
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
