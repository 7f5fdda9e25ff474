#!/usr/bin/env bash
# The main job on a bundled model: set up, build, describe the model, tune it
# with max-throughput over every backend available here (printing the
# report), and run the tuned model.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
"$ROOT/scripts/deps.sh" build
cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$ROOT/build" -j"$(nproc)" >/dev/null
MODEL=$ROOT/models/mobilenetv2_035/model.onnx
"$ROOT/build/aitune" info "$MODEL"
echo
OUT=$ROOT/build/tuned/mobilenetv2_035
"$ROOT/build/aitune" tune "$MODEL" --strategy max-throughput \
  --samples "$ROOT/models/mobilenetv2_035/test_data_set_0" --out "$OUT"
echo
"$ROOT/build/aitune" run "$OUT" --inputs "$ROOT/models/mobilenetv2_035/test_data_set_0"
