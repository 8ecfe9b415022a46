#!/usr/bin/env python3
"""`graphrun repl` (issue 24, SPEC section 8), through the real binary: piped
statements (values in NumPy's format, errors with their place that leave every
name bound, exit codes, the :commands, .npz files written and read back), the
memory figures per strategy against figures computed here, and a real
pseudo-terminal session (completion, history across sessions, a multi-line
block, Ctrl-C during a long statement and at the prompt, Ctrl-D).

Usage: repl_test.py GRAPHRUN_BINARY SOURCE_DIR"""
import ast
import fcntl
import os
import pty
import re
import select
import shutil
import signal
import struct
import sys
import tempfile
import termios
import time
import zipfile

from harness import expect, finish, make_harness  # noqa: E402 (tests/harness.py)

BIN = sys.argv[1]
SRC = sys.argv[2]
EXAMPLES = os.path.join(SRC, "scripts", "examples")
run, test, results = make_harness(BIN, timeout=60)
TMP = tempfile.mkdtemp(prefix="graphrun-repl-")

F32 = 4
GRANULE = 64


def buffer_bytes(elements, itemsize=F32):
    """A buffer's counted size: its bytes rounded up to 64 (SPEC section 4)."""
    return (elements * itemsize + GRANULE - 1) // GRANULE * GRANULE


def repl(text, *args, env=None):
    """`graphrun repl ARGS` with TEXT piped in: (code, stdout, stderr)."""
    return run("repl", *args, stdin=text, env=env)


def table_row(out, title, device="cpu", last=True):
    """The figures of DEVICE's row in the table under TITLE ("memory now",
    "memory after teardown"), by column name; the last such table in OUT (the first unless LAST)."""
    at = out.rfind(title + ":\n") if last else out.find(title + ":\n")
    expect(at >= 0, f"no '{title}' table in:\n{out}")
    lines = out[at:].split("\n")
    head = lines[1].split()
    for line in lines[2:]:
        cells = line.split()
        if cells and cells[0] == device:
            return {k: int(v) for k, v in zip(head[1:], cells[1:])}
    raise AssertionError(f"no {device} row in the '{title}' table:\n{out[at:]}")


def read_npz(path):
    """{name: (dtype string, shape, list of values)} of a stored .npz of
    little-endian f32/f64/i32/i64 arrays, read without NumPy or graphrun."""
    out = {}
    fmt = {"<f4": "f", "<f8": "d", "<i4": "i", "<i8": "q"}
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            data = z.read(info)
            expect(data[:6] == b"\x93NUMPY", f"{info.filename}: not an .npy member")
            major = data[6]
            hlen = struct.unpack("<H" if major == 1 else "<I", data[8:10] if major == 1 else data[8:12])[0]
            start = 10 if major == 1 else 12
            header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
            code = fmt[header["descr"]]
            count = 1
            for d in header["shape"]:
                count *= d
            body = data[start + hlen:]
            values = list(struct.unpack(f"<{count}{code}", body[:count * struct.calcsize(code)]))
            out[info.filename[:-4]] = (header["descr"], tuple(header["shape"]), values)
    return out


# --- piped input -------------------------------------------------------------


@test
def piped_statements_print_bare_names_as_numpy_does():
    code, out, err = repl("a = [[1, 2], [3, 4.5]]\nb = a * 2\nb\na @ a\n")
    expect(code == 0, f"exit {code}: {err}")
    expect(">>>" not in out and "interactive session" not in out, f"a prompt or banner when piped:\n{out}")
    expect("b: f32[2,2] (cpu)\n[[2. 4.]\n [6. 9.]]\n" in out, out)
    expect("_: f32[2,2] (cpu)\n[[ 7.   11.  ]\n [16.5  26.25]]\n" in out, out)  # as NumPy prints it


@test
def piped_blocks_span_lines():
    code, out, err = repl("x = zeros([3])\nrepeat 4 {\n  x = x + 1\n}\nwith device(\"cpu\") {\n  y = x * 3\n}\n"
                          "# a comment alone\n\ny\n")
    expect(code == 0, f"exit {code}: {err}")
    expect("[12. 12. 12.]" in out, out)


@test
def an_error_has_its_place_and_leaves_names_bound():
    code, out, err = repl("x = [1, 2, 3]\ny = x @ nosuch\nx = x + 1\nx\n")
    expect(code == 3, f"exit {code}, expected 3 (invalid graph, the first failure)")
    expect("<stdin>:2:" in err and "nosuch" in err, f"no place in:\n{err}")
    expect("[2. 3. 4.]" in out, f"x lost or not updated after the error:\n{out}")


