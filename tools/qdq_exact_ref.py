#!/usr/bin/env python3
"""Is ge's int8 execution of QDQ models exact? An exact reference for corpus/quant/*_qdq.

onnxruntime's outputs (test_data_set_0, and a fresh InferenceSession) are no ground truth
for a QDQ model: where its CPU EP does not fuse a QDQ group into an int8 kernel it runs it as
DequantizeLinear -> float32 op -> QuantizeLinear, and float32 rounding (in DequantizeLinear's
product, in the accumulation, in the requantizing division) moves a value across a rounding
boundary now and then; the 1-LSB slip then propagates and grows through later layers.

This script builds the reference that has no such error: the QDQ graph's real-number meaning,
evaluated in float64 with one rounding per QuantizeLinear.

  * The model is rewritten to float64. Every float32 initializer, Constant, ConstantOfShape
    value, Cast(to=float) and graph input/output becomes double (Resize's `scales`, which
    must stay float, gets a Cast back to float; it is a float32 value, so nothing changes).
  * DequantizeLinear(x, s, zp, axis) -> (Cast(x, double) - Cast(zp, double)) * Cast(s, double),
    per-axis s and zp reshaped to [C, 1, ...] from the input's rank (initializer dims or
    shape inference). In double, (x - zp) * s is exact (a <=17-bit integer times a 24-bit
    float32 significand).
  * QuantizeLinear(x, s, zp) -> Cast(Clip(Round(x / s) + zp, qmin, qmax), int type), all in
    double; ONNX Round is round-half-to-even (np.round), Clip saturates.
  * The graph is run by onnx.reference.ReferenceEvaluator in float64, with numpy overrides
    for ops whose reference code is too slow or wrong (Conv, MaxPool, AveragePool, Resize
    nearest, LRN) and a Round that also records how close each rounded value came to a
    rounding tie (x.5). `--selftest` checks every override against onnx.reference (and LRN,
    whose onnx.reference code sums over the batch axis instead of channels, against a loop
    over the spec formula).

Why this is exact: Conv and Gemm are accumulated in integers (see to_float64), so the value
reaching each Round has seen a handful of correctly rounded double operations (error well
below 1e-12 LSB; Sigmoid/Softmax/LRN/HardSigmoid groups likewise), and the Round gives the
real number's result unless that lies within ~1e-12 LSB of a .5 tie. The Round override
records, over all rounded values, `min_dist_to_tie` (smallest 0 < |frac - 0.5|; 7e-9..8e-7
LSB on these models, far above the error), `near_ties` (within 1e-6 LSB, where float32
arithmetic can round either way) and `exact_ties` (frac == 0.5 in double: here averages of
equal-scale integers and Concat inputs whose scale is exactly half the output's, values that
are real ties and that ONNX rounds to even). `--float-accumulation` evaluates Conv/Gemm as
written (double sums of dequantized products) instead: on all six *_qdq models both give
the same integer at every QuantizeLinear.

It then compares three outputs per graph output in LSBs of its quantization step (the
manifest's "lsb", the scale of the DequantizeLinear writing it; each output is mapped to its
integer code round(v / lsb), so differences are whole LSBs):
    ge     target/release/ge compile + run (tools/quant_table.py's `run`), per --levels
    ORT    onnxruntime on the original model: ORT_ENABLE_ALL, int8 allowed
           (`session.qdqisint8allowed=1`, its int8 configuration), CPU EP, 1 thread (the
           stored test_data_set_0 outputs were made the same way; the table says whether
           they match the fresh run bit for bit)
    exact  this float64 evaluation

End-to-end differences say little about where an engine is inexact: one 1-LSB slip early
in a network can grow to several LSB at the output (in yolov8n_320_qdq a single input
position does). `--locate` therefore also re-runs ge and ORT with every QuantizeLinear
output exposed as a graph output, and evaluates the float64 rewrite with those int8 tensors
*fed in* as inputs: each group's exact result given the engine's own inputs. A mismatch is
a local slip of that engine at that QuantizeLinear, reported with how far (in LSB) the exact
value was from a .5 tie there (~1e-6: float32 requantization; 0: an exact tie not rounded
to even; up to 0.5: a different function, e.g. a table-driven Softmax). It also names the
first tensor, in graph order, that differs from the exact run, and checks that exposing the
tensors left the engine's graph outputs unchanged (ORT's fusions can change; then its
local figures describe the exposed graph, not the original).

    python3 tools/qdq_exact_ref.py [--cases a,b] [--levels O2] [--json OUT] [--ge PATH]
                                   [--locate auto|all|none]
    python3 tools/qdq_exact_ref.py --selftest

`--locate auto` (the default) locates the cases where ge is more than 1 LSB off the exact
outputs at some level.

Float64 semantics chosen for the non-linear ops (those of onnx.reference, in double):
Sigmoid 1/(1+exp(-x)), Softmax exp(x - max)/sum, HardSigmoid max(0, min(1, alpha*x + beta))
with alpha/beta the model's float32 attribute values taken exactly (e.g. 0.1666666716337204,
not 1/6), LRN x / (bias + alpha/size * sum x^2) ** beta, AveragePool sum/count, Resize
nearest by the spec's coordinate formulas (exact here: integer scale 2, asymmetric, floor).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import OpRun
from onnx.reference.ops.op_resize import Resize as RefResize

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import difftest  # noqa: E402  (_with_outputs)
import quant_table  # noqa: E402  (cases, read_pb, run: the corpus conventions)

DOUBLE = TensorProto.DOUBLE
FLOAT = TensorProto.FLOAT
TIE_EPS = 1e-6  # |frac(x) - 0.5| below this (and not 0) counts as a near-tie


# --------------------------------------------------------------------------
# rewrite a QDQ model into float64 with exact Q/DQ
# --------------------------------------------------------------------------


def _f64_tensor(t: TensorProto) -> TensorProto:
    return numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float64), t.name)


def _retype(vi: onnx.ValueInfoProto) -> None:
    tt = vi.type.tensor_type
    if tt.elem_type == FLOAT:
        tt.elem_type = DOUBLE


def to_float64(model: onnx.ModelProto, integer_accumulation: bool = True) -> onnx.ModelProto:
    """The model with every float32 tensor made double and Q/DQ expanded into double ops.

    With `integer_accumulation`, a Conv or Gemm whose data input is a per-tensor
    DequantizeLinear and whose weight is a DequantizeLinear (per tensor, or per output
    channel) is computed as its algebraic equivalent

        Conv(x - zx, w - zw) * (sx * sw) + bias        (Gemm alike, alpha/beta applied)

    The convolution of integer-valued doubles is exact (|sums| < 2^53), sx * sw is exact
    (two 24-bit significands), so the value reaching QuantizeLinear has seen three roundings
    (the product, the bias add, the division by the output scale) instead of one per
    accumulated term: its error is far below 1e-12 LSB, and its rounding is the real
    number's unless the latter is that close to a .5 tie."""
    inferred = onnx.shape_inference.infer_shapes(model)
    g = model.graph
    rank = {i.name: len(i.dims) for i in g.initializer}
    for vi in list(inferred.graph.value_info) + list(g.input) + list(g.output):
        if vi.type.tensor_type.HasField("shape"):
            rank.setdefault(vi.name, len(vi.type.tensor_type.shape.dim))
    init_shape = {i.name: tuple(i.dims) for i in g.initializer}
    int_dtype = {i.name: helper.tensor_dtype_to_np_dtype(i.data_type) for i in g.initializer}
    for vi in list(inferred.graph.value_info) + list(g.input) + list(g.output):
        et = vi.type.tensor_type.elem_type
        if et:
            int_dtype.setdefault(vi.name, helper.tensor_dtype_to_np_dtype(et))

    out = onnx.ModelProto()
    out.CopyFrom(model)
    og = out.graph
    del og.value_info[:]
    del og.initializer[:]
    for t in g.initializer:
        og.initializer.append(_f64_tensor(t) if t.data_type == FLOAT else t)
    for vi in list(og.input) + list(og.output):
        _retype(vi)

    nodes: list[onnx.NodeProto] = []
    consts: list[TensorProto] = []
    counter = [0]

    def fresh(base: str) -> str:
        counter[0] += 1
        return f"{base}__f64_{counter[0]}"

    def const(base: str, value: np.ndarray) -> str:
        name = fresh(base)
        consts.append(numpy_helper.from_array(value, name))
        return name

    def cast_double(name: str) -> str:
        o = fresh(name + "_d")
        nodes.append(helper.make_node("Cast", [name], [o], to=DOUBLE, name=o))
        return o

    def per_axis(name: str, param: str, axis: int, x: str, node: onnx.NodeProto) -> str:
        """`param` (already double) reshaped to broadcast along `axis` of `x` if it is 1-D."""
        shape = init_shape.get(param)
        if shape is not None and (len(shape) == 0 or int(np.prod(shape)) == 1):
            return name  # per-tensor: broadcasts as is
        if x not in rank:
            raise RuntimeError(f"{node.name or node.op_type}: rank of {x!r} unknown")
        r = rank[x]
        ax = axis % r
        if ax == r - 1:
            return name
        o = fresh(name + "_r")
        shape_c = const(name + "_shape", np.array([-1] + [1] * (r - 1 - ax), dtype=np.int64))
        nodes.append(helper.make_node("Reshape", [name, shape_c], [o], name=o))
        return o

    dq: dict[str, dict] = {}  # DequantizeLinear output -> its centered integers and scale

    def accumulate_exactly(n: onnx.NodeProto, attrs: dict) -> bool:
        """Emits the integer-accumulation form of Conv/Gemm `n` if its inputs allow it."""
        dx, dw = dq.get(n.input[0]), dq.get(n.input[1])
        if not dx or not dw or not dx["per_tensor"] or not (dw["per_tensor"] or dw["per_axis"]):
            return False
        y_name = n.output[0]
        core = onnx.NodeProto()
        core.CopyFrom(n)
        del core.input[:]
        core.input.extend([dx["centered"], dw["centered"]])
        acc = fresh(y_name + "_acc")
        core.output[:] = [acc]
        core.name = acc
        if n.op_type == "Conv":
            if dw["per_axis"] and dw["axis"] != 0:
                return False
            r = dw["rank"]
            sw = dw["scale"]
            if dw["per_axis"]:
                sw = fresh(sw + "_r")
                shp = const(y_name + "_shape", np.array([1, -1] + [1] * (r - 2), dtype=np.int64))
                nodes.append(helper.make_node("Reshape", [dw["scale"], shp], [sw], name=sw))
            alpha, beta = 1.0, 1.0
        else:  # Gemm: scales along the output column axis of B
            alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
            if dw["per_axis"] and dw["axis"] != (0 if attrs.get("transB", 0) else 1):
                return False
            for a in list(core.attribute):
                if a.name in ("alpha", "beta"):
                    core.attribute.remove(a)
            sw = dw["scale"]
        nodes.append(core)
        scale = fresh(y_name + "_scale")
        nodes.append(helper.make_node("Mul", [dx["scale"], sw], [scale], name=scale))
        if alpha != 1.0:
            scaled = fresh(y_name + "_alpha")
            nodes.append(helper.make_node("Mul", [scale, const(y_name + "_alpha_c", np.array(alpha))],
                                          [scaled], name=scaled))
            scale = scaled
        bias = n.input[2] if len(n.input) > 2 and n.input[2] else None
        prod = fresh(y_name + "_prod") if bias else y_name
        nodes.append(helper.make_node("Mul", [acc, scale], [prod], name=prod))
        if bias:
            if n.op_type == "Conv":
                b = fresh(bias + "_r")
                shp = const(bias + "_shape", np.array([1, -1] + [1] * (r - 2), dtype=np.int64))
                nodes.append(helper.make_node("Reshape", [bias, shp], [b], name=b))
            elif beta != 1.0:
                b = fresh(bias + "_beta")
                nodes.append(helper.make_node("Mul", [bias, const(bias + "_beta_c", np.array(beta))],
                                              [b], name=b))
            else:
                b = bias
            nodes.append(helper.make_node("Add", [prod, b], [y_name], name=y_name))
        return True

    for n in g.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        if integer_accumulation and n.op_type in ("Conv", "Gemm") and accumulate_exactly(n, attrs):
            continue
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in n.attribute):
            raise NotImplementedError(f"{n.op_type} with a subgraph")
        if n.domain not in ("", "ai.onnx"):
            raise NotImplementedError(f"op {n.domain}:{n.op_type}")
        if n.op_type in ("DequantizeLinear", "QuantizeLinear"):
            if attrs.get("block_size", 0):
                raise NotImplementedError("blocked quantization")
            x, s = n.input[0], n.input[1]
            zp = n.input[2] if len(n.input) > 2 and n.input[2] else None
            axis = attrs.get("axis", 1)
            base = n.output[0]
            s_raw = cast_double(s)
            sd = per_axis(s_raw, s, axis, x, n)
            zd = per_axis(cast_double(zp), zp, axis, x, n) if zp else None
            if n.op_type == "DequantizeLinear":
                xd = cast_double(x)
                if zd is not None:
                    c = fresh(base + "_centered")
                    nodes.append(helper.make_node("Sub", [xd, zd], [c], name=c))
                    xd = c
                nodes.append(helper.make_node("Mul", [xd, sd], [base], name=base))
                shape = init_shape.get(s)
                dq[base] = {"centered": xd, "scale": s_raw,
                            "per_tensor": shape is not None and int(np.prod(shape)) == 1,
                            "per_axis": shape is not None and len(shape) == 1 and shape[0] > 1,
                            "axis": axis % rank[x] if rank.get(x) else None, "rank": rank.get(x)}
            else:
                if zp:
                    qdt = int_dtype[zp]
                elif "output_dtype" in attrs and attrs["output_dtype"]:
                    qdt = helper.tensor_dtype_to_np_dtype(attrs["output_dtype"])
                else:
                    qdt = np.dtype(np.uint8)
                if qdt.kind not in "iu":
                    raise NotImplementedError(f"QuantizeLinear to {qdt}")
                info = np.iinfo(qdt)
                ratio, rnd = fresh(base + "_ratio"), base + "__round"
                nodes.append(helper.make_node("Div", [x, sd], [ratio], name=ratio))
                nodes.append(helper.make_node("Round", [ratio], [rnd], name=rnd))
                if zd is not None:
                    shifted = fresh(base + "_shifted")
                    nodes.append(helper.make_node("Add", [rnd, zd], [shifted], name=shifted))
                    rnd = shifted
                lo = const(base + "_qmin", np.array(info.min, dtype=np.float64))
                hi = const(base + "_qmax", np.array(info.max, dtype=np.float64))
                clipped = fresh(base + "_clipped")
                nodes.append(helper.make_node("Clip", [rnd, lo, hi], [clipped], name=clipped))
                nodes.append(helper.make_node("Cast", [clipped], [base], name=base,
                                              to=helper.np_dtype_to_tensor_dtype(qdt)))
            continue
        m = onnx.NodeProto()
        m.CopyFrom(n)
        for a in m.attribute:
            if a.name == "to" and m.op_type == "Cast" and a.i == FLOAT:
                a.i = DOUBLE
            elif a.name == "dtype" and a.type == onnx.AttributeProto.INT and a.i == FLOAT:
                a.i = DOUBLE
            elif a.type == onnx.AttributeProto.TENSOR and a.t.data_type == FLOAT:
                a.t.CopyFrom(_f64_tensor(a.t))
        if m.op_type == "Constant":
            for a in list(m.attribute):
                if a.name in ("value_float", "value_floats"):
                    v = np.array(helper.get_attribute_value(a), dtype=np.float64)
                    m.attribute.remove(a)
                    m.attribute.append(helper.make_attribute("value", numpy_helper.from_array(v)))
        if m.op_type == "Resize" and len(m.input) > 2 and m.input[2]:
            sc = fresh(m.input[2] + "_f32")
            nodes.append(helper.make_node("Cast", [m.input[2]], [sc], to=FLOAT, name=sc))
            m.input[2] = sc
        nodes.append(m)

    og.initializer.extend(consts)
    del og.node[:]
    og.node.extend(nodes)
    return out


