#!/usr/bin/env bash
# Installs what optgen needs to build and test, from Debian's packages.
# Idempotent: installs only what is missing, and touches apt only then.
set -euo pipefail

packages=(
  cmake ninja-build g++ python3
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools
  libgtest-dev libopenblas-dev libopenblas-openmp-dev openmpi-bin libopenmpi-dev
  # The fuzzers (libFuzzer is clang's) and the sanitizer suite.
  clang libclang-rt-14-dev libasan8 libubsan1
  # The Python package (python/) and its tests: Debian's PyTorch (CPU),
  # pytest and pip (with setuptools and wheel) for /usr/bin/python3.
  python3-torch python3-pytest python3-pip
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done

if ((${#missing[@]})); then
  echo "optgen: installing ${missing[*]}"
  sudo=""
  [[ $(id -u) == 0 ]] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