@test
def the_first_failure_gives_the_exit_code():
    # a usage error (unknown command, 2) before an invalid statement (3)
    code, _, err = repl(":stat\nx = [1] +\n\n]\nx = 1 +* 2\n")
    expect(code == 2, f"exit {code}, expected 2:\n{err}")
    expect("did you mean ':stats'?" in err, err)
    code, _, err = repl("x = [1, 2]\nx = x / y\n:vars\n")
    expect(code == 3, f"exit {code}, expected 3:\n{err}")
    code, _, err = repl("x = [1, 2]\n:quit\nx = x / y\n")
    expect(code == 0, f"statements after :quit ran (exit {code}):\n{err}")


@test
def an_open_block_at_the_end_is_an_error():
    code, out, err = repl("x = ones([2])\nrepeat 2 {\n  x = x + 1\n")
    expect(code == 3, f"exit {code}: {err}")
    expect("<stdin>:" in err, err)
    expect("memory after teardown:" in out, out)


@test
def vars_lists_names_dtypes_shapes_devices_bytes():
    code, out, err = repl("a = zeros([1024])\nb = range(10, dtype=i64)\nc = greater(a, 0)\n:vars\n")
    expect(code == 0, f"exit {code}: {err}")
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith("  ")}
    expect(rows.get("a") == ["a", "f32", "[1024]", "cpu", "4096"], rows)
    expect(rows.get("b") == ["b", "i64", "[10]", "cpu", str(buffer_bytes(10, 8))], rows)
    expect(rows.get("c") == ["c", "bool", "[1024]", "cpu", str(buffer_bytes(1024, 1))], rows)
    expect("3 names" in out, out)


@test
def del_and_reset_say_what_they_released():
    code, out, err = repl("a = zeros([1024])\nb = ones([16])\n:del a\n:vars\n:reset\n:vars\n:del zz\n",
                          "--cleanup=close")
    expect(code == 2, f"exit {code}: :del of an unbound name is a usage error")
    expect("deleted a: 1 buffer, 4096 bytes (4.00 KiB) unreferenced (held until :close" in out, out)
    expect("reset: 1 name unbound; 1 buffer, 64 bytes unreferenced (held until :close" in out, out)
    expect("no names are bound" in out, out)
    expect("no name 'zz' is bound" in err, err)


@test
def reset_under_safepoint_releases_at_once():
    code, out, err = repl("a = zeros([1024])\nb = a * 2\n:reset\n:stats\n", "--cleanup=safepoint")
    expect(code == 0, f"exit {code}: {err}")
    expect("reset: 2 names unbound; 2 buffers, 8192 bytes (8.00 KiB) unreferenced (released)" in out, out)
    s = table_row(out, "memory now")
    expect(s["in_use"] == 0 and s["live"] == 0 and s["peak"] == 2 * 4096 + 64, s)  # a, b and the literal


@test
def cleanup_switches_and_says_the_current_one():
    code, out, err = repl(":cleanup\n:cleanup close\n:cleanup\n:cleanup savepoint\n")
    expect(code == 2, f"exit {code}: {err}")
    expect("cleanup: background\n" in out, out)
    expect("cleanup: close (was background)" in out, out)
    expect(out.count("cleanup: close\n") == 1, out)
    expect("did you mean 'safepoint'?" in err, err)
    expect("session: cleanup=close" in out, out)


@test
def save_writes_an_npz_that_reads_back():
    f = os.path.join(TMP, "saved.npz")
    code, out, err = repl(f"a = [[1, 2], [3, 4]]\nb = range(5, dtype=i32)\n:save a b {f}\n")
    expect(code == 0, f"exit {code}: {err}")
    expect(f"saved a, b to {f}" in out, out)
    arrays = read_npz(f)
    expect(arrays["a"] == ("<f4", (2, 2), [1.0, 2.0, 3.0, 4.0]), arrays)
    expect(arrays["b"] == ("<i4", (5,), [0, 1, 2, 3, 4]), arrays)
    code, _, err = repl(f":save nosuch {f}\n")
    expect(code != 0 and "nosuch" in err, f"exit {code}: {err}")


