#!/usr/bin/env bash
# CLI behaviour: help everywhere, clear errors with non-zero exits, run with
# random inputs and files.
set -u
AITUNE=$1
ROOT=$2
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

expect() { # expect CODE PATTERN -- command...
  local code=$1 pattern=$2
  shift 3
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$code" ] || ! grep -q -- "$pattern" <<<"$out"; then
    echo "FAIL: '$*' exited $rc (wanted $code), output lacks '$pattern':"
    echo "$out" | head -5
    fails=$((fails + 1))
  fi
}

MODEL=$ROOT/models/mobilenetv2_035/model.onnx
for c in info run conformance; do expect 0 usage -- "$AITUNE" "$c" --help; done
expect 0 commands -- "$AITUNE" --help
expect 2 "unknown command" -- "$AITUNE" frobnicate
expect 1 "cannot open" -- "$AITUNE" info "$tmp/none.onnx"
head -c 1000 "$MODEL" >"$tmp/truncated.onnx"
expect 1 "not a valid ONNX model" -- "$AITUNE" info "$tmp/truncated.onnx"
expect 1 "not a valid ONNX model" -- "$AITUNE" run "$tmp/truncated.onnx"
echo "hello" >"$tmp/text.onnx"
expect 1 "not a valid ONNX model" -- "$AITUNE" run "$tmp/text.onnx"
expect 2 "NAME=VALUE" -- "$AITUNE" run "$MODEL" --dim batch
expect 0 "Conv" -- "$AITUNE" info "$MODEL"
expect 0 "estimated FLOPs" -- "$AITUNE" info "$MODEL"
expect 0 "Conv" -- "$AITUNE" info --ops
expect 0 "output: float32 \[1,1000\]" -- "$AITUNE" run "$MODEL"
expect 0 "output: float32 \[3,1000\]" -- "$AITUNE" run "$MODEL" --dim batch=3
expect 1 "input_0.pb" -- "$AITUNE" run "$MODEL" --inputs "$tmp/nowhere"
expect 1 "no backend named 'gpu9'" -- "$AITUNE" run "$MODEL" --backend gpu9
expect 0 "wrote 1 outputs" -- "$AITUNE" run "$MODEL" --inputs "$ROOT/models/mobilenetv2_035/test_data_set_0" --outputs "$tmp/out"
[ -s "$tmp/out/output_0.pb" ] || { echo "FAIL: no output_0.pb written"; fails=$((fails + 1)); }
# a wrong input shape from a file is named
mkdir -p "$tmp/bad" && cp "$ROOT/models/bert_tiny/test_data_set_0/input_0.pb" "$tmp/bad/input_0.pb"
expect 1 "expected rank 4" -- "$AITUNE" run "$MODEL" --inputs "$tmp/bad"
expect 1 "below the floor" -- "$AITUNE" conformance --min-pass 999 "$ROOT/models/bert_tiny"
expect 0 "1 passed, 0 failed, 0 skipped" -- "$AITUNE" conformance "$ROOT/models/bert_tiny"
if [ "$fails" -ne 0 ]; then
  echo "test_cli: $fails failure(s)"
  exit 1
fi
echo "test_cli: all checks passed"
