#!/usr/bin/env bash
# Check and time the `cuda` backend on a GPU machine, in one call.
#
#   scripts/gpu_check.sh --bundle BUILD_DIR DEST   (here: pack what to carry)
#   scripts/gpu_check.sh AITUNE REPO [DATA] [PHASES]   (on the GPU machine)
#
#   --bundle  writes DEST/aitune_gpu.tar.xz (~15 MB): BUILD_DIR's aitune and
#           tests/test_cuda, the shared libraries they need that a CUDA image
#           lacks (OpenBLAS, oneDNN, XNNPACK, protobuf-c, cJSON, ...) and the
#           ONNX node tests (libonnx-testdata's node/, when installed). Carry
#           that file.
#   AITUNE  that .tar.xz (unpacked under $WORK), or an aitune binary whose
#           libraries sit in its folder, its lib/, or $AIT_LIBDIR
#   REPO    the repository root (scripts/make_models.py, bench/torch_gpu.py)
#   DATA    ONNX node tests: libonnx-testdata's data/ folder or its node/
#           folder; absent: the bundle's node/ if it has one; "-": skipped
#   PHASES  comma list of env,conf,models,bench,profile,tune,torch (default:
#           all but profile and tune). All of
#           them take ~15 min on an H200: split them over two calls, e.g.
#           env,conf,models then bench,torch (each call regenerates the
#           models it needs: ~1.5 min)
#
# Environment: MODEL_CONF=0 skips the models phase's ONNX Runtime check;
# BENCH_MODELS (default "resnet50 bert_base"), BENCH_BATCHES
# ("1 32"), BENCH_CONFIGS (cuda options per bench run, default "dtype=fp32
# dtype=tf32 dtype=bf16 dtype=fp16 dtype=fp8 dtype=fp8,fp8_fast_accum=on");
# PROFILE_RUNS for the profile phase: MODEL:BATCH:OPTIONS items (default
# "bert_base:32:dtype=bf16 bert_base:32:dtype=fp8 resnet50:1:dtype=tf32"),
# each an `aitune profile` (per-step device times, CUDA events) written to
# $OUT/profile_MODEL_bBATCH_OPTIONS.txt. TUNE_RUNS for the tune phase:
# MODEL:BATCH:BACKENDS items (BACKENDS as `aitune tune --backends` takes
# them), each an `aitune tune` on the model's test_data_set_0 resized to
# BATCH, its report written to $OUT/tune_MODEL_bBATCH.txt; TUNE_ARGS are
# added to each (e.g. --no-perf-validation: no profile of the CPU eager
# baseline, which takes minutes at BERT-base batch 32; the numeric check
# against it stays), TUNE_LIMIT seconds each (default 240).
# Needs on the GPU machine: nvidia-smi, python3 with torch, torchvision, onnx,
# onnxruntime (scripts/make_models.py) and the CUDA libraries aitune links
# (libcudart.so.13, libcublas(Lt).so.13, libcudnn.so.9: from the CUDA toolkit
# or the nvidia-* Python wheels, found automatically).
# Writes $OUT (default ./gpu_check_out): gpu_check.md (summary),
# gpu_check.json (every result), gpu_check.log (all output), and the test_cuda
# output when a test_cuda binary sits next to AITUNE (or tests/test_cuda).
# The whole run stays under ~9.5 minutes: each phase gets a time limit.
# A lent machine brings back a limited number of files: pointing several
# runs at one $OUT, pack it (tar) into one archive at the end.
set -u

