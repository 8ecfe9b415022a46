#!/usr/bin/env python3
"""CLI tests: run the real graphrun binary and check exit codes, messages and
output formats. Usage: cli_test.py GRAPHRUN_BINARY SOURCE_DIR"""
import json
import os
import re
import subprocess
import sys
import tempfile

from harness import expect, finish, make_harness  # noqa: E402 (tests/harness.py)

BIN = sys.argv[1]
SRC = sys.argv[2]
EXAMPLES = os.path.join(SRC, "scripts", "examples")
run, test, results = make_harness(BIN, timeout=60)


def gpu_status():
    """(usable, why): what `graphrun devices` says about GPUs on this machine."""
    _, out, _ = run("devices")
    for line in out.splitlines():
        if line.startswith("gpu: none usable: "):
            return False, line[len("gpu: none usable: "):]
    return True, ""


GPU_USABLE, WHY_NO_GPU = gpu_status()


def no_gpu_test(fn):
    """A test of what happens without a usable GPU: skipped (and said so) where one exists."""
    if GPU_USABLE:
        print(f"skip {fn.__name__}: a GPU is usable here")
        return fn
    return test(fn)


def examples(ext):
    return sorted(os.path.join(EXAMPLES, f) for f in os.listdir(EXAMPLES) if f.endswith(ext))


@test
def help_lists_commands():
    code, out, _ = run("--help")
    expect(code == 0, f"exit {code}")
    for word in ("check", "convert", "devices", "dot", "Exit codes"):
        expect(word in out, f"--help lacks {word}")


@test
def check_help_lists_options():
    code, out, _ = run("check", "--help")
    expect(code == 0, f"exit {code}")
    for word in ("--format", "--device", "--no-soft-placement", "--log-placement", "--fetch"):
        expect(word in out, f"check --help lacks {word}")


@test
def version_says_cuda():
    code, out, _ = run("--version")
    expect(code == 0 and "graphrun" in out and "CUDA support" in out, out)


@test
def usage_errors_exit_2():
    for args in ([], ["frobnicate"], ["check"], ["check", "x.graph", "--bogus"],
                 ["check", "x.graph", "--format=xml"], ["check", "x.graph", "--device=tpu"],
                 ["convert", "x.graph"], ["convert", "x.graph", "--to=yaml"]):
        code, _, err = run(*args)
        expect(code == 2, f"{args}: exit {code}, expected 2 ({err.strip()})")


@test
def unreadable_file_exits_1():
    code, _, err = run("check", "/nonexistent/dir/x.graph")
    expect(code == 1, f"exit {code}")
    expect("/nonexistent/dir/x.graph" in err and "No such file" in err, err)
    code, _, err = run("check", SRC)  # a directory
    expect(code == 1, f"directory: exit {code}: {err}")


@test
def every_example_checks():
    for path in examples(".graph") + examples(".json"):
        code, out, err = run("check", path)
        expect(code == 0, f"{path}: exit {code}: {err}")
        expect("outputs:" in out and "static peak" in out, f"{path}: {out}")


@test
def json_examples_are_conversions_of_text_examples():
    for path in examples(".graph"):
        jpath = path[:-len(".graph")] + ".json"
        expect(os.path.exists(jpath), f"missing {jpath}")
        code, out, err = run("convert", path, "--to=json")
        expect(code == 0, err)
        with open(jpath) as f:
            expect(f.read() == out, f"{jpath} differs from `graphrun convert {path} --to=json`")


def check_json(path, *extra, stdin=None):
    code, out, err = run("check", path, "--format=json", *extra, stdin=stdin)
    expect(code == 0, f"{path}: exit {code}: {err}")
    lines = out.strip().splitlines()
    expect(len(lines) == 1, "check --format=json must print one line")
    return json.loads(lines[0])


@test
def check_json_fields():
    doc = check_json(os.path.join(EXAMPLES, "mlp.graph"))
    for key in ("file", "nodes", "outputs", "static_peak"):
        expect(key in doc, f"missing {key}")
    for node in doc["nodes"]:
        for key in ("name", "op", "inputs", "dtype", "shape", "device", "line"):
            expect(key in node, f"node lacks {key}: {node}")
    names = [o["name"] for o in doc["outputs"]]
    expect(names == ["probs", "confidence"], names)
    expect(doc["outputs"][0]["shape"] == [32, 10] and doc["outputs"][0]["dtype"] == "f32", doc["outputs"][0])
    expect(doc["outputs"][1]["shape"] == [32], doc["outputs"][1])
    expect(isinstance(doc["static_peak"]["cpu"], int) and doc["static_peak"]["cpu"] > 0, doc["static_peak"])
    expect(list(doc.keys())[-4:] == ["static_peak", "close_growth", "weights", "offset_plan"], list(doc.keys()))
    expect(doc["offset_plan"] == {}, doc["offset_plan"])  # no tensor of mlp's is 256 KiB
    expect(doc["close_growth"].keys() == doc["static_peak"].keys(), doc["close_growth"])
    expect(doc["close_growth"]["cpu"] > doc["static_peak"]["cpu"], doc)  # mlp runs in place under safepoint
    code, out, _ = run("check", os.path.join(EXAMPLES, "mlp.graph"))
    growth = doc["close_growth"]["cpu"]
    expect(out.endswith("\n\nclose growth (--cleanup=close holds every tensor until the session closes):\n"
                        f"  cpu: a pass allocates {growth} bytes ({growth / 1024:.2f} KiB); "
                        "the peak grows by that per pass\n"), out[-400:])


