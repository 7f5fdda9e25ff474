#!/usr/bin/env bash
# Every command's --json output, and a tuned folder's report.json and
# decision.json, validate against their schemas in schemas/ (issue 24).
set -u
AITUNE=$1
ROOT=$2
PY=${PYTHON:-python3}
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# pinned low memory pressure (the tuner's reading would change what it does)
export AITUNE_MEM_MEDIUM=0 AITUNE_MEM_HIGH=0 AITUNE_MEM_CRITICAL=0
BERT=$ROOT/models/bert_tiny
MOB=$ROOT/models/mobilenetv2_035/model.onnx
fast=(--warmup 1 --min-runs 3 --max-runs 5 --cv 0 --time-budget 0.2 --no-cache --quiet)

capture() { # capture NAME command...: its stdout into $tmp/NAME.json, exit 0 wanted
  local name=$1
  shift
  if ! "$@" >"$tmp/$name.json" 2>"$tmp/$name.err"; then
    echo "FAIL: '$*' exited non-zero:"
    tail -20 "$tmp/$name.err"
    fails=$((fails + 1))
  fi
}
capture info "$AITUNE" info "$BERT/model.onnx" --json
capture info_mob "$AITUNE" info "$MOB" --json
capture info_ops "$AITUNE" info --ops --json
capture backends "$AITUNE" backends --json
capture hw "$AITUNE" hw --json
capture run "$AITUNE" run "$BERT/model.onnx" --json --dim seq=5
capture bench "$AITUNE" bench "$BERT/model.onnx" --json --iters 3
capture profile "$AITUNE" profile "$BERT/model.onnx" --backend native --json --iters 2
capture profile_eager "$AITUNE" profile "$MOB" --backend eager --json --iters 1
capture batch "$AITUNE" batch "$BERT/model.onnx" --backend eager --json --cache-dir "$tmp/hist"
capture tune "$AITUNE" tune "$BERT/model.onnx" --json --backends native,eager --out "$tmp/tuned" "${fast[@]}" \
  --batch-sizes 1,2 --inputs "$BERT/test_data_set_0"
capture tune_shape "$AITUNE" tune "$BERT/model.onnx" --json --backends native --out "$tmp/shaped" "${fast[@]}" \
  --shape seq=4:8:16
capture report "$AITUNE" report "$tmp/tuned" --json
capture bench_tuned "$AITUNE" bench "$tmp/tuned" --json --iters 3
capture run_tuned "$AITUNE" run "$tmp/tuned" --json
S=$ROOT/schemas
check() { # check SCHEMA FILE...
  local schema=$1
  shift
  "$PY" "$ROOT/tests/validate_json.py" "$S/$schema" "$@" || fails=$((fails + 1))
}
check info.schema.json "$tmp/info.json" "$tmp/info_mob.json"
check info-ops.schema.json "$tmp/info_ops.json"
check backends.schema.json "$tmp/backends.json"
check hw.schema.json "$tmp/hw.json"
check run.schema.json "$tmp/run.json" "$tmp/run_tuned.json"
check bench.schema.json "$tmp/bench.json" "$tmp/bench_tuned.json"
check profile.schema.json "$tmp/profile.json" "$tmp/profile_eager.json"
check batch.schema.json "$tmp/batch.json"
check report.schema.json "$tmp/tune.json" "$tmp/tune_shape.json" "$tmp/report.json" "$tmp/tuned/report.json" \
  "$tmp/shaped/report.json"
check decision.schema.json "$tmp/tuned/decision.json" "$tmp/shaped/decision.json"
# the schemas are strict: a field the schema does not know is an error
sed 's/"samples":/"samplez":/' "$tmp/tuned/report.json" >"$tmp/bad_report.json"
if "$PY" "$ROOT/tests/validate_json.py" "$S/report.schema.json" "$tmp/bad_report.json" >/dev/null; then
  echo "FAIL: report.schema.json accepts a report with an unknown field"
  fails=$((fails + 1))
fi
if [ "$fails" -ne 0 ]; then
  echo "test_json: $fails failure(s)"
  exit 1
fi
echo "test_json: all checks passed"
