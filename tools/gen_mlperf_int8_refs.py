#!/usr/bin/env python3
"""Generate corpus/mlperf-int8: onnxruntime's outputs of the MLPerf Tiny int8 models in its
int8 configuration, the references of ge's default `--int8-rounding onnx`.

    python3 tools/gen_mlperf_int8_refs.py [--out DIR] [--force]

The shared corpus (`../shared/corpus/mlperf-tiny/data/<key>/ort_sNN.npy`) holds onnxruntime's
outputs in its default x86 configuration, where QDQ groups whose activations are int8 are
not fused unless int8 is allowed: `QDQS8ToU8Transformer` turns a Q/DQ pair to uint8 only when
the QuantizeLinear has one consumer, so on ResNet-8 the groups reading a residual branch, the
input and the pooled features run in float (6 Convs, 2 Adds, the AveragePool, the Gemm, the
Softmax). ge computes as onnxruntime does with `session.qdqisint8allowed = 1` (its default on
ARM, the quantized corpus's configuration: every group in its int8 kernel). The two agree
on ad, kws and vww; on ic_int8 they differ by up to 15 LSB (s01, s02: an average pool whose
mean is exactly 15.5 rounds down in float, half to even in int8).

Writes DIR/mlperf-int8/<key>/ort_i8_sNN.npy for the four int8 models and samples s00-s04
(1 thread, CPU provider, graph optimizations on), and .stamp (a hash of this script, the
package versions and the models). Idempotent: up to date when the stamp matches. Seconds.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_transformer_opset17  # noqa: E402  (stamp, build_into, refresh_part, cli)

PART = "mlperf-int8"
SHARED = os.path.join(gen_transformer_opset17.REPO_ROOT, "..", "shared", "corpus", "mlperf-tiny")
MODELS = {
    "ad_int8": "ad01_int8.onnx",
    "ic_int8": "pretrainedResnet_quant.onnx",
    "kws_int8": "kws_ref_model.onnx",
    "vww_int8": "vww_96_int8.onnx",
}
SAMPLES = 5


def source(key: str) -> str:
    return os.path.join(SHARED, "onnx", MODELS[key])


def stamp_text(out: str) -> str:
    return gen_transformer_opset17.sources_stamp(__file__, [source(k) for k in sorted(MODELS)])


def is_current(d: str, stamp: str) -> bool:
    return gen_transformer_opset17.stamp_holds(
        d, stamp, [os.path.join(k, f"ort_i8_s{s:02d}.npy") for k in MODELS for s in range(SAMPLES)])


def fill(tmp: str, log) -> None:
    import numpy as np
    import onnxruntime as ort

    for key in sorted(MODELS):
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.add_session_config_entry("session.qdqisint8allowed", "1")
        sess = ort.InferenceSession(source(key), so, providers=["CPUExecutionProvider"])
        name = sess.get_inputs()[0].name
        os.makedirs(os.path.join(tmp, key))
        for s in range(SAMPLES):
            x = np.load(os.path.join(SHARED, "data", key, f"input_s{s:02d}.npy"))
            (y,) = sess.run(None, {name: x})
            np.save(os.path.join(tmp, key, f"ort_i8_s{s:02d}.npy"), y)
        log(f"{PART}: {key}")


def generate(out: str, log=print, force: bool = False) -> str | None:
    """Writes out/mlperf-int8 unless it is current; None when the shared corpus is missing."""
    out = os.path.abspath(out)
    return gen_transformer_opset17.refresh_part(
        out, PART, [source(k) for k in MODELS], stamp_text, is_current,
        lambda tmp: fill(tmp, log), log, force)


def main(argv=None) -> int:
    return gen_transformer_opset17.cli(generate, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
