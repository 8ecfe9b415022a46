#!/usr/bin/env python3
"""Output through the real binary (issue 15 items 5, 7, 8): streamed JSON
(valid, complete, in bounded memory), --no-data summaries, null figures and
every diagnostic for a file that failed before its session opened, the
progress line (--progress through a pipe), and `graphrun dot`.

Usage: output_test.py GRAPHRUN_BINARY SOURCE_DIR"""
import array
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from harness import expect, finish, make_harness  # noqa: E402 (tests/harness.py)

BIN = sys.argv[1]
SRC = sys.argv[2]
EXAMPLES = os.path.join(SRC, "scripts", "examples")
run, test, results = make_harness(BIN, timeout=300)


def write(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def flatten(x):
    if isinstance(x, list):
        for y in x:
            yield from flatten(y)
    else:
        yield x


def measured(args):
    """(seconds, peak resident KiB) of graphrun with stdout thrown away, in a
    child of its own so that the peak is graphrun's alone."""
    code = ("import resource, subprocess, sys, time\n"
            "t = time.perf_counter()\n"
            "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
            "print(r.returncode, time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    out = subprocess.run([sys.executable, "-c", code, BIN, *args], capture_output=True, text=True, timeout=600).stdout
    rc, secs, rss = out.split()
    expect(rc == "0", f"graphrun {args} exited {rc}")
    return float(secs), int(rss)


@test
def json_of_a_large_output_is_complete_and_matches_its_summary():
    src = b"x = random_normal([300, 700], seed=3)\ny = x * 1e-3\nz = cast(x * 100, dtype=i64)\noutput x, y, z\n"
    code, out, err = run("run", "-", "--format=json", stdin=src)
    expect(code == 0, err)
    lines = out.splitlines()
    expect(len(lines) == 1, "one document per file, on one line")
    doc = json.loads(lines[0])
    code, out2, err = run("run", "-", "--format=json", "--no-data", stdin=src)
    expect(code == 0, err)
    summary = json.loads(out2)
    for o, s in zip(doc["outputs"], summary["outputs"]):
        expect(len(o["data"]) == 300 and all(len(r) == 700 for r in o["data"]), o["name"])
        raw = list(flatten(o["data"]))
        vals = raw
        if o["dtype"] == "f32":  # the shortest f32 digits read as double: back to the f32 values
            vals = list(array.array("f", raw))
        expect("data" not in s and s["shape"] == [300, 700] and s["dtype"] == o["dtype"], s)
        sm = s["summary"]
        expect(sm["min"] == min(raw) and sm["max"] == max(raw) and sm["nan_count"] == 0, (o["name"], sm))
        expect(math.isclose(sm["mean"], math.fsum(vals) / len(vals), rel_tol=1e-9, abs_tol=1e-12), (o["name"], sm))
    expect(all(isinstance(v, int) for v in flatten(doc["outputs"][2]["data"])), "i64 data are integers")


@test
def no_data_text_and_nan_counts():
    src = b"a = const([1.5, nan, -2, inf], dtype=f32)\nb = a * 1\nc = const([nan, nan], dtype=f64)\noutput b, c\n"
    code, out, err = run("run", "-", "--no-data", stdin=src)
    expect(code == 0, err)
    expect("b: f32[4] (cpu)\nmin -2.0, max inf, mean inf, nan_count 1\n" in out, out)
    expect("c: f64[2] (cpu)\nmin null, max null, mean null, nan_count 2\n" in out, out)
    code, out, err = run("run", "-", "--no-data", "--format=json", stdin=src)
    doc = json.loads(out)
    expect(doc["outputs"][0]["summary"] == {"min": -2.0, "max": "inf", "mean": "inf", "nan_count": 1}, doc)
    expect(doc["outputs"][1]["summary"] == {"min": None, "max": None, "mean": None, "nan_count": 2}, doc)


@test
def full_prints_every_value():
    code, out, err = run("run", "-", "--full", stdin=b"x = range(1500, dtype=i32)\n")
    expect(code == 0, err)
    expect("..." not in out and " 1499]" in out and out.count("\n") > 100, out[:300])
    code, out, err = run("run", "-", stdin=b"x = range(1500, dtype=i32)\n")
    expect("[   0    1    2 ... 1497 1498 1499]" in out, out[:300])


@test
def a_file_that_fails_before_its_session_has_null_figures_and_every_diagnostic():
    with tempfile.TemporaryDirectory() as tmp:
        bad = write(tmp, "bad.graph", "a = [1, 2]\nb = a + zz\nc = nosuchop(a)\nd = a @ yy\n")
        code, out, err = run("run", bad, os.path.join(EXAMPLES, "add.graph"), "--format=json")
        expect(code == 3, f"exit {code}")
        docs = [json.loads(l) for l in out.splitlines()]
        bad_doc, good = docs
        expect(bad_doc["memory"] is None and bad_doc["system"] is None, bad_doc)
        expect(bad_doc["session"]["run_ms"] is None and bad_doc["session"]["teardown_ms"] is None, bad_doc)
        expect(bad_doc["outputs"] == [], bad_doc)
        e = bad_doc["error"]
        expect(e["code"] == 3 and "zz" in e["message"] and "\n" not in e["message"], e)
        diags = e["diagnostics"]
        expect(len(diags) == 3, diags)
        expect("zz" in diags[0] and "nosuchop" in diags[1] and "yy" in diags[2], diags)
        # Each in full, as printed on stderr: the source line and the caret too.
        expect(all(d in err for d in diags) and "\n    b = a + zz\n" in diags[0] and "^" in diags[0], (diags, err))
        expect(isinstance(good["memory"]["after_teardown"]["cpu"]["in_use"], int), good)
        expect(isinstance(good["session"]["run_ms"], float) and "error" not in good, good)
        # An unreadable file: a runtime error with no figures either.
        code, out, err = run("run", os.path.join(tmp, "missing.graph"), "--format=json")
        doc = json.loads(out)
        expect(code == 1 and doc["memory"] is None and doc["error"]["diagnostics"] == [doc["error"]["message"] + "\n"]
               or code == 1 and doc["memory"] is None and len(doc["error"]["diagnostics"]) == 1, doc)


@test
def diagnostics_of_bytes_that_are_not_utf8_are_still_valid_json():
    for cmd in ("run", "check"):
        code, out, err = run(cmd, "-", "--format=json", stdin=b"a = [1]\nb = a + \xff\nc = zz\n")
        doc = json.loads(out)
        expect(code == 3 and len(doc["error"]["diagnostics"]) == 2, (cmd, doc))
        expect("0xFF" in doc["error"]["diagnostics"][0] and "zz" in doc["error"]["diagnostics"][1], doc)


@test
def a_run_that_fails_in_its_session_keeps_its_figures():
    code, out, err = run("run", "-", "--format=json",
                         stdin=b"a = const([1, 2], dtype=i32)\nb = a / const([1, 0], dtype=i32)\n")
    doc = json.loads(out)
    expect(code == 1 and doc["memory"]["after_teardown"]["cpu"]["in_use"] == 0, doc)
    expect(len(doc["error"]["diagnostics"]) == 1 and "division by zero" in doc["error"]["diagnostics"][0], doc)


@test
def json_streams_in_bounded_memory():
    # 16M f32 values: ~175 MB of JSON text. The peak memory must be the
    # tensors' (held once by the session, once on the host) plus a bounded
    # buffer, as with --no-data: not a document of the values.
    args = ["run", "-"]
    with tempfile.TemporaryDirectory() as tmp:
        path = write(tmp, "big.graph", "x = random_normal([4000, 4000])\n")
        t_json, rss_json = measured(["run", path, "--format=json"])
        t_none, rss_none = measured(["run", path, "--format=json", "--no-data"])
    print(f"     16M f32 values: JSON {t_json:.2f} s, {rss_json // 1024} MiB peak; "
          f"--no-data {t_none:.2f} s, {rss_none // 1024} MiB peak; printing took about {t_json - t_none:.2f} s")
    expect(rss_json - rss_none < 48 * 1024, f"JSON peak {rss_json} KiB vs {rss_none} KiB without the data")
    del args


_long_repeat = {}


def long_repeat():
    """A `repeat COUNT { x = x + 1 }` long enough that --progress shows its line
    (a run over 1 s) on this build (the ASan build is about 8 times slower than
    the optimised one): from 1M passes, scaled by the time each try took until
    one takes 1.3 s. Returns (count, the --progress run's stdout and stderr),
    once."""
    if not _long_repeat:
        count = 1000000
        while True:
            src = f"x = zeros([64])\nrepeat {count} {{ x = x + 1 }}\n".encode()
            start = time.perf_counter()
            code, out, err = run("run", "-", "--progress", stdin=src)
            took = time.perf_counter() - start
            expect(code == 0, err)
            if took >= 1.3:
                break
            expect(count < 10**10, f"repeat {count} took only {took:.2f} s")
            count = int(count * min(8.0, max(1.5, 1.8 / max(took, 0.05))))
        _long_repeat.update(count=count, out=out, err=err)
    return _long_repeat["count"], _long_repeat["out"], _long_repeat["err"]


@test
def progress_line_through_a_pipe_when_asked():
    count, out, err = long_repeat()
    expect(re.search(rf"\rgraphrun: <stdin>: pass 1/1, repeat at line 2: \d+/{count}, \d+\.\d s", err), repr(err[:500]))
    # Cleared at the end: the last thing on stderr is blanks between two \r.
    expect(re.search(r"\r +\r$", err), repr(err[-200:]))
    expect("x: f32[64] (cpu)" in out and "\r" not in out, "stdout is untouched")


@test
def no_progress_line_in_a_pipe_or_when_refused():
    count = long_repeat()[0]
    src = f"x = zeros([64])\nrepeat {count} {{ x = x + 1 }}\n".encode()
    for extra in ([], ["--no-progress"], ["--format=json"], ["--progress", "--no-progress"]):
        code, out, err = run("run", "-", *extra, stdin=src)
        expect(code == 0 and "\r" not in err and "pass 1/1" not in err, (extra, repr(err[:300])))


@test
def progress_clears_its_line_before_a_message():
    # A runtime error after a long loop: the message starts on a clean line.
    # (Twice the calibrated loop, so that the line shows whatever the load.)
    count = 2 * long_repeat()[0]
    src = (f"x = zeros([64])\nrepeat {count} {{ x = x + 1 }}\n"
           "y = cast(x, dtype=i32) / const(0, dtype=i32)\n").encode()
    code, out, err = run("run", "-", "--progress", stdin=src)
    expect(code == 1 and "division by zero" in err, err[-500:])
    line = next(l for l in err.split("\n") if "division by zero" in l)
    # On a terminal, what shows is the text after the last \r, over blanks.
    before, _, shown = line.rpartition("\r")
    expect(shown.startswith("<stdin>:3:"), repr(line))
    if before:
        expect(before.rpartition("\r")[2].strip() == "", f"the line was not blanked: {line!r}")


def dot_structure(text):
    nodes = re.findall(r"^\s*n(\d+) \[", text, re.M)
    edges = re.findall(r"^\s*n(\d+) -> n(\d+)", text, re.M)
    clusters = re.findall(r"subgraph cluster_", text)
    return nodes, edges, clusters


@test
def dot_of_every_example_parses_and_has_every_node_and_edge():
    have_dot = shutil.which("dot") is not None
    if not have_dot:
        print("     (Graphviz's dot is not installed: scripts/deps.sh installs it; only the structure is checked)")
    for name in sorted(os.listdir(EXAMPLES)):
        if not name.endswith((".graph", ".json")):
            continue
        path = os.path.join(EXAMPLES, name)
        code, out, err = run("dot", path)
        expect(code == 0, (name, err))
        code, listing, err = run("check", path, "--format=json")
        check = json.loads(listing)
        nodes, edges, clusters = dot_structure(out)
        carried = out.count("shape=ellipse")
        expect(len(nodes) == len(check["nodes"]) + carried, (name, len(nodes), len(check["nodes"])))
        expect(len(set(nodes)) == len(nodes), f"{name}: a node written twice")
        operands = sum(len(n["inputs"]) for n in check["nodes"])
        expect(len(edges) == operands + 2 * carried, (name, len(edges), operands, carried))
        expect(all(a in nodes and b in nodes for a, b in edges), f"{name}: an edge to an unknown node")
        repeats = len({n["repeat"] for n in check["nodes"] if "repeat" in n})
        expect(len(clusters) >= repeats, (name, len(clusters), repeats))
        for n in check["nodes"]:
            label = f'{n["name"]}\\n{n["op"]}\\n{n["dtype"]}[{",".join(map(str, n["shape"]))}]\\n'
            expect(label in out, (name, label))
        if have_dot:
            p = subprocess.run(["dot", "-Tsvg"], input=out.encode(), capture_output=True, timeout=60)
            expect(p.returncode == 0 and b"<svg" in p.stdout, (name, p.stderr[:500]))


@test
def dot_takes_placement_options_and_reports_errors():
    path = os.path.join(EXAMPLES, "placement.graph")
    code, out, err = run("dot", path, "--device=cpu", "--fetch=wv")
    expect(code == 0 and 'fillcolor="lightblue"' in out and "palegreen" not in out, out[:500])
    expect(out.count("peripheries=2") == 1, "the one fetched output")
    code, out, err = run("dot", "-", stdin=b"a = [1, 2]\nb = a + zz\n")
    expect(code == 3 and out == "" and "zz" in err, (code, out, err))
    code, out, err = run("dot", path, "--fetch=nosuch")
    expect(code == 2 and "nosuch" in err, (code, err))
    code, out, err = run("dot", path, "--no-soft-placement", "--device=gpu")
    expect(code in (0, 1), (code, err))


sys.exit(finish("output", results))