def check_no_float32(model: onnx.ModelProto) -> list[str]:
    """Names of tensors shape inference still types float32 (Resize scales casts excluded)."""
    inf = onnx.shape_inference.infer_shapes(model)
    left = [vi.name for vi in list(inf.graph.value_info) + list(inf.graph.output)
            if vi.type.tensor_type.elem_type == FLOAT]
    return [n for n in left if "_f32__f64_" not in n]


# --------------------------------------------------------------------------
# fast float64 overrides for onnx.reference
# --------------------------------------------------------------------------


def _pads_for(auto_pad, in_shape, kernel, strides, dilations, pads):
    """Explicit [begin..., end...] pads for NOTSET / VALID / SAME_UPPER / SAME_LOWER."""
    nd = len(kernel)
    if isinstance(auto_pad, bytes):
        auto_pad = auto_pad.decode()
    if auto_pad in (None, "", "NOTSET"):
        return list(pads) if pads is not None and len(pads) else [0] * (2 * nd)
    if auto_pad == "VALID":
        return [0] * (2 * nd)
    begin, end = [], []
    for i in range(nd):
        eff = (kernel[i] - 1) * dilations[i] + 1
        out = -(-in_shape[i] // strides[i])
        total = max(0, (out - 1) * strides[i] + eff - in_shape[i])
        small, big = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else big)
        end.append(big if auto_pad == "SAME_UPPER" else small)
    return begin + end


