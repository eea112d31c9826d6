#!/usr/bin/env python3
"""Differential testing of ge against onnxruntime on random valid graphs (issue 18).

Graphs come from tools/difftest_gen.py (seeded: graph I of seed S is always the same graph).
Each batch of graphs is written as ONNX backend-test cases (model.onnx + test_data_set_0 with
onnxruntime's outputs: CPU, graph optimizations off, 1 thread) and checked by one
`ge check --suite DIR --check-races` process per opt level (O0-O3) and device profile (edge,
datacenter; streams on: the device's cores, at most 4). A mismatch is minimized (outputs
dropped, nodes cut to graph inputs holding onnxruntime's values, same-shape nodes bypassed,
dead code pruned, while it still fails the same way) and written to tests/data/difftest/,
which `cargo test` (tests/tests/difftest.rs) runs at every level on both devices.

    python3 tools/difftest.py --graphs 5000 --seed 1            # a campaign
    python3 tools/difftest.py --write DIR --graphs 300 --seed 7 # cases only (no ge run)
    python3 tools/difftest.py --corpus corpus/difftest          # the fixed-seed cargo-test batch
                                                                # (stamped: idempotent)
    python3 tools/difftest.py --replay tests/data/difftest/CASE # re-run one case

Needs the pinned packages of tools/requirements.txt and, for campaigns, a built `ge`
(`cargo build --release -p ge-cli`; --ge PATH picks another).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LEVELS = ["O0", "O1", "O2", "O3"]
DEVICES = ["edge", "datacenter"]
CORPUS_SEED, CORPUS_GRAPHS = 20250, 300
MAX_ABS = 1e4


def _imports():
    global np, onnx, numpy_helper, ort, gen
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    sys.path.insert(0, HERE)
    import difftest_gen as gen


def ort_run(model, vals, extra_outputs=()):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.log_severity_level = 4
    names = [o.name for o in model.graph.output]
    if extra_outputs:
        model = _with_outputs(model, extra_outputs)
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    feeds = {i.name: v for i, v in zip(_run_inputs(model), vals)}
    outs = sess.run(None, feeds)
    return dict(zip(names + list(extra_outputs), outs))


def _run_inputs(model):
    inits = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def _with_outputs(model, names):
    """A copy of `model` that also outputs `names` (types from shape inference)."""
    m = onnx.shape_inference.infer_shapes(model)
    types = {v.name: v for v in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output)}
    m2 = onnx.ModelProto()
    m2.CopyFrom(model)
    have = {o.name for o in m2.graph.output}
    for n in names:
        if n not in have:
            m2.graph.output.append(types[n])
    return m2


def sane(outs):
    for v in outs.values():
        if v.dtype.kind == "f" and (not np.all(np.isfinite(v)) or (v.size and np.abs(v).max() > MAX_ABS)):
            return False
    return True


def make_case(seed, index, strict=False):
    """(model, input values, ops) for graph `index` of campaign `seed`, retried on a fresh
    sub-seed while the graph is rejected (checker, onnxruntime error, non-finite or huge
    outputs)."""
    for attempt in range(20):
        sub = int.from_bytes(hashlib.sha256(f"{seed}:{index}:{attempt}".encode()).digest()[:8], "little")
        r = gen.build(sub)
        if r is None:
            continue
        m, vals, used = r
        try:
            gen.onnx_check(m)
            outs = ort_run(m, vals)
        except Exception:  # an invalid draw: try the next sub-seed
            continue
        if sane(outs) and (not strict or well_conditioned(m, vals, outs)):
            return m, vals, used, outs
    raise RuntimeError(f"no valid graph for seed {seed} index {index}")


def write_case(d, model, vals, outs, meta=None):
    ts = os.path.join(d, "test_data_set_0")
    os.makedirs(ts, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for i, (inp, v) in enumerate(zip(_run_inputs(model), vals)):
        with open(os.path.join(ts, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(v, inp.name).SerializeToString())
    for j, o in enumerate(model.graph.output):
        with open(os.path.join(ts, f"output_{j}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(outs[o.name], o.name).SerializeToString())
    if meta is not None:
        with open(os.path.join(d, "case.json"), "w") as f:
            json.dump(meta, f, indent=1, sort_keys=True)


RTOL, ATOL = 1e-3, 1e-4  # ge check's defaults


def ge_check(ge, path, level, device, suite=True, rtol=RTOL, atol=ATOL):
    """{case name: (verdict, reason)} from one `ge check` process."""
    cmd = [ge, "check"] + (["--suite", path] if suite else [path]) + [
        "--opt-level", level, "--device", device, "--check-races",
        "--rtol", repr(rtol), "--atol", repr(atol)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    res = {}
    for line in p.stdout.splitlines():
        for v in ("PASS", "FAIL", "UNSUPPORTED"):
            if line.startswith(v + " "):
                rest = line[len(v) + 1:]
                name, _, why = rest.partition(": ")
                name = name.split(" (")[0]
                res[name] = (v, why)
    if not res:
        name = os.path.basename(os.path.normpath(path))
        res[name] = ("FAIL", "ge check printed nothing: " + (p.stderr.strip()[-300:] or f"exit {p.returncode}"))
    return res


def to_f64(model):
    """`model` computing in float64 (float tensors, constants, casts and window dtypes moved to
    double), to tell a ge bug from an f32 inaccuracy of the reference."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    F32, F64 = onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE

    def tensor(t):
        if t.data_type == F32:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float64), t.name))

    def graph(g):
        del g.value_info[:]
        for vi in list(g.input) + list(g.output):
            if vi.type.tensor_type.elem_type == F32:
                vi.type.tensor_type.elem_type = F64
        for t in g.initializer:
            tensor(t)
        for n in g.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.TENSOR:
                    tensor(a.t)
                elif a.type == onnx.AttributeProto.GRAPH:
                    graph(a.g)
                elif a.name in ("to", "output_datatype", "dtype") and a.i == F32:
                    a.i = F64
            if n.op_type in ("HannWindow", "HammingWindow", "BlackmanWindow", "EyeLike") and \
                    not any(a.name in ("output_datatype", "dtype") for a in n.attribute):
                n.attribute.append(onnx.helper.make_attribute(
                    "output_datatype" if "Window" in n.op_type else "dtype", F64))

    graph(m.graph)
    return m


