#!/usr/bin/env python3
"""ONNX control flow (issue 27 item 6): an If whose condition folds when the
model is read (a constant, or computed from constants and static shapes, as
an exporter traces `if x.dim() == 4`) runs the branch it takes, imported in
its place: branches that read outer values, hold their own initializers and
Constants, nest another If, or give a constant output; values checked
against NumPy in float64 under safepoint and background, the safepoint peak
equal to check's static peak. A condition known only at run time, a
condition of several elements, and a taken branch with an op graphrun lacks
are refused (exit 3) naming the node; the untaken branch's ops do not matter.
A Loop whose trip count folds is unrolled: its final carried value and its
scan output (stacked), an early exit its body's folded condition decides, a
trip count from a static shape; a trip count or an exit the data decides,
and an unroll past the bound, are refused.

Usage: onnx_control_test.py GRAPHRUN
"""
import json
import os
import sys
import tempfile

try:
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    print(f"SKIP: the ONNX control-flow tests need numpy and python3-onnx ({e})")
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import checks, run_binary  # noqa: E402

GRAPHRUN = os.path.abspath(sys.argv[1])
TMP = tempfile.mkdtemp(prefix="graphrun-onnx-control-")
failures = []
check = checks(failures)
rng = np.random.default_rng(11)
X = rng.standard_normal((2, 3, 4)).astype(np.float32)
F = TensorProto.FLOAT


def vi(name, shape, t=F):
    return helper.make_tensor_value_info(name, t, shape)


