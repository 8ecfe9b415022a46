#!/usr/bin/python3
"""graphrun vs ONNX Runtime (and PyTorch when installed) on real-model shapes
(issue 25 item 5).

Usage: onnx_bench.py GRAPHRUN [--quick] [--models resnet18,gpt2] [--batches 1,16]
                     [--warmup W] [--iterations K] [--rounds R] [--ort-dir DIR | --no-ort]
                     [--json OUT] [--device cpu|gpu] [--strict] [--keep]

Models (random weights, fixed seeds), each at every batch size of --batches:
  resnet18     ResNet-18, 224x224, 1000 classes
  mobilenet    MobileNet-v2-shaped, 224x224
  squeezenet   SqueezeNet 1.1, 224x224
  transformer  BERT-shaped encoder (4 layers, d 256, 8 heads, 128 tokens)
  gpt2         GPT-2-style block (pre-LayerNorm, causal attention, tanh GELU; d 256, 4 heads, 32 tokens)
  mlp          MLP 784-512-256-10 at batch 64 (one row, whatever --batches says)
Without PyTorch every model is written with ONNX's helper API (scripts/models/onnx_models.py
and the builders below; needs python3-numpy and python3-onnx). With Debian's python3-torch,
resnet18 and transformer (then d 512, FFN 2048, 30000-token vocabulary) are built in PyTorch
and exported with torch.onnx.export (opset 17, the batch a free dimension that the fed array
binds), and PyTorch is timed on them too.

Peers, each in its own process, on the same ONNX file and inputs:
  * graphrun: `graphrun run MODEL --input=@INPUTS.npz --bench --warmup=W --iterations=K
    --threads=cores --format=json`; its ms are bench.median_ms (and min_ms) per pass;
  * ONNX Runtime: the npm package onnxruntime-node (CPU execution provider, intra-op threads =
    cores), installed on first use with `npm install --ignore-scripts` into --ort-dir
    (default ~/.cache/graphrun-bench/ort; the install script only fetches GPU libraries) and
    driven by ort_run.js beside this script: W untimed runs, then the median of K timed ones.
    Without node, npm or the network, ORT is reported unavailable and the other peers still run;
  * PyTorch (only when `import torch` works, on the models it built): median over rounds of
    K forward calls under torch.no_grad() after one untimed call, torch.set_num_threads(cores).
graphrun and ORT run in R rounds (default 3, 1 with --quick), alternating, one process per peer
and round: a peer's ms is the median of its round medians (so a burst of load from elsewhere
hits both peers), and the JSON also has the least pass (min_ms) and each round's median.
Peak RSS is each process's own maximum resident set (os.wait4), the host included: graphrun's
whole process, and Node.js with ONNX Runtime loaded (the Node host alone before ORT is loaded
is in the JSON as rss_before_ort). ratio = ORT ms / graphrun ms: > 1 means graphrun is faster
(target >= 1.0). err = max |graphrun - ORT| / max |ORT| over the outputs (target 1e-4); with
PyTorch, also against PyTorch. graphrun's peak RSS is held to issue 25's bound: its CPU weights +
static activation peak (what `check --format=json` predicts for the inputs' shapes) + 40 MB (the
"bound MB" column). Exit code 0 even when targets are missed, unless --strict.
These are figures from one machine at one moment: run on an idle machine before trusting them.
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
try:
    import onnx
    from onnx import helper

    import onnx_models as om
except ImportError as e:
    sys.exit(f"onnx_bench.py: {e}.\n  Install Debian's python3-onnx and python3-numpy and run with /usr/bin/python3.")

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    torch = None

CORES = os.cpu_count() or 1
med = statistics.median
ALL_MODELS = ("resnet18", "mobilenet", "squeezenet", "transformer", "gpt2", "mlp")
QUICK_MODELS = ("resnet18", "transformer", "gpt2", "mlp")
HEAVY = {"resnet18", "mobilenet", "squeezenet"}  # fewer timed passes: tens to hundreds of ms each


# ---- models with ONNX's helper API (no PyTorch needed) ----
def _ln(net, x, d):
    g = net.init((1 + 0.1 * net.rng.standard_normal(d)).astype(np.float32), "ln_g")
    b = net.init((0.1 * net.rng.standard_normal(d)).astype(np.float32), "ln_b")
    return net.op("LayerNormalization", [x, g, b], axis=-1, epsilon=1e-5)


def _linear(net, x, cin, cout):
    w = net.weight((cin, cout), cin)
    b = net.init((0.02 * net.rng.standard_normal(cout)).astype(np.float32), "b")
    return net.add(net.op("MatMul", [x, w]), b)


def _const(net, value, base="c"):
    return net.init(np.array(value, np.float32), base)


def gpt2_block(batch=1, tokens=32, d=256, heads=4, seed=3, reference=False):
    """One GPT-2 block as Hugging Face's exporter writes it: x + attn(ln_1(x)), then
    + mlp(ln_2(.)); one fused QKV projection split in three, causal mask added before
    the softmax, GELU in its tanh form."""
    net = om.Net(seed, reference=False)
    x = net.input("x", net.rng.standard_normal((batch, tokens, d)).astype(np.float32))
    dh = d // heads
    qkv = _linear(net, _ln(net, x, d), d, 3 * d)
    sizes = net.init(np.array([d, d, d], np.int64), "split")
    q, k, v = (net.name(s) for s in ("q", "k", "v"))
    net.nodes.append(helper.make_node("Split", [qkv, sizes], [q, k, v], name=net.name("split"), axis=-1))

    def heads_of(t, perm):
        shape = net.init(np.array([batch, tokens, heads, dh], np.int64), "shape")
        return net.op("Transpose", [net.op("Reshape", [t, shape])], perm=perm)

    q, kt, v = heads_of(q, [0, 2, 1, 3]), heads_of(k, [0, 2, 3, 1]), heads_of(v, [0, 2, 1, 3])
    s = net.op("Mul", [net.op("MatMul", [q, kt]), _const(net, 1 / math.sqrt(dh), "scale")])
    mask = net.init(np.triu(np.full((tokens, tokens), -1e4, np.float32), 1), "causal_mask")
    p = net.op("Softmax", [net.add(s, mask)], axis=-1)
    a = net.op("Transpose", [net.op("MatMul", [p, v])], perm=[0, 2, 1, 3])
    a = net.op("Reshape", [a, net.init(np.array([batch, tokens, d], np.int64), "shape")])
    x = net.add(x, _linear(net, a, d, d))
    h = _linear(net, _ln(net, x, d), d, 4 * d)
    cube = net.op("Mul", [net.op("Mul", [h, h]), h])
    inner = net.op("Mul", [net.add(h, net.op("Mul", [cube, _const(net, 0.044715)])),
                           _const(net, math.sqrt(2 / math.pi))])
    g = net.op("Mul", [net.op("Mul", [h, _const(net, 0.5)]), net.add(net.op("Tanh", [inner]), _const(net, 1.0))])
    return net.model([net.add(x, _linear(net, g, 4 * d, d))], "gpt2_block", opset=17)


def mlp(batch=64, sizes=(784, 512, 256, 10), seed=4, reference=False):
    """Gemm + Relu layers, as an MNIST classifier is exported."""
    net = om.Net(seed, reference=False)
    y = net.input("x", net.rng.standard_normal((batch, sizes[0])).astype(np.float32))
    for i, (cin, cout) in enumerate(zip(sizes, sizes[1:])):
        y = net.gemm(y, cin, cout)
        if i + 2 < len(sizes):
            y = net.relu(y)
    return net.model([y], "mlp")


def squeezenet(size=224, batch=1, classes=1000, seed=5, reference=False):
    """SqueezeNet 1.1 (torchvision's layout): fire modules of a 1x1 squeeze and
    concatenated 1x1 / 3x3 expands, convolutions with bias, a convolutional classifier."""
    net = om.Net(seed, reference=False)
    x = net.input("image", net.rng.standard_normal((batch, 3, size, size)).astype(np.float32))

    def pool(y):
        return net.op("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)

    def fire(y, cin, squeeze, expand):
        s = net.relu(net.conv(y, cin, squeeze, 1, pad=0, bias=True))
        e1 = net.relu(net.conv(s, squeeze, expand, 1, pad=0, bias=True))
        e3 = net.relu(net.conv(s, squeeze, expand, 3, pad=1, bias=True))
        return net.op("Concat", [e1, e3], axis=1)

    y = pool(net.relu(net.conv(x, 3, 64, 3, stride=2, pad=0, bias=True)))
    y = pool(fire(fire(y, 64, 16, 64), 128, 16, 64))
    y = pool(fire(fire(y, 128, 32, 128), 256, 32, 128))
    for cin, sq, ex in ((256, 48, 192), (384, 48, 192), (384, 64, 256), (512, 64, 256)):
        y = fire(y, cin, sq, ex)
    y = net.relu(net.conv(y, 512, classes, 1, pad=0, bias=True))
    g = net.op("GlobalAveragePool", [y])
    return net.model([net.op("Flatten", [g], axis=1)], "squeezenet")


ONNX_BUILDERS = {"resnet18": om.resnet, "mobilenet": om.mobilenet, "squeezenet": squeezenet,
                 "transformer": om.transformer, "gpt2": gpt2_block, "mlp": mlp}


# ---- the models in PyTorch (when it is installed) ----
if torch is not None:
    class Basic(nn.Module):
        def __init__(self, cin, c, stride):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(cin, c, 3, stride, 1, bias=False), nn.BatchNorm2d(c)
            self.c2, self.b2 = nn.Conv2d(c, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c)
            self.down = None
            if stride != 1 or cin != c:
                self.down = nn.Sequential(nn.Conv2d(cin, c, 1, stride, bias=False), nn.BatchNorm2d(c))

        def forward(self, x):
            h = F.relu(self.b1(self.c1(x)))
            h = self.b2(self.c2(h))
            return F.relu(h + (x if self.down is None else self.down(x)))

    class ResNet18(nn.Module):
        def __init__(self, classes=1000):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                      nn.MaxPool2d(3, 2, 1))
            layers, cin = [], 64
            for i, c in enumerate((64, 128, 256, 512)):
                layers += [Basic(cin, c, 1 if i == 0 else 2), Basic(c, c, 1)]
                cin = c
            self.layers = nn.Sequential(*layers)
            self.fc = nn.Linear(512, classes)

        def forward(self, x):
            x = self.layers(self.stem(x))
            return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))

    class EncoderLayer(nn.Module):
        def __init__(self, d, heads, ffn):
            super().__init__()
            self.heads = heads
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.f1, self.f2 = nn.Linear(d, ffn), nn.Linear(ffn, d)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(x).reshape(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
            a = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1) @ v
            x = self.ln1(x + self.proj(a.transpose(1, 2).reshape(b, t, d)))
            return self.ln2(x + self.f2(F.gelu(self.f1(x))))

    class Encoder(nn.Module):
        def __init__(self, layers=4, d=512, heads=8, ffn=2048, vocab=30000, tokens=128):
            super().__init__()
            self.emb, self.pos = nn.Embedding(vocab, d), nn.Parameter(torch.randn(tokens, d) * 0.02)
            self.layers = nn.Sequential(*[EncoderLayer(d, heads, ffn) for _ in range(layers)])

        def forward(self, ids):
            return self.layers(self.emb(ids) + self.pos)

TORCH_MODELS = ("resnet18", "transformer")


def make_torch(name, batch):
    torch.manual_seed(0)
    if name == "resnet18":
        m = ResNet18()
        for mod in m.modules():  # non-trivial running statistics
            if isinstance(mod, nn.BatchNorm2d):
                mod.running_mean.uniform_(-0.1, 0.1)
                mod.running_var.uniform_(0.5, 1.5)
        return m.eval(), torch.randn(batch, 3, 224, 224)
    m = Encoder()
    return m.eval(), torch.randint(0, 30000, (batch, 128))


def torch_ms(model, x, k, rounds, device):
    """PyTorch on the same device as graphrun (a CUDA build of torch for --device=gpu)."""
    dev = "cuda" if device == "gpu" else "cpu"
    model, x = model.to(dev), x.to(dev)
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    with torch.no_grad():
        model(x)
        sync()
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            for _ in range(k):
                model(x)
            sync()
            times.append((time.perf_counter() - t0) * 1e3 / k)
    return med(times)


# ---- running a peer in its own process ----
# Runs argv[2:] and writes its ru_maxrss (KiB) to argv[1]. A small process of its own does this
# because Linux counts in a child's ru_maxrss the resident set of the process it was forked from
# (the high-water mark of the mm that exec replaces): forked straight from this script, which holds
# the models' weights, every peer would report at least this script's peak.
RSS_WRAPPER = ("import os, subprocess, sys\n"
               "p = subprocess.Popen(sys.argv[2:])\n"
               "_, status, ru = os.wait4(p.pid, 0)\n"
               "open(sys.argv[1], 'w').write(str(ru.ru_maxrss))\n"
               "sys.exit(os.waitstatus_to_exitcode(status) & 255)\n")


def run_measured(cmd, timeout=1800):
    """Runs cmd; returns (returncode, stdout, stderr, peak RSS in bytes of that process alone)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".maxrss") as rss:
        try:
            rc = subprocess.run([sys.executable, "-c", RSS_WRAPPER, rss.name, *cmd], stdout=out, stderr=err,
                                timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            rc = 124
        out.seek(0)
        err.seek(0)
        text = rss.read().strip()
        return (rc, out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                int(text) * 1024 if text else None)


def run_graphrun(binary, model, inputs_npz, out_npz, warmup, k, device):
    cmd = [binary, "run", model, f"--input=@{inputs_npz}", "--bench", f"--warmup={warmup}",
           f"--iterations={k}", f"--threads={CORES}", f"--device={device}", "--format=json", "--no-data",
           f"--output=@{out_npz}"]
    rc, out, err, rss = run_measured(cmd)
    if rc != 0:
        raise RuntimeError(f"graphrun exited {rc}: {err.strip()[-1500:]}")
    doc = json.loads(out.splitlines()[0])
    b = doc["bench"]
    got = np.load(out_npz)
    return {"median_ms": b["median_ms"], "min_ms": b["min_ms"], "p90_ms": b.get("p90_ms"), "rss": rss,
            "rss_before_session": doc.get("system", {}).get("cpu", {}).get("before_session"),
            "memory": doc["memory"]["before_teardown"]}, {n: got[n] for n in got.files}


def graphrun_rss_bound(binary, model, inputs_npz):
    """Issue 25's bound on graphrun's peak RSS: the CPU's weights + its static activation peak (as
    `check` predicts them for the inputs' shapes) + 40 MB; None where check fails."""
    with np.load(inputs_npz) as z:
        shapes = [f"--input-shape={n}={'x'.join(str(d) for d in z[n].shape)}" for n in z.files]
    p = subprocess.run([binary, "check", model, "--format=json", *shapes],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return None
    d = json.loads(p.stdout)
    return d["weights"].get("cpu", 0) + d["static_peak"].get("cpu", 0) + 40_000_000


def ensure_ort(ort_dir, install):
    """Returns (True, version) when onnxruntime-node loads from ort_dir, else (False, reason)."""
    node = shutil.which("node")
    if node is None:
        return False, "node (Node.js) is not installed"
    pkg = os.path.join(ort_dir, "node_modules", "onnxruntime-node")
    if not os.path.isdir(pkg):
        if not install:
            return False, f"onnxruntime-node is not installed under {ort_dir}"
        npm = shutil.which("npm")
        if npm is None:
            return False, "npm is not installed"
        os.makedirs(ort_dir, exist_ok=True)
        print(f"installing onnxruntime-node into {ort_dir} (npm install --ignore-scripts) ...", flush=True)
        try:
            p = subprocess.run([npm, "install", "--ignore-scripts", "--no-audit", "--no-fund", "--prefix", ort_dir,
                                "onnxruntime-node"], capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            return False, "npm install onnxruntime-node timed out"
        if p.returncode != 0 or not os.path.isdir(pkg):
            lines = (p.stderr.strip() or p.stdout.strip()).splitlines()
            said = [ln for ln in lines if "code" in ln or "errno" in ln or "network" in ln][:2] or lines[-2:]
            return False, f"npm install onnxruntime-node exited {p.returncode}: " + " / ".join(said)
    probe = ("const p=process.argv[1]; require(p); "
             "console.log(require(p + '/package.json').version)")
    p = subprocess.run([node, "-e", probe, pkg], capture_output=True, text=True)
    if p.returncode != 0:
        return False, "onnxruntime-node does not load: " + " / ".join(p.stderr.strip().splitlines()[-3:])
    return True, p.stdout.strip()


def run_ort(ort_dir, model, feeds, work, warmup, k):
    inputs = []
    for name, arr in feeds.items():
        f = os.path.join(work, f"in_{len(inputs)}.bin")
        np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tofile(f)
        inputs.append({"name": name, "dtype": str(arr.dtype), "shape": list(arr.shape), "file": f})
    spec = os.path.join(work, "ort_spec.json")
    with open(spec, "w") as fh:
        json.dump({"ort": ort_dir, "model": model, "threads": CORES, "warmup": warmup, "iterations": k,
                   "out_dir": os.path.join(work, "ort_out"), "inputs": inputs}, fh)
    rc, out, err, rss = run_measured([shutil.which("node"), os.path.join(HERE, "ort_run.js"), spec])
    if rc != 0:
        raise RuntimeError(f"ort_run.js exited {rc}: {err.strip()[-1500:]}")
    doc = json.loads(out.splitlines()[-1])
    outputs = {o["name"]: np.fromfile(o["file"], np.dtype(o["dtype"]).newbyteorder("<")).reshape(o["shape"])
               for o in doc["outputs"]}
    return {"median_ms": doc["median_ms"], "min_ms": doc["min_ms"], "rss": rss,
            "rss_before_ort": doc["rss_before_ort"], "create_ms": doc["create_ms"]}, outputs


def combine(runs):
    """One peer's rounds: median of the round medians, least pass, greatest peak RSS."""
    if not runs:
        return None
    rss = [r["rss"] for r in runs if r["rss"] is not None]
    return {**runs[0], "median_ms": med(r["median_ms"] for r in runs), "min_ms": min(r["min_ms"] for r in runs),
            "rss": max(rss) if rss else None, "round_medians_ms": [r["median_ms"] for r in runs]}


def rel_err(got, want):
    """max |got - want| / max |want| over the outputs, matched by name (by order if the names differ)."""
    if set(got) != set(want):
        if len(got) != len(want):
            return float("nan")
        pairs = zip(got.values(), want.values())
    else:
        pairs = ((got[n], want[n]) for n in want)
    num = den = 0.0
    for g, w in pairs:
        if g.shape != w.shape:
            return float("nan")
        g, w = g.astype(np.float64), w.astype(np.float64)
        num, den = max(num, float(np.max(np.abs(g - w)))), max(den, float(np.max(np.abs(w))))
    return num / den if den else num


# ---- output ----
def fmt(v, spec):
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def print_table(rows):
    head = (f"{'model':<12} {'src':<5} {'batch':>5} {'graphrun ms':>11} {'ORT ms':>8} {'PyTorch ms':>10} "
            f"{'ORT/gr':>6} {'PT/gr':>6} {'gr RSS MB':>9} {'bound MB':>8} {'ORT RSS MB':>10} {'err vs ORT':>10} "
            f"{'err vs PT':>9}")
    print(head)
    for r in rows:
        g, o, t = r["graphrun"], r["ort"], r["torch"]
        gms = g["median_ms"] if g else None
        oms = o["median_ms"] if o else None
        tms = t["median_ms"] if t else None
        # MB (10^6 bytes), as the bound's 40 MB and the missed-target line count them.
        grss = g["rss"] / 1e6 if g and g["rss"] else None
        orss = o["rss"] / 1e6 if o and o["rss"] else None
        bound = r["rss_bound"] / 1e6 if r.get("rss_bound") else None
        print(f"{r['model']:<12} {r['source']:<5} {r['batch']:>5} {fmt(gms, '11.2f'):>11} {fmt(oms, '8.2f'):>8} "
              f"{fmt(tms, '10.2f'):>10} {fmt(r['ratio_ort'], '6.2f'):>6} {fmt(r['ratio_torch'], '6.2f'):>6} "
              f"{fmt(grss, '9.1f'):>9} {fmt(bound, '8.1f'):>8} {fmt(orss, '10.1f'):>10} "
              f"{fmt(r['err_ort'], '10.1e'):>10} {fmt(r['err_torch'], '9.1e'):>9}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("graphrun")
    ap.add_argument("--quick", action="store_true",
                    help=f"models {','.join(QUICK_MODELS)} at batch 1, fewer passes")
    ap.add_argument("--models", help=f"comma-separated, of {','.join(ALL_MODELS)} (default: all)")
    ap.add_argument("--batches", help="comma-separated batch sizes (default 1,16; 1 with --quick)")
    ap.add_argument("--warmup", type=int, help="untimed passes per peer (default 2; 1 with --quick)")
    ap.add_argument("--iterations", type=int,
                    help="timed passes per peer (default 10 for the CNNs, 50 for the others; 5 and 20 with --quick)")
    ap.add_argument("--rounds", type=int, help="processes per peer, alternating (default 3; 1 with --quick)")
    ap.add_argument("--ort-dir", default=os.path.join(os.path.expanduser("~"), ".cache", "graphrun-bench", "ort"),
                    help="where onnxruntime-node is (or is installed on first use)")
    ap.add_argument("--no-ort", action="store_true", help="leave ONNX Runtime out")
    ap.add_argument("--no-install", action="store_true", help="do not run npm install when ORT is missing")
    ap.add_argument("--no-torch", action="store_true", help="leave PyTorch out even when it is installed")
    ap.add_argument("--json", metavar="OUT", help="also write the rows as JSON to OUT")
    ap.add_argument("--device", default="cpu", choices=("cpu", "gpu"),
                    help="graphrun's (and PyTorch's) device; ORT always runs its CPU provider")
    ap.add_argument("--strict", action="store_true",
                    help="exit 1 when a target is missed, a peer fails or ORT is unavailable")
    ap.add_argument("--keep", action="store_true", help="keep the model files and outputs (the temp dir)")
    a = ap.parse_args()

    models = (a.models.split(",") if a.models else list(QUICK_MODELS if a.quick else ALL_MODELS))
    for m in models:
        if m not in ONNX_BUILDERS:
            ap.error(f"unknown model {m!r} (known: {', '.join(ALL_MODELS)})")
    batches = [int(b) for b in (a.batches or ("1" if a.quick else "1,16")).split(",")]
    warmup = a.warmup if a.warmup is not None else (1 if a.quick else 2)
    rounds = a.rounds or (1 if a.quick else 3)
    use_torch = torch is not None and not a.no_torch
    if use_torch:
        torch.set_num_threads(CORES)
        if a.device == "gpu" and not torch.cuda.is_available():
            print("PyTorch: no CUDA build or no GPU, so PyTorch is left out for --device=gpu")
            use_torch = False
    if a.no_ort:
        ort_ok, ort_info = False, "left out (--no-ort)"
    else:
        ort_ok, ort_info = ensure_ort(os.path.abspath(a.ort_dir), not a.no_install)
    ort_dir = os.path.abspath(a.ort_dir)

    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next(line.split(":", 1)[1].strip() for line in fh if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"graphrun {a.graphrun} on {CORES} cores ({cpu}), device {a.device}")
    # The kernels graphrun picked for this CPU (oneDNN's ISA: avx2, avx512_core, ...): a table's
    # ratios depend on it as much as on the model, so each run says which it had.
    kernels = "unknown"
    try:
        dev = subprocess.run([a.graphrun, "devices"], capture_output=True, text=True, timeout=60).stdout
        kernels = next(l.split("kernels:", 1)[1].strip() for l in dev.splitlines() if l.startswith("cpu:"))
    except (OSError, subprocess.SubprocessError, StopIteration):
        pass
    print(f"graphrun's CPU kernels: {kernels}")
    print("ONNX Runtime: " + (f"onnxruntime-node {ort_info} (CPU provider)" if ort_ok else f"unavailable: {ort_info}"))
    print(f"PyTorch: {torch.__version__ if use_torch else ('left out' if torch is not None else 'not installed')}")

    tmp = tempfile.mkdtemp(prefix="graphrun-onnx-bench-")
    rows, missed = [], []
    try:
        for name in models:
            for batch in ([64] if name == "mlp" else batches):
                k = a.iterations or ((5 if a.quick else 10) if name in HEAVY else (20 if a.quick else 50))
                work = os.path.join(tmp, f"{name}_b{batch}")
                os.makedirs(work)
                path = os.path.join(work, "model.onnx")
                inputs = os.path.join(work, "inputs.npz")
                row = {"model": name, "batch": batch, "warmup": warmup, "iterations": k, "rounds": rounds,
                       "graphrun": None, "ort": None, "torch": None, "ratio_ort": None, "ratio_torch": None,
                       "err_ort": None, "err_torch": None, "errors": []}
                print(f"{name} batch {batch}: building", end="", flush=True)
                want_torch = None
                if use_torch and name in TORCH_MODELS:
                    row["source"] = "torch"
                    tm, x = make_torch(name, batch)
                    # A dynamic batch, as models are shared: graphrun binds it from the array fed.
                    torch.onnx.export(tm, (x,), path, input_names=["x"], output_names=["y"], opset_version=17,
                                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
                    feeds = {"x": x.numpy()}
                    with torch.no_grad():
                        want_torch = {"y": tm(x).numpy()}
                else:
                    row["source"] = "onnx"
                    m = ONNX_BUILDERS[name](batch=batch, reference=False)
                    onnx.save(m.proto, path)
                    feeds = m.feeds
                np.savez(inputs, **feeds)

                # Rounds alternate the peers, so that a burst of load from elsewhere on the machine
                # hits both; a peer's ms is the median of its per-round medians, min the least pass.
                got, want_ort, g_runs, o_runs = None, None, [], []
                for r in range(rounds):
                    print(f", round {r + 1}: graphrun", end="", flush=True)
                    try:
                        res, outs = run_graphrun(a.graphrun, path, inputs, os.path.join(work, "graphrun_out.npz"),
                                                 warmup, k, a.device)
                        g_runs.append(res)
                        got = outs if got is None else got
                    except (RuntimeError, OSError, ValueError, KeyError, IndexError) as e:
                        row["errors"].append(f"graphrun: {e}")
                        break
                    if ort_ok:
                        print(" ORT", end="", flush=True)
                        try:
                            res, outs = run_ort(ort_dir, path, feeds, work, warmup, k)
                            o_runs.append(res)
                            want_ort = outs if want_ort is None else want_ort
                        except (RuntimeError, OSError, ValueError, KeyError, IndexError) as e:
                            row["errors"].append(f"ORT: {e}")
                            break
                row["graphrun"], row["ort"] = combine(g_runs), combine(o_runs)
                if a.device == "cpu":
                    row["rss_bound"] = graphrun_rss_bound(a.graphrun, path, inputs)
                if got is not None and want_ort is not None:
                    row["err_ort"] = rel_err(got, want_ort)
                if want_torch is not None:
                    print(", PyTorch", end="", flush=True)
                    row["torch"] = {"median_ms": torch_ms(tm, x, k, rounds, a.device)}
                    if got is not None:
                        row["err_torch"] = rel_err(got, want_torch)
                print(flush=True)
                g = row["graphrun"]
                if g and row["ort"]:
                    row["ratio_ort"] = row["ort"]["median_ms"] / g["median_ms"]
                if g and row["torch"]:
                    row["ratio_torch"] = row["torch"]["median_ms"] / g["median_ms"]
                for e in row["errors"]:
                    print(f"  {e}")
                label = f"{name} batch {batch}"
                if row["errors"]:
                    missed.append(f"{label} (a peer failed)")
                for key, what in (("ratio_ort", "slower than ORT"), ("ratio_torch", "slower than PyTorch")):
                    if row[key] is not None and row[key] < 1.0:
                        missed.append(f"{label} ({what})")
                for key in ("err_ort", "err_torch"):
                    if row[key] is not None and not row[key] <= 1e-4:
                        missed.append(f"{label} ({key.replace('_', ' vs ')} {row[key]:.1e})")
                if g and g["rss"] and row.get("rss_bound") and g["rss"] > row["rss_bound"]:
                    missed.append(f"{label} (RSS {g['rss'] / 1e6:.0f} MB over {row['rss_bound'] / 1e6:.0f} MB)")
                rows.append(row)
    finally:
        if a.keep:
            print(f"models, inputs and outputs kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    print()
    print_table(rows)
    print("\nms: median per pass; ORT/gr, PT/gr: peer ms / graphrun ms (> 1: graphrun faster); "
          "RSS: each process's peak resident set, host process included; bound: graphrun's weights + static "
          "peak (check) + 40 MB, issue 25's target for its RSS")
    unchecked = [] if ort_ok else [f"ONNX Runtime ({ort_info})"]
    print("targets: ratio >= 1.0, err <= 1e-4, graphrun RSS <= bound: " + ("all met" if not missed else "missed for " + ", ".join(missed)))
    if unchecked:
        print("not checked against: " + ", ".join(unchecked))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"cores": CORES, "cpu": cpu, "kernels": kernels, "device": a.device,
                       "ort": ort_info if ort_ok else None, "ort_unavailable": None if ort_ok else ort_info,
                       "torch": torch.__version__ if use_torch else None, "rows": rows, "missed": missed,
                       "not_checked": unchecked}, fh,
                      indent=1)
        print(f"wrote {a.json}")
    return 1 if a.strict and (missed or unchecked) else 0


if __name__ == "__main__":
    sys.exit(main())
