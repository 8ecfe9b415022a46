#!/usr/bin/env python3
"""The layout pass (issue 25 item 3, engine/plan/channels_last.h) end to end:
a chain of convs that oneDNN runs channels-last (NHWC) — a 3x3 stem, 1x1 ->
depthwise 3x3 (stride 2) -> 1x1, a block with a residual add, a strided 3x3,
20 and 36 channels, batch 2, odd sizes — matches the
NumPy float64 reference, --no-fuse and GRAPHRUN_NO_DNNL=1 (both NCHW
throughout); `check` lists the channels-last values (text and JSON), none
with --no-fuse or without oneDNN; a --fetch'ed value inside the chain stays
NCHW (and right); with channels that are multiples of 8 (24 and 48) or 16
(16 and 32) the chain is held in one of oneDNN's blocked layouts (nChw8c,
nChw16c; `check` says which); each safepoint run peaks at check's static peak, leaks
nothing and holds nothing after teardown.

Usage: onnx_channels_last_test.py GRAPHRUN
"""
import json
import os
import re
import sys
import tempfile

from harness import run_binary  # noqa: E402 (tests/harness.py)

try:
    import numpy as np
    import onnx  # noqa: F401 (onnx_models needs it)
except ImportError as e:
    print(f"SKIP: the channels-last tests need numpy and python3-onnx ({e})")
    sys.exit(0)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "models"))
import onnx_models  # noqa: E402

GRAPHRUN = sys.argv[1]
TMP = tempfile.mkdtemp(prefix="graphrun-cl-")
RTOL = 1e-4  # max |error| / max |reference|
failures = []
NO_DNNL = {"GRAPHRUN_NO_DNNL": "1"}


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def graphrun(*args, env=None):
    return run_binary(GRAPHRUN, args, env=env, timeout=300)


def build(c1=20, c2=36):
    """The chain (c1 and c2 channels), the names of its values and every value's float64 reference."""
    net = onnx_models.Net(seed=7)
    x = net.input("x", net.rng.standard_normal((2, 20, 17, 17)).astype(np.float32))
    names = {}
    stem = net.relu(net.bn(net.conv(x, 20, c1, 3), c1))
    a = net.relu6(net.bn(net.conv(stem, c1, c2, 1), c2))
    b = net.relu6(net.bn(net.conv(a, c2, c2, 3, stride=2, group=c2), c2))
    c = net.bn(net.conv(b, c2, c1, 1), c1)
    d = net.relu6(net.bn(net.conv(c, c1, c2, 1), c2))
    e = net.relu6(net.bn(net.conv(d, c2, c2, 3, group=c2), c2))
    f = net.add(net.bn(net.conv(e, c2, c1, 1), c1), c)  # the residual: c is read twice
    y = net.relu(net.conv(f, c1, 24, 3, stride=2, bias=True))
    names.update(stem=stem, a=a, b=b, c=c, d=d, e=e, f=f, y=y)
    return net.model([y], "channels_last_chain"), names, net.vals


def pool_ref(x, k, s, pad, ceil=False):
    """ONNX MaxPool over NCHW: -inf padding, ceil_mode's extra window on the right."""
    n, c, h, w = x.shape
    size = lambda d: (d + 2 * pad - k + (s - 1 if ceil else 0)) // s + 1  # noqa: E731
    ho, wo = size(h), size(w)
    xp = np.full((n, c, (ho - 1) * s + k, (wo - 1) * s + k), -np.inf)
    xp[:, :, pad:pad + h, pad:pad + w] = x[:, :, :xp.shape[2] - pad, :xp.shape[3] - pad]
    win = [xp[:, :, i:i + s * (ho - 1) + 1:s, j:j + s * (wo - 1) + 1:s] for i in range(k) for j in range(k)]
    return np.max(np.stack(win), axis=0)