@test
def check_listing_of_a_large_graph_matches_its_json():
    # From 20,000 nodes on, check renders the text listing on a second thread
    # while the plan compiles: the listing must still be complete and in order.
    n = 30000
    lines = ["x0 = [1, 2]", "k = [3, 4]"]
    lines += [f"x{i} = relu(x{i - 1} * k) + k" for i in range(1, n // 3 + 1)]
    src = "\n".join(lines) + "\n"
    doc = check_json("-", stdin=src.encode())
    code, out, err = run("check", "-", stdin=src.encode())
    expect(code == 0, err)
    listing = out.split("\nnodes:\n", 1)[1].split("\n\noutputs:\n", 1)[0].splitlines()
    expect(len(doc["nodes"]) > 30000, len(doc["nodes"]))
    expect(len(listing) == len(doc["nodes"]), f"{len(listing)} listed, {len(doc['nodes'])} nodes")
    for text, node in zip(listing, doc["nodes"]):
        fields = text.split()
        expect(fields[:5] == [node["name"], node["op"], f"{node['dtype']}[{','.join(map(str, node['shape']))}]",
                              node["device"], f"{node['line']}:{node.get('column')}"], (text, node))
        ins = text.split("<- ", 1)[1].split(", ") if "<- " in text else []
        expect(ins == node["inputs"], (text, node))
    tail = out.split("\nstatic peak (one pass, live tensor bytes):\n", 1)[1]
    expect(tail.startswith(f"  cpu: {doc['static_peak']['cpu']} bytes ("), tail)


@test
def check_lists_the_places_of_a_large_json_graph():
    # From 20,000 nodes on, a JSON graph's pointers are found on a second
    # thread while the graph is validated, and the listing takes them from
    # that table. Each listed place must be the one written here: nodes in
    # repeat bodies, literal inputs (numbers and "inf"), members in an
    # unusual order, the spacing of two indents.
    nodes, want = [], []
    body_ops = [("add", 1), ("mul", 2.5), ("sub", "inf")]
    for i in range(2400):
        if i % 7 == 3:
            body = []
            for j, (op, lit) in enumerate(body_ops):
                body.append({"inputs": ["x", lit], "op": op, "name": "x"})
                want += [f"/nodes/{i}/body/{j}/inputs/1", f"/nodes/{i}/body/{j}"]
            nodes.append({"body": body, "repeat": 2})
        elif i == 0:
            nodes.append({"name": "x", "op": "zeros", "attrs": {"shape": [2]}})
            want.append("/nodes/0")
        else:
            lit = i % 5 + 0.5 if i % 2 else -1
            nodes.append({"op": "add", "inputs": [lit, "x"], "name": "x"})
            want += [f"/nodes/{i}/inputs/0", f"/nodes/{i}"]
    doc = {"graphrun": 1, "nodes": nodes, "outputs": ["x"]}
    # Several nodes share each array: 2400 items are over 20,000 nodes only
    # with the repeats' literals, so pad with single-node items until then.
    pad = (20500 - len(want) + 1) // 2
    for k in range(pad):
        i = len(nodes)
        nodes.append({"name": "x", "op": "add", "inputs": ["x", k % 3]})
        want += [f"/nodes/{i}/inputs/1", f"/nodes/{i}"]
    text = json.dumps(doc, indent=1 if pad % 2 else None, separators=(",", ": "))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "big.json")
        with open(path, "w") as f:
            f.write(text)
        code, out, err = run("check", path)
        expect(code == 0, err)
        listing = out.split("\nnodes:\n", 1)[1].split("\n\noutputs:\n", 1)[0].splitlines()
        got = [line.split()[4] for line in listing if line.split()[0] not in ("repeat", "}")]
        expect(len(got) == len(want) and len(want) > 20000, (len(got), len(want)))
        bad = [(k, g, w) for k, (g, w) in enumerate(zip(got, want)) if g != w]
        expect(not bad, bad[:5])
        js = check_json(path)
        got = [n["pointer"] for n in js["nodes"]]
        expect(sorted(got) == sorted(want), "the JSON report's pointers differ from the nodes' places")


@test
def convert_round_trips_through_the_binary():
    with tempfile.TemporaryDirectory() as tmp:
        for path in examples(".graph"):
            base = os.path.basename(path)[:-6]
            code, js, err = run("convert", path, "--to=json")
            expect(code == 0, err)
            jpath = os.path.join(tmp, base + ".json")
            with open(jpath, "w") as f:
                f.write(js)
            code, txt, err = run("convert", jpath, "--to=text")
            expect(code == 0, err)
            tpath = os.path.join(tmp, base + ".graph")
            with open(tpath, "w") as f:
                f.write(txt)
            a = check_json(path)
            for other in (jpath, tpath):
                b = check_json(other)
                strip = lambda d: [(n["name"], n["op"], n["inputs"], n["dtype"], n["shape"], n["device"])
                                   for n in d["nodes"]]
                expect(strip(a) == strip(b), f"{other}: nodes differ from {path}")
                expect(a["outputs"] == b["outputs"] and a["static_peak"] == b["static_peak"], other)


@test
def standard_input():
    code, out, err = run("check", "-", stdin=b"a = [1, 2]\nb = a * 2\n")
    expect(code == 0, err)
    expect("b: f32[2] (cpu)" in out, out)
    code, out, err = run("check", "-", stdin=b'{"graphrun": 1, "nodes": [{"name": "a", "op": "ones", "shape": [3]}]}')
    expect(code == 0, err)
    expect("a: f32[3] (cpu)" in out, out)
    code, _, err = run("check", "-", stdin=b"a = [1, 2\n")
    expect(code == 3 and "<stdin>:" in err, err)


@test
def fetch_overrides_outputs():
    doc = check_json(os.path.join(EXAMPLES, "mlp.graph"), "--fetch=h1", "--fetch=logits")
    expect([o["name"] for o in doc["outputs"]] == ["h1", "logits"], doc["outputs"])
    code, _, err = run("check", os.path.join(EXAMPLES, "mlp.graph"), "--fetch=logit")
    expect(code == 2, f"exit {code}")
    expect("did you mean 'logits'" in err, err)


@no_gpu_test
def soft_placement_warns_once_per_cause():
    code, out, err = run("check", os.path.join(EXAMPLES, "placement.graph"))
    expect(code == 0, err)
    warnings = [l for l in err.splitlines() if l.startswith("warning:")]
    expect(len(warnings) == 1, f"expected one warning, got {warnings}")
    expect("gpu:0 unavailable: " + WHY_NO_GPU in warnings[0], warnings[0])


@no_gpu_test
def no_soft_placement_is_an_error():
    path = os.path.join(EXAMPLES, "placement.graph")
    code, _, err = run("check", path, "--no-soft-placement")
    expect(code == 1, f"exit {code}")
    expect("error:" in err and "'w'" in err and "gpu:0" in err and WHY_NO_GPU in err, err)
    code, _, err = run("check", os.path.join(EXAMPLES, "add.graph"), "--no-soft-placement")
    expect(code == 0, "auto placement of a CPU-only graph must not fail: " + err)
    code, _, err = run("check", os.path.join(EXAMPLES, "add.graph"), "--no-soft-placement", "--device=gpu")
    expect(code == 1 and "gpu:0" in err, err)


@no_gpu_test
def log_placement_one_line_per_node():
    path = os.path.join(EXAMPLES, "placement.graph")
    doc = check_json(path)
    code, _, err = run("check", path, "--log-placement")
    expect(code == 0, err)
    lines = [l for l in err.splitlines() if l.startswith("placement: ")]
    expect(len(lines) == len(doc["nodes"]), f"{len(lines)} lines for {len(doc['nodes'])} nodes")
    expect(f"placement: wv (matmul) -> cpu (gpu:0 unavailable: {WHY_NO_GPU})" in lines, lines)
    expect(any(l.startswith("placement: norm (sqrt) -> cpu") for l in lines), lines)


@no_gpu_test
def devices_says_why_no_gpu():
    code, out, _ = run("devices")
    expect(code == 0, f"exit {code}")
    expect("cpu:" in out and WHY_NO_GPU, out)
    # The CPU kernels chosen by the features the CPU reports (issue 25 item 6).
    cpu = [l for l in out.splitlines() if l.startswith("cpu: ")]
    expect(len(cpu) == 1 and re.search(r"; kernels: (baseline|avx2|avx512) loops, OpenBLAS \S+ kernels, (libmvec|scalar libm) for exp/tanh/erf/log/sigmoid/gelu(, oneDNN \d+\.\d+\.\d+ \(\w+\))?$", cpu[0]),
           out)
    _, version, _ = run("--version")
    if "not built in" in version:
        expect(WHY_NO_GPU == "graphrun was built without CUDA support", WHY_NO_GPU)
    else:
        expect("CUDA toolkit" in version, version)
        known = ("no CUDA driver", "no CUDA device", "CUDA driver is older", "CUDA libraries are not installed")
        expect(any(k in WHY_NO_GPU for k in known), "an unexplained cause: " + WHY_NO_GPU)


def run_env(env_extra, *args):
    return run(*args, env=env_extra)


@test
def main_binary_links_no_cuda_library():
    p = subprocess.run(["ldd", BIN], capture_output=True, text=True)
    for lib in ("libcuda.so", "libcudart", "libcublas", "libnvidia-ml"):
        expect(lib not in p.stdout, f"graphrun itself needs {lib}:\n{p.stdout}")


@test
def cpu_runs_load_no_cublas():
    """cuBLAS (over 500 MB of library) is loaded only where a GPU is found: a
    CPU run on a machine without one must not pay its start-up and memory."""
    if GPU_USABLE:
        print("     (skipped: a GPU is usable here)")
        return
    code, _, err = run_env({"LD_DEBUG": "files"}, "run", os.path.join(EXAMPLES, "add.graph"))
    expect(code == 0, err)
    expect("libcublas" not in err, "a CPU run loaded cuBLAS:\n" +
           "\n".join(l for l in err.splitlines() if "cublas" in l))


@test
def cpu_graphs_run_with_the_cuda_plugin_missing_or_broken():
    with tempfile.TemporaryDirectory() as d:
        broken = os.path.join(d, "libgraphrun_cuda.so")
        with open(broken, "wb") as f:
            f.write(b"not a shared object")
        for plugin, cause in ((os.path.join(d, "missing.so"), "is missing"), (broken, "could not be loaded")):
            env = {"GRAPHRUN_CUDA_PLUGIN": plugin}
            code, out, _ = run_env(env, "devices")
            expect(code == 0 and "gpu: none usable:" in out and cause in out, out)
            code, out, err = run_env(env, "run", os.path.join(EXAMPLES, "placement.graph"), "--check-leaks")
            expect(code == 0, err)
            expect("(cpu)" in out and "gpu:0 unavailable" in err and cause in err, err)
            code, _, err = run_env(env, "run", os.path.join(EXAMPLES, "add.graph"), "--device=gpu",
                                   "--no-soft-placement")
            expect(code == 1 and cause in err and "gpu:0" in err, err)


@test
def cpu_graphs_run_with_cuda_libraries_hidden():
    """Hides the CUDA toolkit and driver directories in a private mount
    namespace (needs unshare; skipped where it is refused)."""
    hide = [p for p in ("/usr/local/cuda", "/usr/local/cuda-13.0", "/usr/lib/x86_64-linux-gnu/nvidia") if os.path.isdir(p)]
    if not hide or subprocess.run(["sh", "-c", "command -v unshare"], capture_output=True).returncode != 0:
        print("     (skipped: nothing to hide or no unshare)")
        return
    with tempfile.TemporaryDirectory() as empty:
        mounts = " && ".join(f"mount --bind {empty} {h}" for h in hide)
        script = f"{mounts} && {BIN} run {os.path.join(EXAMPLES, 'mlp.graph')} --check-leaks && {BIN} devices"
        p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                           capture_output=True, text=True, timeout=60)
        if "unshare failed" in p.stderr or "Operation not permitted" in p.stderr or "permission denied" in p.stderr.lower():
            print("     (skipped: unshare is refused here: " + p.stderr.strip().splitlines()[0] + ")")
            return
        expect(p.returncode == 0, p.stderr)
        expect("memory after teardown" in p.stdout and "gpu: none usable:" in p.stdout, p.stdout)