def _windows(xp, kernel, strides, dilations):
    """View [N, C, *out, *kernel] of the padded input's windows (no copy)."""
    nd = len(kernel)
    eff = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    if any(xp.shape[2 + i] < eff[i] for i in range(nd)):
        raise ValueError("kernel larger than the padded input")
    w = np.lib.stride_tricks.sliding_window_view(xp, eff, axis=tuple(range(2, 2 + nd)))
    sl = (slice(None), slice(None)) + tuple(slice(None, None, s) for s in strides) \
        + tuple(slice(None, None, d) for d in dilations)
    return w[sl]


def conv_f64(x, w, b=None, group=1, strides=None, dilations=None, pads=None, auto_pad=None):
    """N-d grouped convolution by im2col and one batched matmul (over groups)."""
    nd = x.ndim - 2
    kernel = list(w.shape[2:])
    strides = list(strides or [1] * nd)
    dilations = list(dilations or [1] * nd)
    p = _pads_for(auto_pad, x.shape[2:], kernel, strides, dilations, pads)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p[i], p[i + nd]) for i in range(nd)])
    win = _windows(xp, kernel, strides, dilations)  # [N, C, *O, *K]
    n, c = x.shape[:2]
    m, g = w.shape[0], group
    out_sp = win.shape[2:2 + nd]
    cg, mg = c // g, m // g
    win = win.reshape(n, g, cg, *out_sp, *kernel)
    # -> [N, G, Cg, *K, *O] -> [N, G, Cg*K, P]
    perm = [0, 1, 2] + list(range(3 + nd, 3 + 2 * nd)) + list(range(3, 3 + nd))
    cols = np.ascontiguousarray(win.transpose(perm)).reshape(n, g, cg * int(np.prod(kernel)), -1)
    wm = w.reshape(g, mg, cg * int(np.prod(kernel)))
    y = np.matmul(wm[None], cols).reshape(n, m, *out_sp)
    if b is not None:
        y += b.reshape(1, m, *([1] * nd))
    return y