def _f64_ops():
    """onnx.reference kernels for function ops whose expanded bodies hold f32 constants
    (so the float64 model would fail on a dtype mismatch), computed in the input's dtype."""
    from onnx.reference.op_run import OpRun

    class MeanVarianceNormalization(OpRun):
        op_domain = ""

        def _run(self, x, axes=None):
            ax = tuple(axes) if axes is not None else (0, 2, 3)
            d = x - x.mean(axis=ax, keepdims=True)
            # ONNX's math, (X - E[X]) / sqrt(Var[X] + 1e-9), with the variance of the centred
            # values (the spec's E[X^2] - E[X]^2 cancels even in float64 when |mean| >> std).
            return (d / np.sqrt((d * d).mean(axis=ax, keepdims=True) + 1e-9),)

    return [MeanVarianceNormalization]


def f64_outputs(model, vals):
    """Outputs of `model` computed in float64 (onnxruntime, or onnx.reference where
    onnxruntime lacks a double kernel); None if neither runs it."""
    m64 = to_f64(model)
    v64 = [v.astype(np.float64) if v.dtype == np.float32 else v for v in vals]
    try:
        outs = ort_run(m64, v64)
    except Exception:  # no double kernel (Conv…): onnx.reference, in float64 too
        try:
            from onnx.reference import ReferenceEvaluator

            ys = ReferenceEvaluator(m64, new_ops=_f64_ops()).run(
                None, {i.name: v for i, v in zip(_run_inputs(m64), v64)})
            outs = {o.name: y for o, y in zip(m64.graph.output, ys)}
        except Exception:
            return None
    return outs


def well_conditioned(model, vals, outs):
    """onnxruntime's f32 outputs agree with float64 well inside ge check's tolerance, so the
    fixed-seed batch holds no case whose f32 reference is itself off."""
    ref = f64_outputs(model, vals)
    if ref is None:
        return False
    for k, v in outs.items():
        r = ref.get(k)
        if v.dtype.kind == "f" and (r is None or not np.allclose(v, r, rtol=2e-4, atol=2e-5)):
            return False
    return True


