"""Regenerates tests/data/grid_sample: GridSample cases the onnx node suite lacks (every
mode x padding x align_corners in 2-D, linear/nearest in 3-D, f16 and f64, coordinates
outside [-1, 1]) with outputs from onnx.reference, the spec's implementation (onnxruntime
differs from it on cubic + border).

    python3 tools/gen_grid_sample_cases.py
"""

import os

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "grid_sample")
rng = np.random.default_rng(1)


def case(name, xs, gs, dt=np.float32, **attrs):
    X = rng.standard_normal(xs).astype(dt)
    G = rng.uniform(-1.6, 1.6, gs).astype(dt)
    tp = helper.np_dtype_to_tensor_dtype(np.dtype(dt))
    node = helper.make_node("GridSample", ["X", "G"], ["Y"], **attrs)
    graph = helper.make_graph(
        [node],
        name,
        [helper.make_tensor_value_info("X", tp, xs), helper.make_tensor_value_info("G", tp, gs)],
        [helper.make_tensor_value_info("Y", tp, None)],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    m.ir_version = 9
    if dt == np.float16:
        # ge computes halves in f32 and rounds once; the reference rounds every step.
        m32 = onnx.load_model_from_string(m.SerializeToString())
        for v in list(m32.graph.input) + list(m32.graph.output):
            v.type.tensor_type.elem_type = onnx.TensorProto.FLOAT
        y32 = ReferenceEvaluator(m32).run(None, {"X": X.astype(np.float32), "G": G.astype(np.float32)})[0]
        y = y32.astype(dt)
    else:
        y = ReferenceEvaluator(m).run(None, {"X": X, "G": G})[0]
    m.graph.output[0].CopyFrom(helper.make_tensor_value_info("Y", tp, y.shape))
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    for i, (k, v) in enumerate([("X", X), ("G", G), ("Y", y)]):
        kind = "output_0" if k == "Y" else f"input_{i}"
        with open(os.path.join(d, "test_data_set_0", f"{kind}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v, k).SerializeToString())


for mode in ["nearest", "linear", "cubic"]:
    for pad in ["zeros", "border", "reflection"]:
        for ac in [0, 1]:
            case(f"gs_{mode}_{pad}_{ac}", (1, 2, 4, 3), (1, 3, 4, 2), mode=mode, padding_mode=pad, align_corners=ac)
            if mode != "cubic":
                case(f"gs3d_{mode}_{pad}_{ac}", (1, 1, 3, 2, 4), (1, 2, 2, 3, 3), mode=mode, padding_mode=pad, align_corners=ac)
case("gs_f16_linear", (1, 2, 4, 4), (1, 3, 3, 2), dt=np.float16, mode="linear")
case("gs_f64_cubic", (1, 2, 4, 4), (1, 3, 3, 2), dt=np.float64, mode="cubic", padding_mode="reflection")
