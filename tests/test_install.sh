#!/usr/bin/env bash
# A program built against an installed aitune, the way a user builds one:
# `cmake --install` into a temporary prefix, then examples/tune_and_run.c
# built with pkg-config (shared, and static from Libs.private) and with
# CMake's find_package (aitune::aitune, aitune::aitune_static), each run on a
# bundled model. The shared one runs again with the CUDA libraries out of
# reach (the dynamic loader's cache off): libaitune.so must not need them.
# usage: test_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
model=$src/models/mobilenetv2_035/model.onnx
cc=${CC:-cc}
fail() {
  echo "test_install: $*" >&2
  exit 1
}

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" || fail "install failed: $(cat "$tmp/install.log")"
for f in include/aitune.h bin/aitune share/doc/aitune/LICENSE; do
  [ -e "$prefix/$f" ] || fail "$f not installed"
done
pc=$(find "$prefix" -name aitune.pc | head -1)
[ -n "$pc" ] || fail "aitune.pc not installed"
export PKG_CONFIG_PATH=$(dirname "$pc")
libdir=$(pkg-config --variable=libdir aitune)
[ -e "$libdir/libaitune.so" ] && [ -e "$libdir/libaitune.a" ] || fail "no libaitune.so/.a in $libdir"
header_version=$(sed -n 's/^#define AIT_VERSION_STRING "\(.*\)"$/\1/p' "$prefix/include/aitune.h")
[ "$(pkg-config --modversion aitune)" = "$header_version" ] ||
  fail "aitune.pc's version $(pkg-config --modversion aitune) is not the header's $header_version"

run() { # name, command...: tune the model on native and eager, run it once
  local name=$1 out
  shift
  out=$("$@" "$model" native eager) || fail "$name: the example failed"
  echo "$out" | grep -q "picked; output 0 has rank" || fail "$name: unexpected output: $out"
  echo "test_install: $name: $out"
}

echo "== pkg-config, shared"
# shellcheck disable=SC2046
"$cc" -std=c11 -Wall -Werror -o "$tmp/ex_pc" "$src/examples/tune_and_run.c" \
  $(pkg-config --cflags --libs aitune) -Wl,-rpath,"$libdir"
readelf -d "$tmp/ex_pc" | grep -q 'NEEDED.*libaitune\.so' || fail "ex_pc does not use libaitune.so"
run pkg-config-shared "$tmp/ex_pc"

echo "== pkg-config, static (Libs.private)"
# shellcheck disable=SC2046
"$cc" -std=c11 -Wall -Werror -o "$tmp/ex_pc_static" "$src/examples/tune_and_run.c" \
  $(pkg-config --cflags aitune) "$libdir/libaitune.a" \
  $(pkg-config --static --libs aitune | sed 's/-laitune //') # the README's line
readelf -d "$tmp/ex_pc_static" | grep -q 'NEEDED.*libaitune' && fail "ex_pc_static needs libaitune.so"
run pkg-config-static "$tmp/ex_pc_static"

echo "== find_package(aitune)"
cmake -S "$src/examples" -B "$tmp/ex_cmake" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_FLAGS="-Wall -Werror" >"$tmp/cmake.log" || fail "configure failed: $(cat "$tmp/cmake.log")"
cmake --build "$tmp/ex_cmake" >>"$tmp/cmake.log" || fail "build failed: $(cat "$tmp/cmake.log")"
run find_package-shared "$tmp/ex_cmake/tune_and_run"
run find_package-static "$tmp/ex_cmake/tune_and_run_static"

echo "== libaitune.so with the CUDA libraries out of reach"
# ld.so --inhibit-cache: only the system folders and RUNPATHs are searched,
# not /etc/ld.so.cache, which is where the CUDA toolkit's folders are.
interp=$(readelf -l "$tmp/ex_pc" | sed -n 's/.*interpreter: \(.*\)]/\1/p')
run no-cuda-libraries-shared "$interp" --inhibit-cache "$tmp/ex_pc"
echo "test_install: all checks passed"
