#!/usr/bin/env python3
"""ge against onnxruntime's int8 configuration on more inputs than the stored one: for each
`*_qdq` case of corpus/quant, N seeded inputs (N(0, s^2), s = 1, 2, 3 in turn), `ge compile`
once per opt level and `ge run`, onnxruntime with `session.qdqisint8allowed=1` (the
configuration the references come from), 1 thread. Prints per case and level the largest
difference in LSBs of the output's step and how many outputs differ.

    python3 tools/quant_inputs.py [N=8] [LEVELS=O0,O2] [CASES=a,b,...]
"""
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import quant_table as qt
import numpy as np
import onnxruntime as ort

GE = str(pathlib.Path(__file__).resolve().parent.parent / "target/release/ge")
n_inputs = int(sys.argv[1]) if len(sys.argv) > 1 else 8
levels = (sys.argv[2] if len(sys.argv) > 2 else "O0,O2").split(",")
only = sys.argv[3].split(",") if len(sys.argv) > 3 else []
for case, rec in qt.cases(only):
    if not rec["name"].endswith("_qdq"):
        continue
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.add_session_config_entry("session.qdqisint8allowed", "1")
    sess = ort.InferenceSession(str(case / "model.onnx"), so, providers=["CPUExecutionProvider"])
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        shapes = []
        for i in rec["inputs"]:
            shapes += ["--input-shape", f"{i['name']}:{','.join(str(d) for d in i['shape'])}"]
        res = {}
        for lv in levels:
            om = tmp / f"{lv}.om"
            subprocess.run([GE, "compile", str(case / "model.onnx"), "-o", str(om), "--opt-level", lv] + shapes, check=True, capture_output=True)
            worst, differ, total = 0, 0, 0
            for k in range(n_inputs):
                rng = np.random.default_rng(1000 + k)
                feeds = {}
                args = []
                for j, i in enumerate(rec["inputs"]):
                    x = (rng.standard_normal(i["shape"]) * (1 + k % 3)).astype(np.float32)
                    feeds[i["name"]] = x
                    np.save(tmp / f"in{j}.npy", x)
                    args += ["--input", f"{i['name']}={tmp / f'in{j}.npy'}"]
                out = tmp / "out"
                subprocess.run([GE, "run", str(om), "--output-dir", str(out)] + args, check=True, capture_output=True)
                ref = sess.run(None, feeds)
                for o, r in zip(rec["outputs"], ref):
                    g = np.load(out / (o["name"].replace("/", "_").replace(":", "_") + ".npy"))
                    d = np.abs(g.astype(np.float64) - r) / o["lsb"]
                    worst = max(worst, float(d.max()))
                    differ += int((d > 0.5).sum())
                    total += d.size
            res[lv] = (worst, differ, total)
        print(rec["name"], {lv: f"max {w:.3g} LSB, {d} of {t} differ" for lv, (w, d, t) in res.items()}, flush=True)
