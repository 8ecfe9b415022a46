"""The harness every CLI-level test script shares: it runs the real binary
(one timeout rule, one exit-code rule) and records each test function's result.

Running the binary:

    r = run_binary(BIN, ["run", "x.graph"], timeout=60, cwd=None, env=None, stdin=None)
    code, out, err = r                # or r.returncode, r.stdout, r.stderr

stdout and stderr are text (undecodable bytes replaced). A run that outlives
its timeout, or that a signal ends (a crash, an abort, a sanitizer report: a
negative return code), raises BinaryFailed, an AssertionError, naming the
command: no input may crash graphrun or hang it (SPEC section 6), so no test has
to remember to check for that. Pass allow_signal=True where a test sends the
signal itself. Every test's command is printed on a failure.

Recording results (cli_test, memory_test, output_test):

    run, test, results = make_harness(BIN, timeout=120)

    @test
    def something():
        code, out, err = run("run", "x.graph")
        expect(code == 0, err)

    sys.exit(finish("cli", results))

Scripts that collect failures in a list (`check(cond, msg)`) use run_binary
directly and checks(failures) for the check function.
"""
import json
import os
import shlex
import signal
import subprocess
import sys
import time


class BinaryFailed(AssertionError):
    """The binary timed out or was ended by a signal."""


class Result:
    """One run's exit code and output: unpacks as (code, stdout, stderr), and
    reads like subprocess.CompletedProcess (returncode, stdout, stderr)."""

    __slots__ = ("returncode", "stdout", "stderr", "args")

    def __init__(self, returncode, stdout, stderr, args):
        self.returncode, self.stdout, self.stderr, self.args = returncode, stdout, stderr, args

    def __iter__(self):
        return iter((self.returncode, self.stdout, self.stderr))

    @property
    def code(self):
        return self.returncode


def describe(args):
    text = " ".join(shlex.quote(str(a)) for a in args)
    return text if len(text) <= 600 else text[:600] + " ..."


def run_binary(binary, args, *, stdin=None, cwd=None, env=None, timeout=120, allow_signal=False):
    """Runs BINARY ARGS; returns a Result; raises BinaryFailed on a timeout or
    on a death by signal (unless allow_signal). stdin: str or bytes; env: extra
    variables on top of os.environ."""
    cmd = [str(binary), *[str(a) for a in args]]
    if isinstance(stdin, str):
        stdin = stdin.encode()
    full_env = dict(os.environ, **env) if env else None
    try:
        p = subprocess.run(cmd, input=stdin, capture_output=True, timeout=timeout, cwd=cwd, env=full_env)
    except subprocess.TimeoutExpired:
        raise BinaryFailed(f"did not finish within {timeout} s: {describe(cmd)}") from None
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode < 0 and not allow_signal:
        try:
            name = signal.Signals(-p.returncode).name
        except ValueError:
            name = f"signal {-p.returncode}"
        raise BinaryFailed(f"ended by {name}: {describe(cmd)}\nstderr:\n{err[-3000:]}")
    return Result(p.returncode, out, err, cmd)


# Runs argv[1:] (stdin inherited, stdout discarded, stderr inherited) and
# prints its exit code, seconds and peak resident memory in bytes as JSON.
_MEASURE = r"""
import json, os, subprocess, sys, time
t0 = time.monotonic()
proc = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL)
timeout = float(sys.argv[1])
while True:
    pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
    if pid:
        break
    if time.monotonic() - t0 > timeout:
        proc.kill()
    time.sleep(0.005)
print(json.dumps([os.waitstatus_to_exitcode(status), time.monotonic() - t0, usage.ru_maxrss * 1024]))
"""


def run_measured(binary, args, *, stdin=None, cwd=None, timeout=120):
    """Runs BINARY ARGS once and measures it: returns (exit code, stderr,
    seconds, peak resident memory in bytes); stdout is discarded. A small
    helper process starts it: the peak of a child forked from the test's own
    Python would include that Python's (Linux carries it over exec)."""
    cmd = [str(binary), *[str(a) for a in args]]
    if isinstance(stdin, str):
        stdin = stdin.encode()
    try:
        p = subprocess.run([sys.executable, "-c", _MEASURE, str(timeout), *cmd], input=stdin, capture_output=True,
                           cwd=cwd, timeout=timeout + 30)
    except subprocess.TimeoutExpired:
        raise BinaryFailed(f"did not finish within {timeout} s: {describe(cmd)}") from None
    if p.returncode != 0:
        raise AssertionError(f"the measuring helper failed: {p.stderr[-1500:]!r}")
    code, seconds, rss = json.loads(p.stdout)
    err = p.stderr.decode("utf-8", "replace")
    if code < 0:
        raise BinaryFailed(f"ended by signal {-code} (or its timeout of {timeout} s): {describe(cmd)}\n"
                           f"stderr:\n{err[-3000:]}")
    return code, err, seconds, rss