def const(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def branch(name, nodes, outputs, inits=()):
    return helper.make_graph(nodes, name, [], outputs, initializer=list(inits))


def model(name, nodes, inits=(), out_shape=(2, 3, 4), inputs=None):
    graph = helper.make_graph(nodes, name, inputs or [vi("x", list(X.shape))], [vi("y", list(out_shape))],
                              initializer=list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    path = os.path.join(TMP, name + ".onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return path


def run(path, *extra):
    xf = os.path.join(TMP, "x.npy")
    np.save(xf, X)
    out = os.path.join(TMP, "y.npz")
    p = run_binary(GRAPHRUN, ["run", path, f"--input=x=@{xf}", f"--output=y=@{out}", "--no-data", *extra],
                   timeout=120)
    return p, (np.load(out)["y"] if p.returncode == 0 else None)


def expect_values(name, nodes, want, inits=()):
    path = model(name, nodes, inits, want.shape)
    for cleanup in ("safepoint", "background"):
        p, got = run(path, f"--cleanup={cleanup}")
        ok = p.returncode == 0 and got.shape == want.shape and np.allclose(got.astype(np.float64), want,
                                                                           rtol=1e-6, atol=1e-7)
        check(ok, f"{name} ({cleanup}): exit {p.returncode} {p.stderr[-600:]}\n got {got}\n want {want}")
    c = run_binary(GRAPHRUN, ["check", path, "--format=json"], timeout=120)
    p, _ = run(path, "--cleanup=safepoint", "--check-leaks", "--format=json")
    if check(c.returncode == 0 and p.returncode == 0, f"{name}: check/json run: {c.stderr[-300:]} {p.stderr[-300:]}"):
        static = json.loads(c.stdout)["static_peak"]["cpu"]
        peak = json.loads(p.stdout.splitlines()[0])["memory"]["before_teardown"]["cpu"]["peak"]
        check(peak == static, f"{name}: safepoint peak {peak} != static peak {static}")


def expect_refused(name, nodes, words, inits=(), inputs=None):
    path = model(name, nodes, inits, inputs=inputs)
    p, _ = run(path)
    check(p.returncode == 3 and all(w in p.stderr for w in words), f"{name}: exit {p.returncode} {p.stderr[-600:]}")


x64 = X.astype(np.float64)
relu_then = branch("then", [helper.make_node("Relu", ["x"], ["t"])], [vi("t", [2, 3, 4])])
neg_else = branch("else", [helper.make_node("Neg", ["x"], ["e"])], [vi("e", [2, 3, 4])])

# A constant condition, each way.
for flag, want in ((True, np.maximum(x64, 0)), (False, -x64)):
    expect_values(f"if_const_{flag}", [
        helper.make_node("Constant", [], ["c"], value=helper.make_tensor("cv", TensorProto.BOOL, [], [flag])),
        helper.make_node("If", ["c"], ["y"], then_branch=relu_then, else_branch=neg_else, name="pick")], want)

# The exporter's shape test: rank(x) == 3 through Shape -> Size -> Equal; the
# taken branch reads an outer value (w) and has its own initializer and Constant.
w = rng.standard_normal((4,)).astype(np.float32)
then_b = branch("then", [
    helper.make_node("Constant", [], ["two"], value=numpy_helper.from_array(np.array(2, np.float32), "two_v")),
    helper.make_node("Mul", ["x", "two"], ["m"]),
    helper.make_node("Add", ["m", "w"], ["a"]),
    helper.make_node("Add", ["a", "b_in"], ["t"])], [vi("t", [2, 3, 4])], inits=[const("b_in", np.float32(0.5))])
else_b = branch("else", [helper.make_node("Identity", ["x"], ["e"])], [vi("e", [2, 3, 4])])
expect_values("if_rank", [
    helper.make_node("Shape", ["x"], ["s"]),
    helper.make_node("Size", ["s"], ["r"]),
    helper.make_node("Equal", ["r", "three"], ["c"]),
    helper.make_node("If", ["c"], ["y"], then_branch=then_b, else_branch=else_b)],
    x64 * 2 + w.astype(np.float64) + 0.5, inits=[const("w", w), const("three", np.int64(3))])

# A nested If, and a branch whose output is a constant (the If's output folds):
# y = x + (inner If's constant) where the outer condition is false.
inner = helper.make_node("If", ["c2"], ["k"], name="inner",
                         then_branch=branch("t2", [helper.make_node(
                             "Constant", [], ["k1"], value=numpy_helper.from_array(np.array(3, np.float32), "k1v"))],
                             [vi("k1", [])]),
                         else_branch=branch("e2", [helper.make_node(
                             "Constant", [], ["k2"], value=numpy_helper.from_array(np.array(5, np.float32), "k2v"))],
                             [vi("k2", [])]))
outer_else = branch("else", [inner, helper.make_node("Add", ["x", "k"], ["e"])], [vi("e", [2, 3, 4])])
expect_values("if_nested", [
    helper.make_node("If", ["c1"], ["y"], then_branch=relu_then, else_branch=outer_else, name="outer")],
    x64 + 3, inits=[const("c1", np.bool_(False)), const("c2", np.bool_(True))])

# The untaken branch may use an op graphrun lacks; the taken one may not.
odd = branch("odd", [helper.make_node("Det", ["x"], ["d"])], [vi("d", [2])])
expect_values("if_untaken_unsupported", [
    helper.make_node("If", ["c"], ["y"], then_branch=relu_then, else_branch=odd)],
    np.maximum(x64, 0), inits=[const("c", np.bool_(True))])
expect_refused("if_taken_unsupported", [
    helper.make_node("If", ["c"], ["y"], then_branch=odd, else_branch=relu_then, name="pick")],
    ("If node 'pick'", "then_branch", "does not support: Det"), inits=[const("c", np.bool_(True))])

# A condition the run would compute, and one of several elements.
expect_refused("if_runtime_condition", [
    helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
    helper.make_node("Greater", ["s", "zero"], ["c"]),
    helper.make_node("If", ["c"], ["y"], then_branch=relu_then, else_branch=neg_else, name="pick")],
    ("If node 'pick'", "condition 'c' must be known when the model is read", "no run-time branch"),
    inits=[const("zero", np.float32(0))])
expect_refused("if_condition_of_two", [
    helper.make_node("If", ["c"], ["y"], then_branch=relu_then, else_branch=neg_else, name="pick")],
    ("If node 'pick'", "holds 2 elements; it must hold one"), inits=[const("c", np.array([True, False]))])

# Loop with a trip count known at load: unrolled. The body reads its
# iteration number (cast to float), carries x, and scans a value per iteration.
I64, BOOL = TensorProto.INT64, TensorProto.BOOL


def loop_body(cond_nodes, cond_out="cond"):
    return helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=F),
         helper.make_node("Mul", ["x_in", "half"], ["h"]),
         helper.make_node("Add", ["h", "fi"], ["x_out"]),
         helper.make_node("Mul", ["x_in", "two"], ["scan"])] + cond_nodes,
        "body", [vi("i", [], I64), vi("cond", [], BOOL), vi("x_in", [2, 3, 4])],
        [vi(cond_out, [], BOOL), vi("x_out", [2, 3, 4]), vi("scan", [2, 3, 4])])


def loop_ref(steps):
    x, scans = x64, []
    for i in range(steps):
        scans.append(x * 2)
        x = x * 0.5 + i
    return x, np.stack(scans)


