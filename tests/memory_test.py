#!/usr/bin/env python3
"""The memory story through the real binary (issue 14): peaks that cover the run
only, out-of-memory errors that say where in the run they happened, the
--timeline, the --trace file and `graphrun compare`.
Usage: memory_test.py GRAPHRUN_BINARY SOURCE_DIR"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from harness import asan_build, expect, finish, make_harness, run_measured  # noqa: E402 (tests/harness.py)

BIN = sys.argv[1]
SRC = sys.argv[2]
EXAMPLES = os.path.join(SRC, "scripts", "examples")
STRATEGIES = ("background", "safepoint", "close")
run, test, results = make_harness(BIN, timeout=120)


def without_units_rows(lines):
    """A text table's lines less the rows of binary units under its byte figures."""
    units = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
    def is_units(line):
        toks = line.split()
        return bool(toks) and len(toks) % 2 == 0 and all(
            t in units if i % 2 else t.replace(".", "", 1).isdigit() for i, t in enumerate(toks))
    return [l for l in lines if not is_units(l)]


def examples():
    return sorted(os.path.join(EXAMPLES, f) for f in os.listdir(EXAMPLES) if f.endswith((".graph", ".json")))


def run_json(*args, stdin=None, want=0):
    code, out, err = run("run", *args, "--format=json", stdin=stdin)
    expect(code == want, f"run {args}: exit {code}, expected {want}: {err[-800:]}")
    return [json.loads(l) for l in out.strip().splitlines()], err


# --- item 2: peaks cover the run, not teardown ---------------------------------

@test
def peaks_are_the_same_before_and_after_teardown():
    for path in examples():
        for cleanup in STRATEGIES:
            for m in ("1", "3"):
                docs, _ = run_json(path, f"--cleanup={cleanup}", f"--iterations={m}", "--check-leaks")
                mem = docs[0]["memory"]
                for dev, before in mem["before_teardown"].items():
                    after = mem["after_teardown"][dev]
                    for key in ("peak", "pending_peak"):
                        expect(before[key] == after[key],
                               f"{os.path.basename(path)} --cleanup={cleanup} --iterations={m} {dev}: "
                               f"{key} {before[key]} before teardown, {after[key]} after")


@test
def add_graph_pending_peak_under_background_is_the_runs():
    # The case: 64 before teardown, 128 after, when teardown's own releases counted.
    docs, _ = run_json(os.path.join(EXAMPLES, "add.graph"), "--cleanup=background")
    mem = docs[0]["memory"]
    expect(mem["after_teardown"]["cpu"]["pending_peak"] == mem["before_teardown"]["cpu"]["pending_peak"], mem)
    expect(mem["after_teardown"]["cpu"]["pending_peak"] <= 64, mem)


# --- item 7: where an out-of-memory error happened ----------------------------

NESTED = b"x = zeros([1024])\nrepeat 4 {\n  repeat 20 { x = x + ones([1024]) }\n}\n"


@test
def out_of_memory_names_the_iteration():
    # Under close one pass holds ones (4096), the literal 2 (64) and b (4096): 8256
    # bytes; 7 passes hold 57792, and the 8th's b no longer fits in 64 KiB.
    src = b"a = ones([1024])\nb = a * 2\noutput b\n"
    docs, err = run_json("-", "--memory-limit=64KiB", "--cleanup=close", "--iterations=20", stdin=src, want=1)
    want = "out of memory on cpu at node 'b' (mul), iteration 8 of 20: f32[1024] needs 4096 bytes"
    expect(want in err, err)
    expect(want in docs[0]["error"]["message"], docs[0]["error"])


