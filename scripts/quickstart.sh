#!/usr/bin/env bash
# The main job on a bundled model: set up, build, describe the model, run it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
"$ROOT/scripts/deps.sh" build
cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$ROOT/build" -j"$(nproc)" >/dev/null
MODEL=$ROOT/models/mobilenetv2_035/model.onnx
"$ROOT/build/aitune" info "$MODEL"
echo
"$ROOT/build/aitune" run "$MODEL" --dim batch=2
