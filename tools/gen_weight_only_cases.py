"""Regenerates tests/data/weight_only: weight-only int8 graphs as exporters write them, with
onnxruntime's outputs, for ge's int8 weight storage (`passes::qdq::weight_only`):
- `gather_*`: an int8/uint8 embedding table widened by a Cast and scaled per row ([V, 1],
  MiniLM's export), per column ([1, D]) or per tensor, gathered by run-time token ids (2-D
  and 1-D indices, negative ids counting from the end). Every output element is
  float(w) · s as onnxruntime computes it, so ge must match exactly.
- `matmul_*`: the same widening as a MatMul's B ([K, N], scaled per column or per tensor),
  then a bias Add, a Relu, a residual Add (MiniLM's linear layers), on 2-D and 3-D
  activations: float sums, so the default tolerance.
Random weights, scales and non-zero inputs.

    python3 tools/gen_weight_only_cases.py
"""
import os

import numpy as np
from onnx import TensorProto, helper

from onnx_cases import save_case

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "weight_only")
rng = np.random.default_rng(16)


def save(name, nodes, inits, feeds, out):
    save_case(OUT, name, nodes, inits, feeds, [out], np.float32)


def table(name, dt, vocab, dim, scale_shape, ids_shape, scale_first=False):
    lo, hi = (0, 256) if dt == np.uint8 else (-128, 128)
    w = rng.integers(lo, hi, size=(vocab, dim)).astype(dt)
    s = rng.uniform(0.002, 0.05, size=scale_shape).astype(np.float32)
    ids = rng.integers(-vocab, vocab, size=ids_shape).astype(np.int64)
    mul_in = ["s", "wf"] if scale_first else ["wf", "s"]
    nodes = [
        helper.make_node("Cast", ["w"], ["wf"], to=TensorProto.FLOAT, name="widen"),
        helper.make_node("Mul", mul_in, ["table"], name="dequant"),
        helper.make_node("Gather", ["table", "ids"], ["y"], axis=0, name="embed"),
    ]
    save(name, nodes, {"w": w, "s": s}, {"ids": ids}, "y")


table("gather_i8_per_row", np.int8, 300, 48, (300, 1), (2, 17))
table("gather_u8_per_column", np.uint8, 64, 40, (1, 40), (33,), scale_first=True)
table("gather_i8_per_tensor", np.int8, 50, 24, (), (3, 4))


def matmul(name, dt, a_shape, n, scale_shape, bias=False, relu=False, residual=False):
    k = a_shape[-1]
    lo, hi = (0, 256) if dt == np.uint8 else (-128, 128)
    w = rng.integers(lo, hi, size=(k, n)).astype(dt)
    s = rng.uniform(0.002, 0.02, size=scale_shape).astype(np.float32)
    a = rng.uniform(-1, 1, size=a_shape).astype(np.float32)
    inits = {"w": w, "s": s}
    nodes = [
        helper.make_node("Cast", ["w"], ["wf"], to=TensorProto.FLOAT, name="widen"),
        helper.make_node("Mul", ["wf", "s"], ["b"], name="dequant"),
        helper.make_node("MatMul", ["a", "b"], ["mm"], name="linear"),
    ]
    y = "mm"
    if bias:
        inits["bias"] = rng.uniform(-0.5, 0.5, size=(n,)).astype(np.float32)
        nodes.append(helper.make_node("Add", [y, "bias"], ["biased"], name="bias"))
        y = "biased"
    if residual:
        nodes.append(helper.make_node("Add", [y, "a"], ["res"], name="residual"))
        y = "res"
    if relu:
        nodes.append(helper.make_node("Relu", [y], ["act"], name="relu"))
        y = "act"
    save(name, nodes, inits, {"a": a}, y)


matmul("matmul_i8_per_column_bias_relu", np.int8, (2, 9, 64), 48, (1, 48), bias=True, relu=True)
matmul("matmul_u8_per_tensor", np.uint8, (5, 32), 40, ())
matmul("matmul_i8_bias_residual", np.int8, (1, 16, 48), 48, (48,), bias=True, residual=True)
matmul("matmul_i8_single_row", np.int8, (1, 96), 24, (1, 24), bias=True)
