#!/usr/bin/env python3
"""The README's shown output is what the binary prints.

Usage: readme_test.py GRAPHRUN SOURCE_DIR [--update]

Two kinds of marked blocks in README.md:

  <!-- readme-test: run ARGS -->        followed by a ``` block: the output of
                                        `graphrun run ARGS` (run in SOURCE_DIR).
  <!-- readme-test: repl ARGS -->       followed by two ``` blocks: the lines
                                        piped into `graphrun repl ARGS` (run in
                                        SOURCE_DIR), then what it prints (stdout;
                                        with `2>&1` in ARGS, stderr merged in).
  <!-- readme-test: strategies ARGS -->  followed by a Markdown table: per file
                                        in ARGS, the figures of the three
                                        cleanup strategies (generated here).
                                        A file `@NAME` is the ONNX model
                                        scripts/models/onnx_models.py NAME makes.

Figures that differ from run to run are compared as patterns: the process's
resident memory and the run and teardown times. Under `background` the
before-teardown figures depend on whether the reclaimer thread has run yet, so
such a block must match one of up to 20 runs. The strategies table shows
background's peak as the range it must lie in (the safepoint peak up to the
static peak plus the backlog threshold), and each run checks it does.

With --update the marked blocks are rewritten from what the binary prints.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

from harness import run_binary  # noqa: E402 (tests/harness.py)

GRAPHRUN, SRC = sys.argv[1], sys.argv[2]
UPDATE = "--update" in sys.argv[3:]
README = os.path.join(SRC, "README.md")
MARK = re.compile(r"^<!-- readme-test: (run|repl|strategies) (.*) -->$")
MIB4 = 4 << 20
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def graphrun(args):
    p = run_binary(GRAPHRUN, args, cwd=SRC, timeout=300)
    if p.returncode != 0:
        raise SystemExit(f"graphrun {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return p.stdout


def human(n):
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    v, u = float(n), 0
    while v >= 1024 and u < len(units) - 1:
        v /= 1024
        u += 1
    return f"{n} B" if u == 0 else f"{v:.2f} {units[u]}"


def normalize(text):
    """Masks the figures that differ between runs of the same graph."""
    text = re.sub(r"(process resident memory [a-z ]+: )\d+ bytes \([\d.]+ [KMGT]?i?B\)", r"\1<rss>", text)
    return re.sub(r"run [\d.]+ ms, teardown [\d.]+ ms", "run <ms> ms, teardown <ms> ms", text)


def check_run_block(args, shown):
    argv = ["run"] + args.split()
    background = not any(a.startswith("--cleanup=") and a != "--cleanup=background" for a in argv)
    tries = 20 if background else 1
    actual = None
    for _ in range(tries):
        actual = graphrun(argv).rstrip("\n")
        if normalize(actual) == normalize(shown):
            return actual
    if not UPDATE:
        fail(f"README block `graphrun {' '.join(argv)}` drifted from the binary's output:\n"
             f"--- README\n{shown}\n--- binary\n{actual}")
    return actual


def check_repl_block(args, stdin, shown):
    """`graphrun repl ARGS < STDIN`: its output, when the README shows what it prints."""
    argv = ["repl"] + [a for a in args.split() if a != "2>&1"]
    merged = "2>&1" in args.split()
    p = subprocess.run([GRAPHRUN, *argv], input=stdin.encode(), cwd=SRC, timeout=300,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT if merged else subprocess.PIPE)
    if p.returncode < 0:
        raise SystemExit(f"graphrun {' '.join(argv)} ended by signal {-p.returncode}")
    actual = p.stdout.decode("utf-8", "replace").rstrip("\n")
    if normalize(actual) != normalize(shown) and not UPDATE:
        fail(f"README block `graphrun {' '.join(argv)}` drifted from the binary's output:\n"
             f"--- README\n{shown}\n--- binary\n{actual}")
    return actual


def fenced_block(lines, i):
    """(first line inside, the closing fence's index) of the ``` block opening at or after line I."""
    while i < len(lines) and not lines[i].startswith("```"):
        i += 1
    if i >= len(lines):
        return None, None
    return i + 1, lines.index("```", i + 1)


def cpu_stats(args):
    doc = json.loads(graphrun(args + ["--format=json"]))
    return doc["memory"]["before_teardown"]["cpu"], doc["memory"]["after_teardown"]["cpu"]


def generated_model(name):
    """`@NAME` in a strategies block: the ONNX model scripts/models/onnx_models.py makes
    (random weights, fixed seed), written once into a temporary directory."""
    if name not in MODELS:
        stem = os.path.join(tempfile.mkdtemp(prefix="graphrun-readme-"), name)
        p = subprocess.run(["/usr/bin/python3", os.path.join(SRC, "scripts", "models", "onnx_models.py"), name,
                            stem + ".onnx"], capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise SystemExit(f"onnx_models.py {name} exited {p.returncode}: {p.stderr}")
        MODELS[name] = stem
    stem = MODELS[name]
    return stem + ".onnx", [f"--input=@{stem}.input.npz"]


MODELS = {}


def strategies_table(args):
    """The table for `strategies ARGS`: ARGS are run options and then files."""
    opts = [a for a in args.split() if a.startswith("--")]
    files = [a for a in args.split() if not a.startswith("--")]
    iterations = next((int(a.split("=", 1)[1]) for a in opts if a.startswith("--iterations=")), 1)
    rows = ["| file | strategy | peak | pending before teardown | allocations | after teardown |",
            "|---|---|---|---|---|---|"]
    for f in files:
        file_opts = []
        if f.startswith("@"):  # a model made by scripts/models/onnx_models.py, with its inputs
            f, file_opts = generated_model(f[1:])
        check = json.loads(graphrun(["check", "--format=json", f]))
        static = check["static_peak"]["cpu"]
        growth = check["close_growth"]["cpu"]
        name = f"`{os.path.basename(f)}`"
        for strategy in ("safepoint", "background", "close"):
            before, after = cpu_stats(["run", f"--cleanup={strategy}"] + opts + file_opts + [f])
            if after["in_use"] or after["reserved"] or after["live"] or after["allocs"] != after["frees"]:
                fail(f"{f} under {strategy}: memory left after teardown: {after}")
            if strategy == "safepoint":
                if before["peak"] != static:
                    fail(f"{f}: safepoint peak {before['peak']} != check's static peak {static}")
                safepoint_peak = before["peak"]
                peak = f"{human(before['peak'])} (the static peak)"
                pending = human(before["pending"])
            elif strategy == "background":
                bound = static + max(static, MIB4)
                if not safepoint_peak <= before["peak"] <= bound:
                    fail(f"{f}: background peak {before['peak']} outside [{safepoint_peak}, {bound}]")
                peak = f"{human(safepoint_peak)} to {human(bound)}, by when the reclaimer runs"
                pending = "what the reclaimer has not reached"
            else:
                if before["peak"] != iterations * growth:
                    fail(f"{f}: close peak {before['peak']} != {iterations} x close growth {growth}")
                peak = f"{human(before['peak'])} ({iterations} × close growth {human(growth)})"
                pending = human(before["pending"])
            rows.append(f"| {name} | {strategy} | {peak} | {pending} | {before['allocs']} | "
                        f"{human(after['in_use'])} held, {after['frees']} frees |")
    return rows


def main():
    lines = open(README, encoding="utf-8").read().split("\n")
    out, i, blocks = [], 0, 0
    while i < len(lines):
        m = MARK.match(lines[i])
        out.append(lines[i])
        i += 1
        if not m:
            continue
        blocks += 1
        kind, args = m.groups()
        if kind == "repl":
            first, end = fenced_block(lines, i)
            out_first, out_end = fenced_block(lines, end + 1) if end is not None else (None, None)
            if out_end is None:
                fail(f"README line {i}: a readme-test repl mark must be followed by two ``` blocks")
                continue
            actual = check_repl_block(args, "\n".join(lines[first:end]) + "\n", "\n".join(lines[out_first:out_end]))
            out += lines[i:out_first] + actual.split("\n") + ["```"]
            i = out_end + 1
        elif kind == "run":
            if i >= len(lines) or not lines[i].startswith("```"):
                fail(f"README line {i}: a readme-test run mark must be followed by a ``` block")
                continue
            end = lines.index("```", i + 1)
            shown = "\n".join(lines[i + 1:end])
            actual = check_run_block(args, shown)
            out += ["```"] + actual.split("\n") + ["```"]
            i = end + 1
        else:
            end = i
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
            shown = lines[i:end]
            table = strategies_table(args)
            if shown != table and not UPDATE:
                fail(f"README strategies table for `{args}` drifted:\n--- README\n" + "\n".join(shown)
                     + "\n--- binary\n" + "\n".join(table))
            out += table
            i = end
    if blocks == 0:
        fail("README.md has no readme-test blocks")
    if UPDATE:
        open(README, "w", encoding="utf-8").write("\n".join(out))
        print(f"README.md: {blocks} blocks rewritten")
    if failures:
        print(f"{len(failures)} README check(s) failed")
        return 1
    print(f"README: {blocks} blocks match the binary")
    return 0


if __name__ == "__main__":
    sys.exit(main())
