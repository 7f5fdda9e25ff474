#!/usr/bin/env bash
# Install what aitune needs on Debian 12: `deps.sh build` for building,
# `deps.sh quickstart` for the quick start too (Python in .venv: numpy, onnx,
# onnxruntime, tokenizers), `deps.sh test` for the test suite (test data,
# Python tools in .venv).
# As root, missing packages are installed with apt-get; otherwise the exact
# command to run is printed and the script fails.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
what=${1:-build}

apt_pkgs=(build-essential cmake pkg-config protobuf-c-compiler libprotobuf-c-dev libonnx-dev libcjson-dev libopenblas-dev libssl-dev libdnnl-dev libxnnpack-dev libpthreadpool-dev libblis-dev)
if [ "$what" = test ]; then
  # chromium: the HTML report is rendered headless in a real browser (tests/test_report_html.sh)
  apt_pkgs+=(libonnx-testdata python3 python3-dev clang-format clang libclang-rt-14-dev chromium)
fi
if [ "$what" = test ] || [ "$what" = quickstart ]; then
  apt_pkgs+=(python3)
  python3 -m venv --help >/dev/null 2>&1 || apt_pkgs+=(python3-venv)
fi

missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    echo "deps: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "deps: missing Debian packages; run:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

if [ "$what" = test ] || [ "$what" = quickstart ]; then
  # Python tools in a venv that can also see packages already installed
  # system-wide: for the tests onnx, onnxruntime, numpy, torch, torchvision;
  # for the quick start (scripts/quickstart.py) onnx, onnxruntime, numpy and
  # tokenizers, which turns its sentences into token ids.
  venv=$ROOT/.venv
  if [ ! -x "$venv/bin/python3" ]; then
    python3 -m venv --system-site-packages "$venv"
  fi
  need=()
  # openvino: the openvino backend's C headers and libopenvino_c (CMake
  # finds them in the venv; the library is loaded at run time);
  # jsonschema: tests/test_json.sh validates every --json output;
  # the Python package (python/): scikit_build_core builds it, pytest runs
  # its tests, onnxscript is what torch's dynamo ONNX exporter needs.
  mods=(onnx onnxruntime numpy torch torchvision openvino jsonschema scikit_build_core pytest onnxscript)
  [ "$what" = quickstart ] && mods=(onnx onnxruntime numpy tokenizers)
  for mod in "${mods[@]}"; do
    "$venv/bin/python3" -c "import $mod" 2>/dev/null || need+=("$mod")
  done
  if [ "${AIT_BENCH_DEPS:-0}" = 1 ]; then # bench/suite.py: dynamo export, the MiniLM export
    for mod in onnxscript transformers safetensors; do
      "$venv/bin/python3" -c "import $mod" 2>/dev/null || need+=("$mod")
    done
  fi
  if [ ${#need[@]} -gt 0 ]; then
    echo "deps: pip installing ${need[*]} into .venv"
    "$venv/bin/python3" -m pip install -q --disable-pip-version-check "${need[@]}"
  fi
  # Serving (tests/test_serving.py, docs/serving.md): Triton Inference Server
  # from the nvidia-pytriton wheel (tritonserver, the python backend and its
  # stubs) and its client. The wheel needs glibc >= 2.35; where pip cannot
  # install it the serving test says so and is skipped.
  if [ "$what" = test ] &&
    ! "$venv/bin/python3" -c "import pytriton, tritonclient.http, tritonclient.grpc" 2>/dev/null; then
    echo "deps: pip installing nvidia-pytriton tritonclient[http,grpc] into .venv"
    "$venv/bin/python3" -m pip install -q --disable-pip-version-check nvidia-pytriton \
      'tritonclient[http,grpc]' ||
      echo "deps: nvidia-pytriton could not be installed here; the serving test will be skipped" >&2
  fi
fi