if [ "${1:-}" = "--bundle" ]; then
  [ $# -eq 3 ] || { echo "usage: $0 --bundle BUILD_DIR DEST" >&2; exit 2; }
  B=$(readlink -f "$2")
  D=$(readlink -f "$3")
  T=$(mktemp -d)
  mkdir -p "$T/aitune_gpu/lib" "$D"
  cp "$B/aitune" "$T/aitune_gpu/"
  # the cuda backend is a plugin, found beside the program
  if [ -e "$B/libaitune_cuda.so" ]; then
    cp "$B/libaitune_cuda.so" "$T/aitune_gpu/"
  else
    echo "warning: no $B/libaitune_cuda.so (target aitune_cuda): aitune will have no cuda backend" >&2
  fi
  [ -x "$B/tests/test_cuda" ] && cp "$B/tests/test_cuda" "$T/aitune_gpu/"
  [ -x "$B/gpu_io_bench" ] && cp "$B/gpu_io_bench" "$T/aitune_gpu/" # scripts/gpu_suite.sh
  # the shared library, for the Python extension built there (scripts/gpu_suite.sh's py phase)
  for f in "$B"/libaitune.so*; do [ -e "$f" ] && cp -P "$f" "$T/aitune_gpu/"; done
  # what ldd resolves, minus the C runtime and CUDA (the GPU machine has newer ones)
  for bin in "$T"/aitune_gpu/aitune "$T"/aitune_gpu/libaitune_cuda.so "$T"/aitune_gpu/test_cuda \
    "$T"/aitune_gpu/gpu_io_bench "$T"/aitune_gpu/libaitune.so; do
    [ -e "$bin" ] || continue
    ldd "$bin" | awk '/=> \//{print $3}'
  done | sort -u | grep -v -E '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libcudnn[^/]*|libnv[^/]*)\.so' |
    while read -r l; do cp -L "$l" "$T/aitune_gpu/lib/"; done
  NODE_SRC=${NODE_SRC:-/usr/share/libonnx-testdata/data/node}
  [ -d "$NODE_SRC" ] && cp -r "$NODE_SRC" "$T/aitune_gpu/node"
  tar -C "$T" -cJf "$D/aitune_gpu.tar.xz" aitune_gpu
  rm -rf "$T"
  ls -la "$D/aitune_gpu.tar.xz"
  exit 0
fi
if [ $# -lt 2 ]; then
  sed -n '2,35p' "$0"
  exit 2
fi
AITUNE=$(readlink -f "$1")
REPO=$(readlink -f "$2")
DATA=${3:-bundle}
PHASES=${4:-env,conf,models,bench,torch}
BENCH_MODELS=${BENCH_MODELS:-resnet50 bert_base}
BENCH_BATCHES=${BENCH_BATCHES:-1 32}
BENCH_CONFIGS=${BENCH_CONFIGS:-dtype=fp32 dtype=tf32 dtype=bf16 dtype=fp16 dtype=fp8 dtype=fp8,fp8_fast_accum=on}
PROFILE_RUNS=${PROFILE_RUNS:-bert_base:32:dtype=bf16 bert_base:32:dtype=fp8 resnet50:1:dtype=tf32}
OUT=${OUT:-$PWD/gpu_check_out}
WORK=${WORK:-/tmp/aitune_gpu_check}
BUDGET=${BUDGET:-570}
mkdir -p "$OUT" "$WORK/models" "$WORK/results"
case "$AITUNE" in
*.tar.xz)
  tar -C "$WORK" -xJf "$AITUNE" || { echo "cannot unpack $AITUNE" >&2; exit 1; }
  AITUNE=$WORK/aitune_gpu/aitune
  ;;
esac
LOG=$OUT/gpu_check.log
RES=$WORK/results
: >"$LOG"
T0=$(date +%s)

log() { echo "[$(($(date +%s) - T0))s] $*" | tee -a "$LOG"; }
has_phase() { case ",$PHASES," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
left() { echo $((BUDGET - ($(date +%s) - T0))); }
# run LIMIT_S CMD...: at most LIMIT_S seconds (never past the budget), output logged
run() {
  local lim=$1 l
  shift
  l=$(left)
  [ "$lim" -gt "$l" ] && lim=$l
  if [ "$lim" -le 5 ]; then
    log "SKIP (time budget): $*"
    return 124
  fi
  timeout -k 5 "$lim" "$@" >>"$LOG" 2>&1
}

# ---- libraries: the binary's folder, its lib/, AIT_LIBDIR, CUDA and the wheels ----
libdirs="$(dirname "$AITUNE"):$(dirname "$AITUNE")/lib"
[ -n "${AIT_LIBDIR:-}" ] && libdirs="$AIT_LIBDIR:$libdirs"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/nvidia/lib64; do
  [ -d "$d" ] && libdirs="$libdirs:$d"
done
if command -v python3 >/dev/null; then
  for site in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
    for d in "$site"/nvidia/*/lib "$site"/nvidia/cu13/lib; do
      [ -d "$d" ] && libdirs="$libdirs:$d"
    done
  done
fi
# only aitune's processes get these paths: python (torch) keeps its own libraries
AIT_LD="$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
AIT=(env "LD_LIBRARY_PATH=$AIT_LD") # prefix for aitune's processes (works under timeout)
TEST_CUDA=""
for t in "$(dirname "$AITUNE")/test_cuda" "$(dirname "$AITUNE")/tests/test_cuda"; do
  [ -x "$t" ] && TEST_CUDA=$t && break
done

if has_phase env; then
  log "== environment"
  { nvidia-smi; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; } >>"$LOG" 2>&1 \
    || log "nvidia-smi failed"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$RES/gpu.txt" 2>/dev/null
  PLUGIN=$(dirname "$AITUNE")/libaitune_cuda.so # the cuda backend: what it needs too
  [ -e "$PLUGIN" ] || PLUGIN=""
  if for f in "$AITUNE" $PLUGIN; do "${AIT[@]}" ldd "$f"; done | grep "not found" |
    tee "$RES/missing_libs.txt" >>"$LOG"; then
    log "MISSING LIBRARIES (see gpu_check.log): put them in $(dirname "$AITUNE")/lib or AIT_LIBDIR"
  fi
  for f in "$AITUNE" $PLUGIN; do "${AIT[@]}" ldd "$f"; done >>"$LOG" 2>&1
  "${AIT[@]}" "$AITUNE" backends >"$RES/backends.txt" 2>&1
  cat "$RES/backends.txt" | tee -a "$LOG"
fi

# ---- conformance on the node tests ------------------------------------------
if has_phase conf; then
  NODE=""
  if [ "$DATA" = "bundle" ]; then
    [ -d "$(dirname "$AITUNE")/node" ] && NODE=$(dirname "$AITUNE")/node
  elif [ "$DATA" != "-" ]; then
    [ -d "$DATA/node" ] && NODE=$DATA/node || NODE=$DATA
  fi
  if [ -n "$NODE" ] && [ -d "$NODE" ]; then
    log "== conformance: node tests in $NODE (backend cuda)"
    run 240 "${AIT[@]}" "$AITUNE" conformance --backend cuda --timeout 60 "$NODE"
    grep -E '^(PASS|FAIL|SKIP) ' "$LOG" | grep "$NODE" >"$RES/conf_node.txt" || true
  else
    log "== conformance: node tests skipped (no DATA folder)"
  fi
  if [ -n "$TEST_CUDA" ]; then
    log "== $TEST_CUDA"
    run 120 "${AIT[@]}" "$TEST_CUDA" "$REPO/models/bert_tiny/model.onnx" "$REPO/models/mobilenetv2_035/model.onnx"
    echo $? >"$RES/test_cuda.rc"
  fi
fi

# ---- models: generate, then conformance against ONNX Runtime -----------------
MODELS="$WORK/models"
if has_phase models || has_phase bench || has_phase profile || has_phase tune; then
  for m in $BENCH_MODELS; do
    if [ ! -f "$MODELS/$m/model.onnx" ]; then
      log "== generating $m (scripts/make_models.py)"
      run 240 python3 "$REPO/scripts/make_models.py" --only "$m" --out "$MODELS" || log "generating $m failed"
    fi
  done
fi
if has_phase models; then
  for m in resnet50 bert_base; do
    [ -f "$MODELS/$m/model.onnx" ] && [ "${MODEL_CONF:-1}" != 0 ] || continue
    log "== conformance: $m vs ONNX Runtime (cuda, fp32)"
    run 120 "${AIT[@]}" "$AITUNE" conformance --backend cuda --timeout 110 "$MODELS/$m"
    grep -E "^(PASS|FAIL|SKIP) .*$m" "$LOG" | tail -1 >"$RES/conf_$m.txt"
  done
  if [ -n "$TEST_CUDA" ]; then
    log "== $TEST_CUDA on resnet50 and bert_base, every precision"
    run 200 "${AIT[@]}" "$TEST_CUDA" "$MODELS/resnet50/model.onnx" "$MODELS/bert_base/model.onnx"
    echo $? >"$RES/test_cuda_models.rc"
  fi
fi

# ---- aitune bench: every precision, batch 1 and 32 ---------------------------
if has_phase bench; then
  : >"$RES/bench.jsonl"
  for m in $BENCH_MODELS; do
    [ -f "$MODELS/$m/model.onnx" ] || continue
    dims=""
    [ "$m" = bert_base ] && dims="--dim seq=128"
    for b in $BENCH_BATCHES; do
      for dt in $BENCH_CONFIGS; do
        if [ "$(left)" -le 10 ]; then
          log "SKIP (time budget): bench $m batch $b $dt"
          continue
        fi
        log "== aitune bench $m batch $b cuda:$dt"
        line=$(timeout -k 5 $(($(left) > 60 ? 60 : $(left))) "${AIT[@]}" "$AITUNE" bench "$MODELS/$m/model.onnx" \
          $dims --backend "cuda:$dt" --batch $b --warmup 10 --iters 50 --json 2>"$RES/bench.err")
        rc=$?
        cat "$RES/bench.err" >>"$LOG"
        echo "$line" >>"$LOG"
        if [ $rc -eq 0 ] && [ -n "$line" ]; then
          echo "{\"model\":\"$m\",\"dtype\":\"$dt\",\"result\":$line}" >>"$RES/bench.jsonl"
        else
          why=$(tail -1 "$RES/bench.err" | tr -d '"\\' | cut -c1-300)
          echo "{\"model\":\"$m\",\"dtype\":\"$dt\",\"batch\":$b,\"error\":\"exit $rc: $why\"}" >>"$RES/bench.jsonl"
        fi
      done
    done
  done
fi

# ---- per-step device profile (aitune profile, CUDA events, no graph replay) ----
if has_phase profile; then
  for item in $PROFILE_RUNS; do
    m=${item%%:*}
    rest=${item#*:}
    b=${rest%%:*}
    opts=${rest#*:}
    [ -f "$MODELS/$m/model.onnx" ] || continue
    dims=""
    [ "$m" = bert_base ] && dims="--dim seq=128"
    f="$OUT/profile_${m}_b${b}_$(echo "$opts" | tr -c 'A-Za-z0-9_\n' '_').txt"
    log "== aitune profile $m batch $b cuda:$opts -> $f"
    timeout -k 5 $(($(left) > 90 ? 90 : $(left))) "${AIT[@]}" "$AITUNE" profile "$MODELS/$m/model.onnx" \
      $dims --backend "cuda:$opts" --batch $b --iters 20 --top 40 >"$f" 2>&1
    tail -60 "$f" >>"$LOG"
  done
fi

# ---- aitune tune: the tuner's pick, numeric check included --------------------
if has_phase tune; then
  for item in ${TUNE_RUNS:-}; do
    m=${item%%:*}
    rest=${item#*:}
    b=${rest%%:*}
    bk=${rest#*:}
    [ -f "$MODELS/$m/model.onnx" ] || continue
    f="$OUT/tune_${m}_b${b}.txt"
    log "== aitune tune $m batch $b --backends $bk -> $f"
    lim=${TUNE_LIMIT:-240}
    timeout -k 5 $(($(left) > lim ? lim : $(left))) "${AIT[@]}" "$AITUNE" tune "$MODELS/$m/model.onnx" \
      --out "$WORK/tuned_${m}_b$b" --backends "$bk" --batch-sizes "$b" \
      --samples "$MODELS/$m/test_data_set_0" --no-cache --max-runs 20 ${TUNE_ARGS:-} >"$f" 2>&1
    echo "exit $?" >>"$f"
    tail -40 "$f" >>"$LOG"
  done
fi

# ---- PyTorch: eager and torch.compile on the same models ----------------------
if has_phase torch; then
  log "== bench/torch_gpu.py"
  l=$(left)
  run $l python3 "$REPO/bench/torch_gpu.py" --models "${TORCH_MODELS:-resnet50,bert_base}" \
    --batches "${TORCH_BATCHES:-1,32}" \
    --modes "${TORCH_MODES:-eager_fp32,eager_bf16,compile_bf16,reduce_overhead_bf16}" \
    --budget $((l > 40 ? l - 40 : 1)) --json "$RES/torch.json"
fi

# ---- summary -----------------------------------------------------------------
python3 - "$RES" "$OUT" "$PHASES" "$(($(date +%s) - T0))" <<'EOF' >>"$LOG" 2>&1
import json, os, sys
res, out, phases, secs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def read(name):
    p = os.path.join(res, name)
    return open(p).read() if os.path.exists(p) else ""
doc = {"phases": phases, "seconds": secs, "gpu": read("gpu.txt").strip(),
       "missing_libs": read("missing_libs.txt").split("\n") if read("missing_libs.txt").strip() else [],
       "backends": read("backends.txt")}
lines = read("conf_node.txt").splitlines()
doc["conformance_node"] = {"pass": sum(l.startswith("PASS") for l in lines),
                           "fail": sum(l.startswith("FAIL") for l in lines),
                           "skip": sum(l.startswith("SKIP") for l in lines),
                           "failures": [l for l in lines if l.startswith("FAIL") and "unsupported" not in l][:200]}
doc["conformance_models"] = {m: read(f"conf_{m}.txt").strip() for m in ("resnet50", "bert_base")}
doc["test_cuda_rc"] = read("test_cuda.rc").strip()
doc["test_cuda_models_rc"] = read("test_cuda_models.rc").strip()
doc["aitune_bench"] = [json.loads(l) for l in read("bench.jsonl").splitlines() if l.strip()]
try:
    doc["torch"] = json.loads(read("torch.json") or "[]")
except ValueError:
    doc["torch"] = []
with open(os.path.join(out, "gpu_check.json"), "w") as f:
    json.dump(doc, f, indent=1)
md = [f"# gpu_check ({secs} s, phases {phases})", "", f"GPU: {doc['gpu'] or '?'}", ""]
if doc["missing_libs"]:
    md += ["Missing libraries:", ""] + [f"- {l}" for l in doc["missing_libs"]] + [""]
c = doc["conformance_node"]
md += [f"Node conformance (cuda): {c['pass']} passed, {c['fail']} failed, {c['skip']} skipped", ""]
md += [f"Models vs ONNX Runtime: {doc['conformance_models']}", "",
       f"test_cuda exit: {doc['test_cuda_rc'] or '-'} (small models), {doc['test_cuda_models_rc'] or '-'} (resnet50, bert_base)", ""]
md += ["| model | batch | aitune cuda config | median ms | samples/s | device weights MiB | arena MiB |",
       "|---|---|---|---|---|---|---|"]
def mib(x, key):
    v = x.get("memory", {}).get(key)
    return "-" if v is None else f"{v / 1048576:.1f}"
for r in doc["aitune_bench"]:
    if "result" in r:
        x = r["result"]
        md.append(f"| {r['model']} | {x['batch']} | {x['backend']} | {x['latency_ms']['median']:.3f} | {x['throughput']:.1f} | {mib(x, 'weights_bytes')} | {mib(x, 'work_bytes')} |")
    else:
        md.append(f"| {r['model']} | {r.get('batch')} | cuda:{r['dtype']} | {r['error']} | | | |")
md += ["", "| model | batch | torch mode | device ms | host ms (H2D+D2H) | host ms, pinned output | compile s | max abs diff |", "|---|---|---|---|---|---|---|---|"]
for r in doc["torch"]:
    if "mode" not in r:
        continue
    if "device_ms" in r:
        pin = r.get("host_pinned_ms", {}).get("median")
        md.append(f"| {r['model']} | {r['batch']} | {r['mode']} | {r['device_ms']['median']:.3f} | "
                  f"{r['host_ms']['median']:.3f} | {'-' if pin is None else f'{pin:.3f}'} | "
                  f"{r.get('compile_s', 0):.1f} | {r.get('max_abs_diff', 0):.3g} |")
    else:
        md.append(f"| {r['model']} | {r['batch']} | {r['mode']} | {r.get('error') or r.get('skipped')} | | | | |")
with open(os.path.join(out, "gpu_check.md"), "w") as f:
    f.write("\n".join(md) + "\n")
print("\n".join(md))
EOF
cat "$OUT/gpu_check.md" 2>/dev/null
log "done"
