#!/usr/bin/env python3
"""Golden script tests: every tests/scripts/*.graph (and *.json, with its
expectations in FILE.json.expect) states what graphrun must do, in comments
the harness reads:

  # args: --fetch=y             extra arguments for the command
  # cmd: check                  the subcommand (default: check)
  # expect: y: f32[2,3] (cpu)   a line that stdout must contain (stripped, exact)
  # expect-peak: cpu 1216       `check` must report this static peak (bytes)
  # expect-close: cpu 4096      `check` must report this close growth (bytes one pass allocates)
  # expect-weights: cpu 64      `check` must report these weights (bytes of constants; "cpu 0": none)
  # run-expect: [2. 3.]         with cmd check: `graphrun run FILE ARGS RUN-ARGS` must also
                                exit 0 and print this line (the values the checked graph computes)
  # run-args: --fill=ones       extra arguments for that run only
  # error: 3:7: unknown name    stderr must hold FILE:3:7: error: ... containing the text
  # error: /nodes/1/op: unknown (JSON) FILE: /nodes/1/op: error: ... containing the text
  # warning: gpu:0 unavailable  stderr must contain this text
  # exit: 1                     expected exit code (default 3 with errors, else 0)

Each `# error:` must match a different diagnostic, and with `# errors-only`
no other error may be reported (that pins "no cascades").

A script that succeeds and names an output's type (`# expect: y: f32[2] (cpu)`)
must also state a value (a line of values under `cmd: run`, or a
`# run-expect:`): a script that asserts only types fails.
Usage: golden.py GRAPHRUN_BINARY SCRIPTS_DIR
"""
import os
import re
import sys

from harness import run_binary  # noqa: E402 (tests/harness.py)


