#!/usr/bin/python3
"""graphrun vs NumPy benchmarks (issue 6).  Usage: bench.py GRAPHRUN [--quick] [--only NAME] [--strict]

Runs every workload in graphrun (CPU, --threads=os.cpu_count(), once with
--cleanup=safepoint and once with --cleanup=background) and in NumPy, in the
same run, and prints one table.  Conventions:
  * graphrun ms/op = median over R rounds of (run_ms of the graph with `repeat K`
    - run_ms of the same graph with `repeat 1`) / (K - 1), the two processes run
    back to back.  `session.run_ms` is engine time only; the difference cancels
    the setup nodes (random init) and the first pass, whose first-use costs
    (OpenBLAS's buffers and threads, first page faults) NumPy's untimed call
    also keeps out of its rounds.
  * "proc ms" is the wall clock of one whole graphrun process running the
    K-repeat graph (start-up, parse, init, K ops, printing, teardown).
  * NumPy ms/op = median over R rounds of (time of K ops) / K, each round after an
    untimed call.  After each round NumPy's OpenBLAS worker threads are stopped: they
    would otherwise spin on a core for 0.1 s while the next graphrun process runs.
  * ratio = NumPy time / graphrun time; > 1 means graphrun is faster.
Exit code 0 even when targets are not met, unless --strict is given.
"""
import argparse, ast, json, os, statistics, subprocess, sys, tempfile, time

try:
    import numpy as np
except ImportError:
    sys.exit(f"bench.py: NumPy is not installed for {sys.executable}.\n"
             "  Install Debian's package (apt-get install python3-numpy) and run with /usr/bin/python3.")

THREADS = os.cpu_count() or 1
STRATEGIES = ("safepoint", "background")
MB = 1 << 20
med = statistics.median


class Bench:
    def __init__(self, binary, quick, tmp):
        self.bin, self.quick, self.tmp = binary, quick, tmp
        self.R = 3 if quick else 5          # graphrun processes / NumPy rounds per measurement
        self.rows, self.peaks, self.notes, self.extra, self.sections = [], [], [], [], []
        self._n = 0

    # ---- graphrun ----------------------------------------------------------------
    def write(self, text, ext=".graph"):
        self._n += 1
        path = os.path.join(self.tmp, f"g{self._n}{ext}")
        with open(path, "w") as f:
            f.write(text)
        return path

    def gr(self, args, stdout=subprocess.PIPE):
        """Run graphrun once; return (wall ms, stdout text)."""
        t0 = time.perf_counter()
        p = subprocess.run([self.bin] + args, stdout=stdout, stderr=subprocess.PIPE, text=True)
        wall = (time.perf_counter() - t0) * 1e3
        if p.returncode != 0:
            raise RuntimeError(f"graphrun {' '.join(args)} exited {p.returncode}: {p.stderr.strip()[:2000]}")
        return wall, p.stdout

    def run_once(self, path, cleanup, iterations=1):
        """One process: (run_ms, process wall ms, cpu peak bytes)."""
        wall, out = self.gr(["run", path, "--format=json", f"--cleanup={cleanup}",
                             f"--threads={THREADS}", f"--iterations={iterations}"])
        doc = json.loads(out.splitlines()[-1])
        if "error" in doc:
            raise RuntimeError(f"{path}: {doc['error']}")
        return doc["session"]["run_ms"], wall, doc["memory"]["before_teardown"]["cpu"]["peak"]

    def run(self, path, cleanup, iterations=1, between=None):
        """Median over R processes: (run_ms, process wall ms, cpu peak bytes). `between`, if
        given, is called after each process: the reference is measured interleaved with it,
        so that both see the same load on a shared machine."""
        runs, walls, peaks = [], [], []
        for _ in range(self.R):
            run, wall, peak = self.run_once(path, cleanup, iterations)
            runs.append(run)
            walls.append(wall)
            peaks.append(peak)
            if between:
                between()
        return med(runs), med(walls), max(peaks)

    def check(self, path):
        _, out = self.gr(["check", path, "--format=json"])
        return json.loads(out)

    # ---- bookkeeping ---------------------------------------------------------------
    def row(self, name, gr_val, np_val, target, met, proc=None, unit="ms", ratio=None):
        if ratio is None:
            ratio = np_val / gr_val if gr_val > 0 else float("inf")
        self.rows.append((name, gr_val, np_val, ratio, target, met, proc, unit))

    def repeat_workload(self, name, setup, body, K, numpy_fn, target=1.0, np_label=""):
        """setup: graph text before the loop; body: loop body.  Adds one row per strategy.
        Each of R rounds runs the graph with `repeat 1`, then with `repeat K`, then one NumPy
        round of K calls; graphrun's per-op time is the median over the rounds of
        (run_ms[K] - run_ms[1]) / (K - 1): the setup and the first pass (process-wide
        first-use costs: OpenBLAS's buffers and threads, first page faults) cancel, as
        NumPy's untimed call before each round is left out of it."""
        tail = "y = [1, 2, 3, 4]\noutput y\n"          # fetch something tiny; every node runs anyway
        g1 = self.write(f"{setup}\nrepeat 1 {{\n{body}\n}}\n{tail}")
        gK = self.write(f"{setup}\nrepeat {K} {{\n{body}\n}}\n{tail}")
        static = self.check(gK)["static_peak"]["cpu"]
        np_all = []
        for s in STRATEGIES:
            per_op, nps, walls, peaks = [], [], [], []
            for _ in range(self.R):
                run1 = self.run_once(g1, s)[0]
                runK, wall, peak = self.run_once(gK, s)
                per_op.append((runK - run1) / (K - 1))
                walls.append(wall)
                peaks.append(peak)
                nps.append(numpy_round(numpy_fn, K))
            ms = max(med(per_op), 1e-9)
            np_ms = med(nps)
            self.row(f"{name} [{s}]", ms, np_ms, f">={target}x", np_ms / ms >= target, proc=med(walls))
            self.peaks.append((name, s, max(peaks), static))
            np_all += nps
        return med(np_all)


