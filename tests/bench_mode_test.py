#!/usr/bin/env python3
"""The benchmark mode (issue 25): `run --bench [--warmup=N] [--iterations=M]`
and `--profile=nodes`, through the real binary. Checks that the figures are
there and consistent with each other and with the run (count, warm-up left
out, order of the percentiles, nodes and their calls), and the usage errors;
never how fast anything is. Usage: bench_mode_test.py GRAPHRUN SOURCE_DIR"""
import json
import os
import re
import sys
import tempfile

from harness import expect, finish, make_harness  # noqa: E402 (tests/harness.py)

BIN = sys.argv[1]
SRC = sys.argv[2]
EXAMPLES = os.path.join(SRC, "scripts", "examples")
MLP = os.path.join(EXAMPLES, "mlp.graph")
POWER = os.path.join(EXAMPLES, "power_iteration.graph")  # a repeat of 50 passes
run, test, results = make_harness(BIN, timeout=60)
LATENCY = ("min_ms", "median_ms", "p90_ms", "p99_ms", "max_ms")
TMP = tempfile.mkdtemp(prefix="graphrun-bench-")


def run_json(*args):
    code, out, err = run("run", "--format=json", *args)
    docs = [json.loads(line) for line in out.splitlines()]
    return code, docs, err


def run_ok_json(*args):
    code, docs, err = run_json(*args)
    expect(code == 0, f"{args}: exit {code}: {err}")
    expect(len(docs) == 1, f"{args}: {len(docs)} documents")
    return docs[0]


def check_latency(b, passes, warmup):
    """The bench object's figures: their count, order and arithmetic."""
    expect(b["passes"] == passes and b["warmup"] == warmup and b["sampled"] == passes, b)
    figures = [b[k] for k in LATENCY]
    expect(all(isinstance(v, float) and v >= 0 for v in figures), b)
    expect(figures == sorted(figures), f"min <= median <= p90 <= p99 <= max fails: {b}")
    expect(b["min_ms"] <= b["mean_ms"] <= b["max_ms"], b)
    # The total is the passes' sum: between passes * min and passes * max, and mean * passes.
    expect(passes * b["min_ms"] * (1 - 1e-9) <= b["total_ms"] <= passes * b["max_ms"] * (1 + 1e-9), b)
    expect(abs(b["mean_ms"] * passes - b["total_ms"]) <= 1e-9 * max(1.0, b["total_ms"]), b)
    expect(abs(b["passes_per_s"] - passes * 1000 / b["total_ms"]) <= 1e-6 * b["passes_per_s"], b)
    expect(b["gpu_waits_per_node"] is False, b)


def graph_nodes(path):
    """Every node `check` lists, by name: {name: node}."""
    code, out, err = run("check", "--format=json", "--device=cpu", path)
    expect(code == 0, err)
    return {n["name"]: n for n in json.loads(out)["nodes"]}


def text_section(out, title):
    """The lines of the text section whose header starts with `title`, header first."""
    lines = out.splitlines()
    starts = [i for i, l in enumerate(lines) if l.startswith(title)]
    expect(len(starts) == 1, f"{len(starts)} sections '{title}' in:\n{out}")
    i = starts[0]
    section = [lines[i]]
    for line in lines[i + 1:]:
        if not line.startswith("  "):
            break
        section.append(line)
    return section


@test
def json_bench_counts_the_measured_passes_only():
    doc = run_ok_json("--device=cpu", "--bench", "--warmup=3", "--iterations=7", MLP)
    check_latency(doc["bench"], passes=7, warmup=3)
    # The session ran the warm-up passes too; the measured ones lie inside its run time.
    expect(doc["session"]["iterations"] == 10, doc["session"])
    expect(doc["bench"]["total_ms"] <= doc["session"]["run_ms"] * (1 + 1e-9), (doc["bench"], doc["session"]))
    expect(list(doc.keys()).index("bench") == list(doc.keys()).index("session") + 1, list(doc.keys()))
    # Outputs are the last pass's, as without --bench.
    plain = run_ok_json("--device=cpu", MLP)
    expect(doc["outputs"] == plain["outputs"], "outputs differ with --bench")