@test
def out_of_memory_names_each_repeat_pass_outermost_first():
    # Under close a pass holds zeros and 80 x (ones, add): 161 buffers of 4096 bytes.
    # 64 KiB (16 buffers): zeros and 7 inner passes fit, the 8th pass's add does not.
    _, err = run_json("-", "--memory-limit=64KiB", "--cleanup=close", "--iterations=3", stdin=NESTED, want=1)
    expect("<stdin>:3:21: error: out of memory on cpu at node 'x#2' (add), iteration 1 of 3, "
           "pass 1 of 4 of the repeat at line 2, pass 8 of 20 of the repeat at line 3: f32[1024]" in err, err)
    # 1 MiB (256 buffers): the first iteration's 161 fit; in the second, zeros and 47
    # inner passes (2 outer ones and 7 of the third) fit, and the 48th pass's ones does not.
    _, err = run_json("-", "--memory-limit=1MiB", "--cleanup=close", "--iterations=3", stdin=NESTED, want=1)
    expect("at node 'ones' (ones), iteration 2 of 3, pass 3 of 4 of the repeat at line 2, "
           "pass 8 of 20 of the repeat at line 3: f32[1024] needs 4096 bytes" in err, err)


@test
def out_of_memory_in_a_json_graph_names_the_repeats_by_pointer():
    code, js, err = run("convert", "-", "--to=json", stdin=NESTED)
    expect(code == 0, err)
    _, err = run_json("-", "--memory-limit=64KiB", "--cleanup=close", stdin=js.encode(), want=1)
    expect("iteration 1 of 1, pass 1 of 4 of the repeat at /nodes/1, pass 8 of 20 of the repeat at "
           "/nodes/1/body/0: f32[1024]" in err, err)


# --- item 3: --timeline ---------------------------------------------------------

CHAIN50 = b"x = zeros([1024])\nrepeat 50 { x = x + ones([1024]) }\noutput x\n"  # 4 KiB of garbage a repeat pass


@test
def timeline_json_samples_pass_ends_evenly():
    docs, _ = run_json("-", "--timeline", "--iterations=20", "--cleanup=close", stdin=CHAIN50)
    rows = docs[0]["timeline"]
    # 20 x (50 repeat passes + 1) = 1020 pass ends, one row every 21: 48 rows, then the run's end.
    expect(len(rows) == 49, len(rows))
    def index(r):  # which of the 1020 pass ends (from 1) a row is
        return (r["iteration"] - 1) * 51 + (r["repeats"][0]["pass"] if r["repeats"] else 51)
    spacing = {index(b) - index(a) for a, b in zip(rows[:-2], rows[1:-1])}
    expect(spacing == {21} and index(rows[0]) == 21, spacing)
    expect(any(r["end"] == "iteration" and not r["repeats"] for r in rows), "iteration ends are sampled too")
    expect(rows[-1]["end"] == "run end" and rows[-1]["iteration"] == 20, rows[-1])
    expect(rows[0] == {"end": "repeat pass", "iteration": 1, "repeats": [{"at": "line 2", "pass": 21, "passes": 50}],
                       "memory": rows[0]["memory"]}, rows[0])
    in_use = [r["memory"]["cpu"]["in_use"] for r in rows]
    expect(in_use == sorted(in_use) and in_use[-1] > 40 * in_use[0], in_use)  # close grows pass after pass
    before = docs[0]["memory"]["before_teardown"]["cpu"]
    last = rows[-1]["memory"]["cpu"]
    expect(last == {k: before[k] for k in ("in_use", "peak", "pending")}, (last, before))
    for cleanup in ("safepoint", "background"):
        docs, _ = run_json("-", "--timeline", "--iterations=20", f"--cleanup={cleanup}", stdin=CHAIN50)
        rows = docs[0]["timeline"]
        expect(len(rows) <= 51, len(rows))
        peaks = {r["memory"]["cpu"]["peak"] for r in rows}
        expect(max(peaks) <= 2 * 4096 * 4 + 4 * 1048576, (cleanup, peaks))  # bounded, not 20 x 50 x 8 KiB
    docs, _ = run_json("-", "--iterations=2", stdin=CHAIN50)
    expect("timeline" not in docs[0], "no timeline without --timeline")