@test
def malformed_inputs_never_crash():
    cases = [b"", b"   \n# only a comment\n", bytes(range(256)) * 4, b"\xff\xfe\x00garbage",
             b"x = " + b"(" * 100000, b"x = " + b"[" * 100000, b"{" * 100000, b'{"graphrun": 1, "nodes": ' + b"[" * 100000,
             b"x = zeros([99999999999, 99999999999, 99999999999])", b'a = "unterminated\n', b"repeat 3 {\n x = 1\n",
             b"x = [[1, 2], [3]]", b"with = 3", b"\xc3\x28 = 1"]
    for data in cases:
        code, _, err = run("check", "-", stdin=data)
        expect(code == 3, f"{data[:40]!r}: exit {code}: {err[:300]}")
        expect("error:" in err, f"{data[:40]!r}: no error message")


@test
def convert_rejects_invalid_graph():
    code, out, err = run("convert", "-", "--to=json", stdin=b"a = [1, 2]\nb = a + c\n")
    expect(code == 3 and out == "", f"exit {code}, stdout {out!r}")
    expect("<stdin>:2:9: error: unknown name 'c'" in err, err)



def run_json(*args, stdin=None, want=0):
    code, out, err = run("run", *args, "--format=json", stdin=stdin)
    expect(code == want, f"run {args}: exit {code}, expected {want}: {err[-500:]}")
    return [json.loads(l) for l in out.strip().splitlines()], err