def _blas_thread_shutdown():
    """OpenBLAS's blas_thread_shutdown_ as loaded in this process (NumPy's BLAS), or None."""
    try:
        import ctypes
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "openblas" in line}
        for lib in sorted(libs):
            fn = getattr(ctypes.CDLL(lib, mode=getattr(os, "RTLD_NOLOAD", 0)), "blas_thread_shutdown_", None)
            if fn:
                return fn
    except OSError:
        pass
    return None


_SHUTDOWN = _blas_thread_shutdown()
QUIET_NOTE = ("NumPy's OpenBLAS workers are stopped after each NumPy round (blas_thread_shutdown_), "
              "so that they do not spin on a core while graphrun runs; an untimed call starts them "
              "again before the next round" if _SHUTDOWN else
              "NumPy's BLAS is not OpenBLAS: 0.25 s pause after each NumPy round instead")


def quiet_numpy_blas():
    """After its last call, each OpenBLAS worker thread of this process spins (sched_yield)
    for about 2^28 cycles (0.1 s) before it sleeps.  On a small machine that takes a core
    from the graphrun process started next: matmul 1024^3 read 0.90-0.95x with the workers
    spinning and 0.99-1.06x with them stopped, in alternating runs.  OpenBLAS starts them
    again at its next call (its "lazy re-init"), which numpy_round keeps out of the timing."""
    if _SHUTDOWN:
        _SHUTDOWN()
    else:
        time.sleep(0.25)


def numpy_round(fn, K):
    """The per-call time (ms) of K calls of fn, after one untimed call; then NumPy's BLAS
    workers are stopped (quiet_numpy_blas)."""
    fn()
    t0 = time.perf_counter()
    for _ in range(K):
        fn()
    ms = (time.perf_counter() - t0) * 1e3 / K
    quiet_numpy_blas()
    return ms


