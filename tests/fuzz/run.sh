#!/usr/bin/env bash
# Build the libFuzzer targets with clang (ASan + UBSan) into build-fuzz/ and
# run each for SECONDS (default 120); exits non-zero when any target finds a
# crash, a leak, a timeout or a sanitizer report. Usage:
#   tests/fuzz/run.sh [SECONDS] [TARGET...]      (targets: model tensor module)
# Each target starts from its seeds (tests/fuzz/seeds/<target>, plus the
# bundled models and test_data_set .pb files) and keeps what it learns in
# build-fuzz/corpus/<target>. Crashers are written to build-fuzz/crashes/.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-120}
shift || true
targets=${*:-model tensor module}
bdir=${AIT_FUZZ_BUILD:-$root/build-fuzz}
cc=${CC_FUZZ:-$(command -v clang-14 || command -v clang)}
jobs=${AIT_FUZZ_JOBS:-2}

mkdir -p "$bdir"
cmake -S "$root" -B "$bdir" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release \
  -DAIT_FUZZ=ON -DAIT_CUDA=OFF >"$bdir/fuzz-cmake.log" 2>&1 || { cat "$bdir/fuzz-cmake.log"; exit 1; }
for t in $targets; do
  nice cmake --build "$bdir" -j"$jobs" --target "fuzz_$t" >"$bdir/fuzz-build.log" 2>&1 ||
    { tail -50 "$bdir/fuzz-build.log"; exit 1; }
done

mkdir -p "$bdir/crashes"
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
status=0
for t in $targets; do
  corpus=$bdir/corpus/$t
  mkdir -p "$corpus"
  seeds=("$root/tests/fuzz/seeds/$t")
  case $t in
    model) seeds+=("$root"/models/*/model.onnx) ;;
    tensor) seeds+=("$root"/models/*/test_data_set_0/*.pb) ;;
  esac
  seed_dir=$bdir/seeds/$t
  rm -rf "$seed_dir"
  mkdir -p "$seed_dir"
  for s in "${seeds[@]}"; do
    if [ -d "$s" ]; then cp "$s"/* "$seed_dir"/ 2>/dev/null || true; else
      cp "$s" "$seed_dir/$(echo "$s" | sed "s|$root/||; s|/|_|g")"; fi
  done
  echo "== fuzz_$t for ${secs}s"
  log=$bdir/fuzz_$t.log
  if ! (cd "$bdir/crashes" && nice "$bdir/tests/fuzz/fuzz_$t" "$corpus" "$seed_dir" \
          -max_total_time="$secs" -timeout=20 -rss_limit_mb=3072 -malloc_limit_mb=2048 \
          -max_len=131072 -print_final_stats=1 -artifact_prefix="$bdir/crashes/${t}-") >"$log" 2>&1; then
    echo "fuzz_$t FAILED (log: $log):"
    # the allocation warnings of allocator_may_return_null (expected: a model
    # may ask for more than the limit) would crowd out the report itself
    grep -vE "AddressSanitizer failed to allocate" "$log" |
      grep -E "ERROR|SUMMARY|Test unit written|==[0-9]+==|^    #[0-9]+ |libFuzzer" | head -40
    echo "-- last lines of the log:"
    grep -vE "AddressSanitizer failed to allocate|^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse)" "$log" | tail -25
    status=1
  fi
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|cov: " "$log" | tail -3
done
exit $status
