#!/usr/bin/env bash
# Prepare a run on the lent GPU machine, which has CUDA and PyTorch but none
# of our Debian build dependencies and no network: build aitune here with
# CUDA, and pack the binary, the shared libraries it needs that the GPU
# image lacks, and the ONNX test data into .gpu/bundle.tar.xz (git-ignored;
# the device tool carries it). On the GPU machine:
#   mkdir -p /tmp/b && tar -xJf .gpu/bundle.tar.xz -C /tmp/b &&
#   LD_LIBRARY_PATH=/tmp/b/lib:$LD_LIBRARY_PATH /tmp/b/bin/aitune ...
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$ROOT/build-gpu
cmake -S "$ROOT" -B "$B" -DCMAKE_BUILD_TYPE=Release -DAIT_WERROR=ON >/dev/null
cmake --build "$B" -j"$(nproc)" >/dev/null
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/data" "$stage/tests"
cp "$B/aitune" "$stage/bin/"
for t in "$B"/tests/test_*; do [ -x "$t" ] && cp "$t" "$stage/tests/"; done
# every non-CUDA, non-libc dependency travels; CUDA libraries come from the image
ldd "$B/aitune" | awk '/=> \//{print $3}' | while read -r lib; do
  case "$(basename "$lib")" in
  libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux* | libcuda.so* | libcudart* | libcublas* | libcudnn* | libnvrtc* | libstdc++* | libgcc_s*) ;;
  *) cp -L "$lib" "$stage/lib/" ;;
  esac
done
cp -r /usr/share/libonnx-testdata/data/node "$stage/data/"
mkdir -p "$ROOT/.gpu"
tar -cJf "$ROOT/.gpu/bundle.tar.xz" -C "$stage" .
ls -la "$ROOT/.gpu/bundle.tar.xz"
