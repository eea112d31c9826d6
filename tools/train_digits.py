#!/usr/bin/env python3
"""Train the `digits` example's small CNN on scikit-learn's bundled 8x8 digits data set.

Pure numpy training (no deep-learning framework), deterministic (seeded), exported with
onnx.helper; onnxruntime then classifies the held-out split and its accuracy is recorded
for the Rust example and tests to compare against.

    python3 tools/train_digits.py            # writes examples/digits/{models,data}/

Network (input x: float32 [N, 1, 8, 8], pixel values scaled to [0, 1]):

    Conv 3x3, 1 -> 16 channels, pad 1 -> Relu -> MaxPool 2x2 -> Flatten (256)
    -> Gemm 256 -> 10 ("logits") -> Softmax ("probs")

Outputs written (all little-endian):

    examples/digits/models/digits.onnx   opset 13, batch dim symbolic ("N")
    examples/digits/data/test_x.bin      float32 [N, 1, 8, 8], C order
    examples/digits/data/test_y.bin      uint8 [N] true labels
    examples/digits/data/ort_pred.bin    uint8 [N] onnxruntime's predicted classes
    examples/digits/data/ort_accuracy.txt  "<correct> <total> <accuracy>" on one line

Dependencies: numpy, scikit-learn, onnx, onnxruntime (pinned in tools/requirements.txt).
"""

from __future__ import annotations

import argparse
import pathlib

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

SEED = 20240601
CHANNELS = 16
CLASSES = 10
EPOCHS = 30
BATCH = 32
LR = 0.05
MOMENTUM = 0.9
WEIGHT_DECAY = 1e-4
OPSET = 13

ROOT = pathlib.Path(__file__).resolve().parent.parent


def im2col(x: np.ndarray) -> np.ndarray:
    """[N,1,8,8] -> [N, 64, 9] patches of a 3x3 window with zero padding 1."""
    n = x.shape[0]
    p = np.pad(x[:, 0], ((0, 0), (1, 1), (1, 1)))
    cols = np.empty((n, 8, 8, 9), dtype=x.dtype)
    k = 0
    for dy in range(3):
        for dx in range(3):
            cols[:, :, :, k] = p[:, dy : dy + 8, dx : dx + 8]
            k += 1
    return cols.reshape(n, 64, 9)


def forward(params: dict, x: np.ndarray):
    """Returns logits and the cache backprop needs."""
    w1, b1, w2, b2 = params["w1"], params["b1"], params["w2"], params["b2"]
    n = x.shape[0]
    cols = im2col(x)  # [N,64,9]
    conv = cols @ w1.reshape(CHANNELS, 9).T + b1  # [N,64,C]
    conv = conv.transpose(0, 2, 1).reshape(n, CHANNELS, 8, 8)
    relu = np.maximum(conv, 0.0)
    blocks = relu.reshape(n, CHANNELS, 4, 2, 4, 2)
    pooled = blocks.max(axis=(3, 5))  # [N,C,4,4]
    flat = pooled.reshape(n, -1)  # [N, C*16], same order as ONNX Flatten
    logits = flat @ w2.T + b2
    return logits, (cols, conv, blocks, pooled, flat)


