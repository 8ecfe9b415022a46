#!/usr/bin/env python3
"""graphrun prints values exactly as NumPy's str(array) does.

Usage: print_test.py GRAPHRUN_BINARY

Generates graphs holding many tensors (0-d to 4-d; f32, f64, i32, i64, bool;
tiny, huge, negative, NaN, infinite, mixed-scale values; over 1000 elements)
and runs each twice through the real binary: --format=json gives the exact
values (floats round-trip), which NumPy then prints; the text output must be
NumPy's str() of them byte for byte. The same with --full against NumPy with
threshold=sys.maxsize. Needs NumPy (Debian's python3-numpy: the test re-runs
itself under /usr/bin/python3 when the interpreter it was started with lacks it).
"""
import json
import math
import os
import random
import sys
import tempfile

from harness import run_binary  # noqa: E402 (tests/harness.py)

try:
    import numpy as np
except ImportError:
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    print("FAIL: NumPy is not installed (scripts/deps.sh installs python3-numpy)")
    sys.exit(1)

BIN = sys.argv[1]
NP_DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "bool": np.bool_}
rng = random.Random(15)
failures = []
checked = 0


def literal(v, dtype):
    if dtype == "bool":
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    return str(v)


def nested(flat, shape, dtype):
    if not shape:
        return literal(flat[0], dtype)
    if len(shape) == 1:
        return "[" + ", ".join(literal(v, dtype) for v in flat) + "]"
    step = len(flat) // shape[0] if shape[0] else 0
    return "[" + ", ".join(nested(flat[i * step:(i + 1) * step], shape[1:], dtype) for i in range(shape[0])) + "]"


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


FLOAT_KINDS = {
    "normal": lambda: rng.gauss(0, 1),
    "positive": lambda: abs(rng.gauss(0, 3)),
    "tiny": lambda: rng.gauss(0, 1) * 1e-6,
    "huge": lambda: rng.gauss(0, 1) * 1e20,
    "mixed": lambda: rng.gauss(0, 1) * 10.0 ** rng.randint(-12, 12),
    "ints": lambda: float(rng.randint(-1000, 1000)),
    "halves": lambda: rng.randint(-40, 40) / 4,
    "large": lambda: rng.uniform(-1e8, 1e8),
    "e7": lambda: rng.uniform(0, 1e7),
    "near_1e-4": lambda: rng.choice([1e-4, 1.0001e-4, 9.999e-5, 0.5, 2.0]),
    "ratio": lambda: rng.choice([1.0, 1000.0, 1000.5, 0.001, 999.0]),
    "digits": lambda: rng.choice([1 / 3, 2 / 3, 0.1, 0.7886751842498779, 123456.789, 1e-3, 0.30000000000000004]),
    "special": lambda: rng.choice([math.nan, math.inf, -math.inf, -0.0, 0.0, 1.5, -2.25, 1e-7, 3.0]),
    "nonfinite": lambda: rng.choice([math.nan, math.inf, -math.inf]),
    "nan_only": lambda: math.nan,
    "inf_big": lambda: rng.choice([math.inf, 1e5, 123456.5, -1.0]),
    "zeros": lambda: rng.choice([0.0, -0.0]),
    "extreme": lambda: rng.gauss(0, 1) * 10.0 ** rng.randint(-300, 300),
    "subnormal": lambda: rng.choice([5e-324, 1e-310, 1.4e-45, 1e-40, 1.0, -2.5e-320]),
    "carry": lambda: rng.choice([9.999999999, 9.9999999951, 99999999.5, 0.99999999996, 1e-5, 9.5]),
}
INT_KINDS = {
    "small": lambda: rng.randint(-9, 9),
    "wide": lambda: rng.randint(-10 ** 6, 10 ** 6),
    "positive": lambda: rng.randint(0, 100000),
}
SHAPES = [[], [0], [1], [5], [3, 4], [2, 3, 4], [2, 2, 2, 3], [2, 0, 3], [1, 1], [17], [30], [4, 25],
          [1001], [40, 30], [11, 11, 11], [3, 400], [2, 2, 2, 200], [7, 150], [1, 2000], [2000, 1]]


def cases():
    """(dtype, shape, flat values) for every test tensor."""
    out = []
    for shape in SHAPES:
        n = numel(shape)
        for kind, gen in FLOAT_KINDS.items():
            for dtype in ("f32", "f64"):
                if n > 1100 and kind not in ("normal", "mixed", "special", "large"):
                    continue
                vals = [gen() for _ in range(n)]
                if dtype == "f32":  # in f32's range: larger literals are errors
                    vals = [v if not math.isfinite(v) or abs(v) < 3e38 else 1e37 for v in vals]
                    vals = [v if not math.isfinite(v) or v == 0 or abs(v) > 1e-44 else 1e-44 for v in vals]
                out.append((dtype, shape, vals))
        for kind, gen in INT_KINDS.items():
            for dtype in ("i32", "i64"):
                if n > 1100 and kind != "wide":
                    continue
                out.append((dtype, shape, [gen() for _ in range(n)]))
        out.append(("i32", shape, [rng.choice([-2 ** 31, 2 ** 31 - 1, 0]) for _ in range(n)]))
        out.append(("i64", shape, [rng.choice([-2 ** 63, 2 ** 63 - 1, 7]) for _ in range(n)]))
        out.append(("bool", shape, [rng.random() < 0.5 for _ in range(n)]))
        out.append(("bool", shape, [True] * n))
        out.append(("bool", shape, [False] * n))
    # Rows that wrap at 75 columns, values of every width.
    for width in (1, 5, 9, 13, 20, 24, 25, 26, 37, 38, 76, 80):
        out.append(("f64", [width], [rng.gauss(0, 1) * 10 ** rng.randint(-3, 5) for _ in range(width)]))
        out.append(("f32", [2, width], [rng.gauss(0, 100) for _ in range(2 * width)]))
        out.append(("i64", [3, 2, width], [rng.randint(-10 ** 9, 10 ** 9) for _ in range(6 * width)]))
    return out


