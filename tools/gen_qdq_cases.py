"""Regenerates tests/data/qdq: small QDQ-format graphs (DequantizeLinear → op → QuantizeLinear,
as onnxruntime's quantize_static writes them) with onnxruntime's int8 outputs, for ge's QDQ
recognition (ge-build/src/passes/qdq): Conv (+ bias, + a Relu the QuantizeLinear makes
redundant), per-channel and per-tensor weights, int8 and uint8 activations, a DequantizeLinear
shared by two Convs (onnxruntime keeps both in float), MaxPool / Reshape / Transpose between
equal Q/DQ pairs (dropped), MatMul, Gemm (transB, bias; float and
quantized outputs), Add, Concat, AveragePool, GlobalAveragePool, Sigmoid and Softmax. Random
weights, non-zero inputs; weights are 7-bit so onnxruntime's AVX2 kernels (saturating int16
pair sums) give host-independent references. Each case prints which QOperator ops
onnxruntime's optimizer made of it.

Also writes tests/data/qdq_bad: QDQ and QLinearConv graphs with malformed quantization
parameters (zero scales, per-channel lengths that do not match the axis, zero points of the
wrong type or length), which ge must refuse at compile time naming the node.

    python3 tools/gen_qdq_cases.py
"""
import collections
import os
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "qdq")
rng = np.random.default_rng(1414)
I8, U8 = np.int8, np.uint8


class G:
    """A graph under construction: float input `x`, QDQ helpers."""

    def __init__(self, dt):
        self.dt, self.nodes, self.inits, self.k = dt, [], {}, 0

    def name(self, p):
        self.k += 1
        return f"{p}{self.k}"

    def const(self, v, p="c"):
        n = self.name(p)
        self.inits[n] = v
        return n

    def zp(self, z, dt=None):
        return self.const(np.array(z, dt or self.dt), "zp")

    def q(self, x, s, z, dt=None):
        o = self.name("q")
        self.nodes.append(helper.make_node("QuantizeLinear", [x, self.const(np.float32(s), "s"), self.zp(z, dt)], [o], name=o))
        return o

    def dq(self, x, s, z, dt=None, axis=None):
        o = self.name("dq")
        sc = self.const(np.asarray(s, np.float32), "s")
        kw = {} if axis is None else {"axis": axis}
        self.nodes.append(helper.make_node("DequantizeLinear", [x, sc, self.zp(z, dt)], [o], name=o, **kw))
        return o

    def qdq(self, x, s, z):
        return self.dq(self.q(x, s, z), s, z)

    def op(self, t, ins, **attrs):
        o = self.name(t.lower())
        self.nodes.append(helper.make_node(t, ins, [o], name=o, **attrs))
        return o

    def weight(self, shape, axis):
        """A 7-bit int8 weight, per-channel along `axis` (None: per tensor), dequantized."""
        w = rng.integers(-64, 64, size=shape).astype(I8)
        n = 1 if axis is None else shape[axis]
        s = rng.uniform(0.002, 0.01, size=n).astype(np.float32)
        s = s[0] if axis is None else s
        return self.dq(self.const(w, "w"), s, np.zeros(n, I8) if axis is not None else 0, I8, axis), s

    def bias(self, n, sx, sw):
        b = rng.integers(-2000, 2000, size=n).astype(np.int32)
        return self.dq(self.const(b, "b"), (np.float32(sx) * np.asarray(sw, np.float32)).astype(np.float32),
                       np.zeros(n, np.int32) if np.ndim(sw) else 0, np.int32, 0 if np.ndim(sw) else None)

    def conv(self, x, sx, cin, cout, k=3, relu=False, so=0.05, zo=None, per_channel=True, bias=True, **attrs):
        w, sw = self.weight((cout, cin, k, k), 0 if per_channel else None)
        ins = [x, w] + ([self.bias(cout, sx, sw)] if bias else [])
        y = self.op("Conv", ins, pads=[k // 2] * 4, **attrs)
        if relu:
            y = self.op("Relu", [y])
        lo = -128 if self.dt == I8 else 0
        return self.q(y, so, lo if relu else (0 if zo is None else zo))


def save(name, g, shape, out, odt):
    x = rng.normal(0, 1, size=shape).astype(np.float32)
    gi = [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)]
    go = [helper.make_tensor_value_info(out, odt, None)]
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in g.inits.items()]
    m = helper.make_model(helper.make_graph(g.nodes, name, gi, go, inits), opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.add_session_config_entry("session.qdqisint8allowed", "1")  # int8 groups run in int8
    with tempfile.TemporaryDirectory() as tmp:
        so.optimized_model_filepath = os.path.join(tmp, "opt.onnx")
        (y,) = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, {"x": x})
        fused = collections.Counter(n.op_type for n in onnx.load(so.optimized_model_filepath).graph.node
                                    if n.op_type.startswith("QLinear") or n.op_type in ("QGemm", "Conv", "MatMul", "Gemm"))
    m.graph.output[0].CopyFrom(helper.make_tensor_value_info(out, odt, y.shape))
    d = os.path.join(OUT, name)
    os.makedirs(d + "/test_data_set_0", exist_ok=True)
    onnx.save(m, d + "/model.onnx")
    open(f"{d}/test_data_set_0/input_0.pb", "wb").write(numpy_helper.from_array(x, "x").SerializeToString())
    open(f"{d}/test_data_set_0/output_0.pb", "wb").write(numpy_helper.from_array(y, out).SerializeToString())
    print(name, dict(fused))


