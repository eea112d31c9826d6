#!/usr/bin/env python3
"""The seeds' ResNet-50 optimization ladder (seed 003_954b8ba3e5c82d43.txt: Ascend 910,
batch 1, 224x224) on our simulated `datacenter` device: five compiles of the light
ResNet-50, each adding one step, with simulated latency and device memory (arena + weights)
printed beside the seed's figures, both as ratios to the first row.

    python3 tools/ladder.py [--ge target/release/ge] [--device datacenter] [--fp16 MODE]
                            [--model corpus/light/resnet50/model.onnx] [--markdown]

Steps: fp32 with no optimization (O0, no memory reuse) → fp16 (--precision
allow_fp32_to_fp16, the seed's atc command line) → + fusion (O2) → + memory reuse →
everything (O3).
"""
import argparse
import json
import pathlib
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent

# (step, seed precision, seed latency ms, seed memory MB, our flags)
STEPS = [
    ("baseline (no optimization)", "FP32", 12.5, 3200,
     ["--precision", "force_fp32", "--opt-level", "O0", "--memory-reuse", "off"]),
    ("FP16", "FP16", 5.8, 1600,
     ["--precision", "{fp16}", "--opt-level", "O0", "--memory-reuse", "off"]),
    ("+ operator fusion", "FP16", 4.2, 1400,
     ["--precision", "{fp16}", "--opt-level", "O2", "--memory-reuse", "off"]),
    ("+ memory reuse", "FP16", 4.1, 1200,
     ["--precision", "{fp16}", "--opt-level", "O2", "--memory-reuse", "on"]),
    ("all optimizations", "FP16", 3.8, 1100,
     ["--precision", "{fp16}", "--opt-level", "O3", "--memory-reuse", "on"]),
]


def compile_row(ge, model, device, flags, tmp):
    report = pathlib.Path(tmp) / "r.json"
    subprocess.run([ge, "compile", str(model), "-o", str(pathlib.Path(tmp) / "m.om"),
                    "--device", device, "--report", str(report), *flags],
                   check=True, capture_output=True)
    r = json.loads(report.read_text())
    mem = r["memory"]["arena_bytes"] + r["memory"]["weight_bytes"]
    return r["sim"]["time_us"] / 1000.0, mem / 1e6, r["sim"]["gm_bytes"] / 1e6, r["tasks"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ge", default=str(ROOT / "target/release/ge"))
    ap.add_argument("--device", default="datacenter")
    ap.add_argument("--fp16", default="allow_fp32_to_fp16",
                    help="the --precision mode of the fp16 rows")
    ap.add_argument("--model", default=str(ROOT / "corpus/light/resnet50/model.onnx"))
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for step, prec, s_ms, s_mb, flags in STEPS:
            flags = [f.format(fp16=a.fp16) for f in flags]
            rows.append((step, prec, s_ms, s_mb, *compile_row(a.ge, a.model, a.device, flags, tmp)))
    b = rows[0]
    head = ("step", "seed ms", "seed MB", "seed ms ×", "seed MB ×",
            "ge sim ms", "ge MB", "ge ms ×", "ge MB ×", "GM MB", "tasks")
    if a.markdown:
        print("| " + " | ".join(head) + " |")
        print("|---|" + "---:|" * (len(head) - 1))
    else:
        print("  ".join(f"{h:>10}" if i else f"{h:<28}" for i, h in enumerate(head)))
    for step, prec, s_ms, s_mb, ms, mb, gm, tasks in rows:
        cells = [f"{step} ({prec})", f"{s_ms:.1f}", f"{s_mb:,}", f"{s_ms / b[2]:.2f}",
                 f"{s_mb / b[3]:.2f}", f"{ms:.3f}", f"{mb:,.1f}", f"{ms / b[4]:.2f}",
                 f"{mb / b[5]:.2f}", f"{gm:,.1f}", str(tasks)]
        if a.markdown:
            print("| " + " | ".join(cells) + " |")
        else:
            print("  ".join(f"{c:>10}" if i else f"{c:<28}" for i, c in enumerate(cells)))


if __name__ == "__main__":
    main()
