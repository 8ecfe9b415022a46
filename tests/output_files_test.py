#!/usr/bin/env python3
"""Files graphrun writes (SPEC section 7, issue 26), through the real binary:
no output (--output, --save, --trace, --plot, convert -o and its side file) is
a file the run reads (exit 2) or the same file as another output (exit 2); an
output that cannot be written is refused before anything runs (exit 1); every
file is replaced whole or not at all (a write over `ulimit -f` leaves the old
file byte for byte, and no temporary beside it); a symlink at the target is
replaced, not written through; --save gives distinct outputs distinct files
and refuses --save=F.npy; --expected-output with no pass run exits 5.
Usage: output_files_test.py GRAPHRUN_BINARY"""
import os
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import zipfile

BIN = os.path.abspath(sys.argv[1])
RESULTS = {"passed": 0, "failed": 0, "skipped": 0}


class Skip(Exception):
    pass


def expect(cond, msg):
    if not cond:
        raise AssertionError(str(msg)[:3000])


def run(*args, cwd, fsize=None, ignore_xfsz=True, timeout=120):
    """Runs graphrun in `cwd`; with `fsize`, under `ulimit -f` of that many bytes."""
    def limits():
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN if ignore_xfsz else signal.SIG_DFL)
    p = subprocess.run([BIN, *args], cwd=cwd, capture_output=True, timeout=timeout, preexec_fn=limits)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def snapshot(root):
    """Every path under root: bytes for files, ('link', target) for links, 'dir' for folders."""
    snap = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            if os.path.islink(full):
                snap[rel] = ("link", os.readlink(full))
            elif os.path.isdir(full):
                snap[rel] = "dir"
            else:
                with open(full, "rb") as f:
                    snap[rel] = f.read()
    return snap


def expect_untouched(d, before, what):
    after = snapshot(d)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    expect(not changed, f"{what}: the folder changed (stray temporaries or overwritten files): {changed}")


