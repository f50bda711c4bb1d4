#!/usr/bin/env bash
# Installs the Debian packages Tapestry builds and tests with. Idempotent: checks each package
# with `dpkg -s` first and runs `apt-get update` + `apt-get install` only when something is
# missing. Must run as root (or with sudo available) on Debian 12.
#
#   scripts/install-deps.sh            # build + test dependencies
#   scripts/install-deps.sh --optional # also matplotlib (Front.plot in Python)
#   scripts/install-deps.sh --fuzz     # also clang 14 + libFuzzer + llvm-symbolizer (`make fuzz`)
set -euo pipefail

packages=(
  # toolchain
  g++ cmake ninja-build ccache mold make pkg-config
  clang-format clang-tidy
  # libraries (all with CMake support)
  nlohmann-json3-dev libyaml-cpp-dev libfmt-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev librapidcheck-dev
  libopenblas-dev libdnnl-dev libtbb-dev libopenmpi-dev openmpi-bin libgraphviz-dev
  # `tapestry import`: the ONNX protobuf definitions (the build works without them)
  libonnx-dev libprotobuf-dev protobuf-compiler
  # the ONNX import tests export their models from PyTorch (skipped, with the reason, without)
  python3-onnx python3-torch
  # the training example (examples/digits): sklearn.datasets.load_digits, no download
  python3-sklearn
  # the Python package (`import tapestry`): built against Debian's /usr/bin/python3
  python3-dev pybind11-dev python3-pybind11 python3-numpy python3-pytest
)
optional=(python3-matplotlib)
# `make fuzz` only: the libFuzzer harnesses build with clang (the `fuzz` preset); llvm-14 brings
# the llvm-symbolizer that ASan/UBSan reports use for source lines.
fuzz=(clang-14 libclang-rt-14-dev llvm-14)

for arg in "$@"; do
  case "$arg" in
    --optional) packages+=("${optional[@]}") ;;
    --fuzz) packages+=("${fuzz[@]}") ;;
    *) echo "install-deps: unknown option $arg (use --optional, --fuzz)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg -s "$p" >/dev/null 2>&1 || ! dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed'; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
