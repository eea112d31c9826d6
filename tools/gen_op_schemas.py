#!/usr/bin/env python3
"""Writes corpus/op_schemas/schemas.json (git-ignored, run by tools/gen_corpus.py): every operator schema of the onnx package
(default domain and ai.onnx.ml, every since_version) as the structured fuzzer
(tests/tests/structured_fuzz.rs) reads it: per schema its inputs (name, single / optional /
variadic, the element types it allows), output count, and attributes (name, type, required).
Idempotent: the same onnx version writes the same bytes (an unchanged file is not
rewritten).

    python3 tools/gen_op_schemas.py [OUT_DIR]
"""

import json
import os
import sys

import onnx
from onnx import defs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "corpus", "op_schemas", "schemas.json")

OPTION = {
    defs.OpSchema.FormalParameterOption.Single: "single",
    defs.OpSchema.FormalParameterOption.Optional: "optional",
    defs.OpSchema.FormalParameterOption.Variadic: "variadic",
}


def elem(t):
    """'tensor(float)' -> 'float'; sequences and maps are left out (None)."""
    if t.startswith("tensor(") and t.endswith(")"):
        return t[len("tensor("):-1]
    return None


def generate(path=OUT, log=print):
    """Writes the schemas to `path` unless it already holds them."""
    out = []
    for s in defs.get_all_schemas_with_history():
        if s.domain not in ("", "ai.onnx.ml") or s.deprecated:
            continue
        constraints = {c.type_param_str: list(c.allowed_type_strs) for c in s.type_constraints}
        inputs = []
        for p in s.inputs:
            types = constraints.get(p.type_str, [p.type_str])
            inputs.append({
                "name": p.name,
                "option": OPTION[p.option],
                "types": sorted({e for e in map(elem, types) if e}),
            })
        attrs = [
            {"name": a.name, "type": a.type.name, "required": bool(a.required)}
            for a in sorted(s.attributes.values(), key=lambda a: a.name)
        ]
        out.append({
            "domain": s.domain,
            "op": s.name,
            "since": s.since_version,
            "inputs": inputs,
            "outputs": max(1, s.min_output),
            "attributes": attrs,
        })
    out.sort(key=lambda e: (e["domain"], e["op"], e["since"]))
    text = json.dumps({"onnx": onnx.__version__, "schemas": out}, indent=0, sort_keys=True) + "\n"
    try:
        with open(path) as f:
            if f.read() == text:
                return
    except OSError:
        pass
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    log(f"{path}: {len(out)} schemas (onnx {onnx.__version__})")


if __name__ == "__main__":
    generate(os.path.join(sys.argv[1], "schemas.json") if len(sys.argv) > 1 else OUT)
