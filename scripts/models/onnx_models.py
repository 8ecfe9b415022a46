#!/usr/bin/python3
"""ResNet-, MobileNet-, transformer-shaped and quantized ONNX models with random weights
(fixed seeds), built with ONNX's helper API, each with its NumPy reference in
float64 (issue 18 item 4).

As a library (tests/onnx_models_test.py): every builder returns a Model with
the ONNX ModelProto, the feeds and, when reference=True, the expected outputs.

As a script, it writes a model file for `graphrun run|compare`:
    onnx_models.py resnet18 OUT.onnx [--batch N]      ResNet-18 (224x224, 1000 classes)
    onnx_models.py mobilenet OUT.onnx [--batch N]     MobileNet-v2-shaped (224x224)
    onnx_models.py transformer OUT.onnx [--batch N]   4-layer encoder, d=256, 8 heads, 128 tokens
    onnx_models.py qcnn OUT.onnx [--batch N]          a quantized CNN (QLinearConv, u8/i8, 96x96, 10 classes)
and the model's inputs as OUT.input.npz (`--input=@OUT.input.npz` feeds them by name).
Needs Debian's python3-numpy and python3-onnx (run with /usr/bin/python3).
"""
import argparse
import math
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ONNX_TYPE = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64}


class Model:
    def __init__(self, proto, feeds, expected):
        self.proto, self.feeds, self.expected = proto, feeds, expected