def build_fire(sq_c=12, e5_c=5):
    """conv 3x3 -> padded max_pool -> 9x9 max_pool -> squeeze 1x1 -> three expands -> concat -> ceil max_pool -> conv.

    With the default channels (the last expand's 5) it stays NHWC; with sq_c=16, e5_c=8 every value's
    channels are a multiple of 8, so that where oneDNN has no AVX-512 the group is held in nChw8c
    (dnnl_free_op_block), our max_pools and concat included."""
    net = onnx_models.Net(seed=11)
    x = net.input("x", net.rng.standard_normal((2, 20, 17, 17)).astype(np.float32))
    names = {}
    stem = net.relu(net.conv(x, 20, 24, 3, bias=True))
    p1 = net.op("MaxPool", [stem], lambda a: pool_ref(a, 3, 2, 1), kernel_shape=[3, 3], strides=[2, 2],
                pads=[1, 1, 1, 1])
    # A 9x9 window (81 pixels where it lies inside): more than the 64 the kernel gathers at once.
    pb = net.op("MaxPool", [p1], lambda a: pool_ref(a, 9, 1, 4), kernel_shape=[9, 9], strides=[1, 1],
                pads=[4, 4, 4, 4])
    sq = net.relu(net.conv(pb, 24, sq_c, 1, pad=0, bias=True))
    e1 = net.relu(net.conv(sq, sq_c, 24, 1, pad=0, bias=True))
    e3 = net.relu(net.conv(sq, sq_c, 24, 3, pad=1, bias=True))
    e5 = net.relu(net.conv(sq, sq_c, e5_c, 1, pad=0, bias=True))
    cat = net.op("Concat", [e1, e3, e5], lambda a, b, c: np.concatenate([a, b, c], axis=1), axis=1)
    p2 = net.op("MaxPool", [cat], lambda a: pool_ref(a, 2, 2, 0, ceil=True), kernel_shape=[2, 2],
                strides=[2, 2], ceil_mode=1)
    last = net.conv(p2, 48 + e5_c, 16, 1, pad=0, bias=True)
    y = net.relu(last)
    names.update(stem=stem, p1=p1, pb=pb, sq=sq, e1=e1, e3=e3, e5=e5, cat=cat, p2=p2, last=last, y=y)
    return net.model([y], "channels_last_fire"), names, net.vals


def fire_main(dnnl, sq_c=12, e5_c=5, layouts=("nhwc",)):
    """The fire block; layouts: the layouts its channels-last values may be held in (one for all)."""
    model, names, refs = build_fire(sq_c, e5_c)
    path = os.path.join(TMP, f"fire{sq_c}_{e5_c}.onnx")
    onnx.save(model.proto, path)
    np.save(os.path.join(TMP, "fire_x.npy"), model.feeds["x"])
    feeds = [f"--input=x=@{os.path.join(TMP, 'fire_x.npy')}"]
    # The fusion pass takes the concat apart (engine/plan/fuse.h): the pool
    # pools each of its three inputs, and the last conv is a conv of each
    # pooled part, summed (the first sum a conv with the residual of its own).
    # All of it stays channels-last.
    everything = [names[k] for k in ("stem", "p1", "pb", "sq", "e1", "e3", "e5")] + \
        [f"{names['p2']}.part{i}" for i in range(3)] + [f"{names['last']}.part1", f"{names['last']}.part1_sum"]
    runs = [("fire default", (), None, everything),
            ("fire --no-fuse", ("--no-fuse",), None, []),
            ("fire GRAPHRUN_NO_DNNL=1", (), NO_DNNL, []),
            ("fire --fetch", (f"--fetch={names['cat']}", f"--fetch={names['y']}"), None,
             [names[k] for k in ("stem", "p1", "pb", "sq")])]
    for how, extra, env, want_cl in runs:
        plan = plan_of(path, *extra, env=env)
        got, doc = run(path, feeds, *extra, env=env)
        if plan is None or got is None:
            continue
        cl = plan["channels_last"]
        want = want_cl if dnnl else []
        how = f"{how} ({sq_c}/{e5_c} channels)"
        check(sorted(cl) == sorted(want), f"{how}: channels-last values {cl}, expected {want} (oneDNN: {dnnl})")
        held = sorted(set(plan["channel_layouts"].values()))
        check(len(held) <= 1 and set(held) <= set(layouts), f"{how}: layouts {held}, expected one of {layouts}")
        mem = doc["memory"]["before_teardown"]["cpu"]
        check(mem["peak"] == plan["static_peak"]["cpu"],
              f"{how}: safepoint peak {mem['peak']} != check's static peak {plan['static_peak']['cpu']}")
        for oname, value in got.items():
            ref = refs[oname]
            e = rel_error(value, ref)
            check(value.shape == ref.shape and e <= RTOL, f"{how}: {oname} {value.shape} differs from NumPy by {e:.3g}")
        print(f"{how}: {len(cl)} channels-last values {held}, peak {mem['peak']} = static peak; "
              f"y error vs NumPy {rel_error(got[names['y']], refs[names['y']]):.2e}")


def run(path, feeds, *extra, env=None, name="y"):
    out = os.path.join(TMP, "out" + "".join(a.strip("-").replace("=", "_") for a in extra) + ("_nodnnl" if env else ""))
    p = graphrun("run", path, "--cleanup=safepoint", "--check-leaks", "--format=json", "--no-data", f"--save={out}",
                 *feeds, *extra, env=env)
    check(p.returncode == 0, f"run {extra} {env}: exit {p.returncode}: {p.stderr[-2000:]}")
    if p.returncode != 0:
        return None, None
    doc = json.loads(p.stdout.splitlines()[0])
    got = {o["name"]: np.load(os.path.join(out, o["name"] + ".npy")) for o in doc["outputs"]}
    return got, doc