@test
def defaults_are_two_warmup_and_ten_measured():
    doc = run_ok_json("--device=cpu", "--bench", MLP)
    check_latency(doc["bench"], passes=10, warmup=2)
    expect(doc["session"]["iterations"] == 12, doc["session"])
    doc = run_ok_json("--device=cpu", "--bench", "--warmup=0", "--iterations=1", MLP)
    check_latency(doc["bench"], passes=1, warmup=0)
    b = doc["bench"]
    expect(len({b[k] for k in LATENCY + ("mean_ms", "total_ms")}) == 1, f"one pass, one figure: {b}")
    expect(doc["session"]["iterations"] == 1, doc["session"])


@test
def eager_mode_and_every_strategy_bench_too():
    for extra in (["--mode=eager"], ["--cleanup=close"], ["--cleanup=safepoint"]):
        doc = run_ok_json("--device=cpu", "--bench", "--warmup=1", "--iterations=4", *extra, POWER)
        check_latency(doc["bench"], passes=4, warmup=1)
        expect(doc["session"]["iterations"] == 5, (extra, doc["session"]))


@test
def text_section_after_the_session_line():
    code, out, err = run("run", "--device=cpu", "--bench", "--warmup=3", "--iterations=5", MLP)
    expect(code == 0, err)
    lines = out.splitlines()
    session = [i for i, l in enumerate(lines) if l.startswith("session: ")]
    expect(len(session) == 1 and " iterations=8 " in lines[session[0]], out)
    section = text_section(out, "bench (")
    expect(lines.index(section[0]) == session[0] + 1, "the bench section follows the session line")
    expect(section[0] == "bench (latency per pass; 3 warm-up passes before, not counted):", section[0])
    head = section[1].split()
    expect(head == ["passes", "min", "ms", "median", "ms", "mean", "ms", "p90", "ms", "p99", "ms", "max", "ms",
                    "passes/s"], section[1])
    row = section[2].split()
    expect(len(row) == 8 and row[0] == "5", section[2])
    figures = [float(v) for v in row[1:]]
    mn, median, mean, p90, p99, mx, per_s = figures
    expect(mn <= median <= p90 <= p99 <= mx and mn <= mean <= mx, section[2])
    expect(per_s > 0, section[2])
    expect(len(section) == 3, f"no notes on the CPU: {section}")


def profile_lines(out):
    """The per-op profile section: as plain --profile prints it."""
    return text_section(out, "profile (per op")


@test
def plain_profile_is_unchanged():
    code, out, err = run("run", "--device=cpu", "--profile", MLP)  # a flag: MLP stays the file
    expect(code == 0, err)
    expect("per node" not in out and "bench" not in out, out)
    ops = profile_lines(out)
    expect(ops[1].split() == ["op", "count", "time", "ms", "bytes"], ops)
    code, out2, err = run("run", "--device=cpu", "--profile=ops", MLP)
    expect(code == 0, err)
    # The same ops (their order is by time, which varies from run to run).
    expect(sorted(l.split()[0] for l in profile_lines(out2)) == sorted(l.split()[0] for l in ops), out2)
    doc = run_ok_json("--device=cpu", "--profile", MLP)
    expect(list(doc.keys()) == ["file", "outputs", "memory", "system", "session", "profile"], list(doc.keys()))
    doc = run_ok_json("--device=cpu", MLP)
    expect(list(doc.keys()) == ["file", "outputs", "memory", "system", "session"], list(doc.keys()))
    expect(list(doc["session"].keys()) == ["cleanup", "iterations", "run_ms", "teardown_ms"], doc["session"])


