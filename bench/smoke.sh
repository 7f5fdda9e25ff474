#!/bin/sh
# Smoke test of the benchmark harness (< 60 s): the MLP at batch 1, 5 runs
# per engine, into a temporary file; fails unless every peer and aitune's
# eager backend and tuned pick produced a row that passed the numeric check.
#   bench/smoke.sh [--aitune PATH]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp /tmp/aitune-bench-smoke.XXXXXX.md)
trap 'rm -f "$out"' EXIT
python3 "$here/run.py" --models mlp --batches 1 --iters 5 --out "$out" "$@"
fail=0
for row in '| onnxruntime | fp32 |' '| onnxruntime int8 (dynamic) | int8 |' '| pytorch | fp32 |' \
  '| aitune eager | fp32 |' '| aitune tuned → '; do
  line=$(grep -F -- "$row" "$out" || true)
  case "$line" in
  '') echo "smoke: no row '$row'" >&2; fail=1 ;;
  *failed:*|*✗*) echo "smoke: $line" >&2; fail=1 ;;
  esac
done
grep -q '^\*\*SGEMM ceiling: [0-9]' "$out" || { echo "smoke: no SGEMM ceiling" >&2; fail=1; }
[ "$fail" = 0 ] && echo "smoke: ok"
exit "$fail"
