"""Regenerates tests/data/decomposed: cases for import decompositions that the onnx node
suite lacks or only reaches with run-time inputs pinned — Scan with input/output axes,
directions, a body initializer and an If nested in the body; Loop with scan outputs and an
outer-scope value; DFT/STFT with dft_length padding and truncation, complex input,
two-sided; Col2Im, CenterCropPad, Compress and ReverseSequence with constant (initializer)
inputs; BitCast of a constant and of f16; RotaryEmbedding interleaved, 3-D, partial.
Outputs from onnx.reference (Scan with axes and directions, Loop's scan outputs: onnxruntime).

    python3 tools/gen_decomposed_cases.py
"""

import os

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "decomposed")
rng = np.random.default_rng(7)


def tp(a):
    return h.np_dtype_to_tensor_dtype(a.dtype)


def case(name, nodes, inputs, outputs, inits=(), opset=21, ort=False):
    """inputs: [(name, array)]; outputs: [name]; inits: [(name, array)]. `ort`: outputs from
    onnxruntime (f32 outputs), for what onnx.reference does not implement."""
    graph = h.make_graph(
        nodes,
        name,
        [h.make_tensor_value_info(k, tp(v), v.shape) for k, v in inputs],
        [h.make_tensor_value_info(o, TP.FLOAT if ort else TP.UNDEFINED, None) for o in outputs],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits],
    )
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 10
    if ort:
        import onnxruntime

        sess = onnxruntime.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        ys = sess.run(None, dict(inputs))
    else:
        ys = ReferenceEvaluator(m).run(None, dict(inputs))
    del m.graph.output[:]
    m.graph.output.extend(h.make_tensor_value_info(o, tp(y), y.shape) for o, y in zip(outputs, ys))
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    for i, (k, v) in enumerate(inputs):
        with open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v, k).SerializeToString())
    for i, (k, v) in enumerate(zip(outputs, ys)):
        with open(os.path.join(d, "test_data_set_0", f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v, k).SerializeToString())


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def vi(name, elem):
    return h.make_tensor_value_info(name, elem, None)


# Scan: two scan inputs on different axes (one reversed), a body initializer, outputs
# stacked on a negative axis (reversed) and on axis 0.
body = h.make_graph(
    [
        h.make_node("Add", ["s_in", "b_t"], ["s_out"]),
        h.make_node("Mul", ["a_t", "two"], ["a2"]),
        h.make_node("Add", ["a2", "s_out"], ["y1"]),
        h.make_node("Identity", ["s_out"], ["y2"]),
    ],
    "body",
    [vi("s_in", TP.FLOAT), vi("a_t", TP.FLOAT), vi("b_t", TP.FLOAT)],
    [vi("s_out", TP.FLOAT), vi("y1", TP.FLOAT), vi("y2", TP.FLOAT)],
    initializer=[numpy_helper.from_array(np.array(2.0, np.float32), "two")],
)
case(
    "scan_axes_directions",
    [
        h.make_node(
            "Scan", ["s0", "a", "b"], ["s", "y1", "y2"], body=body, num_scan_inputs=2,
            scan_input_axes=[1, 0], scan_input_directions=[1, 0],
            scan_output_axes=[-1, 0], scan_output_directions=[1, 0],
        )
    ],
    [("s0", f32(3)), ("a", f32(3, 4)), ("b", f32(4, 3))],
    ["s", "y1", "y2"],
    ort=True,
)

# Scan whose body holds an If (condition computed from constants) reading body values.
then_g = h.make_graph([h.make_node("Mul", ["x_t", "s_in"], ["r"])], "then", [], [vi("r", TP.FLOAT)])
else_g = h.make_graph([h.make_node("Sub", ["x_t", "s_in"], ["r2"])], "else", [], [vi("r2", TP.FLOAT)])
body = h.make_graph(
    [
        h.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.array(True), "c")),
        h.make_node("If", ["c"], ["v"], then_branch=then_g, else_branch=else_g),
        h.make_node("Add", ["v", "s_in"], ["s_out"]),
    ],
    "body",
    [vi("s_in", TP.FLOAT), vi("x_t", TP.FLOAT)],
    [vi("s_out", TP.FLOAT), vi("v", TP.FLOAT)],
)
case(
    "scan_nested_if",
    [h.make_node("Scan", ["s0", "x"], ["s", "vs"], body=body, num_scan_inputs=1)],
    [("s0", f32(2)), ("x", f32(3, 2))],
    ["s", "vs"],
)

