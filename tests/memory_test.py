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

BIN = sys.argv[1]
SRC = sys.argv[2]
EXAMPLES = os.path.join(SRC, "scripts", "examples")
results = {"passed": 0, "failed": 0}
STRATEGIES = ("background", "safepoint", "close")


def run(*args, stdin=None, timeout=120):
    p = subprocess.run([BIN, *args], input=stdin, capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def test(fn):
    try:
        fn()
    except AssertionError as e:
        results["failed"] += 1
        print(f"FAIL {fn.__name__}: {e}")
        return fn
    except Exception as e:  # a crash in the harness is a failure too
        results["failed"] += 1
        print(f"FAIL {fn.__name__}: {type(e).__name__}: {e}")
        return fn
    results["passed"] += 1
    print(f"ok   {fn.__name__}")
    return fn


def expect(cond, msg):
    if not cond:
        raise AssertionError(msg)


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


print(f"memory: {results['passed']} passed, {results['failed']} failed")
sys.exit(1 if results["failed"] else 0)
