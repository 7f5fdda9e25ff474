#!/usr/bin/env bash
# CLI behaviour: help everywhere, clear errors with non-zero exits, run with
# random inputs and files.
set -u
AITUNE=$1
ROOT=$2
# memory pressure pinned low (the thresholds are the hook): on a machine
# where another process holds most of the memory, the tuner would otherwise
# halve batch sizes and free losers early (docs/hardware.md)
export AITUNE_MEM_MEDIUM=0 AITUNE_MEM_HIGH=0 AITUNE_MEM_CRITICAL=0
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
# --device-io: host-only candidates are refused, saying so
expect 1 "inputs live on the device (io_mem)" -- "$AITUNE" tune "$BERT/model.onnx" --backends native \
  --device-io --batch-sizes 1 --out "$tmp/x" --no-cache --quiet
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
# the table shows the decided figure (fastest run) beside the median, and a note
expect 0 "fastest ms   decided/s" -- "$AITUNE" report "$tmp/tuned"
expect 0 "  picked" -- "$AITUNE" report "$tmp/tuned"
expect 0 '"aitune-report"' -- "$AITUNE" report "$tmp/tuned" --json
expect 0 "1 passed, 0 failed" -- "$AITUNE" conformance "$BERT" # the folder, untouched
expect 0 "wrote 1 outputs" -- "$AITUNE" run "$tmp/tuned" --inputs "$BERT/test_data_set_0" --outputs "$tmp/tout"
# publish: a Triton model repository (the server itself: tests/test_serving.py)
expect 0 usage -- "$AITUNE" publish --help
expect 0 "published" -- "$AITUNE" publish "$tmp/tuned" --triton "$tmp/triton" --name bert --instances 3 \
  --max-batch-size 2 --max-queue-delay-us 500
for want in 'name: "input_ids"' 'data_type: TYPE_INT64' 'dims: \[ -1 \]' 'max_batch_size: 2' \
  'preferred_batch_size: \[ 1, 2 \]' 'max_queue_delay_microseconds: 500' 'count: 3' 'kind: KIND_CPU'; do
  grep -q -- "$want" "$tmp/triton/bert/config.pbtxt" || {
    echo "FAIL: publish: config.pbtxt lacks '$want'"
    fails=$((fails + 1))
  }
done
for f in model.py aitune/decision.json aitune/MANIFEST.sha256; do
  [ -f "$tmp/triton/bert/1/$f" ] || {
    echo "FAIL: publish: 1/$f is missing"
    fails=$((fails + 1))
  }
done
expect 0 "published" -- "$AITUNE" publish "$tmp/tuned" --triton "$tmp/triton" --name bert --no-dynamic-batching
grep -q dynamic_batching "$tmp/triton/bert/config.pbtxt" && {
  echo "FAIL: publish --no-dynamic-batching wrote dynamic_batching"
  fails=$((fails + 1))
}
expect 1 "not a tuned model folder" -- "$AITUNE" publish "$tmp" --triton "$tmp/triton"
expect 2 "not a model name" -- "$AITUNE" publish "$tmp/tuned" --triton "$tmp/triton" --name ../x
expect 2 "needs --triton" -- "$AITUNE" publish "$tmp/tuned"
expect 2 "--instances expects" -- "$AITUNE" publish "$tmp/tuned" --triton "$tmp/triton" --instances 0
mkdir -p "$tmp/triton/other"
expect 1 "not written by aitune publish" -- "$AITUNE" publish "$tmp/tuned" --triton "$tmp/triton" --name other
: >"$tmp/afile"
expect 1 "cannot publish" -- "$AITUNE" publish "$tmp/tuned" --triton "$tmp/afile"
# the tuned model's outputs agree with the reference: check them as a test folder
mkdir -p "$tmp/chk/test_data_set_0" && cp "$BERT/model.onnx" "$tmp/chk/" &&
  cp "$BERT"/test_data_set_0/input_*.pb "$tmp/tout/output_0.pb" "$tmp/chk/test_data_set_0/"
expect 0 "1 passed, 0 failed" -- "$AITUNE" conformance "$tmp/chk"
expect 0 '"median":' -- "$AITUNE" bench "$tmp/tuned" --json --iters 5
expect 0 '"throughput"' -- "$AITUNE" bench "$BERT/model.onnx" --json --iters 5 --batch 2
# a repeated identical tune is answered from the cache (its message says so;
# no wall-clock limit: the suite must pass on a loaded machine)
expect 0 "from the cache" -- "$AITUNE" tune "$BERT/model.onnx" --samples "$BERT/test_data_set_0" --batch-sizes 1,2 \
  --cache-dir "$tmp/cache" --out "$tmp/tuned2" "${fast[@]}"