def pool_f64(x, kind, kernel, strides=None, dilations=None, pads=None, auto_pad=None,
             count_include_pad=0):
    nd = x.ndim - 2
    strides = list(strides or [1] * nd)
    dilations = list(dilations or [1] * nd)
    p = _pads_for(auto_pad, x.shape[2:], kernel, strides, dilations, pads)
    padw = [(0, 0), (0, 0)] + [(p[i], p[i + nd]) for i in range(nd)]
    axes = tuple(range(-nd, 0))
    if kind == "MAX":
        fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        win = _windows(np.pad(x, padw, constant_values=fill), kernel, strides, dilations)
        return win.max(axis=axes)
    s = _windows(np.pad(x, padw), kernel, strides, dilations).sum(axis=axes)
    if count_include_pad:
        return s / float(np.prod(kernel))
    ones = np.pad(np.ones((1, 1) + x.shape[2:]), padw)
    cnt = _windows(ones, kernel, strides, dilations).sum(axis=axes)
    return s / cnt


def lrn_f64(x, alpha, beta, bias, size):
    """LRN per the spec: the square sum runs over channels c - floor((size-1)/2) ..
    c + ceil((size-1)/2)."""
    c1, c2 = (size - 1) // 2, -(-(size - 1) // 2)
    sq = np.pad(x * x, [(0, 0), (c1, c2)] + [(0, 0)] * (x.ndim - 2))
    c = x.shape[1]
    square_sum = sum(sq[:, j:j + c] for j in range(size))
    return x / (bias + (alpha / size) * square_sum) ** beta


def _nearest_index(out_len, in_len, scale, ctm, nearest_mode):
    y = np.arange(out_len, dtype=np.float64)
    if ctm == "asymmetric":
        xo = y / scale
    elif ctm == "half_pixel":
        xo = (y + 0.5) / scale - 0.5
    elif ctm == "pytorch_half_pixel":
        xo = (y + 0.5) / scale - 0.5 if out_len > 1 else np.zeros_like(y) - 0.5
    elif ctm == "align_corners":
        xo = y * (in_len - 1) / (out_len - 1) if out_len > 1 else np.zeros_like(y)
    elif ctm == "tf_half_pixel_for_nn":
        xo = (y + 0.5) / scale
    else:
        return None
    if nearest_mode == "round_prefer_floor":
        i = np.ceil(xo - 0.5)
    elif nearest_mode == "round_prefer_ceil":
        i = np.floor(xo + 0.5)
    elif nearest_mode == "floor":
        i = np.floor(xo)
    elif nearest_mode == "ceil":
        i = np.ceil(xo)
    else:
        return None
    return np.clip(i, 0, in_len - 1).astype(np.int64)


def resize_nearest_f64(x, scales, sizes, ctm, nearest_mode):
    """Nearest-neighbour Resize (no roi / axes), separable: one gather per axis; None if the
    attribute combination is not handled here."""
    idx = []
    for a in range(x.ndim):
        if sizes is not None and len(sizes):
            out_len = int(sizes[a])
            scale = out_len / x.shape[a]
        else:
            scale = float(scales[a])
            out_len = int(np.floor(x.shape[a] * scale))
        ix = _nearest_index(out_len, x.shape[a], scale, ctm, nearest_mode)
        if ix is None:
            return None
        idx.append(ix)
    return x[np.ix_(*idx)]


def _s(v):
    return v.decode() if isinstance(v, bytes) else v


class Conv(OpRun):
    op_domain = ""

    def _run(self, X, W, B=None, auto_pad=None, dilations=None, group=None,
             kernel_shape=None, pads=None, strides=None):
        y = conv_f64(X, W, B, group or 1, strides, dilations, pads, _s(auto_pad))
        return (y.astype(X.dtype),)


class MaxPool(OpRun):
    op_domain = ""

    def _run(self, x, auto_pad=None, ceil_mode=None, dilations=None, kernel_shape=None,
             pads=None, storage_order=None, strides=None):
        if ceil_mode or len(self.onnx_node.output) > 1:
            raise NotImplementedError("MaxPool ceil_mode / Indices")
        return (pool_f64(x, "MAX", list(kernel_shape), strides, dilations, pads,
                         _s(auto_pad)).astype(x.dtype),)


class AveragePool(OpRun):
    op_domain = ""

    def _run(self, x, auto_pad=None, ceil_mode=None, count_include_pad=None, dilations=None,
             kernel_shape=None, pads=None, strides=None):
        if ceil_mode:
            raise NotImplementedError("AveragePool ceil_mode")
        return (pool_f64(x, "AVG", list(kernel_shape), strides, dilations, pads,
                         _s(auto_pad), count_include_pad or 0).astype(x.dtype),)


class LRN(OpRun):
    op_domain = ""

    def _run(self, x, alpha=None, beta=None, bias=None, size=None):
        # the attributes come as np.float32: make them doubles so alpha / size is not
        # rounded to float32
        return (lrn_f64(x, float(alpha), float(beta), float(bias), int(size)).astype(x.dtype),)


class Resize(RefResize):
    """Fast nearest mode; anything else goes to onnx.reference's implementation."""
    op_domain = ""

    def _run(self, X, roi=None, scales=None, sizes=None, antialias=None, axes=None,
             coordinate_transformation_mode=None, cubic_coeff_a=None, exclude_outside=None,
             extrapolation_value=None, keep_aspect_ratio_policy=None, mode=None,
             nearest_mode=None):
        mode, ctm = _s(mode), _s(coordinate_transformation_mode)
        policy = _s(keep_aspect_ratio_policy) or "stretch"
        if mode == "nearest" and not axes and policy == "stretch" and not antialias:
            y = resize_nearest_f64(X, scales, sizes, ctm, _s(nearest_mode) or "round_prefer_floor")
            if y is not None:
                return (y,)
        return super()._run(X, roi, scales, sizes, antialias=antialias, axes=axes,
                            coordinate_transformation_mode=coordinate_transformation_mode,
                            cubic_coeff_a=cubic_coeff_a, exclude_outside=exclude_outside,
                            extrapolation_value=extrapolation_value,
                            keep_aspect_ratio_policy=keep_aspect_ratio_policy, mode=mode,
                            nearest_mode=nearest_mode)


TIE_STATS: dict[str, dict] = {}


class Round(OpRun):
    """np.round (half to even), recording per node how near the rounded values came to .5."""
    op_domain = ""

    def _run(self, x):
        if x.dtype.kind == "f" and x.size:
            d = np.abs(x - np.floor(x) - 0.5)
            TIE_STATS[self.onnx_node.name] = {
                "n": int(x.size),
                "exact_ties": int((d == 0).sum()),
                "near_ties": int(((d > 0) & (d < TIE_EPS)).sum()),
                "min_dist": float(d[d > 0].min()) if (d > 0).any() else None,
            }
        return (np.round(x).astype(x.dtype),)


OVERRIDES = [Conv, MaxPool, AveragePool, LRN, Resize, Round]