class Net:
    """Builds ONNX nodes and, when reference is on, their values in float64."""

    def __init__(self, seed, reference=True):
        self.rng = np.random.default_rng(seed)
        self.reference = reference
        self.nodes, self.inits, self.inputs, self.vals = [], [], [], {}
        self.feeds = {}
        self._n = 0

    def name(self, base):
        self._n += 1
        return f"{base}_{self._n}"

    def input(self, name, arr):
        self.inputs.append(helper.make_tensor_value_info(name, ONNX_TYPE[arr.dtype], list(arr.shape)))
        self.feeds[name] = arr
        self.vals[name] = arr.astype(np.float64) if arr.dtype == np.float32 else arr
        return name

    def init(self, arr, base="w"):
        name = self.name(base)
        self.inits.append(numpy_helper.from_array(arr, name))
        self.vals[name] = arr.astype(np.float64) if arr.dtype == np.float32 else arr
        return name

    def weight(self, shape, fan_in, base="w"):
        return self.init((self.rng.standard_normal(shape) * math.sqrt(2.0 / fan_in)).astype(np.float32), base)

    def op(self, op_type, inputs, ref=None, base=None, **attrs):
        out = self.name(base or op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        if self.reference and ref is not None:
            self.vals[out] = ref(*[self.vals[i] for i in inputs])
        return out

    # ---- layers ----
    def conv(self, x, cin, cout, k, stride=1, pad=None, group=1, bias=False):
        pad = k // 2 if pad is None else pad
        w = self.weight((cout, cin // group, k, k), cin // group * k * k)
        ins = [x, w]
        if bias:
            ins.append(self.init((self.rng.standard_normal(cout) * 0.1).astype(np.float32), "b"))
        s, p = (stride, stride), (pad, pad, pad, pad)
        return self.op("Conv", ins, lambda *a: conv_ref(*a, strides=s, pads=p, group=group),
                       kernel_shape=[k, k], strides=list(s), pads=list(p), group=group)

    def bn(self, x, c, eps=1e-5):
        scale = self.init((1 + 0.1 * self.rng.standard_normal(c)).astype(np.float32), "gamma")
        bias = self.init((0.1 * self.rng.standard_normal(c)).astype(np.float32), "beta")
        mean = self.init((0.1 * self.rng.standard_normal(c)).astype(np.float32), "mean")
        var = self.init(self.rng.uniform(0.5, 1.5, c).astype(np.float32), "var")
        return self.op("BatchNormalization", [x, scale, bias, mean, var],
                       lambda x, g, b, m, v: bn_ref(x, g, b, m, v, eps), epsilon=eps)

    def relu(self, x):
        return self.op("Relu", [x], lambda a: np.maximum(a, 0))

    def relu6(self, x):
        lo = self.init(np.array(0, np.float32), "lo")
        hi = self.init(np.array(6, np.float32), "hi")
        return self.op("Clip", [x, lo, hi], lambda a, l, h: np.clip(a, l, h))

    def add(self, a, b):
        return self.op("Add", [a, b], lambda x, y: x + y)

    def gemm(self, x, cin, cout):
        w = self.weight((cout, cin), cin)
        b = self.init((self.rng.standard_normal(cout) * 0.1).astype(np.float32), "b")
        return self.op("Gemm", [x, w, b], lambda a, w, b: a @ w.T + b, transB=1)

    def head(self, x, c, classes):
        g = self.op("GlobalAveragePool", [x], lambda a: a.mean(axis=(2, 3), keepdims=True))
        f = self.op("Flatten", [g], lambda a: a.reshape(a.shape[0], -1), axis=1)
        return self.gemm(f, c, classes)

    def model(self, outputs, name, opset=13):
        # The outputs' shapes come from ONNX's shape inference.
        graph = helper.make_graph(self.nodes, name, self.inputs, [], initializer=self.inits)
        proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        proto.ir_version = 8
        inferred = {vi.name: vi for vi in onnx.shape_inference.infer_shapes(proto).graph.value_info}
        proto.graph.output.extend([inferred[o] for o in outputs])
        onnx.checker.check_model(proto)
        expected = {o: self.vals[o] for o in outputs} if self.reference else None
        return Model(proto, self.feeds, expected)


# ---- NumPy references (float64) ----
def conv_ref(x, w, b=None, strides=(1, 1), pads=(0, 0, 0, 0), group=1):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    ho = (h + pads[0] + pads[2] - kh) // strides[0] + 1
    wo = (wd + pads[1] + pads[3] - kw) // strides[1] + 1
    out = np.zeros((n, o, ho, wo))
    og = o // group
    for g in range(group):
        xs = xp[:, g * cg:(g + 1) * cg]
        cols = np.stack([xs[:, :, i:i + strides[0] * (ho - 1) + 1:strides[0], j:j + strides[1] * (wo - 1) + 1:strides[1]]
                         for i in range(kh) for j in range(kw)], axis=2).reshape(n, cg * kh * kw, ho, wo)
        out[:, g * og:(g + 1) * og] = np.einsum("ok,nkhw->nohw", w[g * og:(g + 1) * og].reshape(og, -1), cols)
    return out if b is None else out + b.reshape(1, -1, 1, 1)


def bn_ref(x, g, b, m, v, eps):
    sh = (1, -1, 1, 1)
    return (x - m.reshape(sh)) / np.sqrt(v.reshape(sh) + eps) * g.reshape(sh) + b.reshape(sh)


def maxpool_ref(x, k, s, p):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), constant_values=-np.inf)
    ho, wo = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    win = [xp[:, :, i:i + s * (ho - 1) + 1:s, j:j + s * (wo - 1) + 1:s] for i in range(k) for j in range(k)]
    return np.max(np.stack(win), axis=0)


def layernorm_ref(x, g, b, eps):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def softmax_ref(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


_erf = np.vectorize(math.erf)


# ---- models ----
def resnet(blocks=(2, 2, 2, 2), widths=(64, 128, 256, 512), size=224, batch=1, classes=1000, seed=0,
           reference=True):
    """ResNet with basic blocks: ResNet-18 with the defaults."""
    net = Net(seed, reference)
    x = net.input("image", net.rng.standard_normal((batch, 3, size, size)).astype(np.float32))
    y = net.relu(net.bn(net.conv(x, 3, widths[0], 7, stride=2, pad=3), widths[0]))
    y = net.op("MaxPool", [y], lambda a: maxpool_ref(a, 3, 2, 1), kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 1, 1, 1])
    cin = widths[0]
    for stage, (n, c) in enumerate(zip(blocks, widths)):
        for i in range(n):
            stride = 2 if stage > 0 and i == 0 else 1
            h = net.relu(net.bn(net.conv(y, cin, c, 3, stride=stride), c))
            h = net.bn(net.conv(h, c, c, 3), c)
            skip = y if stride == 1 and cin == c else net.bn(net.conv(y, cin, c, 1, stride=stride, pad=0), c)
            y = net.relu(net.add(h, skip))
            cin = c
    return net.model([net.head(y, cin, classes)], "resnet")


def mobilenet(size=224, batch=1, classes=1000, width=32, seed=1, reference=True,
              settings=((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                        (6, 160, 3, 2), (6, 320, 1, 1)), last=1280):
    """MobileNet-v2-shaped: inverted residuals (expand 1x1, depthwise 3x3, project 1x1), ReLU6."""
    net = Net(seed, reference)
    x = net.input("image", net.rng.standard_normal((batch, 3, size, size)).astype(np.float32))
    y = net.relu6(net.bn(net.conv(x, 3, width, 3, stride=2), width))
    cin = width
    for t, c, n, s in settings:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            h = y if t == 1 else net.relu6(net.bn(net.conv(y, cin, hidden, 1, pad=0), hidden))
            h = net.relu6(net.bn(net.conv(h, hidden, hidden, 3, stride=stride, group=hidden), hidden))
            h = net.bn(net.conv(h, hidden, c, 1, pad=0), c)
            y = net.add(h, y) if stride == 1 and cin == c else h
            cin = c
    y = net.relu6(net.bn(net.conv(y, cin, last, 1, pad=0), last))
    return net.model([net.head(y, last, classes)], "mobilenet")


def transformer(layers=4, d=256, heads=8, tokens=128, vocab=1000, ffn=1024, batch=1, seed=2, reference=True):
    """A BERT-shaped encoder: embedding Gather, LayerNormalization (opset 17), multi-head
    attention with the Reshape/Transpose an exporter writes, erf GELU."""
    net = Net(seed, reference)
    ids = net.input("ids", net.rng.integers(0, vocab, (batch, tokens)).astype(np.int64))
    emb = net.init((net.rng.standard_normal((vocab, d)) * 0.5).astype(np.float32), "embedding")
    pos = net.init((net.rng.standard_normal((tokens, d)) * 0.1).astype(np.float32), "position")
    x = net.op("Gather", [emb, ids], lambda e, i: e[i], axis=0)
    x = net.add(x, pos)
    dh = d // heads

    def ln(x):
        g = net.init((1 + 0.1 * net.rng.standard_normal(d)).astype(np.float32), "ln_g")
        b = net.init((0.1 * net.rng.standard_normal(d)).astype(np.float32), "ln_b")
        return net.op("LayerNormalization", [x, g, b], lambda x, g, b: layernorm_ref(x, g, b, 1e-5), axis=-1,
                      epsilon=1e-5)

    def linear(x, cin, cout):
        w = net.weight((cin, cout), cin)
        b = net.init((0.02 * net.rng.standard_normal(cout)).astype(np.float32), "b")
        return net.add(net.op("MatMul", [x, w], lambda a, w: a @ w), b)

    def split_heads(x):
        shape = net.init(np.array([batch, tokens, heads, dh], np.int64), "shape")
        r = net.op("Reshape", [x, shape], lambda a, s: a.reshape(s))
        return net.op("Transpose", [r], lambda a: a.transpose(0, 2, 1, 3), perm=[0, 2, 1, 3])

    x = ln(x)
    for _ in range(layers):
        q, k, v = (split_heads(linear(x, d, d)) for _ in range(3))
        kt = net.op("Transpose", [k], lambda a: a.transpose(0, 1, 3, 2), perm=[0, 1, 3, 2])
        s = net.op("MatMul", [q, kt], lambda a, b: a @ b)
        scale = net.init(np.array(1 / math.sqrt(dh), np.float32), "scale")
        s = net.op("Mul", [s, scale], lambda a, c: a * c)
        p = net.op("Softmax", [s], softmax_ref, axis=-1)
        a = net.op("MatMul", [p, v], lambda a, b: a @ b)
        a = net.op("Transpose", [a], lambda a: a.transpose(0, 2, 1, 3), perm=[0, 2, 1, 3])
        shape = net.init(np.array([batch, tokens, d], np.int64), "shape")
        a = net.op("Reshape", [a, shape], lambda a, s: a.reshape(s))
        x = ln(net.add(x, linear(a, d, d)))
        h = linear(x, d, ffn)
        sqrt2 = net.init(np.array(math.sqrt(2), np.float32), "sqrt2")
        one = net.init(np.array(1, np.float32), "one")
        half = net.init(np.array(0.5, np.float32), "half")
        e = net.op("Erf", [net.op("Div", [h, sqrt2], lambda a, b: a / b)], _erf)
        g = net.op("Mul", [net.op("Mul", [h, half], lambda a, b: a * b),
                           net.op("Add", [e, one], lambda a, b: a + b)], lambda a, b: a * b)
        x = ln(net.add(x, linear(g, ffn, d)))
    return net.model([x], "transformer", opset=17)


def qcnn(size=96, batch=1, classes=10, widths=(32, 64, 128), seed=3, reference=True):
    """A quantized CNN as ONNX Runtime's static quantizer writes one (QOperator
    format): the image quantized to u8, 3x3 stride-2 QLinearConvs with per-channel
    i8 weights and i32 biases, dequantized for the f32 pooling and classifier."""
    net = Net(seed, reference=False)  # no float64 reference: the README shows its run
    x = net.input("image", net.rng.standard_normal((batch, 3, size, size)).astype(np.float32))
    scale = net.init(np.array(0.02, np.float32), "scale")
    zp = net.init(np.array(128, np.uint8), "zp")
    q = net.op("QuantizeLinear", [x, scale, zp])
    cin = 3
    for c in widths:
        w = net.init(net.rng.integers(-127, 128, (c, cin, 3, 3), dtype=np.int8), "wq")
        w_scale = net.init((0.5 / math.sqrt(cin * 9) / 64 * (1 + 0.1 * net.rng.random(c))).astype(np.float32), "ws")
        w_zp = net.init(np.zeros(c, np.int8), "wzp")
        b = net.init(net.rng.integers(-200, 200, c, dtype=np.int32), "bq")
        q = net.op("QLinearConv", [q, scale, zp, w, w_scale, w_zp, scale, zp, b], kernel_shape=[3, 3],
                   strides=[2, 2], pads=[1, 1, 1, 1])
        cin = c
    y = net.op("DequantizeLinear", [q, scale, zp])
    y = net.op("Relu", [y])
    return net.model([net.head(y, cin, classes)], "qcnn")


BUILDERS = {"resnet18": resnet, "mobilenet": mobilenet, "transformer": transformer, "qcnn": qcnn}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", choices=sorted(BUILDERS))
    ap.add_argument("out")
    ap.add_argument("--batch", type=int, default=1)
    a = ap.parse_args()
    m = BUILDERS[a.model](batch=a.batch, reference=False)
    onnx.save(m.proto, a.out)
    stem = a.out[:-5] if a.out.endswith(".onnx") else a.out
    np.savez(stem + ".input.npz", **m.feeds)  # graphrun run OUT.onnx --input=@OUT.input.npz
    print(f"wrote {a.out} ({len(m.proto.graph.node)} nodes, {len(m.proto.graph.initializer)} initializers)")


if __name__ == "__main__":
    sys.exit(main())
