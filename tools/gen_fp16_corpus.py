#!/usr/bin/env python3
"""Generate corpus/fp16: light CNNs stored in float16, with onnxruntime's float16 outputs as
references (issue 13: models stored in fp16 run under `--precision must_keep_origin_dtype`).

    python3 tools/gen_fp16_corpus.py [--out DIR] [--force]

Reads DIR/light/ (written by tools/gen_corpus.py) and writes DIR/fp16/, one `ge check` case
per model:

    fp16/<name>/model.onnx                  every float32 initializer, graph input and output
                                            converted to float16 (value_info dropped: ONNX
                                            shape inference redoes it), nothing else changed
    fp16/<name>/test_data_set_0/input_0.pb  a seeded N(0, 1) float16 input
    fp16/<name>/test_data_set_0/output_0.pb onnxruntime's float16 output (CPU EP, 1 thread;
                                            its kernels round every op's output to float16)
    fp16/.stamp                             hash of this script, package versions, sources

Idempotent: when fp16/.stamp matches, prints "up to date" and writes nothing. A few seconds.
tools/gen_corpus.py calls `generate` at the end of its extras step.
"""
from __future__ import annotations

import os
import sys
import zlib

PART = "fp16"
SEED = 20261202
MODELS = ["squeezenet", "shufflenet"]

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_contrib_models  # noqa: E402  (case writer)
import gen_transformer_opset17  # noqa: E402  (stamp and install helpers)


def source_path(out: str, model: str) -> str:
    return os.path.join(out, "light", model, "model.onnx")


def stamp_text(out: str) -> str:
    return gen_transformer_opset17.sources_stamp(__file__, [source_path(out, m) for m in MODELS])


def is_current(d: str, stamp: str) -> bool:
    return gen_transformer_opset17.stamp_holds(
        d, stamp, [os.path.join(m, "test_data_set_0", "output_0.pb") for m in MODELS])


def to_fp16(model):
    """The model with its float32 weights and interface in float16."""
    import numpy as np
    from onnx import TensorProto, numpy_helper

    g = model.graph
    for i, t in enumerate(g.initializer):
        if t.data_type == TensorProto.FLOAT:
            a = numpy_helper.to_array(t).astype(np.float16)
            g.initializer[i].CopyFrom(numpy_helper.from_array(a, t.name))
    for v in list(g.input) + list(g.output):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            v.type.tensor_type.elem_type = TensorProto.FLOAT16
    del g.value_info[:]
    return model


def build_case(out: str, name: str, tmp: str, log) -> None:
    import numpy as np
    import onnx
    import onnxruntime as ort

    model = to_fp16(onnx.load(source_path(out, name)))
    # Initializers listed as graph inputs (IR 3 files) are not fed.
    inits = {t.name for t in model.graph.initializer}
    (inp,) = [i for i in model.graph.input if i.name not in inits]
    shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    rng = np.random.default_rng(SEED + zlib.crc32(name.encode()) % 100_000)
    feeds = {inp.name: rng.standard_normal(shape).astype(np.float16)}
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])
    outs = [np.asarray(v) for v in sess.run(None, feeds)]
    for o in outs:
        if o.dtype != np.float16 or not np.isfinite(o).all() or o.std() == 0:
            raise RuntimeError(f"{name}: degenerate float16 output")
    gen_contrib_models.write_case(os.path.join(tmp, name), model, feeds, outs)
    log(f"  {name}: {len(model.graph.node)} nodes, output {list(outs[0].shape)}")


def generate(out: str, log=print, force: bool = False) -> str | None:
    """Writes out/fp16 unless it is current; returns its path (None when a source is
    missing)."""
    out = os.path.abspath(out)

    def fill(tmp):
        log(f"{PART}: generating {len(MODELS)} models")
        for m in MODELS:
            build_case(out, m, tmp, log)

    return gen_transformer_opset17.refresh_part(
        out, PART, [source_path(out, m) for m in MODELS], stamp_text, is_current, fill, log,
        force)


def main(argv=None) -> int:
    return gen_transformer_opset17.cli(generate, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
