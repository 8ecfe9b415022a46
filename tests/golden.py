#!/usr/bin/env python3
"""Golden script tests: every tests/scripts/*.graph (and *.json, with its
expectations in FILE.json.expect) states what graphrun must do, in comments
the harness reads:

  # args: --fetch=y             extra arguments for the command
  # cmd: check                  the subcommand (default: check)
  # expect: y: f32[2,3] (cpu)   a line that stdout must contain (stripped, exact)
  # expect-peak: cpu 1216       `check` must report this static peak (bytes)
  # expect-close: cpu 4096      `check` must report this close growth (bytes one pass allocates)
  # error: 3:7: unknown name    stderr must hold FILE:3:7: error: ... containing the text
  # error: /nodes/1/op: unknown (JSON) FILE: /nodes/1/op: error: ... containing the text
  # warning: gpu:0 unavailable  stderr must contain this text
  # exit: 1                     expected exit code (default 3 with errors, else 0)

Each `# error:` must match a different diagnostic, and with `# errors-only`
no other error may be reported (that pins "no cascades").
Usage: golden.py GRAPHRUN_BINARY SCRIPTS_DIR
"""
import os
import re
import subprocess
import sys


def expectations(path):
    exp_path = path + ".expect" if path.endswith(".json") else path
    with open(exp_path, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    spec = {"args": [], "cmd": "check", "expect": [], "peak": [], "error": [],
            "warning": [], "exit": None, "errors_only": False, "close": []}
    for line in lines:
        m = re.search(r"#\s*(args|cmd|expect-peak|expect-close|expect|errors-only|error|warning|exit):?\s?(.*)$",
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
        elif key == "error":
            spec["error"].append(val)
        elif key == "warning":
            spec["warning"].append(val)
        elif key == "exit":
            spec["exit"] = int(val)
        elif key == "errors-only":
            spec["errors_only"] = True
    return spec


def section(out, header):
    """The stripped lines of `check`'s section under `header`, to the next blank line."""
    lines = out.splitlines()
    if header not in lines:
        return []
    rest = lines[lines.index(header) + 1:]
    return [l.strip() for l in rest[:rest.index("")] if l] if "" in rest else [l.strip() for l in rest]


def check_one(binary, path):
    spec = expectations(path)
    cmd = [binary, spec["cmd"], path] + spec["args"]
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        return ["timed out after 60 s"]
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    problems = []
    want_exit = spec["exit"] if spec["exit"] is not None else (3 if spec["error"] else 0)
    if p.returncode != want_exit:
        problems.append(f"exit code {p.returncode}, expected {want_exit}")
    if p.returncode < 0 or p.returncode >= 128:
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