def plan_of(path, *extra, env=None):
    p = graphrun("check", path, "--format=json", *extra, env=env)
    check(p.returncode == 0, f"check {extra}: exit {p.returncode}: {p.stderr[-2000:]}")
    return json.loads(p.stdout) if p.returncode == 0 else None


def check_memory(how, plan, doc):
    """The safepoint run peaks at check's static peak and teardown leaves nothing; the statistics before teardown."""
    mem = doc["memory"]["before_teardown"]["cpu"]
    check(mem["peak"] == plan["static_peak"]["cpu"],
          f"{how}: safepoint peak {mem['peak']} != check's static peak {plan['static_peak']['cpu']}")
    after = doc["memory"]["after_teardown"]["cpu"]
    check(after["in_use"] == 0 and after["weights"] == 0 and after["workspace"] == 0,
          f"{how}: left after teardown: {after}")
    return mem


def rel_error(got, want):
    return float(np.max(np.abs(got.astype(np.float64) - want)) / max(np.max(np.abs(want)), 1e-30))


def chain_main(dnnl, c1, c2, layouts):
    """The chain with c1 and c2 channels; layouts: the layouts its channels-last values may be held in."""
    model, names, refs = build(c1, c2)
    path = os.path.join(TMP, f"chain{c1}_{c2}.onnx")
    onnx.save(model.proto, path)
    np.save(os.path.join(TMP, "x.npy"), model.feeds["x"])
    feeds = [f"--input=x=@{os.path.join(TMP, 'x.npy')}"]
    want = model.expected[names["y"]]
    runs = [("default", (), None), ("--no-fuse", ("--no-fuse",), None), ("GRAPHRUN_NO_DNNL=1", (), NO_DNNL),
            ("--fetch", (f"--fetch={names['e']}", f"--fetch={names['y']}"), None)]
    runs = [(f"{c1}/{c2} channels, {how}", extra, env) for how, extra, env in runs]
    results = {}
    for how, extra, env in runs:
        plan = plan_of(path, *extra, env=env)
        got, doc = run(path, feeds, *extra, env=env)
        if plan is None or got is None:
            continue
        cl = plan["channels_last"]
        held = sorted(set(plan["channel_layouts"].values()))
        check(sorted(plan["channel_layouts"]) == sorted(cl), f"{how}: layouts {plan['channel_layouts']} for {cl}")
        # One layout for the whole chain: its convs join every value (channels_last.h).
        check(len(held) <= 1 and set(held) <= set(layouts), f"{how}: layouts {held}, expected one of {layouts}")
        # Every conv output but the script's output y (the fused nodes keep their chains'
        # last names) and, where it has fewer channels than x's 20, the stem's: converting
        # x would cost more than it saves.
        marked = 7 if c1 >= 20 else 6
        if how.endswith("default"):
            check(len(cl) == (marked if dnnl else 0), f"{how}: channels-last values {cl} (oneDNN: {dnnl})")
            check(names["y"] not in cl, f"{how}: the output {names['y']} is channels-last")
            text = graphrun("check", path).stdout
            check(("channels-last (NHWC between oneDNN convs" in text) == dnnl, f"{how}: check's text: {text[-1500:]}")
            block = {"nChw8c": " [8]", "nChw16c": " [16]"}.get(held[0] if held else "", "")
            check(not dnnl or f"{names['a']}{block}," in text, f"{how}: check's text does not mark {names['a']}{block}")
        elif how.endswith("--fetch"):
            check(names["e"] not in cl, f"--fetch={names['e']} left it channels-last: {cl}")
            check(len(cl) == (marked - 1 if dnnl else 0), f"{how}: channels-last values {cl}")
        else:
            check(cl == [], f"{how}: channels-last values {cl}")
        mem = check_memory(how, plan, doc)
        for oname, value in got.items():
            ref = refs[oname]
            e = rel_error(value, ref)
            check(value.shape == ref.shape and e <= RTOL, f"{how}: {oname} {value.shape} differs from NumPy by {e:.3g}")
        results[how] = got
        print(f"{how}: {len(cl)} channels-last values ({', '.join(held) or 'none'}), peak {mem['peak']} = static peak; "
              f"y error vs NumPy {rel_error(got[names['y']], want):.2e}")
    base = results.get(runs[0][0])
    for how, got in results.items():
        if base is not None and how != runs[0][0]:
            e = rel_error(base[names["y"]], got[names["y"]].astype(np.float64))
            check(e <= RTOL, f"default differs from {how} by {e:.3g}")