def expectations(path):
    exp_path = path + ".expect" if path.endswith(".json") else path
    with open(exp_path, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    spec = {"args": [], "cmd": "check", "expect": [], "peak": [], "error": [],
            "warning": [], "exit": None, "errors_only": False, "close": [], "weights": [],
            "run_expect": [], "run_args": []}
    for line in lines:
        m = re.search(r"#\s*(args|cmd|expect-peak|expect-close|expect-weights|expect|errors-only|error|warning|exit|run-expect|run-args):?\s?(.*)$",
                      line)
        if not m:
            continue
        key, val = m.group(1), m.group(2).strip()
        if key == "args":
            spec["args"] += val.split()
        elif key == "cmd":
            spec["cmd"] = val
        elif key == "expect":
            spec["expect"].append(val)
        elif key == "expect-peak":
            spec["peak"].append(val)
        elif key == "expect-close":
            spec["close"].append(val)
        elif key == "expect-weights":
            spec["weights"].append(val)
        elif key == "error":
            spec["error"].append(val)
        elif key == "warning":
            spec["warning"].append(val)
        elif key == "exit":
            spec["exit"] = int(val)
        elif key == "errors-only":
            spec["errors_only"] = True
        elif key == "run-expect":
            spec["run_expect"].append(val)
        elif key == "run-args":
            spec["run_args"] += val.split()
    return spec


def section(out, header):
    """The stripped lines of `check`'s section under `header`, to the next blank line."""
    lines = out.splitlines()
    if header not in lines:
        return []
    rest = lines[lines.index(header) + 1:]
    return [l.strip() for l in rest[:rest.index("")] if l] if "" in rest else [l.strip() for l in rest]


TYPE_LINE = re.compile(r"^\S+: [a-z0-9]+\[[0-9,]*\] \(\S+\)$")


def states_values(spec):
    """Whether the script states a value, not only types: a line of `run`'s
    values (a number or a bracketed row), or a run-expect line."""
    if spec["run_expect"]:
        return True
    return spec["cmd"] == "run" and any(not TYPE_LINE.match(e) for e in spec["expect"])


def run_values(binary, path, spec):
    """The problems of `graphrun run FILE ARGS RUN-ARGS` against the run-expect lines."""
    cmd = [binary, "run", path] + spec["args"] + spec["run_args"]
    try:
        code, out, err = run_binary(binary, cmd[1:], timeout=60)
    except AssertionError as e:  # a timeout or a crash (tests/harness.py)
        return [str(e)]
    problems = [] if code == 0 else [f"run: exit code {code}, expected 0"]
    out_lines = [l.strip() for l in out.splitlines()]
    problems += [f"run: stdout lacks the line: {e}" for e in spec["run_expect"] if e not in out_lines]
    if problems:
        problems += ["command: " + " ".join(cmd), "stdout:\n" + out[-3000:], "stderr:\n" + err[-3000:]]
    return problems


def check_one(binary, path):
    spec = expectations(path)
    cmd = [binary, spec["cmd"], path] + spec["args"]
    try:
        code, out, err = run_binary(binary, cmd[1:], timeout=60)
    except AssertionError as e:  # a timeout or a crash (tests/harness.py)
        return [str(e)]
    problems = []
    if spec["run_expect"]:
        problems += run_values(binary, path, spec)
    if code == 0 and any(TYPE_LINE.match(e) for e in spec["expect"]) and not states_values(spec):
        problems.append("the script asserts only types: state a value (cmd: run, or # run-expect:)")
    want_exit = spec["exit"] if spec["exit"] is not None else (3 if spec["error"] else 0)
    if code != want_exit:
        problems.append(f"exit code {code}, expected {want_exit}")
    if code >= 128:
        problems.append("crashed")
    out_lines = [l.strip() for l in out.splitlines()]
    for e in spec["expect"]:
        if e not in out_lines:
            problems.append(f"stdout lacks the line: {e}")
    peaks = section(out, "static peak (one pass, live tensor bytes):")
    for pk in spec["peak"]:
        dev, val = pk.split()
        if not any(l.startswith(f"{dev}: {val} bytes (") for l in peaks):
            problems.append(f"static peak {dev} is not {val} bytes")
    growth = section(out, "close growth (--cleanup=close holds every tensor until the session closes):")
    for cg in spec["close"]:
        dev, val = cg.split()
        if not any(l.startswith(f"{dev}: a pass allocates {val} bytes (") for l in growth):
            problems.append(f"close growth {dev} is not {val} bytes")
    weights = section(out, "weights (constants, placed once when the session opens and held until it closes):")
    for w in spec["weights"]:
        dev, val = w.split()
        found = any(l.startswith(f"{dev}: {val} bytes (") for l in weights)
        if not found and not (val == "0" and not any(l.startswith(f"{dev}:") for l in weights)):
            problems.append(f"weights {dev} are not {val} bytes")
    diag_re = re.compile(r"^" + re.escape(path) + r"(?::(\d+):(\d+)|: (\S+)): error: (.*)$")
    diags = []
    for line in err.splitlines():
        m = diag_re.match(line)
        if m:
            place = f"{m.group(1)}:{m.group(2)}" if m.group(1) else m.group(3)
            diags.append((place, m.group(4)))
    used = set()
    for e in spec["error"]:
        place, _, text = e.partition(" ")
        place = place.rstrip(":")
        hit = None
        for i, (p_place, p_msg) in enumerate(diags):
            if i not in used and p_place == place and text.strip() in p_msg:
                hit = i
                break
        if hit is None:
            problems.append(f"no error at {place} containing: {text.strip()}")
        else:
            used.add(hit)
    if spec["errors_only"] and len(diags) != len(spec["error"]):
        problems.append(f"{len(diags)} errors reported, expected exactly {len(spec['error'])}")
    for w in spec["warning"]:
        if w not in err:
            problems.append(f"stderr lacks the warning: {w}")
    if problems:
        problems.append("command: " + " ".join(cmd))
        problems.append("stdout:\n" + out[-3000:])
        problems.append("stderr:\n" + err[-3000:])
    return problems


def main():
    binary, scripts = sys.argv[1], sys.argv[2]
    files = sorted(os.path.join(scripts, f) for f in os.listdir(scripts)
                   if f.endswith(".graph") or f.endswith(".json"))
    passed = failed = 0
    for path in files:
        problems = check_one(binary, path)
        if problems:
            failed += 1
            print(f"FAIL {path}")
            for pr in problems:
                print("    " + pr.replace("\n", "\n    "))
        else:
            passed += 1
            print(f"ok   {path}")
    print(f"golden: {passed} passed, {failed} failed")
    return 1 if failed or not files else 0


if __name__ == "__main__":
    sys.exit(main())