def reference_inaccurate(ge, model, vals, level, device):
    """True when ge fails against onnxruntime's f32 outputs but passes against its float64
    outputs (rounded to f32; onnx.reference's where onnxruntime lacks a double kernel): the
    f32 reference is the inaccurate one. None when the model cannot run in float64."""
    outs = f64_outputs(model, vals)
    if outs is None:
        return None
    f64 = {k: (v.astype(np.float32) if v.dtype == np.float64 else v) for k, v in outs.items()}
    # Only the outputs that fail against onnxruntime's f32 take float64 values (onnx.reference
    # and onnxruntime differ elsewhere, e.g. on LRN), one at a time as ge check names them.
    want = ort_run(model, vals)
    names = [o.name for o in model.graph.output]
    swapped = set()
    d = tempfile.mkdtemp(prefix="ge-f64-")
    try:
        while True:
            c = os.path.join(d, f"c{len(swapped)}")
            write_case(c, model, vals, want)
            verdict, why = next(iter(ge_check(ge, c, level, device, suite=False).values()))
            if verdict == "PASS":
                return bool(swapped)
            k = why.split("output ", 1)[1].split(" ", 1)[0] if why.startswith("output ") else ""
            if not k.isdigit() or int(k) in swapped or int(k) >= len(names):
                return False
            swapped.add(int(k))
            want[names[int(k)]] = f64[names[int(k)]]
    finally:
        shutil.rmtree(d, ignore_errors=True)


def f32_ill_conditioned(ge, model, vals, level, device):
    """True when the graph's answer is not determined in f32 to within ge check's tolerance
    and ge is no less accurate than onnxruntime: onnxruntime's own f32 outputs are at least
    half the tolerance away from the float64 outputs (e = max |ort − f64| / (atol + rtol·|f64|)
    ≥ 0.5; e.g. a normalization over values whose spread is a few ulps of their mean, where
    one ulp of difference in a Sigmoid moves the result by 0.1%), and ge passes against the
    float64 outputs at twice onnxruntime's error (tolerances scaled by max(1, 2e)). Such a
    mismatch says which library rounded the other way, not that either is wrong."""
    ref = f64_outputs(model, vals)
    if ref is None:
        return False
    ort32 = ort_run(model, vals)
    e = 0.0
    for k, v in ort32.items():
        r = ref.get(k)
        if r is None or v.dtype.kind != "f":
            continue
        r = r.astype(np.float64)
        err = np.abs(v.astype(np.float64) - r) / (ATOL + RTOL * np.abs(r))
        if err.size:
            e = max(e, float(np.nanmax(err)))
    if e < 0.5:
        return False
    want = {k: (v.astype(np.float32) if v.dtype == np.float64 else v) for k, v in ref.items()}
    d = tempfile.mkdtemp(prefix="ge-ill-")
    try:
        c = os.path.join(d, "c")
        write_case(c, model, vals, want)
        scale = max(1.0, 2.0 * e)
        verdict, _ = next(iter(ge_check(ge, c, level, device, suite=False,
                                        rtol=RTOL * scale, atol=ATOL * scale).values()))
        return verdict == "PASS"
    finally:
        shutil.rmtree(d, ignore_errors=True)


def kind(reason):
    """The failure's category, kept while minimizing."""
    for k in ("panic", "compile", "load", "run", "race", "output"):
        if reason.startswith(k):
            return k
    return reason.split(":")[0][:40]


# ---- minimization ------------------------------------------------------------------------

def prune(model, vals):
    """Drops nodes nothing reads, then unread initializers and graph inputs (with values)."""
    g = model.graph
    need = {o.name for o in g.output}
    keep = []
    for n in reversed(list(g.node)):
        if any(o in need for o in n.output):
            keep.append(n)
            need.update(i for i in n.input if i)
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    need.update(i for nn in a.g.node for i in nn.input)
    keep.reverse()
    del g.node[:]
    g.node.extend(keep)
    inits = [t for t in g.initializer if t.name in need]
    del g.initializer[:]
    g.initializer.extend(inits)
    pairs = [(i, v) for i, v in zip(_run_inputs(model), vals) if i.name in need]
    init_names = {t.name for t in g.initializer}
    other = [i for i in g.input if i.name in init_names]
    del g.input[:]
    g.input.extend([i for i, _ in pairs] + other)
    return model, [v for _, v in pairs]