def conv_chain(dt):
    """Two Conv layers (+ bias; the first with a redundant Relu), per-channel weights."""
    g = G(dt)
    z = 0 if dt == I8 else 128
    x = g.qdq("x", 0.03, z)
    y = g.conv(x, 0.03, 4, 8, relu=True, so=0.04)
    y = g.dq(y, 0.04, -128 if dt == I8 else 0)
    y = g.conv(y, 0.04, 8, 6, so=0.06, zo=z, strides=[2, 2])
    save(f"conv_chain_{'s8' if dt == I8 else 'u8'}", g, [1, 4, 9, 9], y, TensorProto.INT8 if dt == I8 else TensorProto.UINT8)


def conv_shared_dq():
    """One DequantizeLinear feeding two Convs (kept float, as in onnxruntime), then Add."""
    g = G(I8)
    x = g.qdq("x", 0.03, 0)
    a = g.dq(g.conv(x, 0.03, 4, 6, k=1, so=0.05, per_channel=False), 0.05, 0)
    b = g.dq(g.conv(x, 0.03, 4, 6, k=3, so=0.05), 0.05, 0)
    save("conv_shared_dq", g, [1, 4, 7, 7], g.q(g.op("Add", [a, b]), 0.07, 3), TensorProto.INT8)


def matmul():
    g = G(I8)
    x = g.qdq("x", 0.02, -5)
    w, _ = g.weight((32, 16), 1)
    save("matmul_s8", g, [5, 32], g.q(g.op("MatMul", [x, w]), 0.08, 2), TensorProto.INT8)


def gemm_softmax():
    """Gemm (transB, per-channel, int32 bias) → QuantizeLinear → Softmax → QuantizeLinear."""
    g = G(I8)
    x = g.qdq("x", 0.025, 0)
    w, sw = g.weight((10, 64), 0)
    y = g.op("Gemm", [x, w, g.bias(10, 0.025, sw)], transB=1)
    y = g.dq(g.q(y, 0.1, 4), 0.1, 4)
    save("gemm_softmax_s8", g, [2, 64], g.q(g.op("Softmax", [y], axis=1), 1 / 255, -128), TensorProto.INT8)


def gemm_float():
    """Gemm with no QuantizeLinear after it: a float output (QGemm without y_scale)."""
    g = G(U8)
    x = g.qdq("x", 0.025, 120)
    w, _ = g.weight((48, 12), None)
    save("gemm_float_u8", g, [3, 48], g.op("Gemm", [x, w]), TensorProto.FLOAT)