def backward(params: dict, cache, dlogits: np.ndarray) -> dict:
    cols, conv, blocks, pooled, flat = cache
    n = dlogits.shape[0]
    grads = {
        "w2": dlogits.T @ flat,
        "b2": dlogits.sum(axis=0),
    }
    dflat = dlogits @ params["w2"]
    dpooled = dflat.reshape(pooled.shape)
    # Max-pool gradient: route to the (first) arg-max of each 2x2 window.
    mask = blocks == pooled[:, :, :, None, :, None]
    first = mask & (np.cumsum(np.cumsum(mask, axis=3), axis=5) == 1)
    drelu = (first * dpooled[:, :, :, None, :, None]).reshape(conv.shape)
    dconv = drelu * (conv > 0)
    dconv = dconv.reshape(n, CHANNELS, 64).transpose(0, 2, 1)  # [N,64,C]
    grads["w1"] = np.einsum("npc,npk->ck", dconv, cols).reshape(CHANNELS, 1, 3, 3)
    grads["b1"] = dconv.sum(axis=(0, 1))
    return grads


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def train(x: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> dict:
    params = {
        "w1": (rng.standard_normal((CHANNELS, 1, 3, 3)) * np.sqrt(2.0 / 9)).astype(np.float32),
        "b1": np.zeros(CHANNELS, np.float32),
        "w2": (rng.standard_normal((CLASSES, CHANNELS * 16)) * np.sqrt(1.0 / (CHANNELS * 16))).astype(
            np.float32
        ),
        "b2": np.zeros(CLASSES, np.float32),
    }
    velocity = {k: np.zeros_like(v) for k, v in params.items()}
    onehot = np.eye(CLASSES, dtype=np.float32)[y]
    for epoch in range(EPOCHS):
        lr = LR * 0.5 * (1 + np.cos(np.pi * epoch / EPOCHS))  # cosine decay
        order = rng.permutation(len(x))
        total = 0.0
        for s in range(0, len(x), BATCH):
            idx = order[s : s + BATCH]
            logits, cache = forward(params, x[idx])
            p = softmax(logits)
            total += float(-np.log(p[np.arange(len(idx)), y[idx]] + 1e-12).sum())
            dlogits = (p - onehot[idx]) / len(idx)
            grads = backward(params, cache, dlogits)
            for k in params:
                g = grads[k] + WEIGHT_DECAY * params[k]
                velocity[k] = MOMENTUM * velocity[k] - lr * g
                params[k] = (params[k] + velocity[k]).astype(np.float32)
        if epoch % 10 == 9 or epoch == EPOCHS - 1:
            acc = (forward(params, x)[0].argmax(1) == y).mean()
            print(f"epoch {epoch + 1:2d}: loss {total / len(x):.4f}, train accuracy {acc:.4f}")
    return params


def export(params: dict, path: pathlib.Path) -> None:
    inits = [
        numpy_helper.from_array(params["w1"].astype(np.float32), "conv.weight"),
        numpy_helper.from_array(params["b1"].astype(np.float32), "conv.bias"),
        numpy_helper.from_array(params["w2"].astype(np.float32), "fc.weight"),
        numpy_helper.from_array(params["b2"].astype(np.float32), "fc.bias"),
    ]
    nodes = [
        helper.make_node(
            "Conv", ["x", "conv.weight", "conv.bias"], ["conv"], name="conv",
            kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1],
        ),
        helper.make_node("Relu", ["conv"], ["relu"], name="relu"),
        helper.make_node("MaxPool", ["relu"], ["pool"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["pool"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "digits",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])],
        [
            helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", CLASSES]),
            helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", CLASSES]),
        ],
        inits,
    )
    model = helper.make_model(
        graph,
        producer_name="ge tools/train_digits.py",
        opset_imports=[helper.make_opsetid("", OPSET)],
    )
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))


def split():
    """The training and held-out splits (x scaled to [0, 1], y int64); tools/gen_calib_sets.py
    takes the training split from here as the quantization calibration set."""
    digits = load_digits()
    x = (digits.images.astype(np.float32) / 16.0)[:, None, :, :]
    y = digits.target.astype(np.int64)
    return train_test_split(x, y, test_size=0.2, random_state=SEED % (2**31), stratify=y)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "examples" / "digits")
    args = ap.parse_args()

    rng = np.random.default_rng(SEED)
    x_train, x_test, y_train, y_test = split()
    print(f"train {len(x_train)}, held-out {len(x_test)}")
    params = train(x_train, y_train, rng)
    numpy_acc = (forward(params, x_test)[0].argmax(1) == y_test).mean()

    model_path = args.out / "models" / "digits.onnx"
    export(params, model_path)

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])
    x_test = np.ascontiguousarray(x_test, dtype=np.float32)
    logits, _probs = sess.run(None, {"x": x_test})
    pred = logits.argmax(axis=1).astype(np.uint8)
    correct = int((pred == y_test).sum())
    acc = correct / len(y_test)

    data = args.out / "data"
    data.mkdir(parents=True, exist_ok=True)
    x_test.astype("<f4").tofile(data / "test_x.bin")
    y_test.astype(np.uint8).tofile(data / "test_y.bin")
    pred.tofile(data / "ort_pred.bin")
    (data / "ort_accuracy.txt").write_text(f"{correct} {len(y_test)} {acc:.6f}\n")
    print(f"numpy held-out accuracy {numpy_acc:.4f}")
    print(f"onnxruntime held-out accuracy: {correct}/{len(y_test)} = {acc:.6f}")
    print(f"wrote {model_path.relative_to(ROOT)} and {data.relative_to(ROOT)}/")
    if acc < 0.95:
        raise SystemExit(f"accuracy {acc:.4f} is below the 0.95 target")


if __name__ == "__main__":
    main()
