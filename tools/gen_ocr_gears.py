#!/usr/bin/env python3
"""Generate corpus/ocr_gears: an OCR text-line recognizer shaped like a CRNN (conv stack,
height pooled away, bidirectional LSTM over the width, per-column class softmax), with
seeded random weights, and onnxruntime's outputs at the widths the gears tests use
(tests/tests/gears.rs, issue 15).

    python3 tools/gen_ocr_gears.py [--out DIR] [--force]

Writes DIR/ocr_gears/ (DIR defaults to <repo>/corpus):

    ocr_gears/model.onnx            input x float32 [N, 3, 48, W] (N and W symbolic, H 48
                                    as PaddleOCR's recognizers declare it); output probs
                                    float32 [N, W/4, 37]
    ocr_gears/w320/input_0.pb       a [1, 3, 48, 320] line and onnxruntime's output_0.pb
    ocr_gears/w960/input_0.pb       a [1, 3, 48, 960] line and output_0.pb
    ocr_gears/w250/input_0.pb       a [1, 3, 48, 250] line; output_0.pb is onnxruntime on
                                    it at its own width (62 steps), output_padded.pb on it
                                    zero-padded on the right to 320 (80 steps: what a
                                    run padded onto the 320 gear computes)
    ocr_gears/.stamp                hash of this script + package versions

Idempotent: when the case is present and its stamp matches it prints "up to date" and
writes nothing; otherwise it builds in a temporary directory and renames it into place.
tools/gen_corpus.py runs it among its extras.

The graph (opset 17), activations N(0, 1)-scaled by fan-in weights:
  4 × [Conv 3×3 pad 1 → Relu → MaxPool]: 3→16 (2×2), 16→32 (2×2), 32→48 (2×1), 48→64 (2×1)
      → [N, 64, 3, W/4]; ReduceMean over H (keepdims 0) → [N, 64, W/4]
  Transpose [2, 0, 1] → [T, N, 64]; LSTM hidden 48 bidirectional → [T, 2, N, 48]
  Transpose [2, 0, 1, 3] → [N, T, 2, 48]; Reshape [0, 0, 96]; MatMul 96×37 + bias;
  Softmax over the 37 classes.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_transformer_opset17 as helpers  # noqa: E402  (stamp, install and cli helpers)

CASE = "ocr_gears"
SEED = 20261202
OPSET = 17
CLASSES = 37
WIDTHS = {"w320": 320, "w960": 960, "w250": 250}
PAD_TO = 320  # w250's padded reference width


def build():
    """The model."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(SEED)
    nodes, inits = [], []

    def init(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def normal(shape, std):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    x = "x"
    chans = [3, 16, 32, 48, 64]
    pools = [(2, 2), (2, 2), (2, 1), (2, 1)]
    for i, (cin, cout, pool) in enumerate(zip(chans, chans[1:], pools)):
        w = init(f"conv{i}.weight", normal((cout, cin, 3, 3), (2.0 / (9 * cin)) ** 0.5))
        b = init(f"conv{i}.bias", normal((cout,), 0.1))
        nodes.append(helper.make_node("Conv", [x, w, b], [f"conv{i}"], pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [f"conv{i}"], [f"relu{i}"]))
        nodes.append(helper.make_node("MaxPool", [f"relu{i}"], [f"pool{i}"],
                                      kernel_shape=list(pool), strides=list(pool)))
        x = f"pool{i}"
    nodes.append(helper.make_node("ReduceMean", [x], ["feat"], axes=[2], keepdims=0))
    nodes.append(helper.make_node("Transpose", ["feat"], ["seq"], perm=[2, 0, 1]))
    hid = 48
    w = init("lstm.W", normal((2, 4 * hid, 64), 1.0 / 64**0.5))
    r = init("lstm.R", normal((2, 4 * hid, hid), 1.0 / hid**0.5))
    b = init("lstm.B", normal((2, 8 * hid), 0.1))
    nodes.append(helper.make_node("LSTM", ["seq", w, r, b], ["lstm_y"], hidden_size=hid,
                                  direction="bidirectional"))
    nodes.append(helper.make_node("Transpose", ["lstm_y"], ["lstm_t"], perm=[2, 0, 1, 3]))
    shape = init("merge_dirs", np.array([0, 0, 2 * hid], np.int64))
    nodes.append(helper.make_node("Reshape", ["lstm_t", shape], ["ctx"]))
    fc_w = init("fc.weight", normal((2 * hid, CLASSES), 2.0 / (2 * hid) ** 0.5))
    fc_b = init("fc.bias", normal((CLASSES,), 0.1))
    nodes.append(helper.make_node("MatMul", ["ctx", fc_w], ["fc"]))
    nodes.append(helper.make_node("Add", ["fc", fc_b], ["logits"]))
    nodes.append(helper.make_node("Softmax", ["logits"], ["probs"], axis=-1))
    graph = helper.make_graph(
        nodes, "crnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 48, "W"])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", "T", CLASSES])],
        initializer=inits,
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8,
        producer_name="ge tools/gen_ocr_gears.py",
        doc_string="CRNN-shaped OCR recognizer (conv stack, bidirectional LSTM over the "
                   "width, class softmax) with seeded random weights",
    )


def reference(model, x):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def is_current(d: str) -> bool:
    try:
        with open(os.path.join(d, ".stamp")) as f:
            current = f.read() == helpers.stamp_text(__file__)
    except OSError:
        return False
    files = ["model.onnx", "w250/output_padded.pb"] + [f"{w}/output_0.pb" for w in WIDTHS]
    return current and all(os.path.isfile(os.path.join(d, f)) for f in files)


def generate(out: str, log=print, force: bool = False) -> str:
    """Writes out/ocr_gears unless it is current; returns its path."""
    dest = os.path.join(os.path.abspath(out), CASE)
    if not force and is_current(dest):
        log(f"{CASE}: up to date ({dest})")
        return dest
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model = build()
    onnx.checker.check_model(model, full_check=True)
    rng = np.random.default_rng(SEED + 1)

    def save(path, arr, name):
        with open(path, "wb") as f:
            f.write(numpy_helper.from_array(arr, name).SerializeToString())

    def fill(tmp: str) -> None:
        onnx.save(model, os.path.join(tmp, "model.onnx"))
        for case, width in WIDTHS.items():
            x = rng.uniform(-1.0, 1.0, (1, 3, 48, width)).astype(np.float32)
            y = np.asarray(reference(model, x))
            if not (np.isfinite(y).all() and y.std() > 1e-3):
                raise RuntimeError(f"{CASE}/{case}: badly scaled output (std {y.std()})")
            os.makedirs(os.path.join(tmp, case))
            save(os.path.join(tmp, case, "input_0.pb"), x, "x")
            save(os.path.join(tmp, case, "output_0.pb"), y, "probs")
            if width < PAD_TO:
                padded = np.zeros((1, 3, 48, PAD_TO), np.float32)
                padded[..., :width] = x
                yp = np.asarray(reference(model, padded))
                save(os.path.join(tmp, case, "output_padded.pb"), yp, "probs")
            log(f"{CASE}/{case}: output {list(y.shape)}, std {y.std():.4f}")

    helpers.build_into(dest, helpers.stamp_text(__file__), fill)
    log(f"{CASE}: {len(model.graph.node)} nodes -> {dest}")
    return dest


def main() -> int:
    return helpers.cli(generate, __doc__)


if __name__ == "__main__":
    sys.exit(main())