@test
def node_profile_lists_every_node_with_its_calls():
    nodes = graph_nodes(POWER)
    in_repeat = {"y", "mul", "reduce_sum", "sqrt", "x#2"}  # the repeat body's nodes, as check names them
    expect(in_repeat <= nodes.keys(), sorted(nodes))
    doc = run_ok_json("--device=cpu", "--bench", "--warmup=2", "--iterations=3", "--profile=nodes", POWER)
    prof = doc["node_profile"]
    expect(prof["passes"] == 3 and prof["pass_ms"] == doc["bench"]["total_ms"], prof)
    got = {n["name"]: n for n in prof["nodes"]}
    # Every node runs in every pass (SPEC section 4): all of check's nodes, and no other.
    expect(got.keys() == nodes.keys(), (sorted(got), sorted(nodes)))
    for name, n in got.items():
        # Warm-up passes are not counted: 3 measured passes, 50 repeat passes in each.
        want = 150 if name in in_repeat else 3
        expect(n["calls"] == want, f"{name}: {n['calls']} calls, expected {want}")
        expect(n["op"] == nodes[name]["op"] and n["shape"] == nodes[name]["shape"] and
               n["dtype"] == nodes[name]["dtype"] and n["device"] == "cpu", (n, nodes[name]))
        expect(abs(n["ms_per_call"] * n["calls"] - n["ms"]) <= 1e-9 * max(1.0, n["ms"]), n)
    ms = [n["ms"] for n in prof["nodes"]]
    expect(ms == sorted(ms, reverse=True), f"not slowest first: {ms}")
    # Nodes run within the passes: their time and shares add up to at most the passes'.
    expect(sum(ms) <= prof["pass_ms"] * (1 + 1e-9), (sum(ms), prof["pass_ms"]))
    expect(sum(n["share"] for n in prof["nodes"]) <= 1 + 1e-9, prof["nodes"])
    expect("profile" in doc and doc["profile"], "the per-op totals stay with --profile=nodes")


@test
def node_profile_without_bench_counts_every_pass():
    doc = run_ok_json("--device=cpu", "--iterations=4", "--profile=nodes", MLP)
    expect("bench" not in doc, list(doc.keys()))
    prof = doc["node_profile"]
    expect(prof["passes"] == 4, prof)
    nodes = graph_nodes(MLP)
    expect({n["name"] for n in prof["nodes"]} == nodes.keys(), prof["nodes"])
    expect(all(n["calls"] == 4 for n in prof["nodes"]), prof["nodes"])
    # The per-op totals count the same node runs.
    per_op = {}
    for n in prof["nodes"]:
        per_op[n["op"]] = per_op.get(n["op"], 0) + n["calls"]
    expect(per_op == {p["op"]: p["count"] for p in doc["profile"]}, (per_op, doc["profile"]))


@test
def node_profile_text_lists_the_slowest_twenty():
    # 30 nodes: the text table shows 20 of them, JSON all 30.
    path = os.path.join(TMP, "chain.graph")
    with open(path, "w") as f:
        f.write("x0 = ones([64])\n")
        for i in range(1, 30):
            f.write(f"x{i} = x{i - 1} * 1.5\n")
        f.write("output x29\n")
    nodes = graph_nodes(path)
    expect(len(nodes) >= 30, len(nodes))
    code, out, err = run("run", "--device=cpu", "--iterations=2", "--profile=nodes", path)
    expect(code == 0, err)
    section = text_section(out, "profile (per node")
    expect(section[0] == f"profile (per node, slowest first, over 2 passes; the slowest 20 of {len(nodes)}):",
           section[0])
    expect(section[1].split() == ["node", "op", "output", "calls", "total", "ms", "ms/call", "share"], section[1])
    rows = section[2:-1]
    expect(len(rows) == 20, f"{len(rows)} rows")
    for r in rows:
        cells = r.split()
        expect(cells[0] in nodes and cells[3] == "2" and cells[-1].endswith("%"), r)
        expect(cells[1] == nodes[cells[0]]["op"], r)
    ms = [float(r.split()[4]) for r in rows]
    expect(ms == sorted(ms, reverse=True), ms)
    expect(re.fullmatch(rf"  all {len(nodes)} nodes: [0-9.]+ ms, [0-9.]+% of the passes' [0-9.]+ ms .*", section[-1]),
           section[-1])
    # The per-op section comes first, unchanged.
    ops = profile_lines(out)
    expect(out.index(ops[0]) < out.index(section[0]), out)
    doc = run_ok_json("--device=cpu", "--iterations=2", "--profile=nodes", path)
    expect(len(doc["node_profile"]["nodes"]) == len(nodes), len(doc["node_profile"]["nodes"]))