def dense(name, shape):
    """A dense layer as tf2onnx writes TFLite's FullyConnected: MatMul (per-column weight) +
    Add of a DequantizeLinear'd int32 bias, a Relu the QuantizeLinear makes redundant; then
    one without the Relu (output zero point 3). onnxruntime fuses MatMul + Add into a Gemm
    and each group into a QGemm (for an A of rank 3 between Reshapes, as a float-output
    QGemm whose QuantizeLinear rounds again)."""
    g = G(I8)
    x = g.qdq("x", 0.02, -5)
    w, sw = g.weight((64, 32), 1)
    y = g.op("Relu", [g.op("Add", [g.op("MatMul", [x, w]), g.bias(32, 0.02, sw)])])
    y = g.dq(g.q(y, 0.05, -128), 0.05, -128)
    w, sw = g.weight((32, 12), None)
    y = g.op("Add", [g.op("MatMul", [y, w]), g.bias(12, 0.05, sw)])
    save(name, g, shape, g.q(y, 0.04, 3), TensorProto.INT8)


def add_ties():
    """A residual Add whose sums land on .5 often (A and B on one scale, the output on twice
    it) with an odd output zero point: onnxruntime's kernel folds the zero points in before
    rounding half to even, so adding the zero point after rounding gives the other value
    on those ties."""
    g = G(I8)
    a = g.qdq("x", 0.05, 3)
    b = g.dq(g.q(g.op("Relu", ["x"]), 0.05, -128), 0.05, -128)
    save("add_ties_s8", g, [1, 8, 16, 16], g.q(g.op("Add", [a, b]), 0.1, 7), TensorProto.INT8)


def avgpool_plane():
    """An AveragePool whose window is the whole 2×2 plane, sums often on .5 (a quarter of the
    channels): onnxruntime's QLinearAveragePool then takes its global average (integer sum,
    rounded half to even, zero point after), not the windowed float form."""
    g = G(I8)
    x = g.qdq("x", 0.05, 5)
    y = g.op("AveragePool", [x], kernel_shape=[2, 2])
    save("avgpool_plane_s8", g, [1, 64, 2, 2], g.q(y, 0.05, -3), TensorProto.INT8)


def pools():
    """Conv → Sigmoid, AveragePool, Add, Concat, GlobalAveragePool, each between DQ and Q."""
    g = G(U8)
    x = g.qdq("x", 0.03, 128)
    c = g.dq(g.conv(x, 0.03, 3, 8, so=0.05, zo=120), 0.05, 120)
    s = g.dq(g.q(g.op("Sigmoid", [c]), 1 / 256, 0), 1 / 256, 0)
    p = g.dq(g.q(g.op("AveragePool", [g.dq(g.q(g.op("Relu", [c]), 0.05, 0), 0.05, 0)], kernel_shape=[3, 3],
                      strides=[1, 1], pads=[1, 1, 1, 1]), 0.03, 0), 0.03, 0)
    a = g.dq(g.q(g.op("Add", [s, p]), 0.04, 10), 0.04, 10)
    c2 = g.dq(g.conv(g.qdq("x", 0.03, 128), 0.03, 3, 8, so=0.05, zo=120), 0.05, 120)
    cat = g.dq(g.q(g.op("Concat", [a, c2], axis=1), 0.05, 100), 0.05, 100)
    save("pools_u8", g, [1, 3, 8, 8], g.q(g.op("GlobalAveragePool", [cat]), 0.02, 90), TensorProto.UINT8)


