#!/usr/bin/env bash
# Before/after speed of two `ge` builds on the light models, side by side on one machine:
# each binary compiles the model (O2), then `ge bench --iters 10` alternates between the two
# for ROUNDS rounds; prints a Markdown row per model with the medians, their ratio, tasks,
# arena bytes and compile time (from --report), and whether the blobs are byte-identical.
#
#   tools/ab_bench.sh BEFORE_GE AFTER_GE [ROUNDS]
#   e.g. git worktree add /tmp/base <rev> && (cd /tmp/base && cargo build --release -p ge-cli)
#        tools/ab_bench.sh /tmp/base/target/release/ge target/release/ge
set -euo pipefail
BASE=$1; NEW=$2; ROUNDS=${3:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
med() { python3 -c 'import json,sys;print(json.load(sys.stdin)["median_ms"])'; }
echo "| model | before ms | after ms | after/before | tasks | arena bytes | compile ms | blob |"
echo "|---|---:|---:|---:|---:|---:|---:|---|"
for m in resnet50 vgg19 densenet121 inception_v1 squeezenet shufflenet; do
  "$BASE" compile "$ROOT/corpus/light/$m/model.onnx" -o "$TMP/b.om" --report "$TMP/b.json" >/dev/null
  "$NEW" compile "$ROOT/corpus/light/$m/model.onnx" -o "$TMP/n.om" --report "$TMP/n.json" >/dev/null
  b=(); n=()
  for _ in $(seq "$ROUNDS"); do
    b+=("$("$BASE" bench "$TMP/b.om" --iters 10 --json | med)")
    n+=("$("$NEW" bench "$TMP/n.om" --iters 10 --json | med)")
  done
  same=$(cmp -s "$TMP/b.om" "$TMP/n.om" && echo identical || echo differs)
  python3 - "$m" "${b[*]}" "${n[*]}" "$TMP/b.json" "$TMP/n.json" "$same" <<'PY'
import json, statistics, sys
m, b, n, bj, nj, same = sys.argv[1:]
b = statistics.median(map(float, b.split())); n = statistics.median(map(float, n.split()))
B, N = json.load(open(bj)), json.load(open(nj))
print(f"| {m} | {b:.2f} | {n:.2f} | {n / b:.3f} | {B['tasks']} / {N['tasks']} | "
      f"{B['memory']['arena_bytes']} / {N['memory']['arena_bytes']} | "
      f"{B['compile_millis']['total']:.0f} / {N['compile_millis']['total']:.0f} | {same} |")
PY
done