@test
def load_runs_a_file_and_binds_its_outputs():
    code, out, err = repl(f":load {EXAMPLES}/add.graph\nc\nd = c * 2\nd\n")
    expect(code == 0, f"exit {code}: {err}")
    expect("bound c" in out, out)
    expect("[11. 22. 33.]" in out and "[22. 44. 66.]" in out, out)
    g = os.path.join(SRC, "tests", "scripts", "input_check.graph")
    code, out, err = repl(f":load {g} --fill=ones\ny\n:load {g} --input=x=[[1,2,3,4,5,6,7,8],[1,1,1,1,1,1,1,1]] "
                          f"--input=w=[[1,1,1,1,1,1,1,1],[0,0,0,0,0,0,0,0]]\ny\n")
    expect(code == 0, f"exit {code}: {err}")
    expect("[[2. 2. 2. 2. 2. 2. 2. 2.]" in out, out)
    expect("[[2. 3. 4. 5. 6. 7. 8. 9.]\n [1. 1. 1. 1. 1. 1. 1. 1.]]" in out, out)
    code, _, err = repl(f":load {g}\n")
    expect(code == 2, f"a missing input: exit {code}: {err}")
    code, _, err = repl(":load /nonexistent/x.graph\n")
    expect(code == 1, f"an unreadable file: exit {code}: {err}")
    code, _, err = repl(f":load {g} --fil=ones\n")
    expect(code == 2 and "did you mean --fill?" in err, f"exit {code}: {err}")


@test
def help_lists_every_command():
    code, out, _ = repl(":help\n")
    expect(code == 0, f"exit {code}")
    for c in ("stats", "vars", "del", "reset", "close", "cleanup", "load", "save", "timeline", "help", "quit"):
        expect(f"  :{c}" in out, f":help lacks :{c}:\n{out}")


@test
def timeline_has_a_row_per_statement():
    code, out, err = repl("x = zeros([1024])\ny = x + 1\nz = y * 2\n:timeline\n", "--cleanup=close")
    expect(code == 0, f"exit {code}: {err}")
    at = out.find("timeline")
    expect(at >= 0, out)
    rows = [line for line in out[at:].splitlines() if re.match(r"^\s+\d+\s", line)]
    expect(len(rows) == 3, rows)
    expect("y = x + 1" in out[at:], out[at:])


@test
def echo_stats_prints_a_delta_per_statement():
    code, out, err = repl("x = zeros([1024])\nx = x * 2\n", "--cleanup=close", "--echo-stats")
    expect(code == 0, f"exit {code}: {err}")
    lines = [line for line in out.splitlines() if line.startswith("stats cpu:")]
    expect(len(lines) == 2, out)
    expect(lines[0].startswith("stats cpu: in_use 4096 (+4096), pending 0 (+0), peak 4096 (+4096)"), lines)
    # x * 2: a 64-byte literal and a 4096-byte result; the literal and the old x
    # are unreferenced once the statement ends, and held (pending) under close
    expect(lines[1] == "stats cpu: in_use 8256 (+4160), pending 4160 (+4160), peak 8256 (+4160)", lines)


# --- memory against figures computed here -----------------------------------

N, M = 1024, 10
X = buffer_bytes(N)          # x = zeros([1024]): 4096 bytes
LITERAL = buffer_bytes(1)    # each pass's scalar literal `1`: 64 bytes
LOOP = f"x = zeros([{N}])\nrepeat {M} {{ x = x + 1 }}\n:stats\n"


@test
def close_holds_every_value_of_every_pass():
    code, out, err = repl(LOOP + ":close\n:stats\n", "--cleanup=close")
    expect(code == 0, f"exit {code}: {err}")
    now = out.split("memory before teardown:")[0]
    s = table_row(now, "memory now")
    expected = X + M * (X + LITERAL)  # nothing released before close
    expect(s["in_use"] == expected and s["peak"] == expected, f"in_use {s['in_use']}, expected {expected}")
    expect(s["pending"] == expected - X, f"pending {s['pending']}, expected {expected - X}")
    after = table_row(out, "memory after teardown", last=False)  # :close's
    for k in ("in_use", "pending", "reserved", "live", "workspace"):
        expect(after[k] == 0, f"{k} {after[k]} after :close")
    expect(after["allocs"] == after["frees"] == 1 + 2 * M, after)
    fresh = table_row(out, "memory now")
    expect(fresh["in_use"] == 0 and fresh["peak"] == 0 and fresh["allocs"] == 0, f"the fresh session: {fresh}")


@test
def safepoint_holds_the_live_set():
    peaks = []
    for m in (M, 10 * M):
        code, out, err = repl(f"x = zeros([{N}])\nrepeat {m} {{ x = x + 1 }}\n:stats\n:vars\n", "--cleanup=safepoint")
        expect(code == 0, f"exit {code}: {err}")
        s = table_row(out, "memory now")
        expect(s["in_use"] - s["pending"] == X, f"referenced {s['in_use'] - s['pending']}, expected x alone: {X}")
        # a pass holds x as it was before the statement (bound until the statement
        # ends, so that an error leaves it), the pass's x, its literal and the new
        # x; the previous pass's garbage goes back before each dispatch
        expect(s["peak"] == 3 * X + LITERAL, f"peak {s['peak']}, expected 3 x {X} + {LITERAL}")
        peaks.append(s["peak"])
    expect(peaks[0] == peaks[1], f"safepoint's peak grows with the passes: {peaks}")