def _f64_feeds(feeds: dict) -> dict:
    return {k: np.asarray(v, dtype=np.float64) if v.dtype == np.float32 else v for k, v in feeds.items()}


def exact_outputs(model: onnx.ModelProto, feeds: dict, extra: list[str] = (),
                  integer_accumulation: bool = True) -> tuple[dict, dict]:
    """Graph outputs (and the `extra` intermediate tensors) of the float64 rewrite, and a
    summary of the rounding-tie statistics."""
    m64 = to_float64(model, integer_accumulation)
    left = check_no_float32(m64)
    if left:
        raise RuntimeError(f"float32 tensors left after the rewrite: {left[:5]}")
    TIE_STATS.clear()
    ev = ReferenceEvaluator(m64, new_ops=OVERRIDES)
    names = [o.name for o in m64.graph.output] + list(extra)
    res = ev.run(names, _f64_feeds(feeds))
    mins = [s["min_dist"] for s in TIE_STATS.values() if s["min_dist"] is not None]
    ties = {
        "quantize_nodes": len(TIE_STATS),
        "values_rounded": sum(s["n"] for s in TIE_STATS.values()),
        "exact_ties": sum(s["exact_ties"] for s in TIE_STATS.values()),
        "near_ties": sum(s["near_ties"] for s in TIE_STATS.values()),
        "min_dist_to_tie": min(mins) if mins else None,
        "exact_tie_nodes": {k[:-len("__round")]: s["exact_ties"] for k, s in TIE_STATS.items()
                            if s["exact_ties"]},
    }
    return dict(zip(names, res)), ties


# --------------------------------------------------------------------------
# --locate: where do ge's (and ORT's) integer tensors first leave the exact ones?
# --------------------------------------------------------------------------


def quantize_outputs(model: onnx.ModelProto) -> list[str]:
    return [n.output[0] for n in model.graph.node if n.op_type == "QuantizeLinear"]


def expose(model: onnx.ModelProto, names: list[str]) -> onnx.ModelProto:
    """The model with the tensors `names` added as graph outputs."""
    difftest._imports()  # its module globals (onnx, numpy) are bound on demand
    return difftest._with_outputs(model, names)


def local_model(model: onnx.ModelProto, names: list[str],
                integer_accumulation: bool = True) -> tuple[onnx.ModelProto, dict]:
    """The float64 rewrite with every QuantizeLinear output T turned into a graph input and
    the rewritten QuantizeLinear writing T__local instead: fed an engine's own int8 tensors,
    each T__local is the exact result of T's group *given the engine's inputs to it*.
    Also returns T -> the tensor x / s that T's Round rounds."""
    m64 = to_float64(model, integer_accumulation)
    inf = onnx.shape_inference.infer_shapes(model)
    vis = {vi.name: vi for vi in list(inf.graph.value_info) + list(inf.graph.output)}
    qset = set(names)
    for n in m64.graph.node:
        for k, o in enumerate(n.output):
            if o in qset:
                n.output[k] = o + "__local"
    for n in names:
        m64.graph.input.append(vis[n])
    ratio = {n.name[:-len("__round")]: n.input[0] for n in m64.graph.node
             if n.op_type == "Round" and n.name.endswith("__round")}
    del m64.graph.output[:]
    for n in names:
        m64.graph.output.append(helper.make_tensor_value_info(n + "__local", vis[n].type.tensor_type.elem_type, None))
        m64.graph.output.append(helper.make_tensor_value_info(ratio[n], DOUBLE, None))
    return m64, ratio


def locate(ge: str, case: pathlib.Path, rec: dict, level: str, model: onnx.ModelProto,
           feeds: dict, exact_q: dict, final: dict, integer_accumulation: bool = True) -> dict:
    """Runs ge and ORT with every QuantizeLinear output exposed and reports, per engine:
    whether exposing them left its graph outputs unchanged; the first QuantizeLinear (in
    graph order) whose tensor differs from the exact run's; and every QuantizeLinear whose
    tensor differs from the exact result *given the engine's own inputs* (a local slip),
    with how far from a rounding tie (in LSB) the exact value was at those positions."""
    names = quantize_outputs(model)
    producer = {o: n for n in model.graph.node for o in n.output}
    mx = expose(model, names)
    engines = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        cdir = tmp / "case"
        cdir.mkdir()
        onnx.save(mx, str(cdir / "model.onnx"))
        (cdir / "test_data_set_0").symlink_to(case / "test_data_set_0")
        rec_x = dict(rec, outputs=[{"name": o.name} for o in mx.graph.output])
        _, outs = quant_table.run(ge, cdir, rec_x, level, tmp)
        if not isinstance(outs, dict):
            return {"error": " ".join(outs)}
        engines[f"ge {level}"] = outs
        engines["ORT"] = ort_outputs(cdir / "model.onnx", feeds)
    lm, ratio = local_model(model, names, integer_accumulation)
    ev = ReferenceEvaluator(lm, new_ops=OVERRIDES)
    want = [o.name for o in lm.graph.output]
    report = {}
    for label, outs in engines.items():
        r = {"final_unchanged": all(np.array_equal(outs[o.name], final[label][o.name])
                                    for o in model.graph.output)}
        first = next((n for n in names if not np.array_equal(outs[n], exact_q[n])), None)
        r["first_diff"] = first and {"tensor": first, "op": _group_op(first, producer),
                                     "positions": int((outs[first] != exact_q[first]).sum())}
        f = _f64_feeds(feeds)
        f.update({n: outs[n] for n in names})
        res = dict(zip(want, ev.run(want, f)))
        slips = []
        for n in names:
            d = outs[n].astype(np.int64) - res[n + "__local"].astype(np.int64)
            if d.any():
                x = res[ratio[n]][d != 0]
                dist = np.abs(x - np.floor(x) - 0.5)
                slips.append({"tensor": n, "op": _group_op(n, producer), "positions": int((d != 0).sum()),
                              "max_lsb": int(np.abs(d).max()), "tie_dist_min": float(dist.min()),
                              "tie_dist_max": float(dist.max())})
        r["local_slips"] = slips
        report[label] = r
    return report


def _group_op(q_out: str, producer: dict) -> str:
    """The op whose result a QuantizeLinear quantizes (the graph input's name if none)."""
    q = producer[q_out]
    p = producer.get(q.input[0])
    return p.op_type if p is not None else f"input {q.input[0]}"


# --------------------------------------------------------------------------
# self-test of the overrides against onnx.reference
# --------------------------------------------------------------------------