def minimize(ge, model, vals, level, device, want_kind, log, budget=250):
    """Smallest graph (greedy) that still fails at `level`/`device` with the same kind."""
    tmp = tempfile.mkdtemp(prefix="ge-min-")
    tries = [0]

    def fails(m, v):
        if tries[0] >= budget:
            return False
        tries[0] += 1
        try:
            gen.onnx_check(m)
            outs = ort_run(m, v)
        except Exception:
            return False
        if not sane(outs):
            return False
        d = os.path.join(tmp, f"c{tries[0]}")
        write_case(d, m, v, outs)
        verdict, why = next(iter(ge_check(ge, d, level, device, suite=False).values()))
        shutil.rmtree(d, ignore_errors=True)
        return verdict == "FAIL" and kind(why) == want_kind

    def copy(m):
        c = onnx.ModelProto()
        c.CopyFrom(m)
        return c

    cur, cv = prune(copy(model), list(vals))

    def accept(m, v):
        """Keeps the pruned candidate when it still fails the same way."""
        nonlocal cur, cv
        m, v = prune(m, v)
        if fails(m, v):
            cur, cv = m, v
            return True
        return False

    changed = True
    while changed and tries[0] < budget:
        changed = False
        # 1. one output at a time
        if len(cur.graph.output) > 1:
            for o in list(cur.graph.output):
                m = copy(cur)
                del m.graph.output[:]
                m.graph.output.append(o)
                if accept(m, cv):
                    changed = True
                    break
        # 2. cut: a node's outputs become graph inputs holding onnxruntime's values
        inter = [o for n in cur.graph.node for o in n.output if o and o not in {x.name for x in cur.graph.output}]
        try:
            allv = ort_run(cur, cv, inter) if inter else {}
            typed = {v.name: v for v in onnx.shape_inference.infer_shapes(cur).graph.value_info}
        except Exception:
            allv, typed = {}, {}
        for n in list(cur.graph.node):
            if tries[0] >= budget:
                break
            outs = [o for o in n.output if o]
            # (a sequence-typed value cannot become a tensor input)
            if not all(o in allv and o in typed and isinstance(allv[o], np.ndarray) for o in outs) \
                    or n.op_type == "Constant":
                continue
            if not any(i for i in n.input):  # already a source
                continue
            m = copy(cur)
            idx = [k for k, nn in enumerate(m.graph.node) if list(nn.output) == list(n.output)][0]
            del m.graph.node[idx]
            ins = _run_inputs(m)
            inits = [i for i in m.graph.input if i not in ins]
            del m.graph.input[:]
            m.graph.input.extend(ins + [typed[o] for o in outs] + inits)
            if accept(m, cv + [allv[o] for o in outs]):
                changed = True
                break
        if changed:
            continue
        # 3. bypass: a node whose output has the shape/type of one of its inputs is replaced
        # by that input
        try:
            inf = onnx.shape_inference.infer_shapes(cur).graph
            ty = {v.name: v.type.SerializeToString() for v in list(inf.value_info) + list(inf.input) + list(inf.output)}
        except Exception:
            ty = {}
        for k, n in enumerate(list(cur.graph.node)):
            if tries[0] >= budget or len(n.output) != 1:
                continue
            y = n.output[0]
            for x in [i for i in n.input if i and ty.get(i) is not None and ty.get(i) == ty.get(y)]:
                m = copy(cur)
                del m.graph.node[k]
                for nn in m.graph.node:
                    for j, i in enumerate(nn.input):
                        if i == y:
                            nn.input[j] = x
                gout = [o for o in m.graph.output]
                if any(o.name == y for o in gout):
                    if x in {i.name for i in m.graph.input} or x in {o.name for o in gout}:
                        continue
                    # the output keeps its name: rename x's producer output instead
                    for nn in m.graph.node:
                        for j, o in enumerate(nn.output):
                            if o == x:
                                nn.output[j] = y
                        for j, i in enumerate(nn.input):
                            if i == x:
                                nn.input[j] = y
                if accept(m, cv):
                    changed = True
                    break
            if changed:
                break
    shutil.rmtree(tmp, ignore_errors=True)
    log(f"    minimized to {len(cur.graph.node)} nodes in {tries[0]} tries")
    return cur, cv


# ---- campaign ----------------------------------------------------------------------------

