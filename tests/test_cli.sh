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
    # head for the command's context, tail for what killed it (a sanitizer
    # report ends the output)
    if [ "$(wc -l <<<"$out")" -gt 45 ]; then
      echo "$out" | head -5
      echo "  [...]"
      echo "$out" | tail -40
    else
      echo "$out"
    fi
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
# untrusted files (issue 18): a folder or a FIFO as the model is named as such
# (a FIFO used to hang the read), never read as bytes
expect 1 "is a directory" -- "$AITUNE" info "$tmp"
mkfifo "$tmp/fifo.onnx"
expect 1 "a FIFO" -- timeout 10 "$AITUNE" info "$tmp/fifo.onnx"
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
expect 1 "expected dtype float32, got int64" -- "$AITUNE" run "$MODEL" --inputs "$tmp/bad"
expect 1 "below the floor" -- "$AITUNE" conformance --min-pass 999 "$ROOT/models/bert_tiny"
expect 0 "1 passed, 0 failed, 0 skipped" -- "$AITUNE" conformance "$ROOT/models/bert_tiny"
# tuning: tune -> report -> run -> bench, and the decision cache
BERT=$ROOT/models/bert_tiny
for c in tune report bench backends; do expect 0 usage -- "$AITUNE" "$c" --help; done
expect 0 "eager" -- "$AITUNE" backends
expect 2 "unknown strategy" -- "$AITUNE" tune "$BERT/model.onnx" --strategy fastest --out "$tmp/x"
expect 2 "needs --out" -- "$AITUNE" tune "$BERT/model.onnx"
expect 1 "no backend named 'nope'" -- "$AITUNE" tune "$BERT/model.onnx" --backends nope --out "$tmp/x" --no-cache
expect 1 "exactly one backend" -- "$AITUNE" tune "$BERT/model.onnx" --strategy one-backend --backends eager,eager --out "$tmp/x" --no-cache
fast=(--warmup 1 --min-runs 3 --max-runs 5 --cv 0 --time-budget 0.2)
expect 0 "selected: " -- "$AITUNE" tune "$BERT/model.onnx" --samples "$BERT/test_data_set_0" --batch-sizes 1,2 \
  --cache-dir "$tmp/cache" --out "$tmp/tuned" "${fast[@]}"
# --out may name a folder whose parents do not exist yet
expect 0 "selected: " -- "$AITUNE" tune "$BERT/model.onnx" --samples "$BERT/test_data_set_0" --batch-sizes 1 \
  --no-cache --out "$tmp/new/parents/tuned" "${fast[@]}"
for f in decision.json report.json model.onnx backend MANIFEST.sha256; do
  [ -e "$tmp/tuned/$f" ] || { echo "FAIL: tuned folder lacks $f"; fails=$((fails + 1)); }
done
expect 0 "strategy max-throughput" -- "$AITUNE" report "$tmp/tuned"
expect 0 '"aitune-report"' -- "$AITUNE" report "$tmp/tuned" --json
expect 0 "1 passed, 0 failed" -- "$AITUNE" conformance "$BERT" # the folder, untouched
expect 0 "wrote 1 outputs" -- "$AITUNE" run "$tmp/tuned" --inputs "$BERT/test_data_set_0" --outputs "$tmp/tout"
# the tuned model's outputs agree with the reference: check them as a test folder
mkdir -p "$tmp/chk/test_data_set_0" && cp "$BERT/model.onnx" "$tmp/chk/" &&
  cp "$BERT"/test_data_set_0/input_*.pb "$tmp/tout/output_0.pb" "$tmp/chk/test_data_set_0/"
expect 0 "1 passed, 0 failed" -- "$AITUNE" conformance "$tmp/chk"
expect 0 '"latency_ms":{"median"' -- "$AITUNE" bench "$tmp/tuned" --json --iters 5
expect 0 '"throughput"' -- "$AITUNE" bench "$BERT/model.onnx" --json --iters 5 --batch 2
# a repeated identical tune is answered from the cache (its message says so;
# no wall-clock limit: the suite must pass on a loaded machine)
expect 0 "from the cache" -- "$AITUNE" tune "$BERT/model.onnx" --samples "$BERT/test_data_set_0" --batch-sizes 1,2 \
  --cache-dir "$tmp/cache" --out "$tmp/tuned2" "${fast[@]}"