@test
def timeline_of_a_short_run_has_every_pass_end_and_nested_repeats_outermost_first():
    docs, _ = run_json(os.path.join(SRC, "tests", "scripts", "nested_repeat.graph"), "--timeline", "--cleanup=close")
    rows = docs[0]["timeline"]
    expect(len(rows) == 2 * 3 + 2 + 1, len(rows))  # 6 inner passes, 2 outer, the iteration
    expect([r["end"] for r in rows] == ["repeat pass"] * 8 + ["iteration"], [r["end"] for r in rows])
    expect(rows[2]["repeats"] == [{"at": "line 3", "pass": 1, "passes": 2}, {"at": "line 4", "pass": 3, "passes": 3}],
           rows[2])
    expect(rows[3]["repeats"] == [{"at": "line 3", "pass": 1, "passes": 2}], rows[3])
    expect(rows[-1]["repeats"] == [], rows[-1])


@test
def timeline_text_table():
    code, out, err = run("run", "-", "--timeline", "--iterations=20", "--cleanup=close", stdin=CHAIN50)
    expect(code == 0, err)
    raw = out[out.index("timeline ("):].splitlines()
    expect(any(l.split()[-2:] == ["MiB"] or l.endswith("MiB") for l in raw), "a units row under the byte figures")
    lines = without_units_rows(raw)
    expect(lines[0].startswith("timeline (49 rows for 1020 pass ends, one every 21"), lines[0])
    expect(lines[1].split() == ["iteration", "repeat", "passes", "end", "device", "in_use", "peak", "pending"], lines[1])
    expect(lines[2].split()[:5] == ["1/20", "line", "2:", "21/50", "repeat"], lines[2])
    expect(lines[-1].split()[:4] == ["20/20", "-", "run", "end"], lines[-1])
    expect(len(lines) == 2 + 49, len(lines))


@test
def timeline_of_a_stopped_run_ends_where_it_stopped():
    docs, err = run_json("-", "--timeline", "--iterations=20", "--cleanup=close", "--memory-limit=1MiB",
                         stdin=CHAIN50, want=1)
    rows = docs[0]["timeline"]
    expect(rows[-1]["end"] == "stopped" and rows[-1]["iteration"] == 3, rows[-1])
    expect("iteration 3 of 20, pass 27 of 50 of the repeat at line 2" in err, err)
    expect(rows[-1]["repeats"] == [{"at": "line 2", "pass": 26, "passes": 50}], rows[-1])


# --- item 4: --trace ---------------------------------------------------------------

def load_trace(path):
    with open(path) as f:
        return json.load(f)


def last_counters(events, pid):
    last = {}
    for e in events:
        if e["ph"] == "C" and e["pid"] == pid:
            last[e["name"]] = e["args"]["bytes"]
    return last


@test
def trace_parses_has_node_slices_reclaimer_batches_and_final_counters():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.json")
        for cleanup in STRATEGIES:
            docs, err = run_json("-", f"--trace={path}", "--iterations=3", f"--cleanup={cleanup}", stdin=CHAIN50)
            expect(err == "", err)
            trace = load_trace(path)
            ev = trace["traceEvents"]
            expect(trace["otherData"]["truncated"] is False and trace["otherData"]["dropped_events"] == 0,
                   trace["otherData"])
            nodes = [e for e in ev if e["ph"] == "X" and e["tid"] == 1]
            # zeros, then 50 x (ones, add), each iteration
            expect(len(nodes) == 3 * (1 + 2 * 50), len(nodes))
            add = next(e for e in nodes if e["args"]["op"] == "add")
            expect(add["args"] == {"name": "x#2", "op": "add", "shape": "f32[1024]", "device": "cpu", "bytes": 4096},
                   add)
            expect(all(e["dur"] >= 0 and e["ts"] >= 0 for e in nodes), "negative times")
            names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
            expect(names == {"executing thread", "reclaimer"}, names)
            batches = [e for e in ev if e["ph"] == "X" and e["tid"] == 2]
            if cleanup == "background":
                expect(batches and all(e["name"] == "release batch" and e["args"]["buffers"] > 0 for e in batches),
                       batches[:3])
            else:
                expect(not batches, f"{cleanup} has no reclaimer")
            before = docs[0]["memory"]["before_teardown"]["cpu"]
            last = last_counters(ev, 1)
            expect(last == {"in_use (cpu)": before["in_use"], "pending (cpu)": before["pending"],
                            "reserved (cpu)": before["reserved"]}, (cleanup, last, before))


