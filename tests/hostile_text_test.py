#!/usr/bin/env python3
"""Hostile names and signals through the real binary (issue 26): names and
file names with any bytes (not UTF-8, escape sequences, 20 MB long), the
warning cap, and SIGINT/SIGTERM in every phase.

- Every JSON writer (check/run/compare --format=json, --trace) gives valid
  UTF-8 that json.loads reads, with each byte that is not UTF-8 as the text
  \\xHH (and a literal "\\x" in a name as \\x5c), never an abort.
- Nothing graphrun prints holds an ESC byte or a line longer than a few KiB.
- A model with 1000 inputs of a symbolic dimension prints 20 such warnings
  and one "... 980 more warnings like this" line.
- SIGINT/SIGTERM stop loading, planning, running and printing within a
  second or two with exit 130/143; a second SIGINT exits at once; a signal
  after the last node is not lost.

Usage: hostile_text_test.py GRAPHRUN_BINARY"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import xml.dom.minidom

if "onnx" not in sys.modules and os.path.exists("/usr/bin/python3") and \
        os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
    try:
        import onnx  # noqa: F401
    except ImportError:  # Debian's python3-onnx lives under /usr/bin/python3
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import expect, make_harness  # noqa: E402

BIN = os.path.abspath(sys.argv[1])
_, test, results = make_harness(BIN)
TMP = tempfile.mkdtemp(prefix="graphrun-hostile-")
MAX_LINE = 8192  # no line graphrun writes for people may be longer

try:
    import onnx
    from onnx import TensorProto, helper
except ImportError:
    onnx = None


def run(*args, cwd=TMP, timeout=120):
    """Exit code, stdout and stderr as bytes."""
    p = subprocess.run([BIN, *args], cwd=cwd, capture_output=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def path(name):
    return os.path.join(TMP.encode(), name if isinstance(name, bytes) else name.encode())


def write(name, data):
    with open(path(name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    return path(name)


def unescape(s):
    """What a JSON consumer does to get a name's bytes back: each \\xHH is the byte HH."""
    return re.sub(rb"\\x([0-9a-f]{2})", lambda m: bytes([int(m.group(1), 16)]), s.encode())


def json_doc(out, what):
    """The one JSON document on stdout: strict UTF-8, read by json.loads."""
    try:
        text = out.decode("utf-8")  # strict: a byte that is not UTF-8 fails here
    except UnicodeDecodeError as e:
        raise AssertionError(f"{what}: stdout is not UTF-8: {e}")
    lines = [l for l in text.splitlines() if l.strip()]
    expect(len(lines) == 1, f"{what}: {len(lines)} JSON lines")
    return json.loads(lines[0])


def terminal_safe(data, what):
    expect(b"\x1b" not in data, f"{what}: an ESC byte reached the terminal: {data[:300]!r}")
    expect(b"\x9b" not in data.replace(b"\xc2\x9b", b""), f"{what}: a C1 control reached the terminal")
    longest = max((len(l) for l in data.split(b"\n")), default=0)
    expect(longest <= MAX_LINE, f"{what}: a line of {longest} bytes")


# --- any bytes in a file's name ---

BAD_FILE = b"m\xff\x1b[2J.graph"


