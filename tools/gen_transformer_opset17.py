#!/usr/bin/env python3
"""Generate corpus/transformer17: a BERT-style encoder block at opset 17 in the form
torch.onnx.export writes it there (native ops, not decomposed LayerNorm).

    python3 tools/gen_transformer_opset17.py [--out DIR] [--force]

Writes DIR/transformer17/ (DIR defaults to <repo>/corpus) as one `ge check` case:

    transformer17/model.onnx
    transformer17/test_data_set_0/input_0.pb     x, float32 [1, 16, 64]
    transformer17/test_data_set_0/output_0.pb    onnxruntime's output (CPU, graph
                                                 optimizations disabled, 1 thread)
    transformer17/.stamp                         hash of this script + package versions

Idempotent: when the case is present and its stamp matches, it prints "up to date" and
writes nothing; otherwise it builds the case in a temporary directory next to it and
renames it into place. --force rebuilds regardless. tools/gen_corpus.py calls `generate`
at its end whenever the transformer part is selected.

The graph (post-LN BERT layer: d_model 64, 4 heads of 16, FFN 256, seq 16, no mask):
  Q/K/V  MatMul(x, W) -> Add(bias, .)                       (torch's Linear export)
  heads  Reshape [1,16,4,16] -> Transpose [0,2,1,3]; K^T by Transpose [0,1,3,2]
  scores MatMul -> Div 4 -> Softmax(axis=-1) -> MatMul V -> Transpose -> Reshape [1,16,64]
  out    Linear -> Add residual x -> LayerNormalization(axis=-1, epsilon=1e-12)
  FFN    Linear -> GELU as torch exports nn.GELU() at opset 17 (Div sqrt2 -> Erf -> Add 1
         -> Mul x -> Mul 0.5) -> Linear -> Add residual -> LayerNormalization
Weights: MatMul N(0, 1/sqrt(fan_in)), biases N(0, 0.1), LayerNorm scale U(0.5, 1.5) and
bias N(0, 0.1); input N(0, 1); all from numpy's default_rng(SEED).
"""
from __future__ import annotations

import argparse
import hashlib
import os
import time
import shutil
import sys

CASE = "transformer17"
SEED = 20240617
OPSET = 17
IR = 8  # what torch.onnx.export writes for opset 17
PKGS = ["onnx", "onnxruntime", "numpy"]
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def stamp_text(script: str = __file__) -> str:
    """A hash of `script` (this one by default) and the package versions it depends on."""
    from importlib import metadata

    h = hashlib.sha256()
    with open(os.path.abspath(script), "rb") as f:
        h.update(f.read())
    for p in PKGS:
        try:
            v = metadata.version(p)
        except metadata.PackageNotFoundError:
            v = "missing"
        h.update(f"\n{p}=={v}".encode())
    return h.hexdigest() + "\n"


def sources_stamp(script: str, paths) -> str:
    """`stamp_text(script)` hashed with the bytes of every file of `paths`, in order: a part
    built from other files is stale when one of them changes."""
    h = hashlib.sha256(stamp_text(script).encode())
    for path in paths:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest() + "\n"


def stamp_holds(d: str, stamp: str, files) -> bool:
    """True when `d/.stamp` reads `stamp` and every file of `files` (relative to `d`) exists."""
    try:
        with open(os.path.join(d, ".stamp")) as f:
            if f.read() != stamp:
                return False
    except OSError:
        return False
    return all(os.path.isfile(os.path.join(d, name)) for name in files)


def install(tmp: str, dest: str) -> None:
    """Renames the finished directory `tmp` to `dest`, replacing what was there."""
    old = None
    if os.path.lexists(dest):
        old = f"{dest}.old{os.getpid()}"
        os.rename(dest, old)
    os.rename(tmp, dest)
    if old:
        shutil.rmtree(old, ignore_errors=True)