# a corrupted cache entry is discarded and re-tuned, never a crash
for d in "$tmp"/cache/*/; do echo "garbage" >"$d/decision.json"; done
expect 0 "discarding a corrupted cache entry" -- "$AITUNE" tune "$BERT/model.onnx" --samples "$BERT/test_data_set_0" \
  --batch-sizes 1,2 --cache-dir "$tmp/cache" --out "$tmp/tuned3" "${fast[@]}"
# a corrupted tuned folder is a clear error
echo "{" >"$tmp/tuned3/decision.json"
expect 1 "decision.json is corrupted" -- "$AITUNE" run "$tmp/tuned3"
# the manifest is sha256sum's format; one flipped byte of the backend's saved
# state (which would load and compute wrong answers) is refused by name
(cd "$tmp/tuned" && sha256sum --quiet -c MANIFEST.sha256) || { echo "FAIL: sha256sum -c"; fails=$((fails + 1)); }
cp -r "$tmp/tuned" "$tmp/flip"
state=$(cd "$tmp/flip" && find backend -type f | sort | head -1)
printf '\x01' | dd of="$tmp/flip/$state" bs=1 seek=$(($(stat -c %s "$tmp/flip/$state") / 2)) conv=notrunc status=none
expect 1 "$state is corrupted" -- "$AITUNE" run "$tmp/flip" --inputs "$BERT/test_data_set_0" --outputs "$tmp/fout"
rm "$tmp/flip/MANIFEST.sha256"
expect 1 "has no MANIFEST.sha256" -- "$AITUNE" run "$tmp/flip" --inputs "$BERT/test_data_set_0" --outputs "$tmp/fout"
# --out replaces only a tuned folder, unless --force; never the model (issue 18, item 7)
one=(--samples "$BERT/test_data_set_0" --batch-sizes 1 --no-cache "${fast[@]}")
mkdir -p "$tmp/mine" && echo precious >"$tmp/mine/notes.txt" && echo precious >"$tmp/afile"
expect 1 "is not an aitune tuned folder" -- "$AITUNE" tune "$BERT/model.onnx" --out "$tmp/mine" "${one[@]}"
expect 1 "is not an aitune tuned folder" -- "$AITUNE" tune "$BERT/model.onnx" --out "$tmp/afile" "${one[@]}"
grep -q precious "$tmp/mine/notes.txt" "$tmp/afile" || { echo "FAIL: --out deleted a user's file"; fails=$((fails + 1)); }
cp "$BERT/model.onnx" "$tmp/m.onnx"
expect 1 "is the input model" -- "$AITUNE" tune "$tmp/m.onnx" --out "$tmp/m.onnx" --force "${one[@]}"
expect 1 "holds the input model" -- "$AITUNE" tune "$tmp/m.onnx" --out "$tmp" --force "${one[@]}"
[ -s "$tmp/m.onnx" ] || { echo "FAIL: --out deleted the input model"; fails=$((fails + 1)); }
expect 0 "selected: " -- "$AITUNE" tune "$BERT/model.onnx" --out "$tmp/mine" --force "${one[@]}"
[ -f "$tmp/mine/decision.json" ] || { echo "FAIL: --force did not replace the folder"; fails=$((fails + 1)); }
expect 0 "selected: " -- "$AITUNE" tune "$BERT/model.onnx" --out "$tmp/mine" "${one[@]}" # a tuned folder now
# numeric options are parsed whole and range-checked (issue 24)
expect 2 "latency-budget-ms expects a time in ms > 0, got 'abc'" -- "$AITUNE" tune "$BERT/model.onnx" --strategy latency-budget --latency-budget-ms abc --out "$tmp/x"
expect 2 "max-runs expects an integer >= 1, got '0'" -- "$AITUNE" tune "$BERT/model.onnx" --max-runs 0 --out "$tmp/x"
expect 2 "warmup expects an integer >= 0, got '3x'" -- "$AITUNE" tune "$BERT/model.onnx" --warmup 3x --out "$tmp/x"
expect 2 "min-top1 expects a number in \[0, 1\], got '2'" -- "$AITUNE" tune "$BERT/model.onnx" --min-top1 2 --out "$tmp/x"
expect 2 "batch-sizes expects" -- "$AITUNE" tune "$BERT/model.onnx" --batch-sizes 1,99999999999 --out "$tmp/x"
expect 2 "must be >= --min-runs" -- "$AITUNE" tune "$BERT/model.onnx" --min-runs 9 --max-runs 5 --out "$tmp/x"
# report checks the manifest; a folder without decision.json says so (issue 18, items 15-16)
cp -r "$tmp/tuned" "$tmp/rep" && sed -i 's/max-throughput/min-latency/' "$tmp/rep/report.json"
expect 1 "report.json is corrupted" -- "$AITUNE" report "$tmp/rep"
rm "$tmp/rep/decision.json"
expect 1 "decision.json is missing" -- "$AITUNE" run "$tmp/rep"
expect 1 "decision.json is missing" -- "$AITUNE" bench "$tmp/rep"
# the batch-size optimizer learns: a second run starts from the best known size
# and measures fewer sizes than the first
expect 0 "usage" -- "$AITUNE" batch --help
first=$("$AITUNE" batch "$BERT/model.onnx" --backend eager --cache-dir "$tmp/hist" 2>/dev/null)
second=$("$AITUNE" batch "$BERT/model.onnx" --backend eager --cache-dir "$tmp/hist" 2>/dev/null)
n1=$(sed -n 's/.*: \([0-9]*\) size(s) measured now.*/\1/p' <<<"$first")
n2=$(sed -n 's/.*: \([0-9]*\) size(s) measured now.*/\1/p' <<<"$second")
if ! grep -q "sweep fresh" <<<"$first" || ! grep -q "sweep learned" <<<"$second" || [ -z "$n1" ] ||
  [ -z "$n2" ] || [ "$n2" -ge "$n1" ]; then
  echo "FAIL: batch history did not shorten the second sweep:"
  echo "$first"
  echo "$second"
  fails=$((fails + 1))
fi
# per-node profile on the executors that time nodes
expect 0 "per op type" -- "$AITUNE" profile "$BERT/model.onnx" --backend eager --iters 2 --inputs "$BERT/test_data_set_0"
expect 0 "LayerNormalization" -- "$AITUNE" profile "$BERT/model.onnx" --backend native --iters 2 --inputs "$BERT/test_data_set_0"
expect 2 "NAME=VALUE" -- "$AITUNE" profile "$BERT/model.onnx" --dim seq
if [ "$fails" -ne 0 ]; then
  echo "test_cli: $fails failure(s)"
  exit 1
fi
echo "test_cli: all checks passed"