def supported_ops(ge):
    try:
        p = subprocess.run([ge, "ops"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return set()
    ops = set()
    for line in p.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in ("ai.onnx", "com.microsoft", "ai.onnx.preview.training"):
            ops.add(parts[1])
        elif parts and parts[0][:1].isupper() and (len(parts) == 1 or parts[1][:1].isdigit()):
            ops.add(parts[0])
    return ops


def write_batch(out, seed, start, count, strict=False):
    """Writes graphs start..start+count of `seed` as cases under `out`; returns
    {case name: (model, input values)} and the ops used."""
    used, cases = set(), {}
    for i in range(start, start + count):
        m, vals, ops, outs = make_case(seed, i, strict)
        used.update(ops)
        name = f"s{seed}_{i:06d}"
        write_case(os.path.join(out, name), m, vals, outs, {"seed": seed, "index": i})
        cases[name] = (m, vals)
    return cases, used


def campaign(a):
    ge = a.ge
    if not os.path.exists(ge):
        sys.exit(f"difftest: {ge} not found: cargo build --release -p ge-cli (or --ge PATH)")
    levels, devices = a.levels.split(","), a.devices.split(",")
    os.makedirs(a.regressions, exist_ok=True)
    t0 = time.time()
    stats = {"seed": a.seed, "start": a.start, "graphs": 0, "runs": 0, "graph_levels": 0,
             "mismatching_graphs": 0, "mismatching_runs": 0, "unsupported": 0, "failures": [],
             "reference_inaccurate": [],
             "ill_conditioned": [],
             "regressions_written": []}
    used, seen = set(), set()

    def log(msg):
        print(msg, flush=True)

    for start in range(a.start, a.start + a.graphs, a.batch):
        n = min(a.batch, a.start + a.graphs - start)
        d = tempfile.mkdtemp(prefix="ge-diff-")
        try:
            cases, u = write_batch(d, a.seed, start, n)
            used |= u
            fails = {}
            for lv in levels:
                for dev in devices:
                    for name, (verdict, why) in ge_check(ge, d, lv, dev).items():
                        stats["runs"] += 1
                        if verdict == "UNSUPPORTED":
                            stats["unsupported"] += 1
                            log(f"  UNSUPPORTED {name} {lv} {dev}: {why[:200]}")
                        elif verdict == "FAIL":
                            stats["mismatching_runs"] += 1
                            fails.setdefault(name, []).append((lv, dev, why))
            stats["graphs"] += n
            stats["graph_levels"] += n * len(levels)
            for name, fl in sorted(fails.items()):
                lv, dev, why = fl[0]
                if name not in cases:
                    sys.exit(f"difftest: {ge} check did not run the batch: {why}")
                m, v = cases[name]
                if kind(why) == "output" and reference_inaccurate(ge, m, v, lv, dev):
                    log(f"  REFERENCE-INACCURATE {name} ({why[:160]}): ge matches the float64 reference")
                    stats["reference_inaccurate"].append({"case": name, "reason": why[:300],
                                                          "ops": sorted({n_.op_type for n_ in m.graph.node})})
                    continue
                if kind(why) == "output" and f32_ill_conditioned(ge, m, v, lv, dev):
                    log(f"  F32-ILL-CONDITIONED {name} ({why[:160]}): onnxruntime f32 is itself off "
                        "float64 by half the tolerance or more; ge is within twice its error")
                    stats["ill_conditioned"].append({"case": name, "reason": why[:300],
                                                     "ops": sorted({n_.op_type for n_ in m.graph.node})})
                    continue
                stats["mismatching_graphs"] += 1
                at = sorted({l for l, _, _ in fl})
                log(f"  MISMATCH {name} at {', '.join(f'{l}/{d_}' for l, d_, _ in fl)}: {why[:300]}")
                stats["failures"].append({"case": name, "at": [[l, d_] for l, d_, _ in fl], "reason": why[:500]})
                sig = (kind(why), tuple(at), tuple(sorted({d_ for _, d_, _ in fl})))
                if a.no_minimize or (sig in seen and not a.all_regressions):
                    continue
                seen.add(sig)
                mm, mv = minimize(ge, m, v, lv, dev, kind(why), log)
                outs = ort_run(mm, mv)
                dst = os.path.join(a.regressions, f"{name}_{lv}_{dev}")
                shutil.rmtree(dst, ignore_errors=True)
                write_case(dst, mm, mv, outs, {"seed": a.seed, "index": int(name.rsplit("_", 1)[1]),
                                                 "failed_at": [[l, d_] for l, d_, _ in fl],
                                                 "reason": why[:500],
                                                 "ops": sorted({n_.op_type for n_ in mm.graph.node})})
                stats["regressions_written"].append(dst)
                log(f"    regression case: {os.path.relpath(dst, ROOT)}")
        finally:
            shutil.rmtree(d, ignore_errors=True)
        log(f"[{stats['graphs']}/{a.graphs} graphs, {stats['runs']} runs ({stats['graph_levels']} graph x level), "
            f"{stats['mismatching_graphs']} mismatching graphs, {len(stats['reference_inaccurate'])} where "
            f"onnxruntime f32 is off, {len(stats['ill_conditioned'])} ill-conditioned in f32, "
            f"{stats['unsupported']} unsupported, "
            f"{time.time() - t0:.0f}s]")
    sup = supported_ops(ge)
    stats["ops_used"] = sorted(used)
    stats["ops_supported"] = len(sup)
    stats["coverage"] = f"{len(used & sup) if sup else len(used)}/{len(sup)}"
    stats["ops_not_generated"] = sorted(sup - used)
    stats["seconds"] = round(time.time() - t0, 1)
    return stats


def corpus(out, force):
    """The fixed-seed batch for cargo test, with a stamp of this script, the generator and
    the package versions (up to date: returns at once)."""
    from importlib import metadata

    src = b"".join(open(os.path.join(HERE, f), "rb").read() for f in ("difftest.py", "difftest_gen.py"))
    vers = ",".join(metadata.version(p) for p in ("onnx", "onnxruntime", "numpy"))
    key = hashlib.sha256(src + vers.encode() + f"{CORPUS_SEED}:{CORPUS_GRAPHS}".encode()).hexdigest()
    stamp = os.path.join(out, ".stamp")
    if not force and os.path.exists(stamp) and open(stamp).read().strip() == key:
        return 0
    _imports()
    t0 = time.time()
    tmp = out.rstrip("/") + f".tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    _, used = write_batch(tmp, CORPUS_SEED, 0, CORPUS_GRAPHS, strict=True)
    with open(os.path.join(tmp, "ops.json"), "w") as f:
        json.dump(sorted(used), f, indent=0)
    with open(os.path.join(tmp, ".stamp"), "w") as f:
        f.write(key)
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    print(f"  difftest: {CORPUS_GRAPHS} graphs (seed {CORPUS_SEED}, {len(used)} op types) in {time.time() - t0:.1f}s",
          flush=True)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graphs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start", type=int, default=0, help="first graph index (resume a campaign)")
    ap.add_argument("--batch", type=int, default=200, help="graphs per ge check process")
    ap.add_argument("--ge", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "ge"))
    ap.add_argument("--levels", default=",".join(LEVELS))
    ap.add_argument("--devices", default=",".join(DEVICES))
    ap.add_argument("--regressions", default=os.path.join(ROOT, "tests", "data", "difftest"))
    ap.add_argument("--no-minimize", action="store_true")
    ap.add_argument("--all-regressions", action="store_true", help="a case per mismatch, not per new signature")
    ap.add_argument("--summary", help="write the campaign's figures (JSON) here")
    ap.add_argument("--write", metavar="DIR", help="only write the cases to DIR")
    ap.add_argument("--corpus", metavar="DIR", help="write the fixed-seed cargo-test batch to DIR (stamped)")
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--replay", metavar="CASE", help="check one case at every level and device")
    a = ap.parse_args(argv)
    if a.corpus:
        return corpus(os.path.abspath(a.corpus), a.force)
    _imports()
    if a.write:
        os.makedirs(a.write, exist_ok=True)
        _, used = write_batch(a.write, a.seed, a.start, a.graphs)
        print(f"wrote {a.graphs} cases ({len(used)} op types) to {a.write}")
        return 0
    if a.replay:
        bad = 0
        for lv in a.levels.split(","):
            for dev in a.devices.split(","):
                for name, (v, why) in ge_check(a.ge, a.replay, lv, dev, suite=False).items():
                    print(f"{v} {name} {lv} {dev} {why}")
                    bad += v != "PASS"
        return 1 if bad else 0
    stats = campaign(a)
    print(json.dumps({k: v for k, v in stats.items() if k not in ("failures", "ops_used", "ops_not_generated", "reference_inaccurate", "ill_conditioned")}, indent=1))
    if a.summary:
        with open(a.summary, "w") as f:
            json.dump(stats, f, indent=1)
    return 1 if stats["mismatching_graphs"] else 0


if __name__ == "__main__":
    sys.exit(main())