def _ref_run(node, inputs, opset=19):
    """Runs one node through plain onnx.reference (no overrides)."""
    ins = [helper.make_tensor_value_info(f"i{k}", helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
           for k, v in enumerate(inputs)]
    outs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in node.output]
    k = iter(range(len(inputs)))
    node.input[:] = [f"i{next(k)}" if n else "" for n in node.input]
    g = helper.make_graph([node], "t", ins, outs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    return m, {f"i{k}": v for k, v in enumerate(inputs)}


def selftest(seed: int = 0) -> int:
    rng = np.random.default_rng(seed)
    fails = 0

    def compare(label, m, feeds, tol=1e-12):
        nonlocal fails
        want = ReferenceEvaluator(m).run(None, feeds)[0]
        got = ReferenceEvaluator(m, new_ops=OVERRIDES).run(None, feeds)[0]
        ok = want.shape == got.shape and np.allclose(got, want, rtol=tol, atol=tol)
        fails += not ok
        err = float(np.abs(got - want).max()) if want.shape == got.shape else float("nan")
        print(f"  {'ok ' if ok else 'BAD'} {label}: shape {got.shape}, max |diff| {err:.2e}")

    print("Conv (vs onnx.reference Conv):")
    for (n, c, h, w_, m_, k, g, s, d, p, ap) in [
        (1, 3, 9, 11, 4, 3, 1, 1, 1, [1, 1, 1, 1], None),
        (2, 4, 10, 9, 6, 3, 2, 2, 1, [0, 1, 2, 1], None),
        (1, 6, 12, 12, 6, 3, 6, 1, 2, [2, 2, 2, 2], None),
        (1, 8, 13, 10, 16, 5, 8, 2, 1, [2, 2, 2, 2], None),
        (1, 4, 7, 7, 5, 1, 1, 1, 1, [0, 0, 0, 0], None),
        (1, 3, 9, 8, 4, 3, 1, 2, 1, None, "SAME_UPPER"),
        (1, 3, 9, 8, 4, 4, 1, 3, 1, None, "SAME_LOWER"),
        (1, 3, 9, 8, 4, 3, 1, 2, 1, None, "VALID"),
    ]:
        x = rng.standard_normal((n, c, h, w_))
        wt = rng.standard_normal((m_, c // g, k, k))
        b = rng.standard_normal(m_)
        kw = dict(group=g, strides=[s, s], dilations=[d, d], kernel_shape=[k, k])
        if ap:
            kw["auto_pad"] = ap
        else:
            kw["pads"] = p
        node = helper.make_node("Conv", ["x", "w", "b"], ["y"], **kw)
        compare(f"k{k} g{g} s{s} d{d} {ap or p}", *_ref_run(node, [x, wt, b]))
    x = rng.standard_normal((1, 4, 11))
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 2], strides=[2])
    compare("1-D, no bias", *_ref_run(node, [x, rng.standard_normal((3, 4, 3))]))

    print("MaxPool / AveragePool (vs onnx.reference):")
    for op, k, s, p, cip in [("MaxPool", 3, 2, [0, 0, 0, 0], 0), ("MaxPool", 3, 2, [1, 1, 1, 1], 0),
                             ("MaxPool", 5, 1, [2, 2, 2, 2], 0), ("AveragePool", 3, 2, [1, 1, 1, 1], 0),
                             ("AveragePool", 3, 2, [1, 1, 1, 1], 1), ("AveragePool", 7, 1, [0, 0, 1, 1], 0),
                             ("AveragePool", 7, 1, [0, 0, 0, 0], 0)]:
        x = rng.standard_normal((1, 3, 14, 14))
        kw = dict(kernel_shape=[k, k], strides=[s, s], pads=p)
        if op == "AveragePool":
            kw["count_include_pad"] = cip
        node = helper.make_node(op, ["x"], ["y"], **kw)
        compare(f"{op} k{k} s{s} pads {p} cip {cip}", *_ref_run(node, [x]))

    print("Resize nearest (vs onnx.reference):")
    for ctm, nm, sc in [("asymmetric", "floor", [1, 1, 2, 2]), ("half_pixel", "round_prefer_floor", [1, 1, 1.5, 2.5]),
                        ("asymmetric", "round_prefer_ceil", [1, 1, 3, 0.5]), ("align_corners", "floor", [1, 1, 2, 3])]:
        x = rng.standard_normal((1, 2, 6, 5))
        node = helper.make_node("Resize", ["x", "", "s"], ["y"], mode="nearest",
                                coordinate_transformation_mode=ctm, nearest_mode=nm)
        compare(f"{ctm} {nm} scales {sc}", *_ref_run(node, [x, np.array(sc, dtype=np.float32)]))

    print("Round (vs onnx.reference; half to even):")
    x = np.concatenate([rng.standard_normal(100) * 10, np.arange(-5, 5) + 0.5])
    compare("random and x.5", *_ref_run(helper.make_node("Round", ["x"], ["y"]), [x]))

    print("LRN (vs a loop over the spec formula; onnx.reference's LRN loops over the batch axis):")
    for size in (5, 4, 1):
        x = rng.standard_normal((2, 7, 4, 3))
        # attributes are float32: the model's value is float(np.float32(...)), not the decimal
        alpha, beta, bias = (float(np.float32(v)) for v in (5e-3, 0.75, 1.0))
        want = np.empty_like(x)
        c1, c2 = (size - 1) // 2, -(-(size - 1) // 2)
        for c in range(x.shape[1]):
            ss = (x[:, max(0, c - c1):min(x.shape[1], c + c2 + 1)] ** 2).sum(axis=1)
            want[:, c] = x[:, c] / (bias + alpha / size * ss) ** beta
        node = helper.make_node("LRN", ["x"], ["y"], alpha=alpha, beta=beta, bias=bias, size=size)
        m, feeds = _ref_run(node, [x])
        got = ReferenceEvaluator(m, new_ops=OVERRIDES).run(None, feeds)[0]
        ok = np.allclose(got, want, rtol=1e-13, atol=1e-13)
        fails += not ok
        print(f"  {'ok ' if ok else 'BAD'} size {size}: max |diff| {np.abs(got - want).max():.2e}")
        ref = ReferenceEvaluator(m).run(None, feeds)[0]
        print(f"      (onnx.reference LRN differs from the spec by {np.abs(ref - want).max():.2e})")

    print("Q/DQ rewrite (vs onnx.reference QuantizeLinear / DequantizeLinear on float32):")
    for axis, per_channel, qt in [(1, False, TensorProto.INT8), (0, True, TensorProto.INT8),
                                  (1, True, TensorProto.UINT8), (-1, True, TensorProto.INT8)]:
        shape = (4, 3, 5)
        ch = shape[axis]
        npq = helper.tensor_dtype_to_np_dtype(qt)
        s = (rng.uniform(0.01, 0.1, ch) if per_channel else np.array(0.05)).astype(np.float32)
        z = (rng.integers(-3, 4, ch) if per_channel else np.array(2))
        z = (z + (128 if qt == TensorProto.UINT8 else 0)).astype(npq)
        x = (rng.standard_normal(shape) * 4).astype(np.float32)
        inits = [numpy_helper.from_array(s, "s"), numpy_helper.from_array(z, "z")]
        nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=axis),
                 helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=axis)]
        g = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", FLOAT, shape)],
                              [helper.make_tensor_value_info("q", qt, shape),
                               helper.make_tensor_value_info("y", FLOAT, shape)], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
        q_ref, _ = ReferenceEvaluator(m).run(None, {"x": x})
        m64 = to_float64(m)
        q64, y64 = ReferenceEvaluator(m64, new_ops=OVERRIDES).run(None, {"x": x.astype(np.float64)})
        bshape = [1] * len(shape)
        bshape[axis] = ch
        y_want = (q64.astype(np.float64) - z.astype(np.float64).reshape(bshape if per_channel else ())) \
            * s.astype(np.float64).reshape(bshape if per_channel else ())
        # float32 reference divides in float32: allow its 1-LSB slips only at near-ties
        r = x.astype(np.float64) / s.astype(np.float64).reshape(bshape if per_channel else ())
        near = np.abs(r - np.floor(r) - 0.5) < 1e-5
        ok = (q64.dtype == q_ref.dtype and np.array_equal(q64[~near], q_ref[~near])
              and np.array_equal(y64, y_want) and y64.dtype == np.float64
              and not check_no_float32(m64))
        fails += not ok
        print(f"  {'ok ' if ok else 'BAD'} axis {axis} per_channel {per_channel} "
              f"{np.dtype(npq).name}: q equal (off near-ties), y == (q - zp) * s in double")

    print("Conv / Gemm integer accumulation (vs the graph as written, both in float64):")
    for op in ("Conv", "Gemm"):
        m_, c = 6, 5
        xs, ws = np.float32(0.037), rng.uniform(0.002, 0.01, m_).astype(np.float32)
        if op == "Conv":
            xshape, wshape, yshape, kw = (1, c, 9, 9), (m_, c, 3, 3), (1, m_, 9, 9), dict(pads=[1, 1, 1, 1])
        else:
            xshape, wshape, yshape, kw = (4, c), (m_, c), (4, m_), dict(transB=1, alpha=0.75, beta=1.0)
        inits = [numpy_helper.from_array(np.array(xs), "xs"), numpy_helper.from_array(np.int8(-3), "xz"),
                 numpy_helper.from_array(rng.integers(-64, 64, wshape).astype(np.int8), "w"),
                 numpy_helper.from_array(ws, "ws"), numpy_helper.from_array(np.zeros(m_, np.int8), "wz"),
                 numpy_helper.from_array(rng.integers(-500, 500, m_).astype(np.int32), "b"),
                 numpy_helper.from_array(xs * ws, "bs"), numpy_helper.from_array(np.zeros(m_, np.int32), "bz"),
                 numpy_helper.from_array(np.float32(0.05), "ys"), numpy_helper.from_array(np.int8(1), "yz")]
        nodes = [helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["xd"]),
                 helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=0),
                 helper.make_node("DequantizeLinear", ["b", "bs", "bz"], ["bd"], axis=0),
                 helper.make_node(op, ["xd", "wd", "bd"], ["y"], **kw),
                 helper.make_node("QuantizeLinear", ["y", "ys", "yz"], ["q"])]
        g = helper.make_graph(nodes, op, [helper.make_tensor_value_info("x", TensorProto.INT8, xshape)],
                              [helper.make_tensor_value_info("q", TensorProto.INT8, yshape)], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        feeds = {"x": rng.integers(-128, 128, xshape).astype(np.int8)}
        mi, mf = to_float64(m, True), to_float64(m, False)
        used = any(n.name.startswith("y_acc") for n in mi.graph.node)
        qi = ReferenceEvaluator(mi, new_ops=OVERRIDES).run(None, feeds)[0]
        qf = ReferenceEvaluator(mf, new_ops=OVERRIDES).run(None, feeds)[0]
        ri, rf = (ReferenceEvaluator(mm, new_ops=OVERRIDES).run(
            [n.input[0] for n in mm.graph.node if n.op_type == "Round"], feeds)[0] for mm in (mi, mf))
        ok = used and np.array_equal(qi, qf) and np.abs(ri - rf).max() < 1e-10
        fails += not ok
        print(f"  {'ok ' if ok else 'BAD'} {op}: rewrite used {used}, q equal {np.array_equal(qi, qf)}, "
              f"x/s differs by {np.abs(ri - rf).max():.1e}")

    print("selftest:", "PASS" if not fails else f"{fails} FAILED")
    return 1 if fails else 0


# --------------------------------------------------------------------------
# comparison
# --------------------------------------------------------------------------


def ort_outputs(path: pathlib.Path, feeds: dict) -> dict:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.add_session_config_entry("session.qdqisint8allowed", "1")
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, feeds)))


