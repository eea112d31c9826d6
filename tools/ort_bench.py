#!/usr/bin/env python3
"""Time onnxruntime on one model, as a baseline for ge's benchmarks.

Usage:
    python3 tools/ort_bench.py MODEL_DIR_OR_ONNX [--threads N] [--iters K]
                               [--warmup W] [--opt all|extended|basic|disable]
                               [--seed S] [--config KEY=VALUE ...] [--json]

MODEL_DIR_OR_ONNX is either a corpus case directory (model.onnx +
test_data_set_0/input_<i>.pb, whose inputs are used) or a .onnx file (inputs
are seeded random: normal floats, small non-negative integers, random bools;
symbolic dimensions are set to 1).

Session settings, as users run onnxruntime: CPUExecutionProvider,
intra_op_num_threads=N, inter_op_num_threads=1, sequential execution,
graph optimizations ENABLED (ORT_ENABLE_ALL unless --opt says otherwise).
Each of K timed runs is one session.run() call after W untimed warm-up runs. --config adds
session config entries (e.g. session.qdqisint8allowed=1, onnxruntime's int8 configuration
for QDQ models, which corpus/quant's references come from).

Prints median / min / mean milliseconds per run; with --json one JSON object:
{"model", "median_ms", "min_ms", "mean_ms", "max_ms", "iters", "warmup",
 "threads", "opt", "config", "load_ms", "onnxruntime"}.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

OPT = {
    "all": "ORT_ENABLE_ALL",
    "extended": "ORT_ENABLE_EXTENDED",
    "basic": "ORT_ENABLE_BASIC",
    "disable": "ORT_DISABLE_ALL",
}

NP_TYPES = {
    "tensor(float)": "float32",
    "tensor(double)": "float64",
    "tensor(float16)": "float16",
    "tensor(int8)": "int8",
    "tensor(int16)": "int16",
    "tensor(int32)": "int32",
    "tensor(int64)": "int64",
    "tensor(uint8)": "uint8",
    "tensor(uint16)": "uint16",
    "tensor(uint32)": "uint32",
    "tensor(uint64)": "uint64",
    "tensor(bool)": "bool",
}


def load_case_inputs(case_dir: str, sess) -> dict:
    import onnx
    from onnx import numpy_helper

    ds = os.path.join(case_dir, "test_data_set_0")
    names = [i.name for i in sess.get_inputs()]
    feeds = {}
    for j, name in enumerate(names):
        p = os.path.join(ds, f"input_{j}.pb")
        if not os.path.isfile(p):
            raise SystemExit(f"ort_bench: {p} missing (model has {len(names)} inputs)")
        t = onnx.TensorProto()
        with open(p, "rb") as f:
            t.ParseFromString(f.read())
        feeds[name] = numpy_helper.to_array(t)
    return feeds


def random_inputs(sess, seed: int) -> dict:
    import numpy as np

    rng = np.random.default_rng(seed)
    feeds = {}
    for i in sess.get_inputs():
        if i.type not in NP_TYPES:
            raise SystemExit(f"ort_bench: input {i.name!r} has type {i.type}; pass a case directory")
        shape = [d if isinstance(d, int) and d >= 0 else 1 for d in i.shape]
        dt = np.dtype(NP_TYPES[i.type])
        if dt.kind == "f":
            feeds[i.name] = rng.standard_normal(shape).astype(dt)
        elif dt.kind == "b":
            feeds[i.name] = rng.random(shape) < 0.5
        else:
            feeds[i.name] = rng.integers(0, 4, shape).astype(dt)
    return feeds


def main() -> int:
    ap = argparse.ArgumentParser(description="time onnxruntime on one model")
    ap.add_argument("model", help="corpus case directory or .onnx file")
    ap.add_argument("--threads", type=int, default=1, help="intra_op_num_threads (default 1)")
    ap.add_argument("--iters", type=int, default=20, help="timed runs (default 20)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed runs first (default 3)")
    ap.add_argument("--opt", choices=sorted(OPT), default="all", help="graph optimization level")
    ap.add_argument("--seed", type=int, default=0, help="seed of random inputs (.onnx only)")
    ap.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                    help="session config entry (repeatable)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    a = ap.parse_args()
    if a.iters < 1 or a.warmup < 0 or a.threads < 1:
        ap.error("--iters and --threads must be >= 1, --warmup >= 0")

    import onnxruntime as ort

    if os.path.isdir(a.model):
        case_dir, model_path = a.model, os.path.join(a.model, "model.onnx")
    else:
        case_dir, model_path = None, a.model
    if not os.path.isfile(model_path):
        raise SystemExit(f"ort_bench: {model_path} not found")

    so = ort.SessionOptions()
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, OPT[a.opt])
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    for kv in a.config:
        key, sep, value = kv.partition("=")
        if not sep:
            ap.error(f"--config {kv!r}: KEY=VALUE expected")
        so.add_session_config_entry(key, value)
    t0 = time.perf_counter()
    sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
    load_ms = (time.perf_counter() - t0) * 1e3
    feeds = load_case_inputs(case_dir, sess) if case_dir else random_inputs(sess, a.seed)

    for _ in range(a.warmup):
        sess.run(None, feeds)
    times = []
    for _ in range(a.iters):
        t = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t) * 1e3)

    res = {
        "model": os.path.abspath(model_path),
        "median_ms": statistics.median(times),
        "min_ms": min(times),
        "mean_ms": statistics.fmean(times),
        "max_ms": max(times),
        "iters": a.iters,
        "warmup": a.warmup,
        "threads": a.threads,
        "opt": a.opt,
        "config": a.config,
        "load_ms": load_ms,
        "onnxruntime": ort.__version__,
    }
    if a.json:
        print(json.dumps(res))
    else:
        print(
            f"{model_path}: median {res['median_ms']:.3f} ms, min {res['min_ms']:.3f} ms, "
            f"mean {res['mean_ms']:.3f} ms over {a.iters} runs "
            f"({a.threads} thread(s), opt={a.opt}, onnxruntime {ort.__version__})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