def npy_bytes(values, shape=None):
    """A float32 .npy file, as numpy.save writes it (no NumPy needed)."""
    shape = shape or (len(values),)
    dims = "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % dims
    header += " " * (64 - (10 + len(header) + 1) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + struct.pack(
        f"<{len(values)}f", *values)


def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    hlen = struct.unpack("<H", data[8:10])[0]
    body = data[10 + hlen:]
    return list(struct.unpack(f"<{len(body) // 4}f", body))


def write(d, name, content):
    path = os.path.join(d, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(content, bytes) else "w") as f:
        f.write(content)
    return path


SMALL = "x = input(shape=[3], dtype=f32)\ny = x * 2\nz = x + 1\noutput y, z\n"
BIG = "y = ones([200000])\noutput y\n"  # 800 KB as .npy


def tests():
    def test(fn):
        d = tempfile.mkdtemp(prefix="graphrun-out-")
        try:
            fn(d)
        except Skip as e:
            RESULTS["skipped"] += 1
            print(f"SKIP {fn.__name__}: {e}")
        except AssertionError as e:
            RESULTS["failed"] += 1
            print(f"FAIL {fn.__name__}: {e}")
        except Exception as e:  # a crash in the test is a failure too
            RESULTS["failed"] += 1
            print(f"FAIL {fn.__name__}: {type(e).__name__}: {e}")
        else:
            RESULTS["passed"] += 1
            print(f"ok   {fn.__name__}")
        finally:
            for root, dirs, _ in os.walk(d):
                for x in dirs:
                    os.chmod(os.path.join(root, x), 0o755)
            shutil.rmtree(d, ignore_errors=True)
        return fn
    return test


# ---- helpers needing ONNX ----

def onnx_model(d, name, nodes, outputs):
    """A float model of x: f32[3] with (op, input, output) nodes, made with ONNX's helper API."""
    script = (
        "import sys, onnx\nfrom onnx import helper, TensorProto\n"
        f"nodes = [helper.make_node(op, [i], [o]) for op, i, o in {nodes!r}]\n"
        "x = helper.make_tensor_value_info('x', TensorProto.FLOAT, [3])\n"
        f"outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, [3]) for o in {outputs!r}]\n"
        "g = helper.make_graph(nodes, 'g', [x], outs)\n"
        "m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)])\n"
        "onnx.save(m, sys.argv[1])\n")
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    p = subprocess.run([python, "-c", script, os.path.join(d, name)], capture_output=True, text=True)
    if p.returncode != 0:
        raise Skip(f"python3-onnx is missing ({p.stderr.strip().splitlines()[-1:]})")
    rc, _, err = run("check", name, cwd=d)
    if "built without ONNX support" in err:
        raise Skip("this build has no ONNX front end")
    expect(rc == 0, f"check {name}: exit {rc}: {err}")
    return name


test = tests()


def refused(d, args, code, message, what=None):
    """Runs args in d: exit `code`, `message` on stderr, nothing printed, no file changed."""
    before = snapshot(d)
    rc, out, err = run(*args, cwd=d)
    what = what or "graphrun " + " ".join(args)
    expect(rc == code, f"{what}: exit {rc}, expected {code}; stderr: {err}")
    expect(message in err, f"{what}: stderr lacks {message!r}: {err}")
    expect(out == "", f"{what}: something ran before the refusal: {out[:500]}")
    expect_untouched(d, before, what)


# ---- 1. no output is a file the run reads ----

@test
def trace_is_the_graph_file(d):
    write(d, "m.graph", SMALL)
    os.symlink("m.graph", os.path.join(d, "alias.graph"))
    for spelled in ("m.graph", "./m.graph", "alias.graph", os.path.join(d, "m.graph")):
        refused(d, ["run", "m.graph", "--fill=ones", f"--trace={spelled}"], 2,
                f"--trace={spelled} is the graph file being run")
    # Any of several files, including one run last.
    write(d, "a.graph", "a = [1, 2]\noutput a\n")
    refused(d, ["run", "a.graph", "m.graph", "--fill=ones", "--trace=m.graph"], 2,
            "--trace=m.graph is the graph file being run")


@test
def trace_is_a_const_file(d):
    write(d, "w.npy", npy_bytes([1, 2, 3]))
    write(d, "m.graph", 'w = const(file="w.npy")\ny = w * 2\noutput y\n')
    refused(d, ["run", "m.graph", "--trace=w.npy"], 2, "--trace=w.npy is a const array file that m.graph reads")
    # Read by the second file only: that file is refused, and the trace of the first is not written over it.
    write(d, "a.graph", "a = [1, 2]\noutput a\n")
    before = snapshot(d)
    rc, out, err = run("run", "a.graph", "m.graph", "--trace=w.npy", cwd=d)
    expect(rc == 2, f"exit {rc}: {err}")
    expect("is a const array file that m.graph reads" in err, err)
    expect_untouched(d, before, "run a.graph m.graph --trace=w.npy")


@test
def plot_is_the_graph_file(d):
    write(d, "p.graph", SMALL)
    refused(d, ["compare", "p.graph", "--fill=ones", "--plot=p.graph"], 2,
            "--plot=p.graph is the graph file being compared")
    write(d, "x.npy", npy_bytes([1, 2, 3]))
    refused(d, ["compare", "p.graph", "--input=x=@x.npy", "--plot=x.npy"], 2,
            "--plot=x.npy is the array file of --input=x=@x.npy")


@test
def convert_over_its_input(d):
    write(d, "m.graph", SMALL)
    refused(d, ["convert", "m.graph", "--to=json", "-o", "m.graph"], 2, "-o m.graph is the file being converted")
    # The side file the script would get (w.npz) is the array file the script reads.
    write(d, "w.npz", b"")
    with zipfile.ZipFile(os.path.join(d, "w.npz"), "w") as z:
        z.writestr("w.npy", npy_bytes([float(i) for i in range(2000)]))
    write(d, "big.graph", 'w = const(file="w.npz", key="w")\ny = w * 2\noutput y\n')
    refused(d, ["convert", "big.graph", "--to=text", "-o", "w.graph"], 2,
            "the side file w.npz of -o w.graph is a const array file that big.graph reads")


@test
def convert_onnx_over_itself(d):
    model = onnx_model(d, "l.onnx", [("Relu", "x", "y")], ["y"])
    refused(d, ["convert", model, "--to=text", "-o", model], 2, f"-o {model} is the file being converted")


@test
def save_over_a_const_file(d):
    # The script reads out/w.npy; --save=out would write its output w there (and compound on each rerun).
    write(d, "out/w.npy", npy_bytes([1, 2, 3]))
    write(d, "m.graph", 'w = const(file="out/w.npy")\ny = w * 2\noutput w, y\n')
    refused(d, ["run", "m.graph", "--save=out"], 2,
            "--save=out (out/w.npy for output 'w') is a const array file that m.graph reads")
    refused(d, ["run", "m.graph", "--output=y=@out/w.npy"], 2,
            "--output=y=@out/w.npy is a const array file that m.graph reads")


@test
def output_over_an_input_file(d):
    write(d, "m.graph", SMALL)
    write(d, "x.npy", npy_bytes([1, 2, 3]))
    write(d, "e.npy", npy_bytes([2, 4, 6]))
    refused(d, ["run", "m.graph", "--input=x=@x.npy", "--output=y=@x.npy"], 2,
            "--output=y=@x.npy is the array file of --input=x=@x.npy")
    refused(d, ["run", "m.graph", "--input=x=@x.npy", "--expected-output=y=@e.npy", "--output=y=@e.npy"], 2,
            "--output=y=@e.npy is the array file of --expected-output=y=@e.npy")
    os.symlink("x.npy", os.path.join(d, "link.npy"))
    refused(d, ["run", "m.graph", "--input=x=@x.npy", "--trace=link.npy"], 2,
            "--trace=link.npy is the array file of --input=x=@x.npy")


@test
def two_outputs_one_file(d):
    write(d, "m.graph", SMALL)
    refused(d, ["run", "m.graph", "--fill=ones", "--output=y=@a.npy", "--output=z=@./a.npy"], 2,
            "--output=y=@a.npy and --output=z=@./a.npy name one file")
    refused(d, ["run", "m.graph", "--fill=ones", "--output=@all.npz", "--save=all.npz"], 2,
            "--output=@all.npz and --save=all.npz name one file")
    refused(d, ["run", "m.graph", "--fill=ones", "--output=y=@t.json", "--trace=t.json"], 2,
            "--output=y=@t.json and --trace=t.json name one file")


# ---- 2. an output that cannot be written: exit 1 before anything runs ----

@test
def unwritable_outputs_before_the_run(d):
    write(d, "m.graph", SMALL)
    os.mkdir(os.path.join(d, "adir"))
    write(d, "afile", "x")
    run_cases = [
        (["--output=y=@nodir/y.npy"], "--output=y=@nodir/y.npy: cannot write nodir/y.npy: its folder nodir does not exist"),
        (["--output=y=@adir"], "cannot write adir: it is a directory"),
        (["--output=y=@/dev/null"], "it is not a regular file"),
        (["--save=afile/sub"], "--save=afile/sub: cannot create directory afile/sub: afile is not a folder"),
        (["--save=afile"], "--save=afile: cannot create directory afile: a file of that name exists"),
        (["--save=nodir/all.npz"], "its folder nodir does not exist"),
        (["--trace=nodir/t.json"], "--trace=nodir/t.json: cannot write the trace to nodir/t.json: its folder nodir does not exist"),
        (["--trace=adir"], "--trace=adir: cannot write the trace to adir: it is a directory"),
    ]
    if os.geteuid() != 0:  # root writes into a read-only folder all the same
        os.mkdir(os.path.join(d, "ro"))
        os.chmod(os.path.join(d, "ro"), 0o555)
        run_cases.append((["--output=y=@ro/y.npy"], "its folder ro is not writable"))
        run_cases.append((["--save=ro/sub"], "cannot create directory ro/sub: ro is not writable"))
    for extra, message in run_cases:
        refused(d, ["run", "m.graph", "--fill=ones", *extra], 1, message)
    refused(d, ["compare", "m.graph", "--fill=ones", "--plot=nodir/p.svg"], 1,
            "--plot=nodir/p.svg: cannot write the plot to nodir/p.svg: its folder nodir does not exist")
    refused(d, ["convert", "m.graph", "--to=json", "-o", "nodir/m.json"], 1,
            "-o nodir/m.json: cannot write nodir/m.json: its folder nodir does not exist")
    # --save=DIR that does not exist yet is made (mkdir -p), and only then.
    rc, _, err = run("run", "m.graph", "--fill=ones", "--save=new/deeper", cwd=d)
    expect(rc == 0 and sorted(os.listdir(os.path.join(d, "new/deeper"))) == ["y.npy", "z.npy"], err)


# ---- 3. whole or not at all ----

def good_then_limited(d, args, targets, fsize, ignore_xfsz=True):
    """Runs args once without a limit (each target is written, bigger than fsize), then with the
    old targets back under `ulimit -f fsize`: exit 1, "File too large", every file as it was."""
    rc, _, err = run(*args, cwd=d)
    expect(rc == 0, f"{args} without a limit: exit {rc}: {err}")
    sizes = {t: os.path.getsize(os.path.join(d, t)) for t in targets}
    expect(max(sizes.values()) > fsize, f"{sizes}: none over the limit of {fsize}: the test would prove nothing")
    for t in targets:
        write(d, t, b"the good file that was here\n")
    before = snapshot(d)
    rc, _, err = run(*args, cwd=d, fsize=fsize, ignore_xfsz=ignore_xfsz)
    what = " ".join(args) + f" under ulimit -f {fsize} bytes"
    expect(rc == 1, f"{what}: exit {rc}, expected 1: {err}")
    expect("File too large" in err and "left as it was" in err, f"{what}: stderr: {err}")
    expect_untouched(d, before, what)


@test
def atomic_npy_npz_outputs(d):
    write(d, "big.graph", BIG)
    good_then_limited(d, ["run", "big.graph", "--output=y=@y.npy"], ["y.npy"], 65536)
    good_then_limited(d, ["run", "big.graph", "--output=@all.npz"], ["all.npz"], 65536)
    good_then_limited(d, ["run", "big.graph", "--save=s.npz"], ["s.npz"], 65536)
    good_then_limited(d, ["run", "big.graph", "--save=out"], ["out/y.npy"], 65536)
    # graphrun ignores SIGXFSZ itself: the write fails with EFBIG instead of the process being killed.
    good_then_limited(d, ["run", "big.graph", "--output=y=@y.npy"], ["y.npy"], 65536, ignore_xfsz=False)


@test
def atomic_trace_and_plot(d):
    write(d, "m.graph", "a = [1, 2, 3]\nb = a + a\nc = b * b\noutput c\n")
    good_then_limited(d, ["run", "m.graph", "--iterations=500", "--trace=t.json"], ["t.json"], 32768)
    good_then_limited(d, ["compare", "m.graph", "--iterations=200", "--plot=p.svg"], ["p.svg"], 4096)


@test
def atomic_convert_and_side_file(d):
    write(d, "w.npy", npy_bytes([float(i) for i in range(4000)]))
    write(d, "m.graph", 'w = const(file="w.npy")\ny = w * 2\noutput y\n')
    # The script inline (over the limit), then the side file (the script alone is small).
    good_then_limited(d, ["convert", "m.graph", "--to=text", "--inline-limit=100000", "-o", "a.graph"],
                      ["a.graph"], 8192)
    good_then_limited(d, ["convert", "m.graph", "--to=json", "-o", "b.json"], ["b.json", "b.npz"], 8192)


@test
def symlink_target_replaced_not_followed(d):
    write(d, "m.graph", SMALL)
    write(d, "precious.npy", b"not graphrun's to write\n")
    os.symlink("precious.npy", os.path.join(d, "y.npy"))
    rc, _, err = run("run", "m.graph", "--fill=ones", "--output=y=@y.npy", cwd=d)
    expect(rc == 0, err)
    with open(os.path.join(d, "precious.npy"), "rb") as f:
        expect(f.read() == b"not graphrun's to write\n", "written through the symlink")
    expect(not os.path.islink(os.path.join(d, "y.npy")), "the link is still there")
    expect(read_npy(os.path.join(d, "y.npy")) == [2.0, 2.0, 2.0], "y.npy")
    expect(sorted(os.listdir(d)) == ["m.graph", "precious.npy", "y.npy"], os.listdir(d))


# ---- 4. convert -o says when it replaces a side file ----

@test
def convert_reports_replaced_side_file(d):
    write(d, "w.npy", npy_bytes([float(i) for i in range(2000)]))
    write(d, "m.graph", 'w = const(file="w.npy")\ny = w * 2\noutput y\n')
    rc, _, err = run("convert", "m.graph", "--to=text", "-o", "c.graph", cwd=d)
    expect(rc == 0 and "replaced" not in err, f"exit {rc}: {err}")
    rc, _, err = run("convert", "m.graph", "--to=text", "-o", "c.graph", cwd=d)
    expect(rc == 0 and "replaced the side file c.npz" in err, f"exit {rc}: {err}")
    rc, out, err = run("run", "c.graph", cwd=d)
    expect(rc == 0 and "y: f32[2000]" in out, f"the converted script runs: {err}")


# ---- 5. --save names ----

@test
def save_file_not_folder(d):
    write(d, "m.graph", SMALL)
    refused(d, ["run", "m.graph", "--fill=ones", "--save=result.npy"], 2,
            "--save=result.npy: --save writes a folder (DIR/NAME.npy for each output) or one .npz file")
    expect(not os.path.exists(os.path.join(d, "result.npy")), "a folder result.npy was made")
    # A folder whose name has a dot: with a trailing '/', or one that exists.
    rc, _, err = run("run", "m.graph", "--fill=ones", "--save=v1.2/", cwd=d)
    expect(rc == 0 and os.path.isfile(os.path.join(d, "v1.2", "y.npy")), err)
    rc, _, err = run("run", "m.graph", "--fill=ones", "--save=v1.2", cwd=d)
    expect(rc == 0, err)
    # Only a file's extension is refused: other dotted names are folders, as before.
    rc, _, err = run("run", "m.graph", "--fill=ones", "--save=run.out", cwd=d)
    expect(rc == 0 and os.path.isfile(os.path.join(d, "run.out", "y.npy")), err)
    refused(d, ["run", "m.graph", "--fill=ones", "--save=r.JSON"], 2, "--save=r.JSON: --save writes a folder")


@test
def save_names_never_collide(d):
    # ONNX names that --save maps to one file name: the one that is a file name as it stands keeps it.
    model = onnx_model(d, "n.onnx", [("Identity", "x", "a/b"), ("Neg", "x", "a_b")], ["a/b", "a_b"])
    rc, out, err = run("run", model, "--input=x=[1,2,3]", "--save=out", cwd=d)
    expect(rc == 0, err)
    expect(sorted(os.listdir(os.path.join(d, "out"))) == ["a_b.npy", "a_b_2.npy"], os.listdir(os.path.join(d, "out")))
    expect("output 'a/b' is written as a_b_2.npy, since a_b.npy is another output's" in err, err)
    model = onnx_model(d, "dot.onnx", [("Identity", "x", ".y"), ("Neg", "x", "_.y")], [".y", "_.y"])
    rc, out, err = run("run", model, "--input=x=[1,2,3]", "--save=dots", cwd=d)
    expect(rc == 0, err)
    expect(sorted(os.listdir(os.path.join(d, "dots"))) == ["_.y.npy", "_.y_2.npy"], os.listdir(os.path.join(d, "dots")))
    expect(read_npy(os.path.join(d, "dots", "_.y.npy")) == [-1.0, -2.0, -3.0], "_.y.npy holds _.y = Neg(x)")
    expect(read_npy(os.path.join(d, "dots", "_.y_2.npy")) == [1.0, 2.0, 3.0], "_.y_2.npy holds .y = x")


# ---- 6. --expected-output with no pass run ----

@test
def expected_output_without_a_pass(d):
    write(d, "m.graph", SMALL)
    rc, _, err = run("run", "m.graph", "--fill=ones", "--iterations=0", "--expected-output=y=[2,2,2]",
                     "--expected-output=z=[2,2,2]", cwd=d)
    expect(rc == 5, f"exit {rc}, expected 5: {err}")
    for name in ("y", "z"):
        expect(f"output '{name}' was not produced (--iterations=0 runs no pass)" in err, err)
    rc, _, err = run("run", "m.graph", "--fill=ones", "--iterations=1", "--expected-output=y=[2,2,2]", cwd=d)
    expect(rc == 0, err)


print(f"output_files: {RESULTS['passed']} passed, {RESULTS['failed']} failed, {RESULTS['skipped']} skipped")
sys.exit(1 if RESULTS["failed"] else 0)