# a corrupted cache entry is discarded and re-tuned, never a crash
for d in "$tmp"/cache/*/; do echo "garbage" >"$d/decision.json"; done
expect 0 "discarding a corrupted cache entry" -- "$AITUNE" tune "$BERT/model.onnx" --samples "$BERT/test_data_set_0" \
  --batch-sizes 1,2 --cache-dir "$tmp/cache" --out "$tmp/tuned3" "${fast[@]}"
# a decision made under --precision any is not served to a later default
# (fp32) tune of the same model, and the default's own decision is
prec=(--samples "$BERT/test_data_set_0" --batch-sizes 1 --backends native --cache-dir "$tmp/pcache" "${fast[@]}")
expect 0 "selected: " -- "$AITUNE" tune "$BERT/model.onnx" --precision any --out "$tmp/pany" "${prec[@]}"
out=$("$AITUNE" tune "$BERT/model.onnx" --out "$tmp/pfp32" "${prec[@]}" 2>&1)
if ! grep -q "selected: " <<<"$out" || grep -q "from the cache" <<<"$out"; then
  echo "FAIL: a default tune after a --precision any one was answered from the cache (or failed):"
  echo "$out" | tail -5
  fails=$((fails + 1))
fi
expect 0 "from the cache" -- "$AITUNE" tune "$BERT/model.onnx" --out "$tmp/pfp32b" "${prec[@]}"
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
# a folder of the user's named like a killed save's leftover (DIR.old.PID) is kept
mkdir -p "$tmp/mine.old.2024" && echo precious >"$tmp/mine.old.2024/notes.txt"
expect 0 "selected: " -- "$AITUNE" tune "$BERT/model.onnx" --out "$tmp/mine" "${one[@]}"
grep -q precious "$tmp/mine.old.2024/notes.txt" || { echo "FAIL: --out deleted a user's folder beside DIR"; fails=$((fails + 1)); }
# ...but not while it holds a file of the user's, which only --force replaces
echo precious >"$tmp/mine/notes.txt"
expect 1 "also holds 'notes.txt', which aitune did not write" -- "$AITUNE" tune "$BERT/model.onnx" --out "$tmp/mine" "${one[@]}"
grep -q precious "$tmp/mine/notes.txt" || { echo "FAIL: --out deleted a user's file inside a tuned folder"; fails=$((fails + 1)); }
expect 0 "selected: " -- "$AITUNE" tune "$BERT/model.onnx" --out "$tmp/mine" --force "${one[@]}"
# numeric options are parsed whole and range-checked (issue 24)
expect 2 "latency-budget-ms expects a time in ms > 0, got 'abc'" -- "$AITUNE" tune "$BERT/model.onnx" --strategy latency-budget --latency-budget-ms abc --out "$tmp/x"
expect 2 "max-runs expects an integer >= 1, got '0'" -- "$AITUNE" tune "$BERT/model.onnx" --max-runs 0 --out "$tmp/x"
expect 2 "warmup expects an integer >= 0, got '3x'" -- "$AITUNE" tune "$BERT/model.onnx" --warmup 3x --out "$tmp/x"
expect 2 "min-top1 expects a number in \[0, 1\], got '2'" -- "$AITUNE" tune "$BERT/model.onnx" --min-top1 2 --out "$tmp/x"
expect 2 "batch-sizes expects" -- "$AITUNE" tune "$BERT/model.onnx" --batch-sizes 1,99999999999 --out "$tmp/x"
expect 2 "must be >= --min-runs" -- "$AITUNE" tune "$BERT/model.onnx" --min-runs 9 --max-runs 5 --out "$tmp/x"
# load limits (issue 18): defaults, overrides by flag on info/run/tune, bad values named
expect 2 "max-depth expects an integer in \[1, 1000\], got '0'" -- "$AITUNE" info "$MODEL" --max-depth 0
expect 2 "max-tensor-bytes expects an integer" -- "$AITUNE" info "$MODEL" --max-tensor-bytes 12x
expect 2 "max-nodes expects an integer in \[1, 1000000000\]" -- "$AITUNE" run "$MODEL" --max-nodes=-1
expect 2 "max-fold-elements expects" -- "$AITUNE" tune "$BERT/model.onnx" --max-fold-elements 0 --out "$tmp/x"
expect 1 "more than max_tensor_bytes 1000 " -- "$AITUNE" info "$MODEL" --max-tensor-bytes 1000
expect 0 "Conv" -- "$AITUNE" info "$MODEL" --max-tensor-bytes=100000000 --max-nodes 1000
expect 1 "more than 10 nodes (max_nodes" -- "$AITUNE" run "$MODEL" --max-nodes 10
expect 1 "more than 10 nodes (max_nodes" -- "$AITUNE" tune "$BERT/model.onnx" --max-nodes 10 --out "$tmp/x"
expect 1 "nests messages more than 3 deep" -- "$AITUNE" run "$tmp/tuned" --max-depth 3
expect 1 "more than 10 nodes (max_nodes" -- "$AITUNE" bench "$MODEL" --max-nodes 10
expect 1 "nests messages more than 3 deep" -- "$AITUNE" bench "$tmp/tuned" --max-depth 3
expect 1 "nests messages more than 3 deep" -- "$AITUNE" profile "$MODEL" --max-depth 3
expect 1 "nests messages more than 3 deep" -- "$AITUNE" publish "$tmp/tuned" --triton "$tmp/repo_limits" --max-depth 3
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
# ---- flags (issue 24): --opt=value everywhere, numbers checked by name, --inputs
expect 0 "output: float32 \[3,1000\]" -- "$AITUNE" run "$MODEL" --dim=batch=3
expect 2 "max-runs expects an integer >= 1, got '0'" -- "$AITUNE" tune "$BERT/model.onnx" --max-runs=0 --out "$tmp/x"
expect 2 "latency-budget-ms expects a time in ms > 0, got 'abc'" -- "$AITUNE" tune "$BERT/model.onnx" --latency-budget-ms=abc --out "$tmp/x"
expect 2 "iters expects an integer in \[1, 1000000\], got 'abc'" -- "$AITUNE" bench "$BERT/model.onnx" --iters abc
expect 2 "batch expects an integer in \[1, 1048576\], got '0'" -- "$AITUNE" bench "$BERT/model.onnx" --batch=0
expect 2 "warmup expects an integer in \[0, 1000000\], got '-1'" -- "$AITUNE" bench "$BERT/model.onnx" --warmup -1
expect 2 "top expects an integer" -- "$AITUNE" profile "$BERT/model.onnx" --top 5x
expect 2 "seed expects an integer >= 0, got 'x'" -- "$AITUNE" run "$MODEL" --seed x
expect 2 "timeout expects an integer" -- "$AITUNE" conformance --timeout 0 "$BERT"
expect 2 "latency-budget-ms expects" -- "$AITUNE" batch "$BERT/model.onnx" --latency-budget-ms -5
expect 2 "unknown option '--json', or one that takes no value" -- "$AITUNE" info "$MODEL" --json=1
expect 2 "unknown option '--frob', or its value is missing" -- "$AITUNE" bench "$MODEL" --frob
expect 2 "output-format expects pb or npy" -- "$AITUNE" run "$MODEL" --output-format=tf
expect 0 "wrote 1 outputs" -- "$AITUNE" run "$BERT/model.onnx" --samples "$BERT/test_data_set_0" --outputs "$tmp/alias"
expect 0 "selected: " -- "$AITUNE" tune "$BERT/model.onnx" --inputs="$BERT/test_data_set_0" --batch-sizes=1 --no-cache \
  --out="$tmp/eqforms" --warmup=1 --min-runs=3 --max-runs=5 --cv=0 --time-budget=0.2 --backends=native
# ---- --dim and --shape: a symbolic dim or INPUT:AXIS; axes of one symbol move together
expect 0 "output: float32 \[2,7,128\]" -- "$AITUNE" run "$BERT/model.onnx" --dim seq=7 --dim batch=2
expect 0 "output: float32 \[1,5,128\]" -- "$AITUNE" run "$BERT/model.onnx" --dim input_ids:1=5
expect 0 "output: float32 \[1,9,128\]" -- "$AITUNE" run "$BERT/model.onnx" --inputs "$BERT/test_data_set_0" --dim seq=9
expect 1 "'nope' names no axis of the model's inputs; its dynamic axes are: batch (input_ids:0), seq (input_ids:1)" -- \
  "$AITUNE" run "$BERT/model.onnx" --dim nope=3
expect 1 "axis 1 of input 'input' is declared as 3; it cannot be sized" -- "$AITUNE" run "$MODEL" --dim input:1=4
expect 1 "'input_ids:1' and 'seq' both size axis 1" -- "$AITUNE" run "$BERT/model.onnx" --dim input_ids:1=5 --dim seq=3
expect 2 "wants MIN <= OPT <= MAX" -- "$AITUNE" tune "$BERT/model.onnx" --shape seq=8:4:16 --out "$tmp/x"
expect 2 "shape expects NAME=MIN:OPT:MAX" -- "$AITUNE" tune "$BERT/model.onnx" --shape seq=a:b --out "$tmp/x"
expect 2 "int-range expects \[INPUT=\]LO:HI" -- "$AITUNE" tune "$BERT/model.onnx" --int-range 5 --out "$tmp/x"
expect 0 "3 sample(s)" -- "$AITUNE" tune "$BERT/model.onnx" --shape seq=4:8:16 --shape batch=1:2:4 \
  --int-range input_ids=0:1000 --int-range attention_mask=1:1 --backends native --no-cache --out "$tmp/shaped" "${fast[@]}"
# the tuned range is the --shape range; the batch sizes were its powers of two
"$AITUNE" report "$tmp/shaped" --json >"$tmp/shaped.json"
grep -A2 '"name":.*"seq"' "$tmp/shaped.json" | tr -d ' \t\n' | grep -q '"min":4,"opt":8' &&
  grep -A3 '"name":.*"seq"' "$tmp/shaped.json" | tr -d ' \t\n' | grep -q '"max":16' &&
  tr -d ' \t\n' <"$tmp/shaped.json" | grep -q '"batch_sizes":\[1,2,4\]' || {
  echo "FAIL: tune --shape did not tune seq over [4, 16] at batch sizes 1,2,4"
  fails=$((fails + 1))
}
expect 0 "output: float32 \[2,16,128\]" -- "$AITUNE" run "$tmp/shaped" --dim seq=16 --dim batch=2
# ---- .npy inputs beside .pb: a format 1.0 file written by hand (128-byte header)
npy() { # npy DESCR SHAPE BYTES: header, then BYTES zero bytes of data
  local d="{'descr': '$1', 'fortran_order': False, 'shape': ($2), }"
  printf '\x93NUMPY\x01\x00\x76\x00%s%*s\n' "$d" $((117 - ${#d})) ""
  head -c "$3" /dev/zero
}
mkdir -p "$tmp/npy"
npy '<i8' '1, 32' 256 >"$tmp/npy/input_0.npy" && npy '<i8' '1, 32' 256 >"$tmp/npy/input_1.npy"
expect 0 "output: float32 \[1,32,128\]" -- "$AITUNE" run "$BERT/model.onnx" --inputs "$tmp/npy"
expect 0 "selected: " -- "$AITUNE" tune "$BERT/model.onnx" --inputs "$tmp/npy" --batch-sizes 1 --backends native --no-cache \
  --out "$tmp/npytuned" "${fast[@]}"
npy '<i8' '1, 32' 200 >"$tmp/npy/input_0.npy"
expect 1 "the .npy header says int64 \[1,32\] (256 bytes of data) but the file holds 200" -- "$AITUNE" run "$BERT/model.onnx" --inputs "$tmp/npy"
npy '>i8' '1, 32' 256 >"$tmp/npy/input_0.npy"
expect 1 "dtype '>i8' is not read" -- "$AITUNE" bench "$BERT/model.onnx" --inputs "$tmp/npy"
npy '<f4' '1, 32' 128 >"$tmp/npy/input_0.npy"
expect 1 "input 'input_ids' expected dtype int64, got float32" -- "$AITUNE" run "$BERT/model.onnx" --inputs "$tmp/npy"
d="{'descr': '<i8', 'fortran_order': True, 'shape': (1, 32), }"
{ printf '\x93NUMPY\x01\x00\x76\x00%s%*s\n' "$d" $((117 - ${#d})) "" && head -c 256 /dev/zero; } >"$tmp/npy/input_0.npy"
expect 1 "Fortran-ordered arrays are not read" -- "$AITUNE" run "$BERT/model.onnx" --inputs "$tmp/npy"
echo "hello" >"$tmp/npy/input_0.npy"
expect 1 "not a valid .npy file" -- "$AITUNE" run "$BERT/model.onnx" --inputs "$tmp/npy"
cp "$BERT/test_data_set_0/input_0.pb" "$tmp/npy/"
expect 1 "holds both input_0.pb and input_0.npy" -- "$AITUNE" run "$BERT/model.onnx" --inputs "$tmp/npy"
rm "$tmp/npy/input_0.pb" "$tmp/npy/input_0.npy"
expect 1 "no input_0.pb or input_0.npy" -- "$AITUNE" run "$BERT/model.onnx" --inputs "$tmp/npy"
# outputs as .npy: the same bytes as the .pb (header magic, float32 [1,32,128])
expect 0 "wrote 1 outputs" -- "$AITUNE" run "$BERT/model.onnx" --inputs "$BERT/test_data_set_0" --outputs "$tmp/npyout" --output-format npy
head -c 6 "$tmp/npyout/output_0.npy" | grep -q NUMPY && [ "$(stat -c %s "$tmp/npyout/output_0.npy")" -eq $((128 + 32 * 128 * 4)) ] || {
  echo "FAIL: output_0.npy is not a float32 [1,32,128] .npy"
  fails=$((fails + 1))
}
# with numpy and onnx at hand (scripts/test.sh's venv): .npy inputs give the
# .pb inputs' outputs bit for bit, numpy reads the .npy outputs back, and a
# symbolic dim named ba"ch (or with a backslash, or UTF-8) survives tune ->
# save -> load -> run through the CLI
if python3 -c "import numpy, onnx" 2>/dev/null; then
  python3 - "$BERT" "$tmp" <<'PY' || fails=$((fails + 1))
import os, sys
import numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
bert, tmp = sys.argv[1], sys.argv[2]
os.makedirs(f"{tmp}/pynpy", exist_ok=True)
for k in range(2):
    t = numpy_helper.to_array(onnx.load_tensor(f"{bert}/test_data_set_0/input_{k}.pb"))
    np.save(f"{tmp}/pynpy/input_{k}.npy", t)
for k, name in enumerate(['ba"ch', "back\\slash", "d\u00e9j\u00e0 \u2192 n"]):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [name, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [name, 8])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{tmp}/quote{k}.onnx")
# 40 Ifs inside each other: about 125 levels of protobuf nesting, over the
# default --max-depth of 100 (built in place, top down: protobuf's own parser
# refuses more than 100 levels, so helper's copies cannot make it)
from onnx import AttributeProto, ModelProto
m = ModelProto(ir_version=8)
m.opset_import.add(domain="", version=17)
g = m.graph
g.name = "deep"
g.input.extend([helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
g.output.append(y)
for _ in range(40):
    n = g.node.add(op_type="If", input=["c"], output=["y"])
    t = n.attribute.add(name="then_branch", type=AttributeProto.GRAPH)
    e = n.attribute.add(name="else_branch", type=AttributeProto.GRAPH)
    e.g.node.add(op_type="Identity", input=["x"], output=["y"])
    e.g.name = "e"
    e.g.output.append(y)
    g = t.g
    g.name = "b"
    g.output.append(y)
g.node.add(op_type="Identity", input=["x"], output=["y"])
with open(f"{tmp}/deep.onnx", "wb") as f:
    f.write(m.SerializeToString())
PY
  expect 1 "nests messages more than 100 deep" -- "$AITUNE" info "$tmp/deep.onnx"
  expect 0 "If  *40" -- "$AITUNE" info "$tmp/deep.onnx" --max-depth 200
  expect 0 "selected: " -- "$AITUNE" tune "$tmp/deep.onnx" --max-depth=200 --backends native --batch-sizes 1 \
    --no-cache --out "$tmp/deep" "${fast[@]}"
  expect 1 "nests messages more than 100 deep" -- "$AITUNE" run "$tmp/deep"
  expect 0 "y: float32 \[2\]" -- "$AITUNE" run "$tmp/deep" --max-depth 200
  expect 0 "wrote 1 outputs" -- "$AITUNE" run "$BERT/model.onnx" --inputs "$tmp/pynpy" --outputs "$tmp/pynpyout" --output-format npy
  python3 -c "
import sys, numpy as np, onnx
from onnx import numpy_helper
a = np.load('$tmp/pynpyout/output_0.npy')
b = numpy_helper.to_array(onnx.load_tensor('$tmp/alias/output_0.pb'))
sys.exit(0 if a.dtype == b.dtype and a.shape == b.shape and (a == b).all() else 1)" ||
    { echo "FAIL: .npy inputs and outputs differ from the .pb ones"; fails=$((fails + 1)); }
  for k in 0 1 2; do
    expect 0 "selected: " -- "$AITUNE" tune "$tmp/quote$k.onnx" --backends native --batch-sizes 1,2 --no-cache \
      --out "$tmp/quote$k" "${fast[@]}"
    expect 0 "y: float32 \[2,8\]" -- "$AITUNE" run "$tmp/quote$k" --dim "$(python3 -c "import onnx; print(onnx.load('$tmp/quote$k.onnx').graph.input[0].type.tensor_type.shape.dim[0].dim_param)")=2"
  done
else
  echo "test_cli: numpy/onnx not found: the .npy round trip with numpy and the quoted-dim CLI round trip are skipped"
fi
if [ "$fails" -ne 0 ]; then
  echo "test_cli: $fails failure(s)"
  exit 1
fi
echo "test_cli: all checks passed"