def numpy_time(fn, K, R):
    """Median over R rounds of the per-call time (ms) of K calls of fn."""
    return med([numpy_round(fn, K) for _ in range(R)])


# ---- workloads -----------------------------------------------------------------------
def w_overhead(b):
    """1. per-node overhead: a chain of adds/subs on 4-float tensors."""
    n = 2000 if b.quick else 20000
    iters = 50        # 1M node runs, about as long as the NumPy round of 200,000 calls
    lines = ["x = [1, 2, 3, 4]", "y = [0.5, 0.25, 0.125, 0.0625]"]
    lines += ["x = x + y" if i % 2 == 0 else "x = x - y" for i in range(n)]
    path = b.write("\n".join(lines) + "\noutput x\n")
    chk = b.check(path)
    nodes = len(chk["nodes"])                         # n add/sub + 2 const nodes, all executed per pass
    a, y, c = (np.array([1, 2, 3, 4], np.float32), np.full(4, 0.5, np.float32), np.empty(4, np.float32))
    calls = 20000 if b.quick else 200000
    add, add_out = (lambda: np.add(a, y)), (lambda: np.add(a, y, out=c))
    np_all, np_out_all = [], []
    for s in STRATEGIES:
        nps, np_outs = [], []                         # NumPy rounds interleaved with the processes

        def between():
            nps.append(numpy_round(add, calls) * 1e3)
            np_outs.append(numpy_round(add_out, calls) * 1e3)
        run, wall, peak = b.run(path, s, iterations=iters, between=between)
        np_us, np_out_us = med(nps), med(np_outs)
        np_all += nps
        np_out_all += np_outs
        us = run * 1e3 / (nodes * iters)
        ok = us <= 0.1 and np_us / us >= 3
        b.row(f"per-node overhead [{s}]", us, np_us, "<=0.1us & >=3x", ok, proc=wall, unit="us")
        b.peaks.append(("per-node overhead", s, peak, chk["static_peak"]["cpu"]))
        b.extra.append(f"per-node [{s}]: {us:.3f} us/node = run_ms {run:.2f} / ({nodes} nodes "
                       f"[{nodes - 2} add/sub + 2 const] x {iters} iterations); ratio vs "
                       f"np.add(a,b,out=c) {np_out_us:.3f} us: {np_out_us / us:.2f}x")
    b.notes.append(f"NumPy per call on 4 floats: np.add(a,b) {med(np_all):.3f} us, "
                   f"np.add(a,b,out=c) {med(np_out_all):.3f} us (medians over every round)")


def w_matmul(b):
    """2. matmul f32 in a repeat loop."""
    for n, K in ((512, 10), (1024, 4)) if b.quick else ((1024, 20), (2048, 10)):
        x = np.random.default_rng(1).random((n, n), dtype=np.float32)
        y = np.random.default_rng(2).random((n, n), dtype=np.float32)
        setup = f"a = random_uniform([{n}, {n}], seed=1)\nb = random_uniform([{n}, {n}], seed=2)"
        np_ms = b.repeat_workload(f"matmul {n}^3", setup, "c = a @ b", K, lambda: x @ y, 0.95)
        b.notes.append(f"matmul {n}^3: NumPy {2 * n ** 3 / np_ms / 1e6:.1f} GFLOP/s, K={K} per graphrun process")