def codes(v: np.ndarray, lsb: float | None) -> tuple[np.ndarray, float]:
    """Integer codes v / lsb (or v itself when the output has no LSB) and the largest
    distance of v / lsb from an integer (0 for on-grid values)."""
    v = np.asarray(v, dtype=np.float64)
    if not lsb:
        return v, 0.0
    r = v / lsb
    c = np.round(r)
    return c, float(np.abs(r - c).max()) if r.size else 0.0


def diff(a: np.ndarray, b: np.ndarray) -> tuple[float, int]:
    d = np.abs(a - b)
    return float(d.max()), int((d != 0).sum())


def print_locate(name: str, loc: dict, secs: float) -> None:
    print(f"  locate ({secs:.1f}s):")
    if "error" in loc:
        print(f"    error: {loc['error']}")
        return
    for label, r in loc.items():
        f = r["first_diff"]
        slips = r["local_slips"]
        print(f"    {label}: exposing the QuantizeLinear outputs left its graph outputs "
              f"{'unchanged' if r['final_unchanged'] else 'CHANGED'}; first tensor off the exact run: "
              + (f"{f['tensor']} ({f['op']}, {f['positions']} positions)" if f else "none"))
        print(f"    {label}: {sum(s['positions'] for s in slips)} local slips (exact given its own "
              f"inputs) in {len(slips)} QuantizeLinear outputs"
              + (f"; exact value's distance from a .5 tie at them "
                 f"{min(s['tie_dist_min'] for s in slips):.1e}..{max(s['tie_dist_max'] for s in slips):.1e} LSB"
                 if slips else ""))
        for s in slips:
            print(f"      {s['tensor']} ({s['op']}): {s['positions']} x {s['max_lsb']} LSB, "
                  f"tie distance {s['tie_dist_min']:.1e}..{s['tie_dist_max']:.1e}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ge", default=str(ROOT / "target/release/ge"))
    ap.add_argument("--levels", default="O2")
    ap.add_argument("--cases", default="", help="comma-separated; default: every *_qdq case")
    ap.add_argument("--json", default=None)
    ap.add_argument("--locate", choices=("auto", "all", "none"), default="auto",
                    help="per-QuantizeLinear search for where ge/ORT leave the exact tensors: "
                         "auto = cases where ge is more than 1 LSB off at some level")
    ap.add_argument("--float-accumulation", action="store_true",
                    help="evaluate Conv/Gemm as written (double sums of dequantized products) "
                         "instead of the exact integer accumulation; a cross-check")
    ap.add_argument("--selftest", action="store_true")
    a = ap.parse_args()
    if a.selftest:
        return selftest()
    only = [c for c in a.cases.split(",") if c]
    todo = [(case, rec) for case, rec in quant_table.cases(only)
            if only or rec["name"].endswith("_qdq")]
    levels = a.levels.split(",")
    rows = []
    for case, rec in todo:
        model = onnx.load(str(case / "model.onnx"))
        feeds = {i["name"]: quant_table.read_pb(case / "test_data_set_0" / f"input_{j}.pb")
                 for j, i in enumerate(rec["inputs"])}
        t0 = time.time()
        exact, ties = exact_outputs(model, feeds, quantize_outputs(model), not a.float_accumulation)
        t_exact = time.time() - t0
        t0 = time.time()
        ort_out = ort_outputs(case / "model.onnx", feeds)
        t_ort = time.time() - t0
        ge_out, t_ge = {}, {}
        for level in levels:
            t0 = time.time()
            with tempfile.TemporaryDirectory() as tmp:
                _, outs = quant_table.run(a.ge, case, rec, level, pathlib.Path(tmp))
            t_ge[level] = time.time() - t0
            ge_out[level] = outs if isinstance(outs, dict) else {"error": " ".join(outs)}
        row = {"case": rec["name"], "seconds": {"exact_f64": round(t_exact, 1), "ort": round(t_ort, 1),
                                                "ge": {k: round(v, 1) for k, v in t_ge.items()}},
               "ties": ties, "outputs": []}
        for j, o in enumerate(rec["outputs"]):
            lsb = o.get("lsb")
            stored = quant_table.read_pb(case / "test_data_set_0" / f"output_{j}.pb")
            ex, off_ex = codes(exact[o["name"]], lsb)
            ort_c, off_ort = codes(ort_out[o["name"]], lsb)
            cell = {"output": o["name"], "lsb": lsb, "size": int(ex.size),
                    "ort_matches_stored": bool(np.array_equal(ort_out[o["name"]], stored)),
                    "ort_vs_exact": diff(ort_c, ex), "off_grid": max(off_ex, off_ort), "levels": {}}
            for level in levels:
                outs = ge_out[level]
                if "error" in outs:
                    cell["levels"][level] = {"error": outs["error"]}
                    continue
                ge_c, off_ge = codes(outs[o["name"]], lsb)
                cell["off_grid"] = max(cell["off_grid"], off_ge)
                cell["levels"][level] = {"ge_vs_exact": diff(ge_c, ex), "ge_vs_ort": diff(ge_c, ort_c)}
            row["outputs"].append(cell)
        rows.append(row)
        print(f"{rec['name']}: exact {t_exact:.1f}s, ort {t_ort:.1f}s, ge "
              + ", ".join(f"{k} {v:.1f}s" for k, v in t_ge.items())
              + f"; ties: exact {ties['exact_ties']} near {ties['near_ties']} "
              f"(min dist {ties['min_dist_to_tie']})", flush=True)
        worst = {lv: max((c["levels"][lv].get("ge_vs_exact", (np.inf,))[0] for c in row["outputs"]),
                         default=0) for lv in levels}
        for level in levels:
            if a.locate == "all" or (a.locate == "auto" and worst[level] > 1):
                t0 = time.time()
                final = {f"ge {level}": ge_out[level], "ORT": ort_out}
                row.setdefault("locate", {})[level] = loc = locate(
                    a.ge, case, rec, level, model, feeds, exact, final, not a.float_accumulation)
                print_locate(rec["name"], loc, time.time() - t0)

    unit = "LSB" if all(c["lsb"] for r in rows for c in r["outputs"]) else "LSB/abs"
    print()
    print(f"| case | output | level | ge−exact max {unit} (#pos) | ORT−exact max (#pos) | ge−ORT max (#pos) "
          f"| elems | exact ties / near ties / min tie dist (LSB) | ORT = stored |")
    print("|---|---|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        for c in r["outputs"]:
            for level, lc in c["levels"].items():
                t = r["ties"]
                if "error" in lc:
                    ge_x = ge_o = f"error: {lc['error'][:50]}"
                else:
                    ge_x = "{:g} ({})".format(*lc["ge_vs_exact"])
                    ge_o = "{:g} ({})".format(*lc["ge_vs_ort"])
                print(f"| {r['case']} | {c['output']} | {level} | {ge_x} | "
                      + "{:g} ({})".format(*c["ort_vs_exact"])
                      + f" | {ge_o} | {c['size']} | {t['exact_ties']} / {t['near_ties']} / "
                      f"{t['min_dist_to_tie'] or 0:.1e} | "
                      f"{'yes' if c['ort_matches_stored'] else 'no'} |")
    located = [(r["case"], lv, loc) for r in rows for lv, loc in r.get("locate", {}).items() if "error" not in loc]
    if located:
        print()
        print("| case | engine | local slips: positions (QuantizeLinear outputs) | their tie distance, LSB "
              "| first tensor off the exact run | outputs unchanged when exposed |")
        print("|---|---|---:|---|---|---|")
        for case, lv, loc in located:
            for label, r in loc.items():
                sl = r["local_slips"]
                dist = (f"{min(x['tie_dist_min'] for x in sl):.1e}..{max(x['tie_dist_max'] for x in sl):.1e}"
                        if sl else "—")
                f = r["first_diff"]
                print(f"| {case} | {label} | {sum(x['positions'] for x in sl)} ({len(sl)}) | {dist} | "
                      + (f"{f['tensor']} ({f['op']})" if f else "none")
                      + f" | {'yes' if r['final_unchanged'] else 'NO'} |")
    bad = [(r["case"], c["output"], c["off_grid"]) for r in rows for c in r["outputs"] if c["off_grid"] > 1e-3]
    if bad:
        print("warning: outputs off the LSB grid (v / lsb not an integer):", bad)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