def build_into(dest: str, stamp: str, fill) -> None:
    """Runs `fill(tmp)` in a fresh temporary directory next to `dest`, writes `stamp` to its
    .stamp and renames it to `dest`: the part is either the old complete one or the new
    complete one. The temporary directory is removed on any failure."""
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    tmp = f"{dest}.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        fill(tmp)
        with open(os.path.join(tmp, ".stamp"), "w") as f:
            f.write(stamp)
        install(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def refresh_part(out: str, part: str, sources: list, stamp_of, current, fill, log,
                 force: bool) -> str | None:
    """The generate() of a corpus part built from other parts' models: None when a path of
    `sources` is missing; else out/part, rebuilt by `fill(tmp)` unless `current(dest,
    stamp)` (with `stamp_of(out)`)."""
    missing = [s for s in sources if not os.path.isfile(s)]
    if missing:
        log(f"{part}: skipped, sources missing: {', '.join(missing)}")
        return None
    dest = os.path.join(out, part)
    stamp = stamp_of(out)
    if not force and current(dest, stamp):
        log(f"{part}: up to date ({dest})")
        return dest
    t0 = time.time()
    build_into(dest, stamp, fill)
    log(f"{part}: done in {time.time() - t0:.0f}s")
    return dest


def cli(generate, doc: str, argv=None) -> int:
    """The command line of the corpus generators: `[--out DIR] [--force]`."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO_ROOT, "corpus"))
    ap.add_argument("--force", action="store_true", help="rebuild even if the stamp matches")
    a = ap.parse_args(argv)
    generate(a.out, force=a.force)
    return 0


def is_current(d: str) -> bool:
    try:
        with open(os.path.join(d, ".stamp")) as f:
            current = f.read() == stamp_text()
    except OSError:
        return False
    files = ["model.onnx", "test_data_set_0/input_0.pb", "test_data_set_0/output_0.pb"]
    return current and all(os.path.isfile(os.path.join(d, f)) for f in files)


class Graph:
    """Nodes and initializers named the way torch.onnx.export names them."""

    def __init__(self, rng):
        self.rng = rng
        self.nodes = []
        self.inits = []
        self.count: dict = {}
        self.serial = 100

    def node(self, op: str, inputs, scope: str, **attrs) -> str:
        from onnx import helper

        base = f"{scope}/{op}"
        k = self.count.get(base, 0)
        self.count[base] = k + 1
        name = base if k == 0 else f"{base}_{k}"
        out = f"{name}_output_0"
        self.nodes.append(helper.make_node(op, list(inputs), [out], name=name, **attrs))
        return out

    def const(self, value: float, scope: str) -> str:
        import numpy as np
        from onnx import numpy_helper

        t = numpy_helper.from_array(np.array(value, dtype=np.float32))
        return self.node("Constant", [], scope, value=t)

    def init(self, name: str | None, arr) -> str:
        from onnx import numpy_helper

        if name is None:
            self.serial += 1
            name = f"onnx::MatMul_{self.serial}"
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def shape(self, dims) -> str:
        import numpy as np

        self.serial += 1
        return self.init(f"onnx::Reshape_{self.serial}", np.array(dims, np.int64))

    def normal(self, shape, std: float):
        import numpy as np

        return (self.rng.standard_normal(shape, dtype=np.float32) * np.float32(std)).astype(np.float32)

    def linear(self, x: str, d_in: int, d_out: int, scope: str, module: str) -> str:
        w = self.init(None, self.normal((d_in, d_out), 1.0 / d_in**0.5))
        b = self.init(f"{module}.bias", self.normal((d_out,), 0.1))
        return self.node("Add", [b, self.node("MatMul", [x, w], scope)], scope)

    def layer_norm(self, x: str, d: int, scope: str, module: str) -> str:
        import numpy as np

        g = self.init(f"{module}.weight", (self.rng.random(d, dtype=np.float32) + 0.5).astype(np.float32))
        b = self.init(f"{module}.bias", self.normal((d,), 0.1))
        return self.node("LayerNormalization", [x, g, b], scope, axis=-1, epsilon=1e-12)

    def gelu(self, x: str, scope: str) -> str:
        d = self.node("Div", [x, self.const(1.4142135381698608, scope)], scope)
        e = self.node("Erf", [d], scope)
        a = self.node("Add", [e, self.const(1.0, scope)], scope)
        m = self.node("Mul", [x, a], scope)
        return self.node("Mul", [m, self.const(0.5, scope)], scope)


def build():
    """The model and its input."""
    import numpy as np
    from onnx import TensorProto, helper

    S, D, H, F = 16, 64, 4, 256
    Dh = D // H
    g = Graph(np.random.default_rng(SEED))
    sa, ao = "/encoder/layer.0/attention/self", "/encoder/layer.0/attention/output"
    it, oo = "/encoder/layer.0/intermediate", "/encoder/layer.0/output"

    def heads(t: str) -> str:
        r = g.node("Reshape", [t, g.shape([1, S, H, Dh])], sa)
        return g.node("Transpose", [r], sa, perm=[0, 2, 1, 3])

    q = heads(g.linear("x", D, D, sa + "/query", "encoder.layer.0.attention.self.query"))
    k = heads(g.linear("x", D, D, sa + "/key", "encoder.layer.0.attention.self.key"))
    v = heads(g.linear("x", D, D, sa + "/value", "encoder.layer.0.attention.self.value"))
    kt = g.node("Transpose", [k], sa, perm=[0, 1, 3, 2])
    sc = g.node("Div", [g.node("MatMul", [q, kt], sa), g.const(float(np.sqrt(Dh)), sa)], sa)
    p = g.node("Softmax", [sc], sa, axis=-1)
    c = g.node("Transpose", [g.node("MatMul", [p, v], sa)], sa, perm=[0, 2, 1, 3])
    c = g.node("Reshape", [c, g.shape([1, S, D])], sa)
    o = g.linear(c, D, D, ao + "/dense", "encoder.layer.0.attention.output.dense")
    h1 = g.layer_norm(g.node("Add", [o, "x"], ao), D, ao + "/LayerNorm",
                      "encoder.layer.0.attention.output.LayerNorm")
    f = g.gelu(g.linear(h1, D, F, it + "/dense", "encoder.layer.0.intermediate.dense"),
               it + "/intermediate_act_fn")
    f = g.linear(f, F, D, oo + "/dense", "encoder.layer.0.output.dense")
    g.layer_norm(g.node("Add", [f, h1], oo), D, oo + "/LayerNorm", "encoder.layer.0.output.LayerNorm")
    g.nodes[-1].output[0] = "output"  # torch names the graph output after the module output
    graph = helper.make_graph(
        g.nodes, "main_graph",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, S, D])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, S, D])],
        initializer=g.inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR,
        producer_name="ge tools/gen_transformer_opset17.py",
        doc_string="BERT-style post-LN encoder layer at opset 17 (torch export form): native "
                   "LayerNormalization, erf GELU; seq 16, d_model 64, 4 heads, FFN 256",
    )
    x = g.rng.standard_normal((1, S, D), dtype=np.float32)
    return model, x


def reference(model, x):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def generate(out: str, log=print, force: bool = False) -> str:
    """Writes out/transformer17 unless it is current; returns its path."""
    dest = os.path.join(os.path.abspath(out), CASE)
    if not force and is_current(dest):
        log(f"{CASE}: up to date ({dest})")
        return dest
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model, x = build()
    onnx.checker.check_model(model, full_check=True)
    y = np.asarray(reference(model, x))
    if not (np.isfinite(y).all() and y.std() > 1e-3):
        raise RuntimeError(f"{CASE}: badly scaled output (std {y.std()})")
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    tmp = f"{dest}.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "test_data_set_0"))
    try:
        onnx.save(model, os.path.join(tmp, "model.onnx"))
        with open(os.path.join(tmp, "test_data_set_0", "input_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(x, "x").SerializeToString())
        with open(os.path.join(tmp, "test_data_set_0", "output_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(y, "output").SerializeToString())
        with open(os.path.join(tmp, ".stamp"), "w") as f:
            f.write(stamp_text())
        install(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    ops = sorted({n.op_type for n in model.graph.node})
    log(f"{CASE}: {len(model.graph.node)} nodes ({', '.join(ops)}), output std {y.std():.3f} -> {dest}")
    return dest


def main() -> int:
    return cli(generate, __doc__)


if __name__ == "__main__":
    sys.exit(main())