@test
def trace_of_several_files_has_one_process_each():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.json")
        files = [os.path.join(EXAMPLES, "add.graph"), os.path.join(EXAMPLES, "mlp.graph")]
        docs, _ = run_json(*files, f"--trace={path}", "--cleanup=safepoint")
        ev = load_trace(path)["traceEvents"]
        procs = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
        expect(procs == {1: "graphrun " + files[0], 2: "graphrun " + files[1]}, procs)
        for pid, doc in ((1, docs[0]), (2, docs[1])):
            before = doc["memory"]["before_teardown"]["cpu"]
            expect(last_counters(ev, pid)["in_use (cpu)"] == before["in_use"], pid)


@test
def trace_of_a_huge_run_is_capped_and_says_so():
    src = b"x = zeros([4])\nrepeat 120000 { x = x + 1 }\noutput x\n"  # 240001 node slices alone
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.json")
        docs, err = run_json("-", f"--trace={path}", "--cleanup=safepoint", stdin=src)
        expect("stopped at its cap of 200000 events" in err, err)
        trace = load_trace(path)
        other = trace["otherData"]
        expect(other["truncated"] is True and other["max_events"] == 200000 and other["dropped_events"] > 40000, other)
        ev = trace["traceEvents"]
        expect(200000 <= len(ev) <= 200010, len(ev))
        expect(any(e["ph"] == "i" and e["name"] == "trace capped" for e in ev), "no mark where the trace stops")
        before = docs[0]["memory"]["before_teardown"]["cpu"]
        expect(last_counters(ev, 1)["in_use (cpu)"] == before["in_use"], "the last counters are kept")
        expect(docs[0]["outputs"][0]["data"] == [120000.0] * 4, docs[0]["outputs"][0]["data"])


@test
def trace_is_streamed_into_its_file():
    # At the cap (a 32 MB file) the trace's text is written as it is formatted, never held
    # whole: the run's peak grows by its events (about 1.5 times the file) and no copy of
    # the text (a string stream and its copy took about 4 times the file).
    src = b"x = zeros([4])\nrepeat 120000 { x = x + 1 }\noutput x\n"
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.json")
        code, err, _, plain = run_measured(BIN, ["run", "-", "--cleanup=safepoint"], stdin=src)
        expect(code == 0, f"exit {code}: {err[-800:]}")
        code, err, _, traced = run_measured(BIN, ["run", "-", "--cleanup=safepoint", f"--trace={path}"],
                                            stdin=src)
        expect(code == 0, f"exit {code}: {err[-800:]}")
        size = os.path.getsize(path)
        expect(size > 20_000_000, f"the trace is {size} bytes: too small to tell")
        # Peak memory is the plain build's figure to check (ASan's shadow and
        # quarantine grow with every allocation); tests/CMakeLists.txt runs this suite in both.
        if not asan_build(BIN):
            expect(traced - plain < 2 * size, f"--trace added {(traced - plain) >> 20} MiB to the peak for a "
                                              f"{size >> 20} MiB file")


@test
def trace_to_an_unwritable_path_fails_before_running():
    code, out, err = run("run", os.path.join(EXAMPLES, "add.graph"), "--trace=/nonexistent-dir/t.json")
    expect(code == 1 and "cannot write the trace to /nonexistent-dir/t.json" in err and out == "", (code, out, err))


# --- item 5: graphrun compare -------------------------------------------------

def chain_file(tmp):
    path = os.path.join(tmp, "chain.graph")
    with open(path, "wb") as f:
        f.write(CHAIN50)
    return path


@test
def compare_text_table_has_every_strategy_and_matches_run():
    with tempfile.TemporaryDirectory() as tmp:
        path = chain_file(tmp)
        code, out, err = run("compare", path, "--iterations=20")
        expect(code == 0, err)
        lines = without_units_rows(out.splitlines())
        expect(lines[0].startswith(f"compare: {path}, iterations=20"), lines[0])
        expect(lines[1].split() == ["strategy", "device", "peak", "pending_peak", "pending_at_end", "allocs", "run_ms",
                                    "teardown_ms"], lines[1])
        rows = {l.split()[0]: l.split() for l in lines[2:]}
        expect(set(rows) == set(STRATEGIES), rows)
        for cleanup in ("safepoint", "close"):  # deterministic figures: the same as `run` prints
            docs, _ = run_json(path, "--iterations=20", f"--cleanup={cleanup}")
            before = docs[0]["memory"]["before_teardown"]["cpu"]
            row = rows[cleanup]
            expect([int(row[2]), int(row[4]), int(row[5])] == [before["peak"], before["pending"], before["allocs"]],
                   (cleanup, row, before))
        expect(int(rows["close"][2]) >= 0.9 * 20 * 50 * 2 * 4096, rows["close"])