@test
def weights_are_placed_once_and_held_until_teardown():
    # SPEC section 4: every const is a weight. A 1024-float matrix, a literal
    # operand, a `repeat` that reads both 50 times: the weights are check's
    # figure under every strategy, never in in_use or peak, 0 after teardown.
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "w.graph")
        with open(path, "w") as f:
            f.write("w = const([" + ", ".join(["0.5"] * 1024) + "])\nx = zeros([1024])\n"
                    "repeat 50 { x = x * w + 1 }\noutput x\n")
        doc = check_json(path)
        expect(doc["weights"] == {"cpu": 4096 + 64}, doc["weights"])
        expect(doc["static_peak"]["cpu"] == 4096, doc["static_peak"])  # x alone, in place
        expect(doc["close_growth"]["cpu"] == 4096 + 50 * 2 * 4096, doc["close_growth"])  # x, 50 x (product, sum)
        for cleanup in ("background", "safepoint", "close"):
            docs, _ = run_json(path, f"--cleanup={cleanup}", "--iterations=3", "--check-leaks")
            before = docs[0]["memory"]["before_teardown"]["cpu"]
            after = docs[0]["memory"]["after_teardown"]["cpu"]
            expect(before["weights"] == 4096 + 64 and after["weights"] == 0, (cleanup, before, after))
            if cleanup == "safepoint":
                expect(before["peak"] == 4096, (cleanup, before))
            if cleanup == "close":
                expect(before["peak"] == 3 * doc["close_growth"]["cpu"], (cleanup, before))
            expect(docs[0]["outputs"][0]["data"][0] == 2.0, docs[0]["outputs"][0]["data"][:3])  # x -> x/2 + 1 -> 2
        # The limit holds tensors and weights together: refused before running, both named.
        code, out, err = run("run", path, "--memory-limit=8000")
        expect(code == 1 and "(its tensors' peak 4096 bytes and 4160 bytes of weights)" in err, (code, err))


@test
def safepoint_peak_equals_static_plan_for_every_example():
    for path in examples(".graph") + examples(".json"):
        plan = check_json(path)["static_peak"]["cpu"]
        docs, _ = run_json(path, "--cleanup=safepoint")
        peak = docs[0]["memory"]["before_teardown"]["cpu"]["peak"]
        expect(peak == plan, f"{path}: safepoint peak {peak} != static peak {plan}")
        docs, _ = run_json(path, "--cleanup=safepoint", "--iterations=4")
        expect(docs[0]["memory"]["before_teardown"]["cpu"]["peak"] == plan, f"{path}: grows with iterations")


@test
def run_json_document_fields():
    docs, _ = run_json(os.path.join(EXAMPLES, "add.graph"))
    doc = docs[0]
    expect(list(doc.keys())[:5] == ["file", "outputs", "memory", "system", "session"], list(doc.keys()))
    expect(doc["outputs"] == [{"name": "c", "dtype": "f32", "shape": [3], "device": "cpu", "data": [11.0, 22.0, 33.0]}],
           doc["outputs"])
    for when in ("before_teardown", "after_teardown"):
        fields = doc["memory"][when]["cpu"]
        for key in ("in_use", "peak", "pending", "pending_peak", "reserved", "allocs", "frees", "live", "copied_in",
                    "workspace"):
            expect(isinstance(fields[key], int), f"{when}.{key}")
        expect(fields["workspace"] == 0, f"{when}: the CPU holds no workspace: {fields}")
    bt = doc["memory"]["before_teardown"]["cpu"]
    expect(bt["in_use"] - bt["pending"] == 64 and bt["live"] >= 1, doc["memory"])  # c held; the rest may be backlog
    docs, _ = run_json(os.path.join(EXAMPLES, "add.graph"), "--cleanup=safepoint")
    bt = docs[0]["memory"]["before_teardown"]["cpu"]
    expect(bt["in_use"] == 64 and bt["pending"] == 0 and bt["live"] == 1, bt)
    sysd = doc["system"]["cpu"]
    expect(sysd["kind"] == "rss" and all(sysd[k] > 0 for k in ("before_session", "before_teardown", "after_teardown")),
           sysd)
    sess = doc["session"]
    expect(sess["cleanup"] == "background" and sess["iterations"] == 1 and sess["run_ms"] >= 0, sess)


@test
def run_values_nan_inf_and_exact_floats():
    docs, _ = run_json("-", stdin=b"a = const([0.1, nan, -inf, inf], dtype=f32)\nb = a * 1\n")
    expect(docs[0]["outputs"][0]["data"] == [0.1, "nan", "-inf", "inf"], docs[0]["outputs"][0]["data"])
    docs, _ = run_json("-", stdin=b"a = const([0.1, 1e-300], dtype=f64)\nb = a * 1\n")
    expect(docs[0]["outputs"][0]["data"] == [0.1, 1e-300], docs[0]["outputs"][0]["data"])


@test
def close_grows_with_iterations_safepoint_and_background_do_not():
    src = b"x = zeros([1024])\nrepeat 20 { x = x + ones([1024]) }\n"  # 4 KiB of garbage per pass
    peaks = {}
    for cleanup in ("close", "safepoint", "background"):
        for m in (1, 5):
            docs, _ = run_json("-", f"--cleanup={cleanup}", f"--iterations={m}", "--check-leaks", stdin=src)
            peaks[(cleanup, m)] = docs[0]["memory"]["before_teardown"]["cpu"]["peak"]
            expect(docs[0]["outputs"][0]["data"][0] == 20.0, docs[0]["outputs"][0]["data"][:3])
    expect(peaks[("close", 5)] >= 4 * peaks[("close", 1)], peaks)
    expect(peaks[("safepoint", 5)] == peaks[("safepoint", 1)], peaks)
    expect(peaks[("background", 5)] < peaks[("close", 5)] / 2, peaks)


def close_peaks_at_n_m_s(path, n, s, m):
    """Runs `path` (n intermediates of s bytes a pass) m times under each strategy: close
    holds everything (at least 0.9 n·m·s, exactly m times check's close growth), safepoint
    peaks at the static peak whatever m."""
    plan = check_json(path)
    docs, _ = run_json(path, "--cleanup=close", f"--iterations={m}", "--check-leaks")
    bt = docs[0]["memory"]["before_teardown"]["cpu"]
    expect(bt["peak"] >= 0.9 * n * m * s, f"{path}: close peak {bt['peak']} < 0.9 * {n}*{m}*{s}")
    expect(bt["peak"] == m * plan["close_growth"]["cpu"], (bt, plan["close_growth"]))
    expect(bt["in_use"] == bt["peak"] and bt["frees"] == 0, bt)
    for cleanup in ("safepoint", "background"):
        for iters in (1, m):
            docs, _ = run_json(path, f"--cleanup={cleanup}", f"--iterations={iters}", "--check-leaks")
            peak = docs[0]["memory"]["before_teardown"]["cpu"]["peak"]
            if cleanup == "safepoint":
                expect(peak == plan["static_peak"]["cpu"], f"{path}: safepoint m={iters} peak {peak}")
            expect(peak < bt["peak"] / 4, f"{path}: {cleanup} m={iters} peak {peak} vs close {bt['peak']}")