def value_text(text, names):
    """{name: the value text printed under `name: ...`} from graphrun's text output."""
    lines = text.split("\n")
    starts = []
    for name in names:
        prefix = name + ": "
        i = next(k for k in range(starts[-1] + 1 if starts else 0, len(lines)) if lines[k].startswith(prefix))
        starts.append(i)
    end = next(k for k in range(len(lines)) if lines[k].startswith("system (cpu)"))
    out = {}
    for j, name in enumerate(names):
        stop = starts[j + 1] if j + 1 < len(names) else end
        out[name] = "\n".join(lines[starts[j] + 1:stop])[:-1]  # the block ends with a blank line
    return out


def from_json(data, dtype):
    def conv(v):
        if isinstance(v, list):
            return [conv(x) for x in v]
        if isinstance(v, str):
            return float(v)  # "nan", "inf", "-inf"
        return v
    return np.array(conv(data), dtype=NP_DTYPES[dtype])


def check_group(group, full):
    global checked
    if not group:
        return
    names = [f"t{i}" for i in range(len(group))]
    src = []
    for name, (dtype, shape, vals) in zip(names, group):
        if isinstance(vals, str):  # an expression the engine computes
            src.append(f"{name} = {vals}")
        else:
            src.append(f"{name} = const({nested(vals, shape, dtype)}, shape={shape}, dtype={dtype})")
    src.append("output " + ", ".join(names))
    with tempfile.NamedTemporaryFile("w", suffix=".graph", delete=False) as f:
        f.write("\n".join(src) + "\n")
        path = f.name
    try:
        extra = ["--full"] if full else []
        t = run_binary(BIN, ["run", path, *extra], timeout=120)
        j = run_binary(BIN, ["run", path, "--format=json"], timeout=120)
    finally:
        os.unlink(path)
    if t.returncode != 0 or j.returncode != 0:
        failures.append(f"graphrun failed ({t.returncode}, {j.returncode}): {t.stderr[:2000]}")
        return
    doc = json.loads(j.stdout)
    texts = value_text(t.stdout, names)
    for name, (dtype, shape, vals), out in zip(names, group, doc["outputs"]):
        arr = from_json(out["data"], dtype).reshape(shape)
        if dtype in ("f32", "f64") and vals and not isinstance(vals, str):
            # The JSON values are the literals read as the dtype, exactly.
            want = np.array(vals, dtype=NP_DTYPES[dtype]).reshape(shape)
            if not np.array_equal(arr, want, equal_nan=True) or not np.array_equal(np.signbit(arr), np.signbit(want)):
                failures.append(f"{dtype}{shape}: JSON values differ from the literals")
        if full:
            with np.printoptions(threshold=sys.maxsize):
                expected = str(arr)
        else:
            expected = str(arr)
        checked += 1
        if texts[name] != expected:
            failures.append(f"{dtype}{shape} full={full}:\n--- graphrun\n{texts[name]}\n--- numpy\n{expected}")


def main():
    all_cases = cases()
    group, size = [], 0
    for c in all_cases:
        group.append(c)
        size += max(1, numel(c[1]))
        if size > 6000 or len(group) >= 60:
            check_group(group, False)
            group, size = [], 0
    if group:
        check_group(group, False)
    # --full: every value, against NumPy with threshold=sys.maxsize.
    big = [c for c in all_cases if numel(c[1]) > 1000]
    for i in range(0, len(big), 8):
        check_group(big[i:i + 8], True)
    # Tensors the engine makes: random values at every scale, 1-d to 4-d.
    made = []
    for k, shape in enumerate([[7], [1500], [30, 40], [5, 6, 7], [3, 4, 5, 6], [2, 3, 400], [100, 100]]):
        for dtype in ("f32", "f64"):
            for scale in ("1", "1e-5", "1e9", "1e-30", "123.456"):
                made.append((dtype, shape, f"random_normal({shape}, seed={k}, dtype={dtype}) * {scale}"))
            made.append((dtype, shape, f"random_uniform({shape}, seed={k}, dtype={dtype})"))
    for i in range(0, len(made), 12):
        check_group(made[i:i + 12], False)
    for i in range(0, len(made), 24):
        check_group([c for c in made[i:i + 24] if numel(c[1]) > 1000], True)
    for failure in failures[:10]:
        print("FAIL", failure)
    print(f"{checked - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