@test
def compare_json_and_plot():
    with tempfile.TemporaryDirectory() as tmp:
        path = chain_file(tmp)
        svg = os.path.join(tmp, "plot.svg")
        code, out, err = run("compare", path, "--iterations=100", f"--plot={svg}", "--format=json")
        expect(code == 0, err)
        doc = json.loads(out)
        expect(doc["file"] == path and doc["iterations"] == 100, doc.keys())
        expect([s["cleanup"] for s in doc["strategies"]] == list(STRATEGIES), doc["strategies"])
        for s in doc["strategies"]:
            expect(s["executed_nodes"] == 100 * 101, s["executed_nodes"])
            series = s["series"]
            expect(2 <= len(series) <= 2001 and series[0]["node"] == 0 and series[-1]["node"] == 100 * 101,
                   (len(series), series[:2], series[-1:]))
            nodes = [p["node"] for p in series]
            expect(nodes == sorted(nodes), "series in node order")
            expect(set(s["memory"]["cpu"]) == {"peak", "pending_peak", "pending_at_end", "allocs", "frees"}, s["memory"])
        close = doc["strategies"][2]
        expect(close["series"][-1]["in_use"]["cpu"] == close["memory"]["cpu"]["peak"], close["series"][-1])
        import xml.etree.ElementTree as ET
        root = ET.parse(svg).getroot()
        ns = "{http://www.w3.org/2000/svg}"
        expect(root.tag == ns + "svg", root.tag)
        lines = root.findall(f"{ns}polyline")
        expect(len(lines) == 3, len(lines))
        for line in lines:
            expect(len(line.get("points").split()) <= 2001, len(line.get("points").split()))
        texts = [t.text for t in root.iter(f"{ns}text")]
        for want in ("background", "safepoint", "close", "executed nodes", "in_use (MiB)"):
            expect(want in texts, f"{want} not in the chart's text: {texts}")
        expect(any(t and t.endswith(" MiB") for t in texts), "y ticks have units")
        if shutil.which("rsvg-convert"):
            png = os.path.join(tmp, "plot.png")
            p = subprocess.run(["rsvg-convert", svg, "-o", png], capture_output=True, timeout=60)
            expect(p.returncode == 0, p.stderr)
            with open(png, "rb") as f:
                expect(f.read(8) == b"\x89PNG\r\n\x1a\n", "not a PNG")
        else:
            print("     (rendering skipped: no rsvg-convert; scripts/deps.sh installs librsvg2-bin)")


@test
def compare_errors():
    code, out, err = run("compare", "-", "--device=gpu", stdin=CHAIN50)  # read once, warned once
    expect(code == 0 and out.startswith("compare: <stdin>, iterations=1") and err.count("warning:") <= 1, (out, err))
    code, _, err = run("compare", os.path.join(SRC, "tests", "scripts", "error_matmul_inner.graph"))
    expect(code == 3 and err.count("inner dimensions") == 1, err)  # reported once, not per strategy
    with tempfile.TemporaryDirectory() as tmp:
        path = chain_file(tmp)
        # close cannot fit 20 iterations in 1 MiB; the others can: close's row says so, exit 1.
        code, out, err = run("compare", path, "--iterations=20", "--memory-limit=1MiB")
        expect(code == 1 and "close: error: out of memory on cpu" in out, (code, out, err))
        code, out, err = run("compare", path, "--plot=/nonexistent-dir/p.svg")
        expect(code == 1 and "cannot write the plot to /nonexistent-dir/p.svg" in err, (code, err))


sys.exit(finish("memory", results))
