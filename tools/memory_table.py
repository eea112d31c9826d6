#!/usr/bin/env python3
"""Memory plans of the light models at one opt level, as the markdown tables in
docs/BENCHMARKS.md: arena vs its lower bound, and the execution order's peak vs the
plain topological order's and vs the order-independent bound.

    python3 tools/memory_table.py [--opt-level O2] [--ge target/release/ge]
"""
import argparse
import json
import pathlib
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--opt-level", default="O2")
    ap.add_argument("--ge", default=str(ROOT / "target/release/ge"))
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in sorted((ROOT / "corpus/light").glob("*/model.onnx")):
            report = pathlib.Path(tmp) / "r.json"
            subprocess.run(
                [a.ge, "compile", str(model), "-o", str(pathlib.Path(tmp) / "m.om"),
                 "--opt-level", a.opt_level, "--report", str(report)],
                check=True, capture_output=True)
            r = json.loads(report.read_text())
            rows.append((model.parent.name, r["tasks"], r["memory"]))
    print("| model | tasks | arena bytes | lower bound | arena / bound | naive / arena |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, tasks, m in rows:
        print(f"| {name} | {tasks} | {m['arena_bytes']:,} | {m['lower_bound_bytes']:,} | "
              f"{m['arena_bytes'] / m['lower_bound_bytes']:.4f} | "
              f"{m['naive_bytes'] / m['arena_bytes']:.1f} |")
    print()
    print("| model | topological order peak | chosen order peak | no order below |")
    print("|---|---:|---:|---:|")
    for name, _, m in rows:
        print(f"| {name} | {m['topo_order_peak_bytes']:,} | {m['chosen_order_peak_bytes']:,} | "
              f"{m['order_peak_lower_bound_bytes']:,} |")


if __name__ == "__main__":
    main()