def expect(cond, msg):
    if not cond:
        raise AssertionError(str(msg)[:3000])


def checks(failures, prefix="FAIL:"):
    """A check(cond, msg) that appends msg to FAILURES and prints it."""
    def check(cond, msg):
        if not cond:
            failures.append(msg)
            print(prefix, msg)
        return bool(cond)
    return check


def make_harness(binary, timeout=60):
    results = {"passed": 0, "failed": 0}

    def run(*args, stdin=None, timeout=timeout, cwd=None, env=None, allow_signal=False):
        return tuple(run_binary(binary, args, stdin=stdin, timeout=timeout, cwd=cwd, env=env,
                                allow_signal=allow_signal))

    def test(fn):
        # Each case's wall time is printed, so that a CI log says which cases
        # make a suite slow (under ASan, mostly).
        start = time.perf_counter()
        try:
            fn()
        except AssertionError as e:
            results["failed"] += 1
            print(f"FAIL {fn.__name__} ({time.perf_counter() - start:.1f} s): {e}")
            return fn
        except Exception as e:  # a crash in the harness is a failure too
            results["failed"] += 1
            print(f"FAIL {fn.__name__} ({time.perf_counter() - start:.1f} s): {type(e).__name__}: {e}")
            return fn
        results["passed"] += 1
        print(f"ok   {fn.__name__} ({time.perf_counter() - start:.1f} s)")
        return fn

    return run, test, results


def finish(name, results):
    """Prints the counts; the exit status for sys.exit."""
    print(f"{name}: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] or not results["passed"] else 0


def asan_build(binary):
    """Whether the binary is built with AddressSanitizer: its shadow memory and
    quarantine make resident-memory figures (and RLIMIT_AS bounds) meaningless,
    so a test checks those on the plain build only."""
    with open(binary, "rb") as f:
        return b"__asan_init" in f.read()


class ValueRunner:
    """Scripts, .npy feeds and runs whose outputs come back as NumPy arrays (read
    from an .npz): the tests that compare values against NumPy references
    (dtypes_test.py, index_ops_test.py). Needs numpy; the ONNX methods need
    python3-onnx."""

    def __init__(self, binary, tmp):
        self.binary, self.tmp = binary, tmp

    def script(self, name, text):
        path = os.path.join(self.tmp, name + ".graph")
        with open(path, "w") as f:
            f.write(text)
        return path

    def save(self, name, a):
        import numpy as np
        path = os.path.join(self.tmp, name + ".npy")
        np.save(path, a)
        return path

    def run_values(self, path, *extra, fetch=()):
        """Runs PATH (fetching FETCH): (process, {output: array})."""
        import numpy as np
        out = os.path.join(self.tmp, os.path.basename(path) + ".npz")
        if os.path.exists(out):
            os.unlink(out)
        p = run_binary(self.binary, ["run", path, f"--output=@{out}", "--no-data",
                                     *[f"--fetch={f}" for f in fetch], *extra], timeout=120)
        return p, (dict(np.load(out)) if p.returncode == 0 and os.path.exists(out) else {})

    def onnx_model(self, name, nodes, ins, outs, inits=(), opset=13):
        """A model of NODES: inputs INS [(name, array)], outputs OUTS [(name, numpy type, shape)]."""
        import numpy as np
        from onnx import TensorProto, helper
        types = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.int64: TensorProto.INT64,
                 np.int32: TensorProto.INT32, np.float16: TensorProto.FLOAT16, np.int8: TensorProto.INT8,
                 np.uint8: TensorProto.UINT8}
        graph = helper.make_graph(
            nodes, name, [helper.make_tensor_value_info(k, types[a.dtype.type], list(a.shape)) for k, a in ins],
            [helper.make_tensor_value_info(k, types[t], list(s)) for k, t, s in outs], initializer=list(inits))
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        path = os.path.join(self.tmp, name + ".onnx")
        with open(path, "wb") as f:
            f.write(m.SerializeToString())
        return path

    def onnx_run(self, path, ins, *extra):
        """Runs the model PATH fed INS [(name, array)] as .npy files."""
        args = [f"--input={k}=@{self.save(os.path.basename(path) + '.' + k, a)}" for k, a in ins]
        return self.run_values(path, *args, *extra)
