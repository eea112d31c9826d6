#!/usr/bin/env bash
# MLPerf Tiny host latency, one thread: ge's int8 build in onnxruntime's arithmetic (ge_q) and
# in TFLite Micro's (ge_tfl, --int8-rounding tflite), ge's fp32 build, onnxruntime int8 and
# fp32 (tools/ort_bench.py, its default session), alternated, 3 rounds of 300 runs each;
# prints one line per round (take the medians).
#   bash tools/mlperf_tiny_bench.sh [GE_BINARY]
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
GE=${1:-$ROOT/target/release/ge}; R=$ROOT/../shared/corpus/mlperf-tiny/onnx
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
med() { python3 -c 'import json,sys;print(json.load(sys.stdin)["median_ms"])'; }
for pair in "kws kws_ref_model kws_ref_model_float32" "vww vww_96_int8 vww_96_float" "ic pretrainedResnet_quant pretrainedResnet" "ad ad01_int8 ad01_fp32"; do
  set -- $pair; k=$1; q=$2; f=$3
  $GE compile $R/$q.onnx -o $T/$k.q.om >/dev/null
  $GE compile $R/$q.onnx -o $T/$k.t.om --int8-rounding tflite >/dev/null
  $GE compile $R/$f.onnx -o $T/$k.f.om >/dev/null
  for round in 1 2 3; do
    a=$($GE bench $T/$k.q.om --iters 300 --json | med); b=$($GE bench $T/$k.t.om --iters 300 --json | med); c=$($GE bench $T/$k.f.om --iters 300 --json | med)
    d=$(python3 $ROOT/tools/ort_bench.py $R/$q.onnx --threads 1 --iters 300 --json 2>/dev/null | med); e=$(python3 $ROOT/tools/ort_bench.py $R/$f.onnx --threads 1 --iters 300 --json 2>/dev/null | med)
    echo "$k $round ge_q=$a ge_tfl=$b ge_f32=$c ort_q=$d ort_f32=$e"
  done
done
