#!/usr/bin/env python3
"""Fingerprints what a `ge` build produces on the corpus, to prove a refactor changed nothing.

For every model (corpus/light, corpus/real, corpus/quant, MLPerf Tiny's eight from
../shared/corpus/mlperf-tiny) and every host ISA this CPU has (`GE_ISA` = portable, avx2,
avx512), the blob `ge compile` writes and the outputs `ge run` writes at 1 and 2 host threads
(on the case's own test_data_set_0 inputs, or MLPerf Tiny's first sample) are hashed (SHA-256).

    tools/same_outputs.py --save before.json            # on the old build
    tools/same_outputs.py --against before.json         # on the new one: exit 1 on a change

Options: --ge PATH (default target/release/ge), --sets light,real,quant,mlperf,
--isas portable,avx2,avx512 (default: every one the CPU has), --threads 1,2.
Inputs' symbolic dims are fixed from the input files (`--input-shape NAME:dims`).
"""

import argparse
import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MLPERF = os.path.join(ROOT, "..", "shared", "corpus", "mlperf-tiny")


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def tensor_name_and_dims(path):
    """The name and dims of a .pb TensorProto or a .npy array (.npy: no name)."""
    if path.endswith(".npy"):
        import numpy as np

        return None, list(np.load(path).shape)
    import onnx

    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name, list(t.dims)


def graph_inputs(model):
    import onnx

    m = onnx.load(model, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    return [i.name for i in m.graph.input if i.name not in inits]


def cases(sets):
    """(name, model path, [(input name, file)]) of every model in `sets`."""
    out = []
    for s in sets:
        if s == "mlperf":
            models = json.load(open(os.path.join(MLPERF, "models.json")))
            for key, m in sorted(models.items()):
                model = os.path.join(MLPERF, "onnx", m["onnx"])
                names = graph_inputs(model)
                files = [os.path.join(MLPERF, "data", key, "input_s00.npy")]
                out.append((f"mlperf/{key}", model, list(zip(names, files))))
            continue
        for d in sorted(glob.glob(os.path.join(ROOT, "corpus", s, "*", ""))):
            model = os.path.join(d, "model.onnx")
            data = os.path.join(d, "test_data_set_0")
            if not os.path.isfile(model) or not os.path.isdir(data):
                continue
            files = sorted(glob.glob(os.path.join(data, "input_*.pb")))
            named = [(tensor_name_and_dims(f)[0], f) for f in files]
            if any(not n for n, _ in named):
                names = graph_inputs(model)
                named = list(zip(names, files))
            out.append((f"{s}/{os.path.basename(d.rstrip('/'))}", model, named))
    return out


def host_isas(ge):
    isas = []
    for isa in ["portable", "avx2", "avx512"]:
        r = subprocess.run([ge, "ops"], env={**os.environ, "GE_ISA": isa}, capture_output=True)
        if r.returncode == 0:
            isas.append(isa)
    return isas


def fingerprint(ge, case, isa, threads, tmp):
    name, model, inputs = case
    env = {**os.environ, "GE_ISA": isa}
    om = os.path.join(tmp, "m.om")
    cmd = [ge, "compile", model, "-o", om]
    for n, f in inputs:
        dims = tensor_name_and_dims(f)[1]
        cmd += ["--input-shape", f"{n}:{','.join(map(str, dims))}"]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": r.stderr.strip()[-300:]}
    result = {"blob": sha(om)}
    for t in threads:
        outdir = os.path.join(tmp, f"out{t}")
        os.makedirs(outdir, exist_ok=True)
        for f in glob.glob(os.path.join(outdir, "*")):
            os.remove(f)
        cmd = [ge, "run", om, "--threads", str(t), "--output-dir", outdir]
        for n, f in inputs:
            cmd += ["--input", f"{n}={f}"]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            result[f"t{t}"] = {"error": r.stderr.strip()[-300:]}
            continue
        h = hashlib.sha256()
        for f in sorted(os.listdir(outdir)):
            h.update(f.encode())
            h.update(open(os.path.join(outdir, f), "rb").read())
        result[f"t{t}"] = h.hexdigest()[:16]
    return result


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ge", default=os.path.join(ROOT, "target", "release", "ge"))
    ap.add_argument("--sets", default="light,real,quant,mlperf")
    ap.add_argument("--isas", default=None)
    ap.add_argument("--threads", default="1,2")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--save")
    g.add_argument("--against")
    a = ap.parse_args(argv)
    isas = a.isas.split(",") if a.isas else host_isas(a.ge)
    threads = [int(t) for t in a.threads.split(",")]
    all_cases = cases(a.sets.split(","))
    print(f"same_outputs: {len(all_cases)} models x ISAs {','.join(isas)} x threads {threads}")
    got = {}
    with tempfile.TemporaryDirectory() as tmp:
        for case in all_cases:
            for isa in isas:
                got[f"{case[0]} {isa}"] = fingerprint(a.ge, case, isa, threads, tmp)
    if a.save:
        with open(a.save, "w") as f:
            json.dump(got, f, indent=1, sort_keys=True)
        errors = [k for k, v in got.items() if "error" in json.dumps(v)]
        print(f"saved {len(got)} fingerprints to {a.save} ({len(errors)} with errors: {errors})")
        return 0
    want = json.load(open(a.against))
    diff = sorted(k for k in set(want) | set(got) if want.get(k) != got.get(k))
    for k in diff:
        print(f"  differs: {k}: before {want.get(k)} after {got.get(k)}")
    print(f"{len(got) - len(diff)} same, {len(diff)} differ")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
