"""The harness the CLI-level test scripts share (cli_test, memory_test,
output_test): run the real binary, record each test function's result.

    run, test, results = make_harness(BIN, timeout=120)

    @test
    def something():
        code, out, err = run("run", "x.graph")
        expect(code == 0, err)

    sys.exit(finish("cli", results))
"""
import subprocess


def expect(cond, msg):
    if not cond:
        raise AssertionError(str(msg)[:3000])


def make_harness(binary, timeout=60):
    results = {"passed": 0, "failed": 0}

    def run(*args, stdin=None, timeout=timeout):
        p = subprocess.run([binary, *args], input=stdin, capture_output=True, timeout=timeout)
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

    return run, test, results