# Loop: constant trip count and condition, a carried value, a scan output, the iteration
# number and an outer-scope input used in the body.
body = h.make_graph(
    [
        h.make_node("Identity", ["cond_in"], ["cond_out"]),
        h.make_node("Cast", ["i"], ["fi"], to=TP.FLOAT),
        h.make_node("Mul", ["w", "fi"], ["wi"]),
        h.make_node("Add", ["y_in", "wi"], ["y_out"]),
        h.make_node("Mul", ["y_out", "y_out"], ["sq"]),
    ],
    "loop_body",
    [
        h.make_tensor_value_info("i", TP.INT64, []),
        h.make_tensor_value_info("cond_in", TP.BOOL, []),
        h.make_tensor_value_info("y_in", TP.FLOAT, [2, 3]),
    ],
    [vi("cond_out", TP.BOOL), vi("y_out", TP.FLOAT), vi("sq", TP.FLOAT)],
)
case(
    "loop_scan_output",
    [h.make_node("Loop", ["M", "cond", "y0"], ["y", "sqs"], body=body)],
    [("y0", f32(2, 3)), ("w", f32(2, 3))],
    ["y", "sqs"],
    inits=[("M", np.array(4, np.int64)), ("cond", np.array(True))],
    ort=True,  # onnx.reference concatenates scan outputs instead of stacking them
)

# DFT: a real input zero-padded to dft_length, onesided; a complex inverse truncated.
case(
    "dft_pad_onesided",
    [h.make_node("DFT", ["x", "len", "axis"], ["y"], onesided=1)],
    [("x", f32(2, 10, 3, 1))],
    ["y"],
    inits=[("len", np.array(12, np.int64)), ("axis", np.array(1, np.int64))],
    opset=20,
)
case(
    "dft_inverse_truncated",
    [h.make_node("DFT", ["x", "len"], ["y"], axis=2, inverse=1)],
    [("x", f32(1, 3, 8, 2))],
    ["y"],
    inits=[("len", np.array(6, np.int64))],
    opset=19,
)
case(
    "stft_complex_twosided",
    [h.make_node("STFT", ["x", "step", "", "flen"], ["y"], onesided=0)],
    [("x", f32(2, 32, 2))],
    ["y"],
    inits=[("step", np.array(4, np.int64)), ("flen", np.array(8, np.int64))],
    opset=17,
)

# Shape inputs as initializers: nothing pinned.
case(
    "col2im_strided_dilated",
    [h.make_node("Col2Im", ["x", "img", "blk"], ["y"], strides=[2, 1], dilations=[1, 2], pads=[1, 0, 0, 1])],
    [("x", f32(2, 2 * 6, 12))],
    ["y"],
    inits=[("img", np.array([6, 7], np.int64)), ("blk", np.array([2, 3], np.int64))],
    opset=18,
)
case(
    "center_crop_pad_odd",
    [h.make_node("CenterCropPad", ["x", "shape"], ["y"], axes=[-1, 0])],
    [("x", f32(5, 3, 6))],
    ["y"],
    inits=[("shape", np.array([3, 8], np.int64))],
    opset=18,
)
case(
    "compress_const",
    [h.make_node("Compress", ["x", "c"], ["y"], axis=-1)],
    [("x", f32(2, 3, 5))],
    ["y"],
    inits=[("c", np.array([True, False, True, True], bool))],
)
case(
    "reverse_sequence_const",
    [h.make_node("ReverseSequence", ["x", "lens"], ["y"], batch_axis=1, time_axis=0)],
    [("x", f32(5, 3, 2))],
    ["y"],
    inits=[("lens", np.array([5, 1, 3], np.int64))],
)

# BitCast: of a constant (folded) feeding a run-time op, and of f16 to i16.
case(
    "bitcast_const_and_half",
    [
        h.make_node("BitCast", ["k"], ["ki"], to=TP.INT32),
        h.make_node("Add", ["ki", "n"], ["y"]),
        h.make_node("BitCast", ["hx"], ["hy"], to=TP.INT16),
    ],
    [("n", rng.integers(-100, 100, (2, 3)).astype(np.int32)), ("hx", f32(4).astype(np.float16))],
    ["y", "hy"],
    inits=[("k", np.array([[1.0, -2.5, 3.0], [0.0, 7.0, -0.0]], np.float32))],
    opset=26,
)

# RotaryEmbedding: 3-D input, interleaved, partial rotation, position ids as initializer.
case(
    "rotary_3d_interleaved_partial",
    [h.make_node("RotaryEmbedding", ["x", "cos", "sin", "pos"], ["y"], num_heads=2, interleaved=1, rotary_embedding_dim=4)],
    [("x", f32(2, 3, 12)), ("cos", f32(10, 2)), ("sin", f32(10, 2))],
    ["y"],
    inits=[("pos", np.array([[0, 3, 9], [1, 1, 2]], np.int64))],
    opset=23,
)
