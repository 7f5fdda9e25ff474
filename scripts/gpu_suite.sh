#!/usr/bin/env bash
# The device-level GPU suite (issue 25) in one call on a GPU machine:
# test_cuda (device-memory API checks included), then bench/gpu_suite.py
# (aitune cuda with device-resident inputs/outputs vs torch.compile).
#
#   here:             cmake --build build --target aitune aitune_cuda test_cuda gpu_io_bench
#                     scripts/gpu_check.sh --bundle build .gpu/b
#   on the GPU host:  scripts/gpu_suite.sh .gpu/b/aitune_gpu.tar.xz [BUDGET_S]
#
# Writes $OUT (default ./gpu_suite_out): test_cuda.log, suite.jsonl, suite.log.
set -u
BUNDLE=$(readlink -f "$1")
BUDGET=${2:-480}
REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$PWD/gpu_suite_out}
W=${WORK:-/tmp/aitune_gpu_suite}
mkdir -p "$OUT" "$W"
tar -C "$W" -xJf "$BUNDLE" || { echo "cannot unpack $BUNDLE" >&2; exit 1; }
B=$W/aitune_gpu
libdirs="$B:$B/lib"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/nvidia/lib64; do
  [ -d "$d" ] && libdirs="$libdirs:$d"
done
for site in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
  for d in "$site"/nvidia/*/lib "$site"/nvidia/cu13/lib; do
    [ -d "$d" ] && libdirs="$libdirs:$d"
  done
done
# only aitune's processes get these paths; python (torch) keeps its own
AIT_LD="$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$AIT_LD" "$B/gpu_io_bench" >"$W/gpu_io_bench.sh"
chmod +x "$W/gpu_io_bench.sh"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$OUT/gpu.txt" 2>&1
echo "== test_cuda"
timeout 150 env LD_LIBRARY_PATH="$AIT_LD" "$B/test_cuda" "$REPO/models/bert_tiny/model.onnx" \
  "$REPO/models/mobilenetv2_035/model.onnx" >"$OUT/test_cuda.log" 2>&1
echo "test_cuda exit $?" | tee -a "$OUT/test_cuda.log"
tail -3 "$OUT/test_cuda.log"
echo "== suite"
timeout $((BUDGET + 30)) python3 "$REPO/bench/gpu_suite.py" --bench "$W/gpu_io_bench.sh" \
  --budget "$BUDGET" --out "$OUT/suite.jsonl" ${SUITE_ARGS:-} >"$OUT/suite.log" 2>&1
echo "suite exit $?"
tail -5 "$OUT/suite.log"
