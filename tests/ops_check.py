"""The driver the NumPy-checked op tests share (ops_numpy_test, ops_shape_test,
ops_norm_test, ops_conv_test): write each graph as a .graph script and as JSON,
run both through the binary in one process each, judge every output, and run
the bad inputs that must fail with an exit code and messages.

It needs no NumPy itself: each test passes its own judge.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import run_binary  # noqa: E402 (tests/harness.py)


def write_forms(graphs, d):
    """Each graph g (g.name, g.text(), g.json()) as d/NAME.graph and d/NAME.json."""
    texts, jsons = [], []
    for g in graphs:
        for ext, body, lst in (("graph", g.text(), texts), ("json", g.json(), jsons)):
            path = os.path.join(d, f"{g.name}.{ext}")
            with open(path, "w") as f:
                f.write(body)
            lst.append(path)
    return texts, jsons


def run_json(binary, files, extra=()):
    """`graphrun run --format=json EXTRA FILES`: one document per file."""
    p = run_binary(binary, ["run", "--format=json", *extra, *files], timeout=600)
    lines = [ln for ln in p.stdout.splitlines() if ln.strip()]
    if p.returncode != 0 or len(lines) != len(files):
        sys.stderr.write(p.stderr[-3000:])
        raise SystemExit(f"graphrun run {' '.join(extra)} exited {p.returncode} for {len(files)} files")
    return [json.loads(ln) for ln in lines]


def numpy_judge(compare, to_array, shape_of):
    """A judge of outputs against g.checks[name] = (reference, kind) with
    compare(got, reference, kind, dtype) -> [(index, reference value, got value)]."""
    def judge(g, name, out):
        ref, kind = g.checks[name]
        got = to_array(out)
        if list(got.shape) != list(shape_of(ref)):
            return f"shape {list(got.shape)}, NumPy {list(shape_of(ref))}"
        bad = compare(got, ref, kind, out["dtype"])
        return "; ".join(f"at {i}: NumPy {r!r}, graphrun {v!r}" for i, r, v in bad) or None
    return judge


def check_outputs(graphs, docs_t, docs_j, judge, verbose=False, same_forms=True, labels=("graph", "json")):
    """Judges every output of every graph; with same_forms, the two forms must also
    print the same output. Returns (failures, outputs checked)."""
    failures = checked = 0
    for g, dt, dj in zip(graphs, docs_t, docs_j):
        if "error" in dt or "error" in dj:
            print(f"FAIL {g.name}: {dt.get('error') or dj.get('error')}")
            failures += 1
            continue
        outs_t = {o["name"]: o for o in dt["outputs"]}
        outs_j = {o["name"]: o for o in dj["outputs"]}
        for name in g.outputs:
            checked += 1
            if same_forms and outs_t[name] != outs_j[name]:
                print(f"FAIL {g.name}/{name}: the .graph and the JSON forms differ")
                failures += 1
                continue
            forms = [(labels[0], outs_t[name])] if same_forms else list(zip(labels, (outs_t[name], outs_j[name])))
            for label, out in forms:
                why = judge(g, name, out)
                where = f"{g.name}/{name} ({out['dtype']}" + ("" if same_forms else f", {label}") + ")"
                if why:
                    failures += 1
                    print(f"FAIL {where}: {why}")
                elif verbose:
                    print(f"ok   {where}")
    return failures, checked


def bad_inputs(binary, d, cases, want_exit=3, prefix="error", need_place=False):
    """Each (body, expected message pieces) of cases, run: exit want_exit with every
    piece on stderr (and, with need_place, a FILE:LINE:COL place)."""
    failures = 0
    for k, (body, expected) in enumerate(cases):
        path = os.path.join(d, f"{prefix}_{k}." + ("json" if body.startswith("{") else "graph"))
        with open(path, "w") as f:
            f.write(body)
        p = run_binary(binary, ["run", path], timeout=60)
        err = p.stderr
        expected = [expected] if isinstance(expected, str) else expected
        missing = [e for e in expected if e not in err]
        placed = not need_place or re.search(r"\.(graph|json):\d+:\d+: error", err)
        if p.returncode != want_exit or missing or not placed:
            print(f"FAIL {path}: exit {p.returncode} (want {want_exit}), missing {missing!r} in:\n{err}")
            failures += 1
    return failures
