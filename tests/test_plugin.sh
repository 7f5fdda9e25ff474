#!/usr/bin/env bash
# The install's ABI and the cuda plugin (docs/architecture.md, "Install, ABI,
# plugins"): libaitune.so exports exactly the functions aitune.h declares;
# neither it nor the CLI needs a CUDA library; and with the CUDA libraries out
# of reach or the plugin absent, the CLI lists cuda as unavailable with the
# reason, and tunes and runs on the CPU.
# usage: test_plugin.sh BUILD_DIR SOURCE_DIR
set -u
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
aitune=$build/aitune
lib=$build/libaitune.so
plugin=$build/libaitune_cuda.so
model=$src/models/mobilenetv2_035/model.onnx
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
expect() { # expect CODE PATTERN -- command...
  local code=$1 pattern=$2 out rc
  shift 3
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$code" ] || ! grep -q -- "$pattern" <<<"$out"; then
    fail "'$*' exited $rc (wanted $code), output lacks '$pattern':"
    echo "$out" | head -8
  fi
}

# 1. the exported symbols are the public API, one for one: the functions
# declared in aitune.h (a declaration starts a line, its name before the
# '(', or in parentheses where a macro of the same name wraps it)
grep -E '^[a-z][^(]*[ *(]ait_[a-z0-9_]+\)?\(' "$src/include/aitune.h" | grep -v '^typedef' |
  sed -E 's/^[^(]*[ *(](ait_[a-z0-9_]+)\)?\(.*/\1/' | sort >"$tmp/api"
nm -D --defined-only "$lib" | awk '$2 == "T" {print $3}' | sed 's/@.*//' | sort >"$tmp/exported"
if ! diff "$tmp/api" "$tmp/exported" >"$tmp/diff"; then
  fail "libaitune.so's functions are not those aitune.h declares (< header only, > library only):"
  cat "$tmp/diff"
fi
others=$(nm -D --defined-only "$lib" | awk '$2 != "T" && $2 != "A"')
[ -z "$others" ] || fail "libaitune.so exports more than functions: $others"
echo "exported: $(wc -l <"$tmp/exported") functions; declared in aitune.h: $(wc -l <"$tmp/api")"

# 2. no CUDA library in what loads at start-up
for f in "$lib" "$aitune"; do
  if readelf -d "$f" | grep NEEDED | grep -Ei 'cuda|cublas|cudnn|nvrtc|libstdc'; then
    fail "$f needs the libraries above"
  fi
done
if [ -e "$plugin" ]; then
  exported=$(nm -D --defined-only "$plugin" | awk '$2 == "T" {print $3}')
  [ "$exported" = ait_plugin_init ] || fail "the plugin exports more than ait_plugin_init: $exported"
fi

# 3. CUDA libraries out of reach: ld.so --inhibit-cache searches only the
# system folders and RUNPATHs, not /etc/ld.so.cache (where CUDA's are)
interp=$(readelf -l "$aitune" | sed -n 's/.*interpreter: \(.*\)]/\1/p')
nocuda=("$interp" --inhibit-cache)
expect 0 "cuda *not available" -- "${nocuda[@]}" "$aitune" backends
if [ -e "$plugin" ]; then # present, but what it needs is not there
  expect 0 "the cuda plugin did not load: $plugin: lib.*cannot open shared object" -- \
    "${nocuda[@]}" "$aitune" backends
fi
expect 0 "selected" -- "${nocuda[@]}" "$aitune" tune "$model" --backends native --out "$tmp/t" \
  --no-cache --batch-sizes 1 --min-runs 3 --max-runs 3
expect 0 "output" -- "${nocuda[@]}" "$aitune" run "$tmp/t"

# 4. the plugin absent (a copy of the CLI in a folder without it), or turned
# off, or not a plugin; a build without CUDA has none to look for
if [ ! -e "$plugin" ]; then
  expect 0 "reason: built without CUDA" -- "$aitune" backends
  expect 1 "not available" -- "$aitune" run "$model" --backend cuda:dtype=bf16
  [ "$fails" -eq 0 ] && echo "test_plugin: all checks passed (no cuda plugin in this build)"
  exit $((fails != 0))
fi
cp "$aitune" "$tmp/aitune"
expect 0 "libaitune_cuda.so: cannot open shared object file.*looked in $tmp/" -- \
  env -u AITUNE_CUDA_PLUGIN "${nocuda[@]}" "$tmp/aitune" backends
expect 0 "turned off (\$AITUNE_CUDA_PLUGIN=off)" -- env AITUNE_CUDA_PLUGIN=off "$aitune" backends
expect 0 "/nonexistent.so: cannot open shared object file.*the path in \$AITUNE_CUDA_PLUGIN" -- \
  env AITUNE_CUDA_PLUGIN=/nonexistent.so "$aitune" backends
# a file that is not a plugin is refused by name
expect 0 "not an aitune plugin" -- env AITUNE_CUDA_PLUGIN="$lib" "$aitune" backends
# configurations still parse with the stand-in: the failure is that cuda is unavailable
expect 1 "not available" -- env AITUNE_CUDA_PLUGIN=off "$aitune" run "$model" --backend cuda:dtype=bf16

if [ "$fails" -ne 0 ]; then
  echo "test_plugin: $fails check(s) failed"
  exit 1
fi
echo "test_plugin: all checks passed"