@test
def json_writers_survive_a_file_name_that_is_not_utf8():
    write(BAD_FILE, "x = ones([2])\ny = relu(x)\noutput y\n")
    for cmd in (["check", "--format=json"], ["run", "--format=json"], ["compare", "--format=json"]):
        code, out, err = run(cmd[0], path(BAD_FILE), *cmd[1:])
        expect(code == 0, f"{cmd}: exit {code}: {err[-500:]!r}")
        doc = json_doc(out, cmd)
        expect(unescape(doc["file"]) == path(BAD_FILE), f"{cmd}: file {doc['file']!r}")
        terminal_safe(err, cmd)
    code, out, err = run("run", path(BAD_FILE), "--trace=t.json", "--no-progress")
    expect(code == 0, f"--trace: exit {code}: {err[-500:]!r}")
    data = open(path("t.json"), "rb").read()
    expect(len(data) > 0, "--trace: the trace is empty")
    trace = json.loads(data.decode("utf-8"))
    names = [e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name"]
    expect(names and unescape(names[0]) == b"graphrun " + path(BAD_FILE), f"--trace: process name {names}")
    terminal_safe(out, "run text stdout")
    # The SVG plot (XML in UTF-8) titles itself with the file's name: escaped the same way.
    code, _, err = run("compare", path(BAD_FILE), "--plot=bad.svg")
    expect(code == 0, f"compare --plot: exit {code}: {err[-400:]!r}")
    svg = open(path("bad.svg"), "rb").read()
    try:
        xml.dom.minidom.parseString(svg)
    except Exception as e:  # an XML parser refuses bytes that are not UTF-8
        expect(False, f"the plot is not well-formed XML: {e}")
    expect(b"\\x" in svg, f"the plot does not show the file name escaped: {svg[:400]!r}")


@test
def text_output_escapes_a_file_name():
    # `run` with the file twice prints a "== FILE" header per file.
    for cmd in (["check", path(BAD_FILE)], ["run", path(BAD_FILE), path(BAD_FILE), "--no-progress"],
                ["compare", path(BAD_FILE)]):
        code, out, err = run(*cmd)
        expect(code == 0, f"{cmd}: exit {code}: {err[-500:]!r}")
        terminal_safe(out, f"{cmd} stdout")
        terminal_safe(err, f"{cmd} stderr")
        expect(b"m\\xff\\x1b[2J.graph" in out, f"{cmd[0]}: the file's name is not shown escaped: {out[:400]!r}")


# --- escape sequences and 20 MB names in messages ---

@test
def messages_escape_control_characters():
    write("esc.json", json.dumps({"graphrun": 1, "nodes": [
        {"name": "x", "op": "ones", "attrs": {"shape": [2]}},
        {"name": "y\x1b[2J", "op": "relu", "inputs": ["x\x1b]0;pwned\x07"]}]}))
    code, out, err = run("check", "esc.json")
    expect(code == 3, f"exit {code}")
    terminal_safe(err, "check esc.json")
    expect(b"x\\x1b]0;pwned\\x07" in err, f"the bad name is not shown escaped: {err!r}")
    code, out, err = run("check", "esc.json", "--format=json")
    expect(code == 3, f"--format=json: exit {code}")
    doc = json_doc(out, "check esc.json --format=json")
    expect(doc["error"]["code"] == 3 and doc["error"]["diagnostics"], f"error {doc.get('error')}")
    write("ok.graph", "x = ones([2])\noutput x\n")
    code, out, err = run("run", "ok.graph", "--fetch=\x1b[2Jq\x9b")
    expect(code == 2, f"--fetch: exit {code}")
    terminal_safe(err, "--fetch with an escape")


@test
def a_20mb_name_is_not_echoed_whole():
    long_name = "q" * 20_000_000
    write("long.graph", f"x = ones([2])\ny = relu({long_name})\noutput y\n")
    write("long.json", json.dumps({"graphrun": 1, "nodes": [
        {"name": "x", "op": "ones", "attrs": {"shape": [2]}},
        {"name": "y", "op": "relu", "inputs": [long_name]}]}))
    for f in ("long.graph", "long.json"):
        code, out, err = run("check", f)
        expect(code == 3, f"{f}: exit {code}")
        terminal_safe(err, f)
        expect(len(err) < 20_000, f"{f}: {len(err)} bytes on stderr")
        # The message is cut in the middle, saying its length, and keeps its end.
        expect(re.search(rb"\.\.\.\(200000\d\d bytes\)\.\.\.", err), f"{f}: the cut does not say the length: {err[:600]!r}")


@test
def a_node_line_of_megabytes_is_listed_in_linear_time():
    # check's listing writes a node's inputs on its one line: 300,000 inputs
    # of 16-byte names make a 5.4 MB line, more than a listing piece, which
    # must grow by doubling (growing it per input took minutes).
    n = 300_000
    name = "abcdefghijklmnop"
    write("wide.graph", f"{name} = ones([1])\ny = concat({', '.join([name] * n)}, axis=0)\noutput y\n")
    code, out, err = run("check", "wide.graph", timeout=60)
    expect(code == 0, f"exit {code}: {err[-300:]!r}")
    line = next((l for l in out.split(b"\n") if l.lstrip().startswith(b"y ")), b"")
    expect(line.count(name.encode()) == n, f"the concat's line lists {line.count(name.encode())} inputs, not {n}")


# --- ONNX names with any bytes, and the warning cap ---

def onnx_model(name, nodes, inputs, outputs, replace=()):
    """An ONNX model; `replace` swaps placeholder names for any bytes after
    serialising (protobuf's Python refuses strings that are not UTF-8)."""
    g = helper.make_graph(nodes, "g", inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    data = m.SerializeToString()
    for old, new in replace:
        assert len(old) == len(new) and data.count(old) >= 1, old
        data = data.replace(old, new)
    return write(name, data)


def onnx_supported():
    if onnx is None:
        print("skip ONNX cases: python3-onnx is not installed")
        return False
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    onnx_model("probe.onnx", [helper.make_node("Relu", ["x"], ["y"])], [x], [y])
    code, _, err = run("check", "probe.onnx")
    if b"without ONNX support" in err:
        print("skip ONNX cases: this graphrun was built without ONNX")
        return False
    return True


if onnx_supported():
    @test
    def onnx_names_that_are_not_utf8():
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
        y = helper.make_tensor_value_info("yQZ", TensorProto.FLOAT, [2])
        onnx_model("bad.onnx", [helper.make_node("Relu", ["x"], ["yQZ"], name="nodeQZ")], [x], [y],
                   replace=((b"yQZ", b"y\xff\xfe"), (b"nodeQZ", b"n\x1b[2Jx")))
        want = b"y\xff\xfe"
        code, out, err = run("check", "bad.onnx", "--format=json")
        expect(code == 0, f"check --format=json: exit {code}: {err[-400:]!r}")
        doc = json_doc(out, "check --format=json")
        expect(any(unescape(o["name"]) == want for o in doc["outputs"]), f"outputs {doc['outputs']}")
        expect(any(o["name"] == "y\\xff\\xfe" for o in doc["outputs"]), f"outputs {doc['outputs']}")
        code, out, err = run("run", "bad.onnx", "--input=x=[1,-2]", "--format=json", "--trace=bad.trace.json")
        expect(code == 0, f"run --format=json --trace: exit {code}: {err[-400:]!r}")
        doc = json_doc(out, "run --format=json")
        expect([unescape(o["name"]) for o in doc["outputs"]] == [want] and doc["outputs"][0]["data"] == [1.0, 0.0],
               f"outputs {doc['outputs']}")
        trace = open(path("bad.trace.json"), "rb").read()
        expect(len(trace) > 0, "the trace is empty")
        events = json.loads(trace.decode("utf-8"))["traceEvents"]
        expect(any(e.get("ph") == "X" for e in events), "the trace has no node slice")
        code, out, err = run("compare", "bad.onnx", "--input=x=[1,-2]", "--format=json")
        expect(code == 0, f"compare --format=json: exit {code}: {err[-400:]!r}")
        json_doc(out, "compare --format=json")
        for cmd in (["check"], ["run", "--input=x=[1,-2]", "--log-placement", "--no-progress"],
                    ["compare", "--input=x=[1,-2]"], ["dot"]):
            code, out, err = run(cmd[0], "bad.onnx", *cmd[1:])
            expect(code == 0, f"{cmd}: exit {code}: {err[-400:]!r}")
            terminal_safe(out, f"{cmd} stdout")
            terminal_safe(err, f"{cmd} stderr")
        code, out, _ = run("run", "bad.onnx", "--input=x=[1,-2]", "--no-progress")
        expect(b"y\\xff\\xfe: f32[2] (cpu)" in out, f"the output's name is not shown escaped: {out[:300]!r}")
        # DOT is UTF-8 text too: the same \\xHH form, never the raw bytes.
        code, out, err = run("dot", "bad.onnx")
        expect(code == 0, f"dot: exit {code}: {err[-400:]!r}")
        try:
            text = out.decode("utf-8")
        except UnicodeDecodeError as e:
            expect(False, f"dot output is not UTF-8: {e}")
        else:
            expect("y\\\\xff\\\\xfe" in text, f"dot does not show the name escaped: {text[:400]!r}")

    @test
    def warnings_alike_are_capped():
        inputs = [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, ["N"]) for i in range(1000)]
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N"])
        onnx_model("many.onnx", [helper.make_node("Relu", ["x0"], ["y"])], inputs, [y])
        code, out, err = run("check", "many.onnx")
        expect(code == 0, f"exit {code}: {err[-400:]!r}")
        lines = err.decode().splitlines()
        warnings = [l for l in lines if ": warning: " in l]
        expect(len(warnings) == 21, f"{len(warnings)} warning lines: {warnings[:3]} ... {warnings[-2:]}")
        expect(warnings[-1].startswith("many.onnx: warning: ... 980 more warnings like this: input 'x20'"),
               f"the last line: {warnings[-1]}")
        code, out, err = run("check", "many.onnx", "--format=json")
        doc = json_doc(out, "check many.onnx --format=json")
        expect(code == 0 and len(doc["inputs"]) == 1000, f"exit {code}")


# --- signals in every phase ---

def catches(pid, sig):
    """Whether process `pid` has a handler for `sig` (its /proc status's SigCgt; True where that is unknown)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("SigCgt:"):
                    return bool((int(line.split()[1], 16) >> (int(sig) - 1)) & 1)
    except (OSError, ValueError):
        pass
    return True


def signalled(args, sig, after, stdin=None, expect_code=None, within=2.0, what=""):
    """Starts graphrun, sends `sig` `after` seconds later (and not before graphrun
    has installed its handler for it: a sanitizer build on a busy machine can
    take longer than `after` to start), and returns its exit code, output, and
    the seconds from the signal to its exit."""
    out_path, err_path = path("sig.out"), path("sig.err")
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        p = subprocess.Popen([BIN, *args], cwd=TMP, stdout=out, stderr=err,
                             stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL)
        if stdin:
            p.stdin.write(stdin)
            p.stdin.flush()
        time.sleep(after)
        ready_by = time.monotonic() + 20
        while p.poll() is None and not catches(p.pid, sig) and time.monotonic() < ready_by:
            time.sleep(0.01)
        running = p.poll() is None
        sent = time.monotonic()
        p.send_signal(sig)
        try:
            code = p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise AssertionError(f"{what}: still running 30 s after the signal")
        took = time.monotonic() - sent
        if p.stdin:
            p.stdin.close()
    out, err = open(out_path, "rb").read(), open(err_path, "rb").read()
    expect(running, f"{what}: it had ended before the signal (exit {p.returncode}): {err[-300:]!r}")
    if expect_code is not None:
        expect(code == expect_code, f"{what}: exit {code}, expected {expect_code}: {err[-500:]!r}")
    expect(took <= within, f"{what}: it took {took:.2f} s after the signal to exit")
    return code, out, err, took


@test
def sigint_while_loading_standard_input():
    # The pipe stays open: graphrun waits in the read until the signal.
    for cmd in (["check", "-"], ["run", "-"], ["convert", "-", "--to=json"], ["dot", "-"]):
        code, out, err, _ = signalled(cmd, signal.SIGINT, 0.5, stdin=b"x = ones([2])\n",
                                      expect_code=130, what=" ".join(cmd))
        expect(b"interrupted by SIGINT while loading" in err, f"{cmd}: {err!r}")


@test
def sigterm_while_planning():
    # 2^24 passes of nested loops for the plan to simulate: about a second of work, more on a busy machine.
    d = 24
    text = "x = ones([1])\n" + "".join("  " * i + "repeat 2 {\n" for i in range(d))
    text += "  " * d + "x = relu(x)\n" * 4 + "".join("  " * (d - 1 - i) + "}\n" for i in range(d)) + "output x\n"
    write("plan.graph", text)
    code, out, err, _ = signalled(["check", "plan.graph"], signal.SIGTERM, 0.2, expect_code=143,
                                  what="check while planning")
    expect(b"interrupted by SIGTERM" in err, f"{err!r}")


@test
def sigterm_while_running_and_a_second_sigint():
    write("forever.graph", "x = ones([1000])\nrepeat 1000000000 {\n  x = x + 1\n}\noutput x\n")
    code, out, err, _ = signalled(["run", "forever.graph", "--no-progress"], signal.SIGTERM, 0.5,
                                  expect_code=143, what="run")
    expect(b"interrupted by SIGTERM before" in err and b"memory after teardown" in out, f"{err!r}")
    code, out, err, _ = signalled(["compare", "forever.graph"], signal.SIGINT, 0.5, expect_code=130,
                                  what="compare")
    # A second SIGINT ends graphrun at once, wherever it is.
    p = subprocess.Popen([BIN, "run", "forever.graph", "--no-progress"], cwd=TMP, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    p.send_signal(signal.SIGINT)
    expect(p.wait(timeout=10) == 130, f"two SIGINTs: exit {p.returncode}")


@test
def sigint_while_printing_a_huge_output_is_not_lost():
    # The run ends at once; printing 20 million values takes seconds. The
    # signal lands after the last node: it used to be swallowed (exit 0).
    write("huge.graph", "x = ones([20000000])\noutput x\n")
    code, out, err, _ = signalled(["run", "huge.graph", "--full", "--no-progress"], signal.SIGINT, 1.0,
                                  expect_code=130, what="run --full")
    expect(b"interrupted by SIGINT" in out + err, f"no message: {err[-300:]!r}")
    expect(b"memory after teardown" in out, "the statistics are not printed")


os.system(f"rm -rf '{TMP}'")
print(f"hostile_text: {results['passed']} passed, {results['failed']} failed")
sys.exit(1 if results["failed"] else 0)