def moves():
    """Conv, then MaxPool, Reshape and Transpose each between a DQ and a Q of equal parameters:
    onnxruntime drops those pairs (DropQDQNodesRules) and moves the int8 values themselves."""
    g = G(I8)
    x = g.qdq("x", 0.03, 0)
    y = g.dq(g.conv(x, 0.03, 4, 6, so=0.05, zo=-3), 0.05, -3)
    y = g.dq(g.q(g.op("MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2]), 0.05, -3), 0.05, -3)
    y = g.dq(g.q(g.op("Reshape", [y, g.const(np.array([1, 6, 16], np.int64), "shape")]), 0.05, -3), 0.05, -3)
    save("moves_s8", g, [1, 4, 8, 8], g.q(g.op("Transpose", [y], perm=[0, 2, 1]), 0.05, -3), TensorProto.INT8)


def bad(name, nodes, inits):
    """A malformed model (no reference: ge must refuse it)."""
    gi = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 5, 5])]
    go = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    g = helper.make_graph(nodes, name, gi, go, [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    d = os.path.join(OUT + "_bad")
    os.makedirs(d, exist_ok=True)
    onnx.save(m, f"{d}/{name}.onnx")


def bad_cases():
    w = rng.integers(-64, 64, size=(8, 4, 3, 3)).astype(I8)
    ok_s = np.full(8, 0.01, np.float32)
    qdq = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="qx"),
           helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dqx")]
    tail = [helper.make_node("Conv", ["xd", "wd"], ["c"], name="conv", pads=[1, 1, 1, 1]),
            helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["cq"], name="qy"),
            helper.make_node("DequantizeLinear", ["cq", "ys", "yz"], ["y"], name="dqy")]
    base = {"xs": np.float32(0.03), "xz": np.uint8(128), "w": w, "ys": np.float32(0.05), "yz": np.uint8(120)}

    def qdq_conv(name, ws, wz, dq_x_zp=None, ys=None):
        inits = dict(base, ws=ws, wz=wz)
        if ys is not None:
            inits["ys"] = ys
        nodes = list(qdq)
        if dq_x_zp is not None:
            inits["xz8"] = dq_x_zp
            nodes[1] = helper.make_node("DequantizeLinear", ["xq", "xs", "xz8"], ["xd"], name="dqx")
        nodes.append(helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], name="dqw", axis=0))
        bad(name, nodes + tail, inits)

    zero = ok_s.copy()
    zero[2] = 0
    qdq_conv("dq_zero_scale", zero, np.zeros(8, I8))
    qdq_conv("dq_axis_mismatch", ok_s[:5], np.zeros(5, I8))
    qdq_conv("dq_zero_point_length", ok_s, np.zeros(3, I8))
    qdq_conv("dq_zero_point_type", ok_s, np.zeros(8, I8), dq_x_zp=np.int8(0))
    qdq_conv("q_zero_scale", ok_s, np.zeros(8, I8), ys=np.float32(0))

    def qlinear_conv(name, **over):
        inits = dict(xs=np.float32(0.03), xz=np.uint8(128), cxs=np.float32(0.03), w=w, ws=ok_s,
                     wz=np.zeros(8, I8), ys=np.float32(0.05), yz=np.uint8(120))
        inits.update(over)
        nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="qx"),
                 helper.make_node("QLinearConv", ["xq", "cxs", "xz", "w", "ws", "wz", "ys", "yz"], ["cq"],
                                  name="qconv", pads=[1, 1, 1, 1]),
                 helper.make_node("DequantizeLinear", ["cq", "ys", "yz"], ["y"], name="dqy")]
        bad(name, nodes, inits)

    qlinear_conv("qlinear_conv_zero_x_scale", cxs=np.float32(0))
    qlinear_conv("qlinear_conv_w_scale_length", ws=ok_s[:5])
    qlinear_conv("qlinear_conv_zero_point_type", wz=np.zeros(8, np.int32))


if __name__ == "__main__":
    bad_cases()
    conv_chain(I8)
    conv_chain(U8)
    conv_shared_dq()
    matmul()
    gemm_softmax()
    gemm_float()
    pools()
    moves()
    dense("dense_s8", [3, 64])
    dense("dense_rank3_s8", [2, 3, 64])
    add_ties()
    avgpool_plane()