@test
def background_stays_bounded_and_ends_at_zero():
    m = 10000
    code, out, err = repl(f"x = zeros([{N}])\nrepeat {m} {{ x = x + 1 }}\n:stats\n", "--cleanup=background")
    expect(code == 0, f"exit {code}: {err}")
    s = table_row(out, "memory now")
    close_peak = X + m * (X + LITERAL)  # 41.6 MB
    # the reclaimer's backlog is bounded (section 4: by max(static peak, 4 MiB)), whatever the passes
    bound = (4 << 20) + 2 * X + LITERAL + (1 << 20)
    expect(s["peak"] <= bound, f"background peak {s['peak']} above {bound} (close would hold {close_peak})")
    after = table_row(out, "memory after teardown")
    expect(after["in_use"] == 0 and after["live"] == 0 and after["allocs"] == after["frees"], after)


# --- a real terminal ---------------------------------------------------------


class Terminal:
    """`graphrun repl` on a pseudo-terminal: send keys, wait for output."""

    def __init__(self, *args, env=None):
        full_env = dict(os.environ, TERM="xterm", **(env or {}))
        pid, fd = pty.fork()
        if pid == 0:
            try:
                os.execve(BIN, [BIN, "repl", *args], full_env)
            finally:
                os._exit(127)
        self.pid, self.fd, self.buf, self.pos, self.code = pid, fd, b"", 0, None
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 200, 0, 0))

    def _read(self, timeout):
        r, _, _ = select.select([self.fd], [], [], max(timeout, 0))
        if not r:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the child has gone and the terminal closed
            data = b""
        self.buf += data
        return bool(data)

    def expect(self, pattern, timeout=20):
        """Waits for PATTERN (a regular expression) in the output after the
        last match; returns the match."""
        rx = re.compile(pattern.encode())
        deadline = time.monotonic() + timeout
        while True:
            m = rx.search(self.buf, self.pos)
            if m:
                self.pos = m.end()
                return m
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {pattern!r} within {timeout} s; the terminal shows:\n"
                                     f"{self.buf[-3000:].decode('utf-8', 'replace')}")
            if not self._read(left):
                raise AssertionError(f"the REPL ended before {pattern!r}:\n"
                                     f"{self.buf[-3000:].decode('utf-8', 'replace')}")

    def send(self, keys):
        os.write(self.fd, keys.encode())

    def line(self, text):
        """Types TEXT and Enter, then waits for the next main prompt."""
        self.send(text + "\r")
        self.expect(">>> ")

    def wait(self, timeout=30):
        """The exit code, once the REPL has ended (reading what it prints)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                while self._read(0.05):
                    pass
                self.code = os.waitstatus_to_exitcode(status)
                os.close(self.fd)
                return self.code
            self._read(0.05)
        self.kill()
        raise AssertionError(f"the REPL did not end within {timeout} s:\n{self.buf[-3000:].decode('utf-8', 'replace')}")

    def text(self):
        return self.buf.decode("utf-8", "replace")

    def kill(self):
        if self.code is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
            self.code = -9
            os.close(self.fd)


def line_editing():
    """Whether the binary was built with libedit (its banner says when not)."""
    t = Terminal(env={"GRAPHRUN_HISTFILE": ""})
    try:
        t.expect(">>> ")
        return b"built without libedit" not in t.buf
    finally:
        t.kill()


LINE_EDITING = line_editing()


def terminal_test(fn, needs_libedit=False):
    """A test that gets a fresh history file and always ends its REPL."""
    if needs_libedit and not LINE_EDITING:
        print(f"skip {fn.__name__}: graphrun was built without libedit")
        return fn

    def wrapped():
        hist = os.path.join(TMP, fn.__name__ + ".history")
        terms = []

        def start(*args, histfile=hist):
            t = Terminal(*args, env={"GRAPHRUN_HISTFILE": histfile})
            terms.append(t)
            t.expect("interactive session")
            t.expect(">>> ")
            return t
        try:
            fn(start, hist)
        finally:
            for t in terms:
                t.kill()
    wrapped.__name__ = fn.__name__
    return test(wrapped)


def libedit_test(fn):
    return terminal_test(fn, needs_libedit=True)


@libedit_test
def terminal_completes_ops_and_names(start, _):
    t = start()
    t.line("abcdef = [1, 2]")
    t.send("y = sigm\t")
    t.expect(r"oid\(")  # the op's name and its parenthesis
    t.send("abc\t")
    t.expect("def")
    t.line(")")
    t.line("z = abcd\t * 2")  # the bound name, completed
    t.send("z\r")
    t.expect(r"z: f32\[2\] \(cpu\)\r?\n\[2\. 4\.\]")
    t.expect(">>> ")
    t.send(":va\t")
    t.expect("rs")
    t.send("\r")
    t.expect("abcdef")
    t.expect(">>> ")
    t.send("\x04")
    expect(t.wait() == 0, f"exit {t.code}")


@libedit_test
def terminal_history_survives_a_session(start, hist):
    t = start()
    t.line("hist_value = [7, 8, 9]")
    t.send("\x04")
    expect(t.wait() == 0, f"exit {t.code}")
    expect(os.path.exists(hist) and "hist_value" in open(hist, encoding="utf-8", errors="replace").read(),
           "the history file lacks the line")
    t = start()
    t.send("\x1b[A")  # up: the last line of the session before
    t.expect("hist_value")
    t.line("")
    t.send("hist_value\r")
    t.expect(r"\[7\. 8\. 9\.\]")
    t.expect(">>> ")
    t.send(":quit\r")
    expect(t.wait() == 0, f"exit {t.code}")
    expect("memory after teardown:" in t.text(), t.text())


@libedit_test
def terminal_history_file_that_cannot_be_written_warns(start, _):
    t = start(histfile=os.path.join(TMP, "no-such-dir", "history"))
    t.line("x = [1]")
    t.send("\x04")
    expect(t.wait() == 0, f"exit {t.code}")
    expect("warning: the history was not saved" in t.text(), t.text())


@terminal_test
def terminal_multiline_block_has_a_continuation_prompt(start, _):
    t = start()
    t.line("x = zeros([4])")
    t.send("repeat 3 {\r")
    t.expect(r"\.\.\. ")
    t.send("x = x + 1\r")
    t.expect(r"\.\.\. ")
    t.line("}")
    t.send("x\r")
    t.expect(r"\[3\. 3\. 3\. 3\.\]")
    t.expect(">>> ")
    t.send("\x04")
    expect(t.wait() == 0, f"exit {t.code}")


@terminal_test
def terminal_ctrl_c_stops_a_statement_not_the_session(start, _):
    t = start("--cleanup=safepoint")
    t.line("x = zeros([4])")
    t.send("repeat 100000000 { x = x + 1 }\r")
    time.sleep(0.5)
    began = time.monotonic()
    t.send("\x03")
    t.expect(">>> ", timeout=10)
    stopped_in = time.monotonic() - began
    expect(stopped_in < 5, f"Ctrl-C took {stopped_in:.1f} s to stop the statement")
    t.send("x\r")
    t.expect(r"\[0\. 0\. 0\. 0\.\]")  # as before the stopped statement
    t.expect(">>> ")
    # Ctrl-C at the prompt discards the typed line; a second one does not end the session
    t.send("garbage = (")
    t.expect(r"garbage = \(")  # echoed: the line editor has it (a ^C sent sooner can race the prompt)
    t.send("\x03")
    t.expect(">>> ")
    t.send("\x03")
    t.expect(">>> ")
    t.line("x = x + 2")
    t.send("x\r")
    t.expect(r"\[2\. 2\. 2\. 2\.\]")
    t.expect(">>> ")
    t.send("\x04")
    expect(t.wait() == 0, f"exit {t.code}")
    expect("memory after teardown:" in t.text(), t.text())


@terminal_test
def terminal_ctrl_d_prints_the_statistics_after_teardown(start, _):
    t = start("--cleanup=close")
    t.line("x = zeros([1024])")
    t.send("\x04")
    expect(t.wait() == 0, f"exit {t.code}")
    text = t.text().replace("\r\n", "\n")
    before = table_row(text, "memory before teardown")
    after = table_row(text, "memory after teardown")
    expect(before["in_use"] == X, before)
    expect(after["in_use"] == 0 and after["live"] == 0, after)


@terminal_test
def terminal_sigterm_ends_the_session_with_its_statistics(start, _):
    t = start()
    t.line("x = ones([8])")
    os.kill(t.pid, signal.SIGTERM)
    code = t.wait()
    expect(code == 143, f"exit {code}")
    expect("memory after teardown:" in t.text(), t.text())


shutil.rmtree(TMP, ignore_errors=True)
sys.exit(finish("repl", results))
