#!/usr/bin/env bash
# The device-level GPU work of issues 21 and 25 in one call on a GPU machine.
#
#   here:             cmake --build build --target aitune aitune_cuda aitune_shared test_cuda gpu_io_bench
#                     scripts/gpu_check.sh --bundle build .gpu/b
#   on the GPU host:  scripts/gpu_suite.sh .gpu/b/aitune_gpu.tar.xz [BUDGET_S]
#
# PHASES (comma list, default test,py,check,opset23):
#   test     test_cuda on the device (the opset-23 ops against the reference,
#            device-memory I/O, every precision) -> test_cuda.log
#   py       the Python extension built there against the bundle's
#            libaitune.so, then python/tests/test_device.py with torch CUDA
#            tensors (AITUNE_DEVICE_TESTS=1) -> py.log
#   check    bench/gpu_suite.py --check: every suite torch model exported
#            there, what falls back by op, the numeric check at bf16
#            -> check.jsonl, check.log (CHECK_ARGS: e.g. --models a,b)
#   opset23  bench/opset23.py on cuda: the RMSNorm decoder's opset-23 export
#            (Attention, RMSNormalization) against its opset-18 export and
#            ONNX Runtime -> opset23.log
#   time     bench/gpu_suite.py's timing pass (SUITE_ARGS) -> suite.jsonl
#   profile  `aitune profile` (per-step device times, CUDA events) of models
#            the check phase exported: PROFILE_RUNS of MODEL:BATCH:OPTIONS
#            -> profile_MODEL_bBATCH.txt
# Every phase has a time limit inside BUDGET_S (default 540).
# Writes $OUT (default ./gpu_suite_out).
set -u
BUNDLE=$(readlink -f "$1")
BUDGET=${2:-540}
PHASES=${PHASES:-test,py,check,opset23}
REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$PWD/gpu_suite_out}
W=${WORK:-/tmp/aitune_gpu_suite}
T0=$(date +%s)
left() { echo $((BUDGET - ($(date +%s) - T0))); }
cap() { local l; l=$(left); [ "$l" -lt 1 ] && l=1; [ "$1" -lt "$l" ] && echo "$1" || echo "$l"; }
has() { case ",$PHASES," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
mkdir -p "$OUT" "$W"
tar -C "$W" -xJf "$BUNDLE" || { echo "cannot unpack $BUNDLE" >&2; exit 1; }
B=$W/aitune_gpu
libdirs="$B:$B/lib"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/nvidia/lib64; do
  [ -d "$d" ] && libdirs="$libdirs:$d"
done
nvdirs=""
for site in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
  for d in "$site"/nvidia/*/lib "$site"/nvidia/cu13/lib; do
    [ -d "$d" ] && libdirs="$libdirs:$d" && nvdirs="$nvdirs:$d"
  done
done
# only aitune's processes get these paths; python (torch) keeps its own
AIT_LD="$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for p in gpu_io_bench aitune test_cuda; do
  printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$AIT_LD" "$B/$p" >"$W/$p.sh"
  chmod +x "$W/$p.sh"
done
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__)'
  python3 -c 'import onnxruntime, onnx; print("onnxruntime", onnxruntime.__version__, "onnx", onnx.__version__)'
  python3 -c 'import pytest; print("pytest", pytest.__version__)'
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

if has test; then
  echo "== test_cuda [$(left)s left]"
  timeout "$(cap 170)" "$W/test_cuda.sh" "$REPO/models/bert_tiny/model.onnx" \
    "$REPO/models/mobilenetv2_035/model.onnx" >"$OUT/test_cuda.log" 2>&1
  echo "test_cuda exit $?" | tee -a "$OUT/test_cuda.log"
  grep -E "onnx attention|rope rms|FAIL|failed|passed" "$OUT/test_cuda.log" | tail -8
fi

if has py; then
  echo "== python [$(left)s left]"
  (
    PYINC=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
    SUF=$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
    mkdir -p "$W/py/aitune_c"
    cp "$REPO"/python/src/aitune_c/*.py "$W/py/aitune_c/"
    gcc -O2 -shared -fPIC -std=c11 -I"$PYINC" -I"$REPO/include" "$REPO"/python/ext/*.c \
      -L"$B" -laitune -Wl,-rpath,"$B" -o "$W/py/aitune_c/_core$SUF" && echo "extension built"
    cd "$REPO/python/tests" &&
      timeout "$(cap 90)" env AITUNE_DEVICE_TESTS=1 PYTHONPATH="$W/py" \
        LD_LIBRARY_PATH="$B/lib$nvdirs" python3 - <<'EOF'
import sys, traceback
import test_device as t
fails = 0
for name in sorted(n for n in dir(t) if n.startswith("test_")):
    try:
        getattr(t, name)()
        print("PASS", name)
    except Exception:
        fails += 1
        print("FAIL", name)
        traceback.print_exc()
print("python device tests:", "failed" if fails else "passed", fails)
EOF
  ) >"$OUT/py.log" 2>&1
  tail -8 "$OUT/py.log"
fi

if has check; then
  echo "== check [$(left)s left]"
  reserve=0
  has opset23 && reserve=60
  l=$(($(left) - reserve))
  timeout $((l + 20)) python3 "$REPO/bench/gpu_suite.py" --check --aitune "$W/aitune.sh" \
    --test-cuda "$W/test_cuda.sh" --work "$W/models" --budget "$l" --out "$OUT/check.jsonl" \
    ${CHECK_ARGS:-} >"$OUT/check.log" 2>&1
  echo "check exit $?"
  tail -3 "$OUT/check.log" | cut -c1-300
fi

if has opset23; then
  echo "== opset23 [$(left)s left]"
  for be in cuda cuda:dtype=bf16; do
    timeout "$(cap 50)" python3 "$REPO/bench/opset23.py" --aitune "$W/aitune.sh" --backend "$be" \
      --rounds 3 >>"$OUT/opset23.log" 2>&1
    echo "opset23 $be exit $?" | tee -a "$OUT/opset23.log"
  done
  tail -6 "$OUT/opset23.log"
fi

if has time; then
  echo "== suite [$(left)s left]"
  l=$(left)
  timeout $((l + 20)) python3 "$REPO/bench/gpu_suite.py" --bench "$W/gpu_io_bench.sh" \
    --budget "$l" --out "$OUT/suite.jsonl" ${SUITE_ARGS:-} >"$OUT/suite.log" 2>&1
  echo "suite exit $?"
  tail -5 "$OUT/suite.log"
fi
if has profile; then
  for item in ${PROFILE_RUNS:-}; do
    m=${item%%:*}
    rest=${item#*:}
    b=${rest%%:*}
    opts=${rest#*:}
    f="$OUT/profile_${m}_b${b}.txt"
    [ -f "$W/models/$m/model.onnx" ] || { echo "no $m exported" >"$f"; continue; }
    echo "== profile $m batch $b cuda:$opts [$(left)s left]"
    timeout "$(cap 90)" "$W/aitune.sh" profile "$W/models/$m/model.onnx" --backend "cuda:$opts" \
      --batch "$b" --iters 20 --top 40 >"$f" 2>&1
    echo "exit $?" >>"$f"
    head -30 "$f" | cut -c1-160
  done
fi
echo "done in $(($(date +%s) - T0))s"