def winograd_main(isa):
    """3x3 convs between channels-last values run as Winograd's F(4x4, 3x3) where graphrun's
    own loops are AVX2 or AVX-512 (engine/kernels/cpu/winograd.h): with a bias and relu, with
    a residual and relu6, alone. With AVX2, 32 and 40 channels at 23x21, batch 2 (72 tiles);
    with AVX-512, where Winograd needs at least 128 channels and 256 tiles beside oneDNN's
    AVX-512 conv, 128 and 136 channels at 46x46 (288 tiles). Which layout the values are held
    in is the layout pass's choice (check's channel_layouts: nChw8c where oneDNN's code is
    AVX2, NHWC on an Intel CPU with AVX-512; the 40 or 136 channels keep the group out of
    nChw16c); each such conv whose x, output and residual share one channels-last layout is
    listed by `check` (none under GRAPHRUN_NO_WINOGRAD=1 or --no-fuse); every run matches
    NumPy's float64 reference; where one ran, the run's bits differ from oneDNN's direct
    conv's, within RTOL."""
    c1, c2, h, w = (128, 136, 46, 46) if isa == "avx512" else (32, 40, 23, 21)
    net = onnx_models.Net(seed=13)
    x = net.input("x", net.rng.standard_normal((2, 24, h, w)).astype(np.float32))
    a = net.relu(net.bn(net.conv(x, 24, c1, 1), c1))
    b = net.relu(net.conv(a, c1, c1, 3, bias=True))
    c = net.relu6(net.add(net.bn(net.conv(b, c1, c1, 3), c1), a))
    d = net.conv(c, c1, c2, 3, bias=True)
    y = net.relu(net.conv(d, c2, 16, 1))
    model = net.model([y], "winograd_chain")
    path = os.path.join(TMP, "winograd.onnx")
    onnx.save(model.proto, path)
    np.save(os.path.join(TMP, "wx.npy"), model.feeds["x"])
    feeds = [f"--input=x=@{os.path.join(TMP, 'wx.npy')}"]
    off = {"GRAPHRUN_NO_WINOGRAD": "1"}
    results = {}
    reads = {b: [a], c: [b, a], d: [c]}  # each 3x3 conv's x (and residual)
    expected = []
    for how, extra, env, default in [("winograd default", (), None, True),
                                     ("winograd GRAPHRUN_NO_WINOGRAD=1", (), off, False),
                                     ("winograd --no-fuse", ("--no-fuse",), None, False)]:
        plan = plan_of(path, *extra, env=env)
        got, doc = run(path, feeds, *extra, env=env)
        if plan is None or got is None:
            continue
        held = plan["channel_layouts"]
        want = [v for v in (b, c, d) if isa and default and held.get(v) and all(held.get(u) == held[v] for u in reads[v])]
        if default:
            expected = want
        check(sorted(plan["winograd"]) == sorted(want), f"{how}: winograd convs {plan['winograd']}, expected {want}")
        text = graphrun("check", path, *extra, env=env).stdout
        check(("Winograd F(4x4, 3x3) convs" in text) == bool(want), f"{how}: check's text: {text[-1200:]}")
        check_memory(how, plan, doc)
        e = rel_error(got[y], net.vals[y])
        check(e <= RTOL, f"{how}: y differs from NumPy by {e:.3g}")
        results[how] = got[y]
        print(f"{how}: winograd convs {plan['winograd']}; y error vs NumPy {e:.2e}")
    if expected and len(results) == 3:
        check(not np.array_equal(results["winograd default"], results["winograd GRAPHRUN_NO_WINOGRAD=1"]),
              "the Winograd run gave the direct conv's bits: it did not run")


def main():
    devices = graphrun("devices").stdout
    dnnl = "oneDNN" in devices
    # 20 and 36 channels (no multiple of 8): NHWC. 24 and 48: oneDNN's nChw8c where its
    # convs run fast in it (AVX2 and AVX-512 have such code), and 16 and 32 nChw16c
    # (AVX-512) or nChw8c; NHWC where oneDNN has neither.
    chain_main(dnnl, 20, 36, ["nhwc"])
    chain_main(dnnl, 24, 48, ["nChw8c", "nhwc"])
    chain_main(dnnl, 16, 32, ["nChw16c", "nChw8c", "nhwc"])
    fire_main(dnnl)
    # Every channel count a multiple of 8: our pools and concat run on nChw8c where oneDNN's
    # code is AVX2 (its windowed convs would reorder NHWC into it), else NHWC.
    fire_main(dnnl, 16, 8, ["nChw8c"] if re.search(r"oneDNN [^,]*\(avx2", devices) else ["nhwc"])
    # Winograd runs where graphrun's own loops are AVX2 or AVX-512 (both have AVX2 and FMA).
    loops = re.search(r"kernels: (avx2|avx512) loops", devices)
    winograd_main(loops.group(1) if loops and dnnl else None)
    if failures:
        print(f"onnx_channels_last: {len(failures)} failed")
        return 1
    print("onnx_channels_last: all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