def w_elementwise(b):
    """3. elementwise add of two f32 vectors, fresh output each time."""
    n = (1 << 22) if b.quick else (1 << 24)
    K = 10 if b.quick else 20
    x = np.random.default_rng(1).random(n, dtype=np.float32)
    y = np.random.default_rng(2).random(n, dtype=np.float32)
    out = np.empty_like(x)
    setup = f"a = random_uniform([{n}], seed=1)\nb = random_uniform([{n}], seed=2)"
    np_ms = b.repeat_workload(f"add {n >> 20}M f32", setup, "c = a + b", K, lambda: x + y)
    np_out = numpy_time(lambda: np.add(x, y, out=out), K, b.R)
    copy = numpy_time(lambda: np.copyto(out, x), K, b.R)
    gb = 3 * n * 4 / 1e9
    for r in b.rows[-len(STRATEGIES):]:
        b.extra.append(f"{r[0]}: {gb / r[1] * 1e3:.1f} GB/s (3 x {n * 4 // MB} MB per add)")
    b.notes.append(f"add {n >> 20}M: NumPy a+b {np_ms:.2f} ms ({gb / np_ms * 1e3:.1f} GB/s), "
                   f"np.add(out=) {np_out:.2f} ms ({gb / np_out * 1e3:.1f} GB/s); machine bandwidth "
                   f"np.copyto {n * 4 // MB} MB: {2 * n * 4 / 1e9 / copy * 1e3:.1f} GB/s (read+write)")


def w_reductions(b):
    """4. reductions and softmax over an n x n f32 matrix."""
    n = 2048 if b.quick else 4096
    K = 5 if b.quick else 50
    x = np.random.default_rng(1).random((n, n), dtype=np.float32)
    setup = f"x = random_uniform([{n}, {n}], seed=1)"

    def softmax():
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    cases = [("reduce_sum all", "r = reduce_sum(x)", lambda: x.sum()),
             ("reduce_sum axis -1", "r = reduce_sum(x, axes=[-1])", lambda: x.sum(axis=-1)),
             ("reduce_sum axis 0", "r = reduce_sum(x, axes=[0])", lambda: x.sum(axis=0)),
             ("reduce_max axis -1", "r = reduce_max(x, axes=[-1])", lambda: x.max(axis=-1)),
             ("reduce_mean all", "r = reduce_mean(x)", lambda: x.mean()),
             ("softmax axis -1", "r = softmax(x, axis=-1)", softmax)]
    for name, body, fn in cases:
        b.repeat_workload(f"{name} {n}^2", setup, body, K, fn)


def w_mlp(b):
    """5. MLP forward, batch 256, 1024-1024-1024-10, relu, softmax."""
    batch, d, K = (256, 1024, 5) if b.quick else (256, 1024, 100)
    setup = "\n".join([
        f"x = random_uniform([{batch}, {d}], seed=1)",
        f"w1 = random_normal([{d}, {d}], stddev=0.03125, seed=2)", f"b1 = random_normal([{d}], stddev=0.01, seed=3)",
        f"w2 = random_normal([{d}, {d}], stddev=0.03125, seed=4)", f"b2 = random_normal([{d}], stddev=0.01, seed=5)",
        f"w3 = random_normal([{d}, 10], stddev=0.03125, seed=6)", "b3 = random_normal([10], stddev=0.01, seed=7)"])
    body = "h1 = relu(x @ w1 + b1)\nh2 = relu(h1 @ w2 + b2)\np = softmax(h2 @ w3 + b3, axis=-1)"
    g = np.random.default_rng(0)
    X = g.random((batch, d), dtype=np.float32)
    W1, W2, W3 = (g.standard_normal(s, dtype=np.float32) * np.float32(0.03125) for s in ((d, d), (d, d), (d, 10)))
    B1, B2, B3 = (g.standard_normal(s, dtype=np.float32) * np.float32(0.01) for s in (d, d, 10))

    def mlp():
        h1 = np.maximum(X @ W1 + B1, 0)
        h2 = np.maximum(h1 @ W2 + B2, 0)
        z = h2 @ W3 + B3
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    b.repeat_workload(f"MLP fwd b{batch} {d}-{d}-{d}-10", setup, body, K, mlp)