@test
def close_holds_every_tensor_of_an_elementwise_chain():
    # The chain: 12 tensors a pass (random_uniform and 11 ops) of 256 KiB, 16 passes.
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "chain.graph")
        with open(path, "w") as f:
            f.write("x = random_uniform([65536], seed=1)\n")
            f.write("".join(f"x = {'x * 1.5' if i % 2 else 'relu(x)'}\n" for i in range(11)))
        close_peaks_at_n_m_s(path, 12, 65536 * 4, 16)


@test
def close_holds_every_tensor_of_a_repeated_chain():
    # The first graph a user writes: a chain inside repeat 50, --iterations=20.
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "repeat.graph")
        with open(path, "w") as f:
            f.write("x = zeros([1024])\nrepeat 50 { x = x + 1; x = neg(x); x = abs(x) }\n")
        close_peaks_at_n_m_s(path, 1 + 3 * 50, 4096, 20)


@test
def readme_close_growth_figures_are_what_the_binary_prints():
    with open(os.path.join(SRC, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "chain.graph")
        with open(path, "w") as f:
            f.write("x = random_uniform([262144], seed=1)\n")
            f.write("".join("x = relu(x)\n" if i % 2 == 0 else "x = x * 1.5\n" for i in range(11)))
        code, out, err = run("check", path)
        expect(code == 0, err)
        tail = out[out.index("static peak (one pass"):]
        expect("```\n" + tail + "```\n" in readme, f"README's check tail drifted; the binary prints:\n{tail}")
        docs, _ = run_json(path, "--cleanup=close", "--iterations=16")
        peak = docs[0]["memory"]["before_teardown"]["cpu"]["peak"]
        expect(f"peaks at {peak} bytes ({peak / 2 ** 20:.2f} MiB)" in readme, f"close peak {peak}")
        docs, _ = run_json(path, "--cleanup=safepoint", "--iterations=16")
        peak = docs[0]["memory"]["before_teardown"]["cpu"]["peak"]
        expect(f"`safepoint` peaks at {peak} bytes whatever" in readme, f"safepoint peak {peak}")


@test
def offset_plan_is_what_safepoint_and_background_reserve():
    # Three tensors of 1 MiB and more with crossing lifetimes: check's offset
    # plan is the block the run takes, and no other segment is needed.
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cross.graph")
        with open(path, "w") as f:
            f.write("x = random_uniform([512, 1024], seed=1)\n"
                    "t = transpose(x)\n"
                    "u = concat(x, transpose(t), axis=0)\n"
                    "s = softmax(u, axis=-1)\n"
                    "m = reduce_sum(s, axes=[0])\n"
                    "output m\n")
        doc = check_json(path)
        plan = doc["offset_plan"]["cpu"]
        expect(plan["tensors"] == 5, plan)
        expect(plan["bytes"] <= doc["static_peak"]["cpu"], (plan, doc["static_peak"]))
        for strategy in ("safepoint", "background"):
            docs, _ = run_json(path, f"--cleanup={strategy}", "--iterations=3")
            reserved = docs[0]["memory"]["before_teardown"]["cpu"]["reserved"]
            # The block, and the free list of m's 4 KiB.
            expect(plan["bytes"] <= reserved <= plan["bytes"] + 4096 + 64, (strategy, reserved, plan))
        docs, _ = run_json(path, "--cleanup=close")
        expect(docs[0]["memory"]["before_teardown"]["cpu"]["reserved"] >= doc["close_growth"]["cpu"], docs[0])


@test
def several_files_continue_after_a_failure():
    with tempfile.TemporaryDirectory() as tmp:
        bad = os.path.join(tmp, "bad.graph")
        with open(bad, "w") as f:
            f.write("a = [1, 2]\nb = a + zz\n")
        code, out, err = run("run", bad, os.path.join(EXAMPLES, "add.graph"), "/nonexistent.graph", "--format=json")
        expect(code == 3, f"exit {code}: the first failing file's code")
        docs = [json.loads(l) for l in out.strip().splitlines()]
        expect(len(docs) == 3, out)
        expect(docs[0]["error"]["code"] == 3 and "zz" in docs[0]["error"]["message"], docs[0])
        expect("error" not in docs[1] and docs[1]["outputs"][0]["data"] == [11.0, 22.0, 33.0], docs[1])
        expect(docs[2]["error"]["code"] == 1, docs[2])
        # A file that failed before its session opened has no figures: null, not 0.
        for d in (docs[0], docs[2]):
            expect(d["memory"] is None and d["system"] is None and d["session"]["run_ms"] is None, d)
        expect("after_teardown" in docs[1]["memory"], docs[1])


@test
def memory_limit_refuses_plan_and_reports_close_oom():
    src = b"x = zeros([1024])\nrepeat 20 { x = x + ones([1024]) }\n"  # 4 KiB of garbage per pass
    code, out, err = run("run", "-", "--memory-limit=4KiB", stdin=src)
    expect(code == 1 and "static plan needs" in err and "refused before running" in err, err)
    docs, err = run_json("-", "--memory-limit=64KiB", "--cleanup=close", stdin=src, want=1)
    expect("out of memory on cpu at node" in err and "--cleanup=safepoint" in err, err)
    after = docs[0]["memory"]["after_teardown"]["cpu"]
    expect(after["in_use"] == 0 and after["live"] == 0 and after["allocs"] == after["frees"], after)
    docs, err = run_json("-", "--memory-limit=64KiB", "--cleanup=safepoint", "--check-leaks", stdin=src)
    code, _, err = run("run", "-", "--memory-limit=lots", stdin=src)
    expect(code == 2, f"bad --memory-limit: exit {code}")


@test
def runtime_errors_exit_1_with_place():
    code, out, err = run("run", "-", stdin=b"a = const([1, 2], dtype=i32)\nb = a / const([1, 0], dtype=i32)\n")
    expect(code == 1, f"exit {code}")
    expect("<stdin>:2:7: error: node 'b' (div) on cpu: integer division by zero" in err, err)
    expect("memory after teardown" in out, "statistics are still printed")


@test
def text_output_and_profile():
    code, out, err = run("run", os.path.join(EXAMPLES, "mlp.graph"), "--profile", "--cleanup=safepoint")
    expect(code == 0, err)
    for text in ("probs: f32[32,10] (cpu)", "memory before teardown:", "memory after teardown:",
                 "session: cleanup=safepoint iterations=1", "profile (per op, slowest first):", "matmul"):
        expect(text in out, f"missing {text!r}")
    # An add written over its input allocates nothing; the relu over a held value does.
    code, out, err = run("run", "-", "--profile", stdin=b"x = zeros([1024])\ny = x + 1\nz = relu(y)\noutput y, z\n")
    expect(code == 0, err)
    rows = {l.split()[0]: l.split() for l in out.splitlines()[out.splitlines().index("profile (per op, slowest first):") + 2:]}
    expect(rows["add"][3] == "0" and rows["relu"][3] == "4096", out[-400:])
    code, out, _ = run("run", "-", stdin=b"a = range(2000)\n")
    # NumPy: the shown values span more than 1000x, so scientific (np.arange(2000, dtype=np.float32)).
    expect("..." in out and "[0.000e+00 1.000e+00 2.000e+00 ... 1.997e+03 1.998e+03 1.999e+03]" in out, out[:300])


@test
def run_fetch_and_check_leaks():
    docs, _ = run_json(os.path.join(EXAMPLES, "power_iteration.graph"), "--fetch=eigenvalue", "--check-leaks")
    val = docs[0]["outputs"][0]["data"]
    expect(abs(val - (3 + 3 ** 0.5)) < 1e-5, val)

def interrupted(sig, extra_signal=False):
    import signal
    import time
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "long.graph")
        with open(path, "w") as f:
            f.write("x = ones([1000, 1000])\nrepeat 1000000 { x = x * 1 }\n")
        p = subprocess.Popen([BIN, "run", path, os.path.join(EXAMPLES, "add.graph"), "--format=json"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(1.0)
        p.send_signal(sig)
        if extra_signal:
            time.sleep(0.05)
            p.send_signal(sig)
        out, err = p.communicate(timeout=60)
        return p.returncode, out.decode(), err.decode()


@test
def sigint_tears_down_prints_statistics_and_exits_130():
    import signal
    code, out, err = interrupted(signal.SIGINT)
    expect(code == 130, f"exit {code}: {err}")
    expect("interrupted by SIGINT" in err and "torn down" in err, err)
    docs = [json.loads(l) for l in out.strip().splitlines()]
    expect(len(docs) == 1, "the next file must not run after an interrupt")
    after = docs[0]["memory"]["after_teardown"]["cpu"]
    expect(after["in_use"] == 0 and after["reserved"] == 0 and after["allocs"] == after["frees"], after)
    expect(docs[0]["error"]["code"] == 130, docs[0]["error"])


@test
def sigterm_exits_143():
    import signal
    code, out, err = interrupted(signal.SIGTERM)
    expect(code == 143, f"exit {code}: {err}")
    expect("interrupted by SIGTERM" in err, err)


@test
def second_sigint_exits_at_once():
    import signal
    code, _, _ = interrupted(signal.SIGINT, extra_signal=True)
    expect(code == 130, f"exit {code}")


# --- the CLI defects of issue 15 ---------------------------------------------

def write(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


@test
def repeatable_options_take_one_value_per_use():
    with tempfile.TemporaryDirectory() as tmp:
        a = write(tmp, "a.graph", "a = [1, 2]\nb = a * 2\n")
        b = write(tmp, "b.graph", "b = [3, 4]\n")
        for fetch in (["--fetch=b"], ["--fetch", "b"]):
            docs, err = run_json(*fetch, a, b)
            expect([d["file"] for d in docs] == [a, b], f"{fetch}: {[d['file'] for d in docs]} ({err})")
            expect([d["outputs"][0]["data"] for d in docs] == [[2.0, 4.0], [3.0, 4.0]], docs)
        docs, _ = run_json("--fetch=b", "--fetch=a", a)
        expect([o["name"] for o in docs[0]["outputs"]] == ["b", "a"], docs[0]["outputs"])
        doc = check_json(a, "--fetch", "a")
        expect([o["name"] for o in doc["outputs"]] == ["a"], doc["outputs"])
        code, _, err = run("check", "--fetch", a)  # the name is a's path; no FILE is left
        expect(code == 2 and "FILE is required" in err, f"exit {code}: {err}")
        code, out, _ = run("run", "--help")
        expect("--fetch TEXT " in out and "--fetch TEXT ..." not in out, out)


@test
def misspelt_commands_and_options_get_a_suggestion():
    code, _, err = run("rnu", "x.graph")
    expect(code == 2 and err == "unknown command 'rnu'; did you mean 'run'?\nRun with --help for more information.\n",
           f"exit {code}: {err!r}")
    code, _, err = run("chekc")
    expect(code == 2 and "did you mean 'check'?" in err, err)
    code, _, err = run("frobnicate")
    expect(code == 2 and "unknown command 'frobnicate' (the commands are check, run, compare, convert, devices, dot, repl)" in err, err)
    add = os.path.join(EXAMPLES, "add.graph")
    code, out, err = run("run", "--iteration=3", add)
    expect(code == 2 and out == "", f"exit {code}")
    expect(err == "The following argument was not expected: --iteration=3 (did you mean --iterations?)\n"
                  "Run with --help for more information.\n", repr(err))
    code, _, err = run("check", add, "--no-soft-placemnt", "--fech=c")
    expect(code == 2 and "--no-soft-placemnt (did you mean --no-soft-placement?)" in err and
           "--fech=c (did you mean --fetch?)" in err, err)
    code, _, err = run("run", "--mem=1G", add)
    expect(code == 2 and "(did you mean --memory-limit?)" in err, err)
    # Without a suggestion, CLI11's message is unchanged.
    code, _, err = run("check", "x.graph", "--bogus")
    expect(code == 2 and err == "The following argument was not expected: --bogus\n"
                                "Run with --help for more information.\n", repr(err))


@test
def bad_option_values_say_what_is_expected():
    add = os.path.join(EXAMPLES, "add.graph")
    cases = [("--iterations=abc", "--iterations: 'abc' is not a whole number; expected an integer from 0 to 2^40"),
             ("--iterations=-1", "--iterations: '-1' is out of range; expected an integer from 0 to 2^40"),
             ("--iterations=1099511627777", "--iterations: '1099511627777' is out of range; expected an integer "
                                            "from 0 to 2^40"),
             ("--threads=0", "--threads: '0' is out of range; expected an integer from 1 to 1024"),
             ("--memory-limit=0", "--memory-limit: '0' is 0 bytes; expected a size above 0: a number of bytes "
                                  "(1048576) or one with a unit (512MiB, 1.5GiB, 2GB"),
             ("--memory-limit=lots", "--memory-limit: 'lots' is not a memory size; expected a size above 0: ")]
    for arg, msg in cases:
        code, out, err = run("run", add, arg)
        expect(code == 2 and out == "", f"{arg}: exit {code}")
        expect(err.startswith(msg), f"{arg}: {err!r}")
    docs, _ = run_json(add, "--iterations=0")
    expect(docs[0]["session"]["iterations"] == 0, docs[0]["session"])
    # check takes the run's --threads (the weights are packed for them), in the same range.
    code, out, err = run("check", add, "--threads=0")
    expect(code == 2 and out == "" and err.startswith("--threads: '0' is out of range; expected an integer from 1 "
                                                      "to 1024"), f"check --threads=0: exit {code} {err!r}")
    code, out, err = run("check", add, "--threads=3")
    expect(code == 0 and "static peak" in out, f"check --threads=3: exit {code} {err!r}")


@test
def standard_input_may_be_named_once():
    code, out, err = run("run", "-", "-", stdin=b"a = [1, 2]\n")
    expect(code == 2 and out == "", f"exit {code}: {out}")
    expect(err == "FILE: standard input (-) can be read only once\nRun with --help for more information.\n", repr(err))
    code, out, err = run("run", "-", os.path.join(EXAMPLES, "add.graph"), stdin=b"a = [1, 2]\n")
    expect(code == 0 and out.count("\nmemory after teardown:\n") == 2, err)


@test
def f32_literals_out_of_range_are_errors_like_i32():
    code, _, i32 = run("check", "-", stdin=b"x = const(3000000000, dtype=i32)\n")
    expect(code == 3 and "<stdin>:1:11: error: x: const: 3000000000 cannot be i32: it is out of range" in i32, i32)
    for src, where, value in ((b"x = 1e39\n", "<stdin>:1:5", "1e+39"),
                              (b"y = [1, 2]\nx = [1, -3.5e38, 3]\n", "<stdin>:2:9", "-3.5e+38"),
                              (b"p = [1, 2]\nx = p * 1e39\n", "<stdin>:2:9", "1e+39")):
        code, out, err = run("run", "-", stdin=src)
        expect(code == 3, f"{src!r}: exit {code}: {err}")
        expect(f"{where}: error: " in err and f"{value} cannot be f32" in err and
               "it is out of range (-3.4028235e38 to 3.4028235e38)" in err, f"{src!r}: {err}")
    code, _, err = run("check", "-", stdin=b'{"graphrun": 1, "nodes": [{"name": "x", "op": "const", "value": [1, 1e39]}]}')
    expect(code == 3 and "<stdin>: /nodes/0/value/1: error: x: const: 1e+39 cannot be f32: it is out of range" in err,
           err)
    # f64 holds it, and a weak literal takes f64 from its other operand; the f32 maximum itself fits.
    docs, err = run_json("-", stdin=b"d = const([1, 2], dtype=f64)\nx = d * 1e39\nm = 3.4028235e38\noutput x, m\n")
    expect(docs[0]["outputs"][0]["data"] == [1e39, 2e39], docs[0]["outputs"])
    expect(docs[0]["outputs"][1]["data"] == 3.4028235e38, docs[0]["outputs"])


@test
def operand_messages_use_the_users_names():
    code, _, err = run("check", "-", stdin=b"p = const([1, 2], dtype=i32)\nq = [1.5, 2]\nr = p + q\n")
    expect(code == 3 and "<stdin>:3:7: error: r: add: operands have different dtypes: p is i32[2], q is f32[2]; "
                         "use cast(p, dtype=f32)" in err, err)
    code, _, err = run("check", "-", stdin=b"p = const([1, 2], dtype=i32)\nr = concat(p, [1.5])\n")
    expect(code == 3 and "the literal [1.5] is f32[1], but p is i32[2]" in err, err)
    code, _, err = run("check", "-", stdin=b"w = ones([4, 2])\nc = relu(ones([2, 3])) @ w\n")
    expect(code == 3 and "matmul: inner dimensions differ: relu is f32[2,3], w is f32[4,2]" in err, err)
    code, _, err = run("check", "-", stdin=b'{"graphrun": 1, "nodes": [{"name": "k", "op": "zeros", "shape": [2], '
                                              b'"dtype": "i32"}, {"name": "y", "op": "exp", "inputs": ["k"]}]}')
    expect(code == 3 and "y: exp: k is i32[2], but exp takes f32 or f64; use cast(k, dtype=f32)" in err, err)


@test
def help_shows_defaults_and_every_exit_code():
    code, out, _ = run("--help")
    expect(code == 0, f"exit {code}")
    for c in ("0 success", "1 runtime error", "2 usage error", "3 invalid graph", "4 leak found", "130", "143"):
        expect(c in out, f"--help lacks exit code {c!r}")
    code, out, _ = run("run", "--help")
    for text in ("=background", "--device TEXT=auto", "--iterations INT=1", "=text", "default 90% of available memory",
                 "default: all cores", "default: on", "130", "143"):
        expect(text in out, f"run --help lacks {text!r}:\n{out}")
    code, out, _ = run("check", "--help")
    expect("--format TEXT:{text,json}=text" in out and "--device TEXT=auto" in out, out)


def man_page_example(section):
    with open(os.path.join(SRC, "man", "graphrun.1")) as f:
        page = f.read()
    body = page.split(f".SH {section}\n.nf\n", 1)[1].split("\n.fi\n", 1)[0]
    return body.replace("\\-", "-").replace("\\(dq", '"').encode()


@test
def man_page_examples_run():
    for section in ("JSON GRAPHS", "TEXT SCRIPTS"):
        src = man_page_example(section)
        docs, err = run_json("-", "--check-leaks", stdin=src)
        expect(docs[0]["outputs"], f"{section}: {err}")
        code, out, err = run("convert", "-", "--to=json", stdin=src)
        expect(code == 0, f"{section}: {err}")
    docs, _ = run_json("-", stdin=man_page_example("JSON GRAPHS"))
    expect([o["name"] for o in docs[0]["outputs"]] == ["c", "x"] and
           docs[0]["outputs"][0]["data"] == [[14.0, 32.0], [32.0, 77.0]], docs[0]["outputs"])


def environ_seen(args, env_extra, want):
    """Runs graphrun with `args`, reading /proc/PID/environ while it runs:
    (whether `want` was seen in it, its stdout, its exit code)."""
    env = dict(os.environ, **env_extra)
    p = subprocess.Popen([BIN, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    seen = False
    environ = f"/proc/{p.pid}/environ"
    while p.poll() is None and not seen:
        try:
            with open(environ, "rb") as f:
                seen = want in f.read()
        except OSError:
            break
    out, _ = p.communicate(timeout=120)
    return seen, out.decode(), p.returncode


@test
def big_graphs_run_on_huge_pages_and_print_the_same():
    """A text or JSON graph of 256 KiB or more runs with glibc's heap on
    transparent huge pages: graphrun re-executes itself (same pid) with
    glibc.malloc.hugetlb=1 added to GLIBC_TUNABLES (cli/huge_pages.h). A small
    graph, a user's own setting of the tunable, and sanitizer builds are left
    alone; what is printed is the same either way."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            offered = "[never]" not in f.read()
    except OSError:
        offered = False
    sanitized = "ASAN_OPTIONS" in os.environ or "TSAN_OPTIONS" in os.environ
    # Only the first tunable is looked for: glibc 2.36 cuts the rest off in
    # the process's own copy of the variable as it reads them (the heap
    # thresholds added with it are tested in test_cli_args.cpp).
    want = b"glibc.malloc.hugetlb=1"
    with tempfile.TemporaryDirectory() as d:
        body = "x = ones([192, 192])\nrepeat 400 {\n  x = matmul(x, x) * 0.005\n}\n"
        big = os.path.join(d, "big.graph")
        with open(big, "w") as f:
            f.write("# padding to 256 KiB\n" * (300 * 1024 // 21) + body)
        small = os.path.join(d, "small.graph")
        with open(small, "w") as f:
            f.write(body)
        args = ["run", "--device=cpu", "--threads=1", "--iterations=20", "--cleanup=safepoint"]
        seen, out_big, code = environ_seen(args + [big], {}, want)
        expect(code == 0, f"exit {code}")
        if offered and not sanitized:
            expect(seen, "a 300 KiB graph ran without glibc.malloc.hugetlb=1 in its environment")
        else:
            print("     (huge pages not expected: " + ("a sanitizer build" if sanitized else "THP off") + ")")
            expect(not seen, "the tunable was set where it cannot help")
        seen, out_off, code = environ_seen(args + [big], {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=0"}, want)
        expect(code == 0 and not seen, "a user's glibc.malloc.hugetlb=0 was overridden")
        same = lambda o: [l for l in o.splitlines() if "resident" not in l and "run " not in l]
        expect(same(out_big) == same(out_off), f"output differs:\n{out_big}\n---\n{out_off}")
        seen, _, code = environ_seen(args + [small], {}, want)
        expect(code == 0 and not seen, "a small graph was re-executed")


@test
def openmp_workers_spin_briefly_unless_the_user_says():
    """libgomp (oneDNN's OpenMP runtime) reads GOMP_SPINCOUNT before main runs;
    graphrun's own getenv (cli/main.cpp) answers 10000 for it when neither it
    nor OMP_WAIT_POLICY is set, and a user's setting of either wins. libgomp
    prints what it read with OMP_DISPLAY_ENV; everything else graphrun and its
    libraries read from the environment is unchanged (the rest of this suite)."""
    def spin(extra):
        env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
        env.update(extra, OMP_DISPLAY_ENV="verbose")
        p = subprocess.run([BIN, "run", os.path.join(EXAMPLES, "add.graph")], capture_output=True, text=True,
                           env=env, timeout=60)
        expect(p.returncode == 0, p.stderr)
        m = re.search(r"GOMP_SPINCOUNT = '(\d+)'", p.stderr)
        return m.group(1) if m else None
    default = spin({})
    if default is None:
        print("     (skipped: libgomp is not loaded: graphrun was built without oneDNN)")
        return
    expect(default == "10000", f"GOMP_SPINCOUNT unset: libgomp read {default}, not graphrun's 10000")
    expect(spin({"GOMP_SPINCOUNT": "123"}) == "123", "a user's GOMP_SPINCOUNT was not what libgomp read")
    expect(spin({"GOMP_SPINCOUNTS": "5"}) == "10000", "a variable whose name begins GOMP_SPINCOUNT was taken for it")
    expect(spin({"OMP_WAIT_POLICY": "passive"}) == "0", "OMP_WAIT_POLICY=passive still spins")
    active = spin({"OMP_WAIT_POLICY": "active"})
    expect(active not in (None, "10000"), f"OMP_WAIT_POLICY=active got graphrun's default ({active})")


@test
def a_cpu_only_run_does_not_load_the_cuda_plugin():
    """With --device=cpu and no node naming a GPU, placement asks nothing about
    GPUs, so the CUDA plugin (and cuBLAS behind it) is not loaded: glibc's
    LD_DEBUG=files lists every object the loader opens. A node that names a GPU
    still has it probed, and the default device (auto) still looks for one."""
    def loads_plugin(args, source=None):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "g.graph")
            with open(path, "w") as f:
                f.write(source or "x = ones([2])\ny = x + 1\n")
            p = subprocess.run([BIN, "run", *args, path], capture_output=True, text=True, timeout=60,
                               env=dict(os.environ, LD_DEBUG="files"))
            expect(p.returncode == 0, p.stderr)
            expect("[2. 2.]" in p.stdout, p.stdout)
            return "libgraphrun_cuda" in p.stderr
    if not loads_plugin([]):
        print("     (skipped: the default run loads no CUDA plugin here: built without CUDA)")
        return
    expect(not loads_plugin(["--device=cpu"]), "--device=cpu loaded the CUDA plugin")
    expect(not loads_plugin(["--device=cpu:0"]), "--device=cpu:0 loaded the CUDA plugin")
    expect(loads_plugin(["--device=cpu"], 'x = ones([2])\nwith device("gpu") {\n  y = x + 1\n}\n'),
           "a node in a with device(\"gpu\") block did not have the GPU probed")


@test
def cmake_install_puts_the_man_page_where_man_finds_it():
    build = os.path.dirname(os.path.abspath(BIN))
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")) or \
            subprocess.run(["sh", "-c", "command -v cmake"], capture_output=True).returncode != 0:
        print("     (skipped: no CMake build directory beside the binary)")
        return
    with tempfile.TemporaryDirectory() as prefix:
        p = subprocess.run(["cmake", "--install", build, "--prefix", prefix], capture_output=True, text=True,
                           timeout=120)
        expect(p.returncode == 0, p.stderr)
        page = os.path.join(prefix, "share", "man", "man1", "graphrun.1")
        expect(os.path.exists(page), f"no {page}: {p.stdout}")
        expect(os.access(os.path.join(prefix, "bin", "graphrun"), os.X_OK), p.stdout)
        if subprocess.run(["sh", "-c", "command -v man"], capture_output=True).returncode == 0:
            env = dict(os.environ, MANPATH=os.path.join(prefix, "share", "man"))
            m = subprocess.run(["man", "-w", "graphrun"], capture_output=True, text=True, env=env, timeout=60)
            expect(m.returncode == 0 and m.stdout.strip() == page, f"man -w graphrun: {m.stdout} {m.stderr}")

sys.exit(finish("cli", results))
