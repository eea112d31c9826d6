"""Shared by the case generators: one single-graph ONNX case with onnxruntime's outputs, in
the layout `ge check` reads (`NAME/model.onnx`, `NAME/test_data_set_0/{input,output}_K.pb`)."""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ELEM = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8, np.int32: TensorProto.INT32,
        np.int64: TensorProto.INT64, np.float32: TensorProto.FLOAT}


def elem(dt):
    return ELEM[np.dtype(dt).type]


def save_case(out_dir, name, nodes, inits, feeds, outs, odt):
    """Builds the graph (opset 13, IR 8), runs it on onnxruntime's CPU provider (one thread)
    and writes the model, its `feeds` and the outputs `outs` (declared `odt`, then typed and
    shaped as onnxruntime returned them)."""
    gi = [helper.make_tensor_value_info(k, elem(v.dtype), v.shape) for k, v in feeds.items()]
    go = [helper.make_tensor_value_info(o, elem(odt), None) for o in outs]
    g = helper.make_graph(nodes, name, gi, go, [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    res = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)
    for o, r in zip(m.graph.output, res):
        o.CopyFrom(helper.make_tensor_value_info(o.name, elem(r.dtype), r.shape))
    d = os.path.join(out_dir, name)
    os.makedirs(d + "/test_data_set_0", exist_ok=True)
    onnx.save(m, d + "/model.onnx")
    for i, (k, v) in enumerate(feeds.items()):
        open(f"{d}/test_data_set_0/input_{i}.pb", "wb").write(numpy_helper.from_array(v, k).SerializeToString())
    for i, (o, r) in enumerate(zip(outs, res)):
        open(f"{d}/test_data_set_0/output_{i}.pb", "wb").write(numpy_helper.from_array(r, o).SerializeToString())