def gen_script(target_nodes):
    """A valid text script of about target_nodes nodes: binary ops, relu and maximum on 4-float
    tensors, every name bound once, no `output` line (so that it is valid Python too)."""
    lines = ["c0 = [1, 2, 3, 4]", "c1 = [0.5, 0.25, 0.125, 2]", "t0 = c0 + c1", "t1 = relu(c0 - c1)"]
    nodes, i = 4, 2
    pats = [("t{i} = t{a} + c0", 1), ("t{i} = relu(t{a} - c1)", 2),
            ("t{i} = t{a} * t{b} + c1", 2), ("t{i} = maximum(t{a}, c0) / c1", 2)]
    while nodes < target_nodes:
        pat, k = pats[i % 4]
        lines.append(pat.format(i=i, a=i - 1, b=i - 2))
        nodes, i = nodes + k, i + 1
    return "# generated by scripts/bench/bench.py\n" + "\n".join(lines) + "\n"


def w_parse(b):
    """6. parse + validate a ~1M-node text script, and the same graph as JSON."""
    target = 100_000 if b.quick else 1_000_000
    text_path = b.write(gen_script(target))
    json_path = os.path.join(b.tmp, "big.json")
    with open(json_path, "w") as f:
        subprocess.run([b.bin, "convert", text_path, "--to=json"], stdout=f, check=True)
    with open(json_path) as f:
        js = f.read()
    R = 1 if b.quick else 5
    texts, jsons, loads = [], [], []
    for _ in range(R):                              # interleaved: each round sees the same load
        texts.append(b.gr(["check", text_path], stdout=subprocess.DEVNULL)[0])
        jsons.append(b.gr(["check", json_path], stdout=subprocess.DEVNULL)[0])
        t0 = time.perf_counter()
        doc = json.loads(js)
        loads.append((time.perf_counter() - t0) * 1e3)
        if len(loads) < R:
            del doc
    t_text, t_json, t_loads = med(texts), med(jsons), med(loads)
    nodes = len(doc["nodes"])                       # every node, const literals included
    del doc
    with open(text_path) as f:
        src = f.read()
    t0 = time.perf_counter()
    tree = ast.parse(src)
    t_ast = (time.perf_counter() - t0) * 1e3
    del tree
    rate = nodes / t_text * 1e3
    b.row(f"check text {nodes // 1000}k nodes", t_text, t_ast, ">=1M nodes/s", rate >= 1e6, proc=t_text)
    b.row(f"check JSON {len(js) / MB:.1f} MB", t_json, t_loads, "< json.loads", t_json < t_loads, proc=t_json)
    b.notes.append(f"parse: text check {rate / 1e6:.2f} M nodes/s (whole process, median of {R}); "
                   f"NumPy column = CPython ast.parse once ({nodes / t_ast * 1e3 / 1e6:.2f} M nodes/s) "
                   f"and json.loads of the {len(js) / MB:.1f} MB JSON (median of {R})")


def w_memory(b):
    """7. peak memory per strategy for n intermediates of size s, iterations 1 and 5."""
    n_int, size = 8, (1 << 18) if b.quick else (1 << 20)
    lines = [f"a = random_uniform([{size}], seed=1)", f"b = random_uniform([{size}], seed=2)", "t1 = a + b"]
    lines += [f"t{i} = t{i - 1} {'*' if i % 2 else '-'} b" for i in range(2, n_int + 1)]
    lines += ["y = [1, 2, 3, 4]", "output y"]
    path = b.write("\n".join(lines) + "\n")
    static = b.check(path)["static_peak"]["cpu"]
    res = {}
    for s in ("safepoint", "background", "close"):
        for m in (1, 5):
            res[s, m] = b.run(path, s, iterations=m)[2]
    out = [f"Peak memory per strategy, {n_int} intermediates of {size * 4 // 1024} KiB "
           f"(memory.before_teardown.cpu.peak in bytes, max of {b.R} runs; static_peak from graphrun check)",
           f"  {'strategy':<12}{'iterations=1':>14}{'iterations=5':>14}{'static_peak':>14}  peak/static (m=1, m=5)"]
    for s in ("safepoint", "background", "close"):
        p1, p5 = res[s, 1], res[s, 5]
        out.append(f"  {s:<12}{p1:>14}{p5:>14}{static:>14}  {p1 / static:.2f}x, {p5 / static:.2f}x")
    b.sections.append("\n".join(out))
    ok = res["safepoint", 1] == static and res["safepoint", 5] == res["safepoint", 1]
    b.row("peak safepoint m=1,5 vs static", res["safepoint", 5] / MB, static / MB,
          "== static, flat", ok, unit="MB", ratio=res["safepoint", 5] / static)


