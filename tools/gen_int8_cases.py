"""Regenerates tests/data/int8: small integer matrix-product cases with onnxruntime's outputs,
for ge's int8 kernel (QGemm): QLinearMatMul (uint8/int8 activations, int8/uint8 weights, per
tensor and per column, with and without zero points, batched A), MatMulInteger (constant and
run-time activation zero points, uint8 weights as quantize_dynamic writes them) and a
DynamicQuantizeLinear → MatMulInteger → Cast → Mul chain. Random weights and non-zero inputs;
weights are 7-bit ([-64, 63] / [64, 191]) so onnxruntime's AVX2 kernels, which sum pairs of
u8·i8 products in saturating int16, give host-independent references.

    python3 tools/gen_int8_cases.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnx_cases import save_case

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "int8")
rng = np.random.default_rng(14)


def save(name, nodes, inits, feeds, outs, odt):
    save_case(OUT, name, nodes, inits, feeds, outs, odt)


def act(dt, shape):
    lo, hi = (0, 256) if dt == np.uint8 else (-128, 128)
    return rng.integers(lo, hi, size=shape).astype(dt)


def weight(dt, k, n):
    w = rng.integers(-64, 64, size=(k, n))
    return (w + 128 if dt == np.uint8 else w).astype(dt)


def qlinear(name, adt, wdt, shape_a, n, per_col, zps=True):
    k = shape_a[-1]
    a = act(adt, shape_a)
    w = weight(wdt, k, n)
    ncol = n if per_col else 1
    inits = {
        "a_scale": np.array(0.02, np.float32),
        "a_zp": np.array(rng.integers(100, 150) if adt == np.uint8 else rng.integers(-20, 20), adt),
        "b": w,
        "b_scale": (rng.uniform(0.002, 0.01, ncol) if per_col else np.array(0.005)).astype(np.float32),
        "b_zp": (np.full(ncol, 128 if wdt == np.uint8 else 0) if per_col else
                 np.array(128 if wdt == np.uint8 else 0)).astype(wdt),
        "y_scale": np.array(0.05, np.float32),
        "y_zp": np.array(128 if adt == np.uint8 else 3, adt),
    }
    ins = ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"]
    if not zps:
        for z in ("a_zp", "b_zp"):
            inits[z] = np.zeros_like(inits[z]) + (128 if inits[z].dtype == np.uint8 and z == "b_zp" else 0)
    node = helper.make_node("QLinearMatMul", ins, ["y"])
    save(name, [node], inits, {"a": a}, ["y"], adt)


def matmul_integer(name, wdt, shape_a, n, za=None, zb_per_col=False):
    k = shape_a[-1]
    a = act(np.uint8, shape_a)
    inits = {"b": weight(wdt, k, n)}
    ins = ["a", "b", "", ""]
    if za is not None:
        inits["a_zp"] = np.array(za, np.uint8)
        ins[2] = "a_zp"
    zb = 128 if wdt == np.uint8 else 0
    inits["b_zp"] = (np.full(n, zb) if zb_per_col else np.array(zb)).astype(wdt)
    ins[3] = "b_zp"
    node = helper.make_node("MatMulInteger", ins, ["y"])
    save(name, [node], inits, {"a": a}, ["y"], np.int32)


def dynamic(name, shape_x, n):
    """quantize_dynamic's pattern: x -> DynamicQuantizeLinear -> MatMulInteger (uint8
    weights) -> Cast -> Mul(a_scale * b_scale)."""
    k = shape_x[-1]
    x = rng.standard_normal(shape_x).astype(np.float32)
    inits = {"b": weight(np.uint8, k, n), "b_zp": np.array(128, np.uint8),
             "b_scale": np.array(0.01, np.float32)}
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        helper.make_node("MatMulInteger", ["xq", "b", "xz", "b_zp"], ["acc"]),
        helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["xs", "b_scale"], ["s"]),
        helper.make_node("Mul", ["accf", "s"], ["y"]),
    ]
    save(name, nodes, inits, {"x": x}, ["y"], np.float32)


qlinear("qlinear_matmul_u8_tensor", np.uint8, np.int8, (5, 37), 19, False)
qlinear("qlinear_matmul_u8_column", np.uint8, np.int8, (2, 7, 64), 33, True)
qlinear("qlinear_matmul_i8_column", np.int8, np.int8, (9, 48), 16, True)
qlinear("qlinear_matmul_u8w_tensor", np.uint8, np.uint8, (4, 21), 10, False)
matmul_integer("matmul_integer_const_za", np.int8, (6, 40), 17, za=131, zb_per_col=True)
matmul_integer("matmul_integer_u8w", np.uint8, (3, 5, 29), 12, za=7)
matmul_integer("matmul_integer_no_zp", np.int8, (8, 16), 24)
dynamic("dynamic_matmul", (2, 6, 50), 21)


def qlinear_conv(name, xshape, m, kernel, group=1, strides=(1, 1), pads=(0, 0, 0, 0), dil=(1, 1)):
    c = xshape[1]
    x = act(np.uint8, xshape)
    w = rng.integers(-64, 64, size=(m, c // group) + kernel).astype(np.int8)
    inits = {
        "x_scale": np.array(0.02, np.float32), "x_zp": np.array(rng.integers(100, 150), np.uint8),
        "w": w, "w_scale": rng.uniform(0.002, 0.01, m).astype(np.float32),
        "w_zp": np.zeros(m, np.int8), "y_scale": np.array(0.1, np.float32),
        "y_zp": np.array(120, np.uint8), "bias": rng.integers(-2000, 2000, m).astype(np.int32),
    }
    ins = ["x", "x_scale", "x_zp", "w", "w_scale", "w_zp", "y_scale", "y_zp", "bias"]
    node = helper.make_node("QLinearConv", ins, ["y"], group=group, strides=list(strides),
                            pads=list(pads), dilations=list(dil))
    save(name, [node], inits, {"x": x}, ["y"], np.uint8)


def dynamic_conv(name, xshape, m, kernel, pads=(1, 1, 1, 1), group=1):
    """quantize_dynamic's conv: x -> DynamicQuantizeLinear -> ConvInteger (uint8 weights)
    -> Cast -> Mul."""
    c = xshape[1]
    x = rng.standard_normal(xshape).astype(np.float32)
    inits = {"w": (rng.integers(-64, 64, size=(m, c // group) + kernel) + 128).astype(np.uint8),
             "w_zp": np.array(128, np.uint8), "w_scale": np.array(0.01, np.float32)}
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
        helper.make_node("ConvInteger", ["xq", "w", "xz", "w_zp"], ["acc"], pads=list(pads), group=group),
        helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["xs", "w_scale"], ["s"]),
        helper.make_node("Mul", ["accf", "s"], ["y"]),
    ]
    save(name, nodes, inits, {"x": x}, ["y"], np.float32)


def conv_integer(name, xshape, m, kernel, pads=(0, 0, 0, 0), strides=(1, 1)):
    c = xshape[1]
    inits = {"w": rng.integers(-64, 64, size=(m, c) + kernel).astype(np.int8),
             "x_zp": np.array(77, np.uint8), "w_zp": np.array(0, np.int8)}
    node = helper.make_node("ConvInteger", ["x", "w", "x_zp", "w_zp"], ["y"], pads=list(pads),
                            strides=list(strides))
    save(name, [node], inits, {"x": act(np.uint8, xshape)}, ["y"], np.int32)


qlinear_conv("qlinear_conv_3x3_pad", (1, 8, 13, 11), 12, (3, 3), pads=(1, 1, 1, 1))
qlinear_conv("qlinear_conv_stride_dil", (2, 6, 15, 15), 10, (3, 3), strides=(2, 2), pads=(2, 1, 0, 2), dil=(2, 1))
qlinear_conv("qlinear_conv_grouped", (1, 8, 9, 9), 12, (3, 3), group=4, pads=(1, 1, 1, 1))
qlinear_conv("qlinear_conv_depthwise", (1, 16, 12, 12), 16, (3, 3), group=16, pads=(1, 1, 1, 1))
conv_integer("conv_integer_const_zp", (1, 5, 17, 19), 7, (3, 3), pads=(1, 0, 2, 1), strides=(2, 1))
dynamic_conv("dynamic_conv", (1, 6, 14, 14), 9, (3, 3))


def malformed(name, **change):
    """A QLinearMatMul whose quantization parameters are malformed (tests/data/int8_bad): ge
    must refuse it at compile time naming the node."""
    inits = {
        "a_scale": np.array(0.02, np.float32), "a_zp": np.array(128, np.uint8),
        "b": weight(np.int8, 8, 16), "b_scale": np.full(16, 0.01, np.float32),
        "b_zp": np.zeros(16, np.int8), "y_scale": np.array(0.05, np.float32),
        "y_zp": np.array(128, np.uint8),
    }
    inits.update(change)
    ins = ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"]
    node = helper.make_node("QLinearMatMul", ins, ["y"], name="qmm")
    gi = [helper.make_tensor_value_info("a", TensorProto.UINT8, (4, 8))]
    go = [helper.make_tensor_value_info("y", TensorProto.UINT8, (4, 16))]
    g = helper.make_graph([node], name, gi, go, [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    os.makedirs(OUT + "_bad", exist_ok=True)
    onnx.save(m, f"{OUT}_bad/{name}.onnx")


malformed("zero_scale", b_scale=np.array([0.01] * 15 + [0.0], np.float32))
malformed("scale_length", b_scale=np.full(5, 0.01, np.float32))
malformed("zero_point_type", a_zp=np.array(0, np.int8))
malformed("negative_y_scale", y_scale=np.array(-0.05, np.float32))
