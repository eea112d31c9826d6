#!/usr/bin/env python3
"""How ge does on the quantized corpus (corpus/quant, tools/gen_quant_corpus.py) and on
corpus/real/minilm_int8: per case and opt level, `ge check`'s verdict and the largest
difference from onnxruntime's int8 outputs in LSBs of the output's quantization step (the
scale of the DequantizeLinear writing it; absolute when the output is float-computed), and
the blob size against the ONNX file's.

    python3 tools/quant_table.py [--ge target/release/ge] [--levels O0,O1,O2,O3]
                                 [--cases a,b,...] [--json OUT.json]

Latency is measured separately, side by side with onnxruntime int8 (single thread):
    python3 tools/bench.py --models <cases> --threads 1 --no-tract
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent


def cases(only: list[str]) -> list[tuple[pathlib.Path, dict]]:
    man = json.loads((ROOT / "corpus/quant/manifest.json").read_text())["models"]
    real = json.loads((ROOT / "corpus/real/manifest.json").read_text())["models"]
    mini = next(m for m in real if m["name"] == "minilm_int8")
    out = [(ROOT / "corpus/quant" / m["name"], m) for m in man]
    out.append((ROOT / "corpus/real/minilm_int8",
                {"name": "minilm_int8", "inputs": mini["inputs"],
                 "outputs": [{"name": o["name"], "lsb": None} for o in mini["outputs"]]}))
    return [c for c in out if not only or c[1]["name"] in only]


def read_pb(path: pathlib.Path):
    import onnx
    from onnx import numpy_helper

    t = onnx.TensorProto()
    t.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(t)


def check(ge: str, case: pathlib.Path, level: str) -> str:
    r = subprocess.run([ge, "check", str(case), "--opt-level", level], capture_output=True, text=True)
    line = (r.stdout.strip().splitlines() or [r.stderr.strip()])[0]
    return line.split()[0] if line else "ERROR"


def run(ge: str, case: pathlib.Path, rec: dict, level: str, tmp: pathlib.Path):
    """Compiles and runs the case; returns (blob bytes, outputs by name) or (None, reason)."""
    import numpy as np

    om = tmp / "m.om"
    shapes = []
    for i in rec["inputs"]:
        shapes += ["--input-shape", f"{i['name']}:{','.join(str(d) for d in i['shape'])}"]
    r = subprocess.run([ge, "compile", str(case / "model.onnx"), "-o", str(om), "--opt-level", level]
                       + shapes, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1:] or ["compile failed"]
    args = []
    for j, i in enumerate(rec["inputs"]):
        npy = tmp / f"in{j}.npy"
        np.save(npy, read_pb(case / "test_data_set_0" / f"input_{j}.pb"))
        args += ["--input", f"{i['name']}={npy}"]
    outdir = tmp / "out"
    r = subprocess.run([ge, "run", str(om), "--output-dir", str(outdir)] + args, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1:] or ["run failed"]
    outs = {}
    for o in rec["outputs"]:
        fname = o["name"].replace("/", "_").replace(":", "_") + ".npy"
        outs[o["name"]] = np.load(outdir / fname)
    return om.stat().st_size, outs


def main() -> int:
    import numpy as np

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ge", default=str(ROOT / "target/release/ge"))
    ap.add_argument("--levels", default="O0,O1,O2,O3")
    ap.add_argument("--cases", default="")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    levels = a.levels.split(",")
    rows = []
    for case, rec in cases([c for c in a.cases.split(",") if c]):
        row = {"name": rec["name"], "onnx_bytes": (case / "model.onnx").stat().st_size, "levels": {}}
        for level in levels:
            verdict = check(a.ge, case, level)
            with tempfile.TemporaryDirectory() as tmp:
                blob, outs = run(a.ge, case, rec, level, pathlib.Path(tmp))
            cell = {"check": verdict}
            if blob is None:
                cell["error"] = " ".join(outs)
            else:
                row["blob_bytes"] = blob
                errs = []
                for j, o in enumerate(rec["outputs"]):
                    want = read_pb(case / "test_data_set_0" / f"output_{j}.pb").astype(np.float64)
                    diff = float(np.abs(outs[o["name"]].astype(np.float64) - want).max())
                    errs.append(diff / o["lsb"] if o.get("lsb") else diff)
                cell["max_err"] = max(errs)
                cell["unit"] = "lsb" if all(o.get("lsb") for o in rec["outputs"]) else "abs"
            row["levels"][level] = cell
            print(f"{rec['name']} {level}: {cell}", flush=True)
        rows.append(row)
    print()
    print("| case | " + " | ".join(f"{lv} check / max err" for lv in levels) + " | blob MB | onnx MB | blob/onnx |")
    print("|---|" + "---|" * len(levels) + "---:|---:|---:|")
    for r in rows:
        cells = []
        for lv in levels:
            c = r["levels"][lv]
            if "max_err" in c:
                unit = " LSB" if c["unit"] == "lsb" else " abs"
                cells.append(f"{c['check']} / {c['max_err']:.3g}{unit}")
            else:
                cells.append(f"{c['check']} ({c.get('error', '')[:60]})")
        blob = r.get("blob_bytes")
        size = (f"{blob / 1e6:.2f} | {r['onnx_bytes'] / 1e6:.2f} | {blob / r['onnx_bytes']:.2f}"
                if blob else f"— | {r['onnx_bytes'] / 1e6:.2f} | —")
        print(f"| {r['name']} | " + " | ".join(cells) + f" | {size} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