WORKLOADS = {"overhead": w_overhead, "matmul": w_matmul, "elementwise": w_elementwise,
             "reductions": w_reductions, "mlp": w_mlp, "parse": w_parse, "memory": w_memory}


def fmt(v):
    return f"{v:.4g}" if v < 1000 else f"{v:.0f}"


def human(n):
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB" if n < MB else f"{n / MB:.2f} MiB"


def report(b):
    head = ("workload", "graphrun", "NumPy/ref", "ratio", "target", "status", "proc ms")
    cells = [(r[0], f"{fmt(r[1])} {r[7]}", f"{fmt(r[2])} {r[7]}", f"{r[3]:.2f}", r[4],
              "met" if r[5] else "NOT MET", "" if r[6] is None else f"{r[6]:.0f}") for r in b.rows]
    w = [max(len(c[i]) for c in cells + [head]) for i in range(len(head))]
    line = lambda c: "  ".join(x.ljust(w[i]) if i in (0, 4, 5) else x.rjust(w[i]) for i, x in enumerate(c))
    print(f"\ngraphrun vs NumPy {np.__version__} ({'quick' if b.quick else 'full'}; threads={THREADS}; "
          f"graphrun median of {b.R} processes; load average at end {os.getloadavg()[0]:.1f} "
          f"on {THREADS} cores: other processes skew timings)")
    print(line(head))
    print(line(tuple("-" * x for x in w)))
    for c in cells:
        print(line(c))
    print("ratio = NumPy / graphrun (>1: graphrun faster; for the peak row: graphrun / static); "
          "proc ms = wall clock of one whole graphrun process")
    print("  " + QUIET_NOTE)
    for n in b.notes + b.extra:
        print("  " + n)
    for sec in b.sections:
        print("\n" + sec)
    if b.peaks:
        print("\nPeak CPU memory per workload (memory.before_teardown.cpu.peak, max of the runs; "
              "static = graphrun check static_peak)")
        print(f"  {'workload':<34}{'safepoint':>11}{'background':>11}{'static':>11}")
        names = list(dict.fromkeys(p[0] for p in b.peaks))
        for n in names:
            d = {p[1]: p for p in b.peaks if p[0] == n}
            st = next((p[3] for p in d.values() if p[3] is not None), None)
            cols = [human(d[s][2]) if s in d else "-" for s in STRATEGIES]
            print(f"  {n:<34}{cols[0]:>11}{cols[1]:>11}{'-' if st is None else human(st):>11}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary", help="path to the graphrun binary (a Release build)")
    ap.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats (smoke test)")
    ap.add_argument("--only", choices=sorted(WORKLOADS), action="append", help="run only this workload (repeatable)")
    ap.add_argument("--strict", action="store_true", help="exit 1 if any target is not met")
    a = ap.parse_args()
    binary = os.path.abspath(a.binary)
    if not os.access(binary, os.X_OK):
        sys.exit(f"bench.py: {binary} is not an executable graphrun binary")
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="graphrun-bench-") as tmp:
        b = Bench(binary, a.quick, tmp)
        for name, fn in WORKLOADS.items():
            if a.only and name not in a.only:
                continue
            t1 = time.perf_counter()
            print(f"[{name}] running...", file=sys.stderr, flush=True)
            fn(b)
            print(f"[{name}] done in {time.perf_counter() - t1:.1f} s", file=sys.stderr, flush=True)
        report(b)
    missed = [r[0] for r in b.rows if not r[5]]
    print(f"\n{len(b.rows) - len(missed)}/{len(b.rows)} targets met; total {time.perf_counter() - t0:.0f} s")
    return 1 if a.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
