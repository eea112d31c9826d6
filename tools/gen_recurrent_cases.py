"""Regenerates tests/data/recurrent: small RNN/GRU/LSTM cases with onnxruntime's outputs,
covering what the onnx node suite does not (sequence_lens masking, linear_before_reset, clip,
activations with alpha/beta, input_forget, bidirectional peepholes).

    python3 tools/gen_recurrent_cases.py
"""
import onnx, numpy as np, os, onnxruntime as ort
from onnx import helper, TensorProto, numpy_helper
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'data', 'recurrent')
rng = np.random.default_rng(0)
def case(name, op, T, B, I, H, dirs, attrs, with_b=True, seq=None, init=True, peep=False, outs=("Y","Y_h","Y_c")):
    g = {"RNN":1,"GRU":3,"LSTM":4}[op]
    X = rng.standard_normal((T,B,I)).astype(np.float32)
    W = (rng.standard_normal((dirs,g*H,I))*0.5).astype(np.float32)
    R = (rng.standard_normal((dirs,g*H,H))*0.5).astype(np.float32)
    feeds = {"X":X,"W":W,"R":R}
    ins = ["X","W","R"]
    if with_b: feeds["B"]=rng.standard_normal((dirs,2*g*H)).astype(np.float32); ins.append("B")
    else: ins.append("")
    if seq is not None: feeds["sl"]=np.array(seq,dtype=np.int32); ins.append("sl")
    else: ins.append("")
    if init: feeds["h0"]=rng.standard_normal((dirs,B,H)).astype(np.float32); ins.append("h0")
    else: ins.append("")
    if op=="LSTM":
        if init: feeds["c0"]=rng.standard_normal((dirs,B,H)).astype(np.float32); ins.append("c0")
        else: ins.append("")
        if peep: feeds["P"]=rng.standard_normal((dirs,3*H)).astype(np.float32); ins.append("P")
    while ins and ins[-1]=="": ins.pop()
    outs = list(outs) if op=="LSTM" else list(outs[:2])
    node = helper.make_node(op, ins, outs, hidden_size=H, **attrs)
    gi = [helper.make_tensor_value_info(k, TensorProto.FLOAT if v.dtype==np.float32 else TensorProto.INT32, v.shape) for k,v in feeds.items()]
    go = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs]
    m = helper.make_model(helper.make_graph([node], name, gi, go), opset_imports=[helper.make_opsetid("",22)])
    m.ir_version = 10
    sess = ort.InferenceSession(m.SerializeToString())
    res = sess.run(None, feeds)
    # set output shapes
    for o, r in zip(m.graph.output, res):
        o.CopyFrom(helper.make_tensor_value_info(o.name, TensorProto.FLOAT, r.shape))
    d = os.path.join(OUT, name); os.makedirs(d+"/test_data_set_0", exist_ok=True)
    onnx.save(m, d+"/model.onnx")
    for i,(k,v) in enumerate(feeds.items()):
        open(f"{d}/test_data_set_0/input_{i}.pb","wb").write(numpy_helper.from_array(v,k).SerializeToString())
    for i,(o,r) in enumerate(zip(outs,res)):
        open(f"{d}/test_data_set_0/output_{i}.pb","wb").write(numpy_helper.from_array(r,o).SerializeToString())
case("gru_lbr_bidir", "GRU", 4, 3, 5, 4, 2, dict(direction="bidirectional", linear_before_reset=1))
case("gru_seq_bidir", "GRU", 4, 3, 5, 4, 2, dict(direction="bidirectional"), seq=[4,2,1])
case("gru_clip_rev", "GRU", 4, 2, 3, 4, 1, dict(direction="reverse", clip=0.5))
case("lstm_seq_bidir_peep", "LSTM", 5, 3, 2, 3, 2, dict(direction="bidirectional"), seq=[5,3,1], peep=True)
case("lstm_seq_rev", "LSTM", 5, 3, 2, 3, 1, dict(direction="reverse"), seq=[2,5,4])
case("lstm_acts", "LSTM", 3, 2, 2, 3, 1, dict(activations=["HardSigmoid","LeakyRelu","Softsign"], activation_alpha=[0.3,0.2], activation_beta=[0.4]))
case("lstm_input_forget", "LSTM", 3, 2, 2, 3, 1, dict(input_forget=1))
case("rnn_relu_bidir", "RNN", 3, 2, 2, 3, 2, dict(direction="bidirectional", activations=["Relu","LeakyRelu"], activation_alpha=[0.1]), seq=[3,2])
case("rnn_noinit_nob", "RNN", 3, 2, 2, 3, 1, dict(), with_b=False, init=False)