loop_inits = [const("half", np.float32(0.5)), const("two", np.float32(2))]
final, scanned = loop_ref(4)
expect_values("loop_final", [helper.make_node("Loop", ["m", "", "x"], ["y", "s"], body=loop_body([]), name="lp")],
              final, inits=loop_inits + [const("m", np.int64(4))])
expect_values("loop_scan", [helper.make_node("Loop", ["m", "c", "x"], ["f", "y"], body=loop_body([]), name="lp")],
              scanned, inits=loop_inits + [const("m", np.int64(4)), const("c", np.bool_(True))])
# The body's condition output ends the loop early: i < 2 keeps going, so 3 of 10 iterations run.
early = [helper.make_node("Less", ["i", "two_i"], ["go"])]
expect_values("loop_early_exit",
              [helper.make_node("Loop", ["m", "", "x"], ["y", "s"], body=loop_body(early, "go"), name="lp")],
              loop_ref(3)[0], inits=loop_inits + [const("m", np.int64(10)), const("two_i", np.int64(2))])
# The trip count from shapes: x.shape[0] (2) iterations.
expect_values("loop_shape_count", [
    helper.make_node("Shape", ["x"], ["sh"]),
    helper.make_node("Gather", ["sh", "zero"], ["m"], axis=0),
    helper.make_node("Loop", ["m", "", "x"], ["y", "s"], body=loop_body([]), name="lp")],
    loop_ref(2)[0], inits=loop_inits + [const("zero", np.int64(0))])

# Refused: a trip count or an exit the run would decide, an unroll past the bound.
expect_refused("loop_runtime_count", [
    helper.make_node("ReduceSum", ["x"], ["sum"], keepdims=0),
    helper.make_node("Cast", ["sum"], ["m"], to=I64),
    helper.make_node("Loop", ["m", "", "x"], ["y", "s"], body=loop_body([]), name="lp")],
    ("Loop node 'lp'", "trip count 'm' must be known when the model is read"), inits=loop_inits)
data_exit = [helper.make_node("ReduceSum", ["x_out"], ["t"], keepdims=0),
             helper.make_node("Less", ["t", "zero_f"], ["go"])]
expect_refused("loop_data_exit", [
    helper.make_node("Loop", ["m", "", "x"], ["y", "s"], body=loop_body(data_exit, "go"), name="lp")],
    ("Loop node 'lp'", "condition output 'go' must be known when the model is read"),
    inits=loop_inits + [const("m", np.int64(3)), const("zero_f", np.float32(0))])
expect_refused("loop_too_long", [
    helper.make_node("Loop", ["m", "", "x"], ["y", "s"], body=loop_body([]), name="lp")],
    ("Loop node 'lp'", "trip count 100000 times its body's 4 nodes", "65536"),
    inits=loop_inits + [const("m", np.int64(100000))])

# Loops in loops multiply: 256 iterations of a body that is a 256-iteration
# loop of one node pass each loop's own bound but not the model's total.
inner_loop = helper.make_graph(
    [helper.make_node("Loop", ["m", "", "x_in"], ["x_out"], name="inner", body=helper.make_graph(
        [helper.make_node("Neg", ["v_in"], ["v_out"]), helper.make_node("Identity", ["c"], ["c_out"])],
        "ib", [vi("j", [], I64), vi("c", [], BOOL), vi("v_in", [2, 3, 4])],
        [vi("c_out", [], BOOL), vi("v_out", [2, 3, 4])])),
     helper.make_node("Identity", ["cond"], ["cond_out"])],
    "ob", [vi("i", [], I64), vi("cond", [], BOOL), vi("x_in", [2, 3, 4])],
    [vi("cond_out", [], BOOL), vi("x_out", [2, 3, 4])])
expect_refused("loop_nested_bomb", [helper.make_node("Loop", ["m", "", "x"], ["y"], body=inner_loop, name="outer")],
               ("Loop node 'inner'", "past 65536"), inits=[const("m", np.int64(256))])
# Within the bound, the same nesting runs: 3 x 5 negations of x.
expect_values("loop_nested", [helper.make_node("Loop", ["m", "", "x"], ["y"], body=inner_loop, name="outer")],
              -x64, inits=[const("m", np.int64(3))])

print(f"onnx_control: {'all passed' if not failures else str(len(failures)) + ' failed'}")
sys.exit(1 if failures else 0)
