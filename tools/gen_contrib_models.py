#!/usr/bin/env python3
"""Generate corpus/contrib: models carrying onnxruntime's contrib ops (`com.microsoft`, and
the contrib forms of LayerNormalization / SimplifiedLayerNormalization in the default
domain), written by onnxruntime itself wherever it writes them, with onnxruntime references.

    python3 tools/gen_contrib_models.py [--out DIR] [--force]

Writes DIR/contrib/ (DIR defaults to <repo>/corpus), one `ge check` case per model:

    contrib/<case>/model.onnx
    contrib/<case>/test_data_set_0/input_<i>.pb    seeded random inputs (never all zero)
    contrib/<case>/test_data_set_0/output_<j>.pb   onnxruntime's outputs (CPU EP, graph
                                                   optimizations disabled on the saved model
                                                   so the contrib ops run as written, 1 thread)
    contrib/manifest.json                          per case: how it was made, op counts
                                                   ("domain:op" -> n), input/output shapes
    contrib/.stamp                                 hash of this script + package versions

How each case is made (all float models built with onnx.helper, seeded random weights):
  ort_cnn       CNN (Conv+BN+Relu, Conv+Clip, Conv+LeakyRelu, Conv+Sigmoid, pool, Gemm+Relu)
                saved by onnxruntime at ORT_ENABLE_EXTENDED -> FusedConv, FusedGemm.
                (ORT_ENABLE_ALL would add the CPU-only NCHWc layout ops ReorderInput/
                NchwcConv of the com.microsoft.nchwc domain: a layout choice of ORT's CPU
                kernels, not a model op, so the corpus stops at EXTENDED.)
  ort_bert      BERT-like block at opset 13 (decomposed LayerNorm, erf and tanh GELU, scaled
                attention with a padding mask, residuals) saved at ORT_ENABLE_EXTENDED ->
                LayerNormalization (contrib form at opset 13), SkipLayerNormalization,
                BiasGelu, FastGelu, FusedMatMul, ...
  ort_bert_tr   the same block through onnxruntime.transformers' BERT optimizer -> Attention,
                SkipLayerNormalization, BiasGelu/FastGelu.
  ort_bert_dyn  the block quantized by quantize_dynamic, then saved at EXTENDED ->
                DynamicQuantizeMatMul / MatMulIntegerToFloat.
  ort_lstm_dyn  an LSTM (+ Gemm head) quantized by quantize_dynamic -> DynamicQuantizeLSTM.
                Both dynamic cases use reduce_range=True (int8 weights in [-64, 63]), as
                onnxruntime advises for AVX2: its uint8 x int8 AVX2 kernel (vpmaddubsw) sums
                pairs of products in saturating int16, so with full-range weights its output
                depends on the host's instruction set (exact with AVX-512 VNNI, saturated
                with AVX2) and the reference would not be reproducible. With 7-bit weights
                no pair can saturate and every host computes the exact integer product.
  ort_qop_cnn   a CNN with Add/Mul/Sigmoid/LeakyRelu/Concat/pools/Gemm quantized by
                quantize_static (QOperator, uint8, random calibration) -> QLinearConv,
                QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinearConcat,
                QLinearGlobalAveragePool, QLinearAveragePool, QGemm, QLinearSoftmax.
  ms_*          ops no onnxruntime optimization writes on these graphs, written directly
                (domain com.microsoft, opset 1): QuickGelu, BiasAdd, NhwcConv,
                MultiHeadAttention, GroupQueryAttention, MatMulNBits, SimplifiedLayer-
                Normalization, SkipSimplifiedLayerNormalization, FusedMatMul with transposes,
                FastGelu, BiasGelu, Gelu, SkipLayerNormalization with bias and extra outputs.

Idempotent: when contrib/.stamp matches, prints "up to date" and writes nothing; otherwise
builds everything in a temporary directory and renames it into place. --force rebuilds.
tools/gen_corpus.py calls `generate` in its extras step.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile

PART = "contrib"
SEED = 20250716
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MS = "com.microsoft"

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_transformer_opset17  # noqa: E402  (the stamp and install helpers)


def stamp_text() -> str:
    return gen_transformer_opset17.stamp_text(__file__)


def is_current(d: str) -> bool:
    try:
        with open(os.path.join(d, ".stamp")) as f:
            return f.read() == stamp_text() and os.path.isfile(os.path.join(d, "manifest.json"))
    except OSError:
        return False


# --------------------------------------------------------------------------
# building graphs
# --------------------------------------------------------------------------


class G:
    """A graph under construction: nodes, seeded initializers, fresh names."""

    def __init__(self, rng):
        self.rng = rng
        self.nodes = []
        self.inits = []
        self.n = 0

    def fresh(self, base: str) -> str:
        self.n += 1
        return f"{base}_{self.n}"

    def node(self, op, inputs, outputs=1, domain="", **attrs):
        from onnx import helper

        outs = [self.fresh(op) for _ in range(outputs)] if isinstance(outputs, int) else outputs
        self.nodes.append(helper.make_node(op, inputs, outs, name=self.fresh(op + "_node"),
                                           domain=domain, **attrs))
        return outs[0] if len(outs) == 1 else outs

    def init(self, arr, base="w") -> str:
        from onnx import numpy_helper

        name = self.fresh(base)
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def normal(self, shape, std=1.0, mean=0.0):
        import numpy as np

        return (self.rng.standard_normal(shape) * std + mean).astype(np.float32)

    def uniform(self, shape, lo, hi):
        import numpy as np

        return self.rng.uniform(lo, hi, shape).astype(np.float32)

    def weight(self, shape, fan_in):
        return self.init(self.normal(shape, 1.0 / fan_in**0.5))

    def model(self, inputs, outputs, opset=13, ms=False, doc=""):
        """inputs/outputs: (name, elem_type, shape) triples."""
        from onnx import helper

        graph = helper.make_graph(
            self.nodes, "contrib",
            [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
            [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
            initializer=self.inits,
        )
        ops = [helper.make_opsetid("", opset)]
        if ms:
            ops.append(helper.make_opsetid(MS, 1))
        # "pytorch": what onnxruntime.transformers' BERT optimizer expects of a BERT export.
        return helper.make_model(graph, opset_imports=ops, ir_version=8,
                                 producer_name="pytorch", doc_string=doc)


F32 = 1  # TensorProto.FLOAT


def ort_session(model_bytes: bytes, level=None):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = level or ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])


def ort_optimized(model, tmp: str, level: str = "extended"):
    """The model as onnxruntime's optimizer saves it (CPU EP)."""
    import onnx
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = {
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[level]
    path = os.path.join(tmp, "optimized.onnx")
    so.optimized_model_filepath = path
    so.log_severity_level = 3
    ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    out = onnx.load(path)
    os.remove(path)
    return out


# --------------------------------------------------------------------------
# float models onnxruntime optimizes
# --------------------------------------------------------------------------


def cnn_float(rng, with_quant_ops: bool):
    """A small CNN. with_quant_ops adds the elementwise/pool ops the QOperator quantizer
    turns into QLinear* (Add, Mul, Sigmoid, LeakyRelu, Concat, AveragePool, Softmax)."""
    import numpy as np

    g = G(rng)

    def conv(x, cin, cout, k=3, stride=1, group=1):
        w = g.weight((cout, cin // group, k, k), cin // group * k * k)
        b = g.init(g.normal((cout,), 0.1))
        return g.node("Conv", [x, w, b], kernel_shape=[k, k], pads=[k // 2] * 4,
                      strides=[stride, stride], group=group)

    def bn(x, c):
        s = g.init(g.uniform((c,), 0.5, 1.5))
        b = g.init(g.normal((c,), 0.1))
        m = g.init(g.normal((c,), 0.1))
        v = g.init(g.uniform((c,), 0.5, 1.5))
        return g.node("BatchNormalization", [x, s, b, m, v], epsilon=1e-5)

    x = "x"
    h = g.node("Relu", [bn(conv(x, 3, 8), 8)])
    if with_quant_ops:
        a = conv(h, 8, 8)
        a = g.node("Add", [a, h])                       # QLinearAdd
        s = g.node("Sigmoid", [conv(a, 8, 8)])           # QLinearSigmoid
        m = g.node("Mul", [a, s])                        # QLinearMul
        lr = g.node("LeakyRelu", [conv(m, 8, 8, stride=2)], alpha=0.1)  # QLinearLeakyRelu
        p = g.node("AveragePool", [m], kernel_shape=[2, 2], strides=[2, 2])  # QLinearAveragePool
        c = g.node("Concat", [lr, p], axis=1)            # QLinearConcat
        h = c
        ch = 16
    else:
        c6 = g.node("Clip", [conv(h, 8, 8), g.init(np.array(0.0, np.float32)),
                             g.init(np.array(6.0, np.float32))])
        lr = g.node("LeakyRelu", [conv(c6, 8, 16, stride=2)], alpha=0.2)
        sg = g.node("Sigmoid", [conv(lr, 16, 16, group=4)])
        h = g.node("Add", [sg, lr])
        ch = 16
    gp = g.node("GlobalAveragePool", [h])
    f = g.node("Flatten", [gp], axis=1)
    w1 = g.weight((ch, 32), ch)
    b1 = g.init(g.normal((32,), 0.1))
    f = g.node("Relu", [g.node("Gemm", [f, w1, b1])])
    w2 = g.weight((32, 10), 32)
    b2 = g.init(g.normal((10,), 0.1))
    if with_quant_ops:
        g.node("Softmax", [g.node("Gemm", [f, w2, b2])], outputs=["y"], axis=1)  # QLinearSoftmax
    else:
        g.node("Gemm", [f, w2, b2], outputs=["y"])
    model = g.model([("x", F32, [2, 3, 16, 16])], [("y", F32, [2, 10])], opset=13)
    feeds = {"x": rng.standard_normal((2, 3, 16, 16)).astype(np.float32)}
    return model, feeds


def bert_float(rng, S=16, D=64, H=4, FF=128):
    """A BERT-like layer at opset 13, as PyTorch exported Hugging Face's BERT before opset
    17: embedding LayerNorm, scaled attention with a padding mask, decomposed LayerNorm,
    erf GELU, and a second FFN with tanh GELU."""
    import numpy as np

    g = G(rng)
    dh = D // H

    def const(v):
        return g.init(np.array(v, np.float32), "c")

    def ints(v):
        return g.init(np.array(v, np.int64), "shape")

    def linear(x, din, dout):
        return g.node("Add", [g.node("MatMul", [x, g.weight((din, dout), din)]),
                              g.init(g.normal((dout,), 0.1), "bias")])

    def layernorm(x):
        m = g.node("ReduceMean", [x], axes=[-1])
        d = g.node("Sub", [x, m])
        v = g.node("ReduceMean", [g.node("Pow", [d, const(2.0)])], axes=[-1])
        s = g.node("Sqrt", [g.node("Add", [v, const(1e-12)])])
        n = g.node("Div", [d, s])
        return g.node("Add", [g.node("Mul", [n, g.init(g.uniform((D,), 0.5, 1.5), "gamma")]),
                              g.init(g.normal((D,), 0.1), "beta")])

    def gelu_erf(x):
        e = g.node("Erf", [g.node("Div", [x, const(1.4142135381698608)])])
        return g.node("Mul", [g.node("Mul", [x, g.node("Add", [e, const(1.0)])]), const(0.5)])

    def gelu_tanh(x):
        x3 = g.node("Pow", [x, const(3.0)])
        inner = g.node("Add", [x, g.node("Mul", [x3, const(0.044715)])])
        t = g.node("Tanh", [g.node("Mul", [inner, const(0.7978845834732056)])])
        return g.node("Mul", [g.node("Mul", [x, const(0.5)]), g.node("Add", [t, const(1.0)])])

    def heads(t):
        r = g.node("Reshape", [t, ints([1, S, H, dh])])
        return g.node("Transpose", [r], perm=[0, 2, 1, 3])

    # Embedding LayerNorm first: the attention fusions start from a LayerNorm output.
    x = layernorm("x")
    # mask [1, S] int64 -> (1 - mask) * -10000 over heads and queries (HF BERT's export)
    mu = g.node("Unsqueeze", [g.node("Unsqueeze", ["mask", ints([1])]), ints([2])])
    mb = g.node("Mul", [g.node("Sub", [const(1.0), g.node("Cast", [mu], to=F32)]),
                        const(-10000.0)])
    q = heads(linear(x, D, D))
    kr = g.node("Reshape", [linear(x, D, D), ints([1, S, H, dh])])
    kt = g.node("Transpose", [kr], perm=[0, 2, 3, 1])
    v = heads(linear(x, D, D))
    sc = g.node("Div", [g.node("MatMul", [q, kt]), const(float(np.sqrt(dh)))])
    p = g.node("Softmax", [g.node("Add", [sc, mb])], axis=3)
    c = g.node("Transpose", [g.node("MatMul", [p, v])], perm=[0, 2, 1, 3])
    c = g.node("Reshape", [c, ints([1, S, D])])
    h1 = layernorm(g.node("Add", [linear(c, D, D), x]))
    f = linear(gelu_erf(linear(h1, D, FF)), FF, D)
    h2 = layernorm(g.node("Add", [f, h1]))
    f2 = linear(gelu_tanh(linear(h2, D, FF)), FF, D)
    h3 = layernorm(g.node("Add", [f2, h2]))
    g.nodes[-1].output[0] = "y"
    del h3
    model = g.model([("x", F32, [1, S, D]), ("mask", 7, [1, S])], [("y", F32, [1, S, D])],
                    opset=13)
    mask = np.ones((1, S), np.int64)
    mask[0, S - 3:] = 0
    feeds = {"x": rng.standard_normal((1, S, D)).astype(np.float32), "mask": mask}
    return model, feeds


def lstm_float(rng, T=6, B=2, I=16, Hd=24):
    import numpy as np

    g = G(rng)
    w = g.init(g.normal((1, 4 * Hd, I), 1.0 / I**0.5))
    r = g.init(g.normal((1, 4 * Hd, Hd), 1.0 / Hd**0.5))
    b = g.init(g.normal((1, 8 * Hd), 0.1))
    y, yh, yc = g.node("LSTM", ["x", w, r, b], outputs=["lstm_y", "y_h", "y_c"], hidden_size=Hd)
    del y, yc
    hh = g.node("Reshape", ["y_h", g.init(np.array([B, Hd], np.int64), "shape")])
    g.node("Gemm", [hh, g.weight((Hd, 8), Hd), g.init(g.normal((8,), 0.1))], outputs=["y"])
    model = g.model([("x", F32, [T, B, I])],
                    [("lstm_y", F32, [T, 1, B, Hd]), ("y", F32, [B, 8])], opset=13)
    return model, {"x": rng.standard_normal((T, B, I)).astype(np.float32)}


class Calib:
    """Random N(0, 1) calibration batches for quantize_static (input `name`)."""

    def __init__(self, rng, shape, n=8, name="x"):
        import numpy as np

        self.data = [{name: rng.standard_normal(shape).astype(np.float32)} for _ in range(n)]
        self.i = 0

    def get_next(self):
        if self.i >= len(self.data):
            return None
        self.i += 1
        return self.data[self.i - 1]

    def rewind(self):
        self.i = 0


def quantized(model, tmp, fn, **kw):
    import onnx

    src = os.path.join(tmp, "float.onnx")
    dst = os.path.join(tmp, "quant.onnx")
    onnx.save(model, src)
    fn(src, dst, **kw)
    out = onnx.load(dst)
    os.remove(src)
    os.remove(dst)
    return out


# --------------------------------------------------------------------------
# direct contrib-op models
# --------------------------------------------------------------------------


def ms_activations(rng):
    """QuickGelu, Gelu, BiasGelu, FastGelu (with and without bias), BiasAdd."""
    import numpy as np

    g = G(rng)
    C = 32
    b = g.init(g.normal((C,), 0.2), "bias")
    a = g.node("QuickGelu", ["x"], domain=MS, alpha=1.5)
    a2 = g.node("QuickGelu", [a], domain=MS)
    gl = g.node("Gelu", [a2], domain=MS)
    bg = g.node("BiasGelu", [gl, b], domain=MS)
    fg = g.node("FastGelu", [bg, b], domain=MS)
    fg2 = g.node("FastGelu", [fg], domain=MS)
    g.node("BiasAdd", [fg2, b, "skip"], outputs=["y"], domain=MS)
    shape = [2, 12, C]
    io = ([("x", F32, shape), ("skip", F32, shape)], [("y", F32, shape)])
    model = g.model(*io, ms=True)
    # onnxruntime has BiasAdd for CUDA only: its CPU reference runs the op's definition
    # (X + bias + skip) in its place.
    ref = G(rng)
    ref.inits = g.inits
    ref.nodes = [n for n in g.nodes if n.op_type != "BiasAdd"]
    ref.node("Add", [ref.node("Add", [fg2, b]), "skip"], outputs=["y"])
    return model, {"x": g.normal(shape, 1.5), "skip": g.normal(shape)}, ref.model(*io, ms=True)


def ms_norms(rng):
    """SkipLayerNormalization (bias, all four outputs), SimplifiedLayerNormalization
    (default domain, contrib form) and SkipSimplifiedLayerNormalization."""
    g = G(rng)
    S, D = 8, 48
    gamma = lambda: g.init(g.uniform((D,), 0.5, 1.5), "gamma")  # noqa: E731
    beta = lambda: g.init(g.normal((D,), 0.1), "beta")  # noqa: E731
    bias = lambda: g.init(g.normal((D,), 0.2), "bias")  # noqa: E731
    g.node("SkipLayerNormalization", ["x", "skip", gamma(), beta(), bias()],
           outputs=["sln", "sln_mean", "sln_inv", "sln_sum"], domain=MS, epsilon=1e-5)
    g.node("SkipLayerNormalization", ["sln", "skip2d", gamma()], outputs=["sln2"], domain=MS)
    g.node("SimplifiedLayerNormalization", ["sln2", gamma()], outputs=["rms"], epsilon=1e-6)
    g.node("SkipSimplifiedLayerNormalization", ["rms", "x", gamma(), bias()],
           outputs=["y", "", "", "ssln_sum"], domain=MS, epsilon=1e-6)
    shape = [2, S, D]
    model = g.model([("x", F32, shape), ("skip", F32, shape), ("skip2d", F32, [S, D])],
                    [("y", F32, shape), ("sln_mean", F32, None), ("sln_inv", F32, None),
                     ("sln_sum", F32, shape), ("ssln_sum", F32, shape)], ms=True)
    return model, {"x": g.normal(shape, 2.0, 0.5), "skip": g.normal(shape),
                   "skip2d": g.normal([S, D])}


def ms_fused_matmul(rng):
    """FusedMatMul with alpha and each transpose, batched and broadcast."""
    g = G(rng)
    b1 = g.node("FusedMatMul", ["a", "b"], domain=MS, alpha=0.5)                   # [2,3,5,7]
    b2 = g.node("FusedMatMul", [b1, "c"], domain=MS, transB=1)                      # c [7,6]->[2,3,5,6]? c is [6,7]
    g.node("FusedMatMul", ["d", b2], domain=MS, transA=1, alpha=2.0, outputs=["y"])  # d [2,3,5,4]
    model = g.model([("a", F32, [2, 3, 5, 4]), ("b", F32, [4, 7]), ("c", F32, [6, 7]),
                     ("d", F32, [2, 3, 5, 4])], [("y", F32, [2, 3, 4, 6])], ms=True)
    return model, {"a": g.normal([2, 3, 5, 4]), "b": g.normal([4, 7]), "c": g.normal([6, 7]),
                   "d": g.normal([2, 3, 5, 4])}


def ms_nhwc_conv(rng):
    """NhwcConv (channels-last input and output) with bias, stride, group, then a
    channels-last 1x1 without bias."""
    g = G(rng)
    w = g.weight((16, 4, 3, 3), 36)
    b = g.init(g.normal((16,), 0.1))
    h = g.node("NhwcConv", ["x", w, b], domain=MS, kernel_shape=[3, 3], pads=[1, 1, 1, 1],
               strides=[2, 2], group=2)
    w2 = g.weight((12, 16, 1, 1), 16)
    g.node("NhwcConv", [h, w2], domain=MS, outputs=["y"])
    io = ([("x", F32, [2, 10, 10, 8])], [("y", F32, [2, 5, 5, 12])])
    model = g.model(*io, ms=True)
    # onnxruntime has NhwcConv for CUDA only: its CPU reference runs Conv between
    # channels-last/first transposes in its place.
    ref = G(rng)
    ref.inits = g.inits
    for n, out in ((g.nodes[0], None), (g.nodes[1], "y")):
        x = ref.node("Transpose", [n.input[0]], perm=[0, 3, 1, 2])
        attrs = {a.name: onnx_attr(a) for a in n.attribute}
        c = ref.node("Conv", [x] + list(n.input[1:]), **attrs)
        ref.node("Transpose", [c], outputs=[out or n.output[0]], perm=[0, 2, 3, 1])
    return model, {"x": g.normal([2, 10, 10, 8])}, ref.model(*io, ms=True)


def onnx_attr(a):
    from onnx import helper

    return helper.get_attribute_value(a)


def ms_attention(rng):
    """Attention (packed QKV weights, bias, 2-D 0/1 mask; unidirectional variant) and
    MultiHeadAttention (separate Q/K/V with packed bias, cross attention; unidirectional)."""
    import numpy as np

    g = G(rng)
    B, S, Skv, D, H = 2, 6, 9, 32, 4
    wqkv = g.weight((D, 3 * D), D)
    bqkv = g.init(g.normal((3 * D,), 0.1))
    g.node("Attention", ["x", wqkv, bqkv, "mask"], outputs=["att"], domain=MS, num_heads=H)
    g.node("Attention", ["x", wqkv, bqkv], outputs=["att_causal"], domain=MS, num_heads=H,
           unidirectional=1, scale=0.2)
    g.node("MultiHeadAttention", ["att", "kv", "kv", g.init(g.normal((3 * D,), 0.1))],
           outputs=["mha"], domain=MS, num_heads=H)
    g.node("MultiHeadAttention", ["att_causal", "att", "x"], outputs=["mha_causal"], domain=MS,
           num_heads=2, unidirectional=1)
    # qkv_hidden_sizes with a wider V, start/end positions [2B] and attention_bias
    wv = g.weight((D, 2 * D + 48), D)
    g.node("Attention", ["x", wv, "", g.init(np.array([S, S - 1, 1, 0], np.int32), "mask_index"),
                         "", g.init(g.normal((1, H, S, S), 0.5), "attention_bias")],
           outputs=["att_v48"], domain=MS, num_heads=H, qkv_hidden_sizes=[D, D, 48])
    # a 3-D 0/1 mask with unidirectional, custom mask_filter_value
    m3 = (rng.random((B, S, S)) > 0.3).astype(np.int32)
    m3[:, :, 0] = 1
    g.node("Attention", ["x", wqkv, bqkv, g.init(m3, "mask3d")], outputs=["att_m3"],
           domain=MS, num_heads=2, unidirectional=1, mask_filter_value=-1000.0)
    # MHA: key lengths [B] and attention_bias; key_padding_mask [B, L]
    kpm = np.ones((B, Skv), np.int32)
    kpm[0, Skv - 3:] = 0
    g.node("MultiHeadAttention", ["x", "kv", "kv", "", g.init(np.array([Skv, Skv - 4], np.int32)),
                                  g.init(g.normal((B, 1, S, Skv), 0.5))],
           outputs=["mha_len"], domain=MS, num_heads=H)
    g.node("MultiHeadAttention", ["x", "kv", "kv", "", g.init(kpm, "key_padding_mask")],
           outputs=["mha_kpm", "present_k", "present_v"], domain=MS, num_heads=H, scale=0.3)
    mask = np.ones((B, S), np.int32)
    mask[1, S - 2:] = 0
    model = g.model([("x", F32, [B, S, D]), ("kv", F32, [B, Skv, D]), ("mask", 6, [B, S])],
                    [("att", F32, [B, S, D]), ("mha", F32, [B, S, D]),
                     ("mha_causal", F32, [B, S, D]), ("att_v48", F32, [B, S, 48]),
                     ("att_m3", F32, [B, S, D]), ("mha_len", F32, [B, S, D]),
                     ("mha_kpm", F32, [B, S, D]), ("present_k", F32, [B, H, Skv, D // H]),
                     ("present_v", F32, [B, H, Skv, D // H])], ms=True)
    return model, {"x": g.normal([B, S, D]), "kv": g.normal([B, Skv, D]), "mask": mask}


def ms_gqa(rng):
    """GroupQueryAttention in its prompt (no past) form, the shapes a static model fixes:
    seqlens_k = S - 1 and total_sequence_length = S as constants, causal, 4 query heads
    sharing 2 key/value heads; present_key/value returned."""
    import numpy as np

    g = G(rng)
    B, S, Hq, Hkv, dh = 2, 7, 4, 2, 8
    seqlens = g.init(np.full((B,), S - 1, np.int32), "seqlens_k")
    total = g.init(np.array(S, np.int32), "total_len")
    g.node("GroupQueryAttention", ["q", "k", "v", "", "", seqlens, total],
           outputs=["y", "present_key", "present_value"], domain=MS, num_heads=Hq,
           kv_num_heads=Hkv)
    # packed QKV (key and value absent), 4 query heads on 1 key/value head, custom scale
    qkv = g.node("Concat", ["q", "k", "v"], axis=2)
    g.node("GroupQueryAttention", [qkv, "", "", "", "", seqlens, total], outputs=["y_packed"],
           domain=MS, num_heads=Hq, kv_num_heads=Hkv, scale=0.25)
    model = g.model([("q", F32, [B, S, Hq * dh]), ("k", F32, [B, S, Hkv * dh]),
                     ("v", F32, [B, S, Hkv * dh])],
                    [("y", F32, [B, S, Hq * dh]), ("present_key", F32, [B, Hkv, S, dh]),
                     ("present_value", F32, [B, Hkv, S, dh]), ("y_packed", F32, [B, S, Hq * dh])],
                    ms=True)
    return model, {"q": g.normal([B, S, Hq * dh]), "k": g.normal([B, S, Hkv * dh]),
                   "v": g.normal([B, S, Hkv * dh])}


def ms_fused(rng):
    """FusedConv with the residual input Z and Tanh / HardSigmoid activations, FusedGemm with
    LeakyRelu, transB, alpha and beta."""
    import numpy as np

    g = G(rng)
    w = g.weight((8, 4, 3, 3), 36)
    b = g.init(g.normal((8,), 0.1))
    c = g.node("FusedConv", ["x", w, b, "z"], domain=MS, kernel_shape=[3, 3], pads=[1, 1, 1, 1],
               activation="Tanh")
    c = g.node("FusedConv", [c, g.weight((8, 8, 1, 1), 8)], domain=MS, activation="HardSigmoid",
               activation_params=[0.3, 0.4])
    c = g.node("FusedConv", [c, g.weight((8, 8, 3, 3), 72)], domain=MS, strides=[2, 2],
               pads=[1, 1, 1, 1],
               activation="Clip", activation_params=[0.1, 0.5], outputs=["conv"])
    f = g.node("Reshape", ["conv", g.init(np.array([2, 128], np.int64))])
    g.node("FusedGemm", [f, g.weight((16, 128), 128), g.init(g.normal((16,), 0.1))], domain=MS,
           transB=1, alpha=1.5, beta=0.5, activation="LeakyRelu", activation_alpha=0.2,
           outputs=["y"])
    model = g.model([("x", F32, [2, 4, 8, 8]), ("z", F32, [2, 8, 8, 8])],
                    [("conv", F32, [2, 8, 4, 4]), ("y", F32, [2, 16])], ms=True)
    return model, {"x": g.normal([2, 4, 8, 8]), "z": g.normal([2, 8, 8, 8])}


def ms_quantized(rng):
    """QGemm with transA, per-column int8 weights, an int32 C and a uint8 output, then a float
    output; MatMulIntegerToFloat with zero points and bias; QLinearConcat whose inputs carry
    their own scales and one Y's own; QLinearGlobalAveragePool on an odd spatial size."""
    import numpy as np

    g = G(rng)
    M, K, N = 6, 20, 12
    f32 = lambda v: g.init(np.array(v, np.float32), "s")  # noqa: E731
    u8 = lambda v: g.init(np.array(v, np.uint8), "zp")  # noqa: E731
    bq = g.init(rng.integers(-60, 60, (N, K), dtype=np.int8), "bq")
    bs = g.init(g.uniform((N,), 0.01, 0.02), "bs")
    bz = g.init(np.zeros((N,), np.int8), "bz")
    cq = g.init(rng.integers(-500, 500, (N,), dtype=np.int32), "c")
    y8 = g.node("QGemm", ["aq", f32(0.05), u8(120), bq, bs, bz, cq, f32(0.04), u8(128)],
                domain=MS, transA=1, transB=1)
    yf = g.node("QGemm", [y8, f32(0.04), u8(128), g.init(rng.integers(0, 255, (N, 5), dtype=np.uint8)),
                          f32(0.02), u8(127)], domain=MS, outputs=["qgemm_f"])
    del yf
    # |B| <= 63: onnxruntime's AVX2 uint8 x int8 kernel saturates pairs of larger products.
    mi = g.node("MatMulIntegerToFloat", [y8, g.init(rng.integers(-63, 64, (N, 7), dtype=np.int8)),
                                         f32(0.04), g.init(g.uniform((7,), 0.01, 0.03)), u8(128),
                                         g.init(np.array(3, np.int8)), g.init(g.normal((7,), 0.1))],
                domain=MS, outputs=["mitf"])
    del mi
    c = g.node("QLinearConcat", [f32(0.04), u8(128), y8, f32(0.04), u8(128),
                                 "cq", f32(0.07), u8(100)], domain=MS, axis=1, outputs=["concat"])
    img = g.node("Reshape", [c, g.init(np.array([1, 3, 2, 28], np.int64))])
    g.node("QLinearGlobalAveragePool", [img, f32(0.04), u8(128), f32(0.01), u8(90)], domain=MS,
           outputs=["gap"])
    model = g.model([("aq", 2, [K, M]), ("cq", 2, [M, 16])],
                    [("qgemm_f", F32, [M, 5]), ("mitf", F32, [M, 7]), ("concat", 2, [M, 28]),
                     ("gap", 2, [1, 3, 1, 1])], ms=True)
    return model, {"aq": rng.integers(0, 256, (K, M), dtype=np.uint8),
                   "cq": rng.integers(0, 256, (M, 16), dtype=np.uint8)}


def ort_bilstm(rng, T=5, B=2, I=12, Hd=16):
    """A bidirectional LSTM with initial states (float); sequence_lens covers every step
    (onnxruntime's quantized LSTM quantizes the zeroed rows of finished sequences with the
    others, which ge does not reproduce and refuses)."""
    import numpy as np

    g = G(rng)
    w = g.init(g.normal((2, 4 * Hd, I), 1.0 / I**0.5))
    r = g.init(g.normal((2, 4 * Hd, Hd), 1.0 / Hd**0.5))
    b = g.init(g.normal((2, 8 * Hd), 0.1))
    lens = g.init(np.array([T, T], np.int32), "lens")
    g.node("LSTM", ["x", w, r, b, lens, "h0", "c0"], outputs=["y", "y_h", "y_c"], hidden_size=Hd,
           direction="bidirectional")
    st = [2, B, Hd]
    model = g.model([("x", F32, [T, B, I]), ("h0", F32, st), ("c0", F32, st)],
                    [("y", F32, [T, 2, B, Hd]), ("y_h", F32, st), ("y_c", F32, st)], opset=13)
    return model, {"x": g.normal([T, B, I]), "h0": g.normal(st, 0.5), "c0": g.normal(st, 0.5)}


def pack4(q):
    """uint8 values < 16 packed two per byte along the last axis, low nibble first."""
    import numpy as np

    q = q.astype(np.uint8)
    if q.shape[-1] % 2:
        q = np.concatenate([q, np.zeros(q.shape[:-1] + (1,), np.uint8)], axis=-1)
    return (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)


def ms_matmul_nbits(rng):
    """MatMulNBits, 4 bits: block 16 with packed uint8 zero points and bias; block 32 with
    the default zero point (8); K not a multiple of the block (padded last block)."""
    import numpy as np

    g = G(rng)
    M, K1, N1, K2, N2 = 5, 40, 24, 24, 12

    def weights(K, N, block, zp):
        nb = (K + block - 1) // block
        q = rng.integers(0, 16, (N, nb, block), dtype=np.uint8)
        if K % block:
            q[:, -1, K % block:] = 0
        scales = g.uniform((N, nb), 0.01, 0.05)
        b = g.init(pack4(q), "qweight")
        s = g.init(scales, "scales")
        z = None
        if zp:
            zs = rng.integers(5, 11, (N, nb), dtype=np.uint8)
            z = g.init(pack4(zs), "zp")
        return b, s, z

    b1, s1, z1 = weights(K1, N1, 16, True)
    h = g.node("MatMulNBits", ["a", b1, s1, z1, "", g.init(g.normal((N1,), 0.1), "bias")],
               domain=MS, K=K1, N=N1, bits=4, block_size=16)
    h = g.node("Slice", [h, g.init(np.array([0], np.int64)), g.init(np.array([K2], np.int64)),
                         g.init(np.array([-1], np.int64))])
    b2, s2, _ = weights(K2, N2, 32, False)
    h = g.node("MatMulNBits", [h, b2, s2], domain=MS, K=K2, N=N2, bits=4, block_size=32)
    # 4 bits with zero points as floats (the unpacked form)
    b3, s3, _ = weights(N2, N2, 16, False)
    zf = g.init(rng.integers(4, 12, (N2, 1)).astype(np.float32), "zf")
    h = g.node("MatMulNBits", [h, b3, s3, zf], domain=MS, K=N2, N=N2, bits=4, block_size=16)
    # 8 bits, uint8 zero points, K = 12 in one padded block of 16
    q8 = rng.integers(0, 256, (8, 1, 16), dtype=np.uint8)
    q8[:, :, N2:] = 0
    g.node("MatMulNBits", [h, g.init(q8, "q8"), g.init(g.uniform((8, 1), 0.002, 0.01), "s8"),
                           g.init(rng.integers(100, 156, (8, 1)).astype(np.uint8), "z8")],
           domain=MS, K=N2, N=8, bits=8, block_size=16, outputs=["y"])
    model = g.model([("a", F32, [2, M, K1])], [("y", F32, [2, M, 8])], ms=True)
    return model, {"a": g.normal([2, M, K1])}


# --------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------


def case_ort_cnn(rng, tmp):
    model, feeds = cnn_float(rng, with_quant_ops=False)
    return ort_optimized(model, tmp), feeds, "CNN saved by onnxruntime at ORT_ENABLE_EXTENDED"


def case_ort_bert(rng, tmp):
    model, feeds = bert_float(rng)
    return ort_optimized(model, tmp), feeds, "BERT-like layer saved by onnxruntime at ORT_ENABLE_EXTENDED"


def case_ort_bert_tr(rng, tmp):
    import onnx
    from onnxruntime.transformers.optimizer import optimize_model

    model, feeds = bert_float(rng)
    src = os.path.join(tmp, "float.onnx")
    onnx.save(model, src)
    opt = optimize_model(src, model_type="bert", num_heads=4, hidden_size=64, opt_level=0,
                         use_gpu=False)
    os.remove(src)
    return opt.model, feeds, "BERT-like layer through onnxruntime.transformers' BERT optimizer"


def case_ort_bert_dyn(rng, tmp):
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model, feeds = bert_float(rng)
    q = quantized(model, tmp, quantize_dynamic, weight_type=QuantType.QInt8, reduce_range=True)
    return (ort_optimized(q, tmp), feeds,
            "BERT-like layer: quantize_dynamic (7-bit int8 weights), saved at ORT_ENABLE_EXTENDED")


def case_ort_lstm_dyn(rng, tmp):
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model, feeds = lstm_float(rng)
    q = quantized(model, tmp, quantize_dynamic, weight_type=QuantType.QInt8, reduce_range=True,
                  op_types_to_quantize=["LSTM"])
    return q, feeds, "LSTM + Gemm: quantize_dynamic on the LSTM (7-bit int8 weights)"


def case_ort_qop_cnn(rng, tmp):
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    model, feeds = cnn_float(rng, with_quant_ops=True)
    calib = Calib(rng, (2, 3, 16, 16))
    q = quantized(model, tmp, quantize_static, calibration_data_reader=calib,
                  quant_format=QuantFormat.QOperator, activation_type=QuantType.QUInt8,
                  weight_type=QuantType.QUInt8, per_channel=False)
    return q, feeds, "CNN: quantize_static, QOperator format, uint8, random calibration"


def case_ort_bilstm_dyn(rng, tmp):
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model, feeds = ort_bilstm(rng)
    q = quantized(model, tmp, quantize_dynamic, weight_type=QuantType.QInt8, reduce_range=True,
                  per_channel=True, op_types_to_quantize=["LSTM"])
    return q, feeds, "bidirectional LSTM with initial states: quantize_dynamic, per channel"


def direct(fn, doc):
    def case(rng, tmp):
        model, feeds, *ref = fn(rng)
        return model, feeds, doc, *ref
    return case


CASES = {
    "ort_cnn": case_ort_cnn,
    "ort_bert": case_ort_bert,
    "ort_bert_tr": case_ort_bert_tr,
    "ort_bert_dyn": case_ort_bert_dyn,
    "ort_lstm_dyn": case_ort_lstm_dyn,
    "ort_bilstm_dyn": case_ort_bilstm_dyn,
    "ort_qop_cnn": case_ort_qop_cnn,
    "ms_fused": direct(ms_fused, "FusedConv with Z and activations, FusedGemm with LeakyRelu"),
    "ms_quantized": direct(ms_quantized, "QGemm, MatMulIntegerToFloat, QLinearConcat, "
                           "QLinearGlobalAveragePool variants"),
    "ms_activations": direct(ms_activations, "QuickGelu, Gelu, BiasGelu, FastGelu, BiasAdd"),
    "ms_norms": direct(ms_norms, "SkipLayerNormalization, (Skip)SimplifiedLayerNormalization"),
    "ms_fused_matmul": direct(ms_fused_matmul, "FusedMatMul with alpha and transposes"),
    "ms_nhwc_conv": direct(ms_nhwc_conv, "NhwcConv"),
    "ms_attention": direct(ms_attention, "Attention and MultiHeadAttention"),
    "ms_gqa": direct(ms_gqa, "GroupQueryAttention (prompt, no past)"),
    "ms_matmul_nbits": direct(ms_matmul_nbits, "MatMulNBits, 4-bit, block-wise"),
}


def op_counts(model) -> dict:
    counts: dict = {}
    for n in model.graph.node:
        k = f"{n.domain or 'ai.onnx'}:{n.op_type}"
        counts[k] = counts.get(k, 0) + 1
    return dict(sorted(counts.items()))


def write_case(d: str, model, feeds: dict, outs) -> None:
    import onnx
    from onnx import numpy_helper

    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(model, os.path.join(d, "model.onnx"))
    names = [i.name for i in model.graph.input if i.name in feeds]
    for i, n in enumerate(names):
        with open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(feeds[n], n).SerializeToString())
    for j, (o, v) in enumerate(zip(model.graph.output, outs)):
        with open(os.path.join(d, "test_data_set_0", f"output_{j}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v, o.name).SerializeToString())


def build_case(name: str, tmp: str, log) -> dict:
    import numpy as np

    seed = SEED + zlib_crc(name)
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory(dir=tmp) as scratch:
        model, feeds, doc, *ref = CASES[name](rng, scratch)
    # Initializers listed as graph inputs (older exporters) are not fed.
    inits = {i.name for i in model.graph.initializer}
    for i in model.graph.input:
        if i.name not in inits and i.name not in feeds:
            raise RuntimeError(f"{name}: no value for input {i.name}")
    for n, v in feeds.items():
        if not np.any(v):
            raise RuntimeError(f"{name}: input {n} is all zero")
    # A reference model stands in for ops onnxruntime implements only on GPUs.
    ref_model = ref[0] if ref else model
    outs = ort_session(ref_model.SerializeToString()).run(None, feeds)
    for o, v in zip(model.graph.output, outs):
        v = np.asarray(v)
        if not np.isfinite(v).all() or (v.size > 1 and v.std() == 0):
            raise RuntimeError(f"{name}: output {o.name} is degenerate")
    write_case(os.path.join(tmp, name), model, feeds, outs)
    counts = op_counts(model)
    log(f"  {name}: {len(model.graph.node)} nodes: "
        + ", ".join(f"{k.replace('ai.onnx:', '')} {v}" for k, v in counts.items()))
    return {
        "name": name,
        "doc": doc,
        "seed": seed,
        "opsets": {o.domain or "ai.onnx": o.version for o in model.opset_import},
        "nodes": len(model.graph.node),
        "ops": counts,
        "reference": "onnxruntime CPU" + (" on a stand-in model (the op's definition)" if ref else ""),
        "inputs": {n: list(v.shape) for n, v in feeds.items()},
        "outputs": {o.name: list(np.asarray(v).shape) for o, v in zip(model.graph.output, outs)},
    }


def zlib_crc(s: str) -> int:
    import zlib

    return zlib.crc32(s.encode()) % 100_000


def generate(out: str, log=print, force: bool = False) -> str:
    """Writes out/contrib unless it is current; returns its path."""
    dest = os.path.join(os.path.abspath(out), PART)
    if not force and is_current(dest):
        log(f"{PART}: up to date ({dest})")
        return dest

    def fill(tmp):
        log(f"{PART}: generating {len(CASES)} models -> {dest}")
        entries = [build_case(name, tmp, log) for name in CASES]
        contrib_ops: dict = {}
        for e in entries:
            for k, v in e["ops"].items():
                contrib_ops[k] = contrib_ops.get(k, 0) + v
        with open(os.path.join(tmp, "manifest.json"), "w") as f:
            json.dump({"cases": entries, "op_totals": dict(sorted(contrib_ops.items()))}, f,
                      indent=1)

    gen_transformer_opset17.build_into(dest, stamp_text(), fill)
    return dest


def main(argv=None) -> int:
    return gen_transformer_opset17.cli(generate, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