@test
def a_failed_run_still_reports_what_was_measured():
    path = os.path.join(TMP, "div0.graph")
    with open(path, "w") as f:
        f.write("a = const([1, 2], dtype=i32)\nb = zeros([2], dtype=i32)\nc = a / b\noutput c\n")
    code, docs, err = run_json("--device=cpu", "--bench", "--profile=nodes", path)
    expect(code == 1 and "division by zero" in err, f"exit {code}: {err}")
    b = docs[0]["bench"]
    expect(b["passes"] == 0 and b["warmup"] == 0 and all(b[k] is None for k in LATENCY), b)
    expect(docs[0]["error"]["code"] == 1, docs[0]["error"])
    code, out, err = run("run", "--device=cpu", "--bench", path)
    expect(code == 1, err)
    expect("no pass was measured" in out, out)
    # A graph that cannot be loaded has no session: the figures are null.
    code, docs, err = run_json("--bench", "--profile=nodes", os.path.join(TMP, "missing.graph"))
    expect(code == 1 and docs[0]["bench"] is None and docs[0]["node_profile"] is None, docs)


@test
def past_two_to_the_twenty_passes_the_percentiles_are_sampled():
    # A tiny graph under safepoint: 1.1 million passes take well under a second.
    add = os.path.join(EXAMPLES, "add.graph")
    passes = (1 << 20) + 51424
    doc = run_ok_json("--device=cpu", "--cleanup=safepoint", "--no-data", "--bench", "--warmup=0",
                      f"--iterations={passes}", add)
    b = doc["bench"]
    expect(b["passes"] == passes and b["sampled"] == 1 << 20, b)
    figures = [b[k] for k in LATENCY]
    expect(figures == sorted(figures) and b["min_ms"] <= b["mean_ms"] <= b["max_ms"], b)
    expect(abs(b["mean_ms"] * passes - b["total_ms"]) <= 1e-9 * b["total_ms"], b)
    code, out, err = run("run", "--device=cpu", "--cleanup=safepoint", "--no-data", "--bench", "--warmup=0",
                         f"--iterations={passes}", add)
    expect(code == 0, err)
    expect(f"  median, p90 and p99 from an even sample of {1 << 20} of the {passes} passes (min, max and mean "
           "from all)" in text_section(out, "bench ("), out)


@test
def each_file_has_its_own_bench():
    code, docs, err = run_json("--device=cpu", "--bench", "--iterations=2", "--warmup=1", MLP, POWER)
    expect(code == 0 and len(docs) == 2, err)
    for d in docs:
        check_latency(d["bench"], passes=2, warmup=1)


@test
def usage_errors_exit_2():
    cases = [
        (["--warmup=2"], "--warmup requires --bench"),
        (["--warmup=2", "--profile=nodes"], "--warmup requires --bench"),
        (["--bench", "--iterations=0"], "--iterations=0 runs none"),
        (["--bench", "--warmup=-1"], "out of range"),
        (["--bench", "--warmup=two"], "not a whole number"),
        (["--bench", "--iterations=-3"], "out of range"),
        (["--bench", f"--warmup={1 << 40}", "--iterations=1"], "more than the 2^40"),
        (["--bench", f"--warmup={(1 << 40) + 1}"], "out of range"),
        (["--profile=node"], "'node' is neither ops nor nodes"),
        (["--profile=false"], "'false' is neither ops nor nodes"),
        (["--bench=maybe"], "--bench"),
    ]
    for args, message in cases:
        code, out, err = run("run", *args, MLP)
        expect(code == 2, f"{args}: exit {code}, expected 2 ({err.strip()})")
        expect(message in err, f"{args}: '{message}' not in: {err.strip()}")
        expect(out == "", f"{args}: printed {out!r}")


@test
def help_lists_the_options():
    code, out, _ = run("run", "--help")
    expect(code == 0, out)
    for word in ("--bench", "--warmup", "--profile", "nodes", "default 10", "default 2"):
        expect(word in out, f"run --help lacks {word}")


sys.exit(finish("bench_mode", results))
