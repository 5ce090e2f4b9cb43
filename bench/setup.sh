#!/usr/bin/env bash
# Installs what the benchmarks need beyond scripts/install-deps.sh, and only
# what is missing (idempotent):
#
#  - bench/.venv: a virtual environment of Debian's /usr/bin/python3 with
#    PyTorch 2.x from PyPI (the default wheel, with its CUDA dependencies:
#    ~5 GB, a few minutes), the baseline users run: nanochat's step under
#    torch.compile, inductor on the CPU. Also PyPI's `mkl`, whose
#    libmkl_rt.so is one of the BLAS libraries blas_compare measures.
#  - Debian's BLIS (OpenMP build), the other alternative BLAS measured.
#
#   bash bench/setup.sh
#
# BENCH_TORCH overrides the torch requirement (default: the version the
# results in RESULTS.md were measured with).
set -euo pipefail
cd "$(dirname "$0")/.."

"$(pwd)/scripts/install-deps.sh"

# --- Debian packages ---------------------------------------------------------
# libblis-openmp-dev: BLIS for blas_compare. python3-venv: the virtual
# environment. g++ (install-deps.sh) is what inductor compiles its C++ with.
missing=()
for package in libblis-openmp-dev python3-venv; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if ((${#missing[@]})); then
  echo "bench: installing ${missing[*]}"
  sudo=""
  [[ $(id -u) == 0 ]] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# --- the virtual environment -------------------------------------------------
venv=bench/.venv
torch_requirement=${BENCH_TORCH:-torch==2.15.0}
[[ -x $venv/bin/python ]] || /usr/bin/python3 -m venv "$venv"
if ! "$venv/bin/python" -c 'import torch, numpy' 2>/dev/null ||
   ! "$venv/bin/python" -m pip show -q mkl >/dev/null 2>&1; then
  echo "bench: installing $torch_requirement, numpy and mkl into $venv (several GB, a few minutes)"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check \
    "$torch_requirement" numpy mkl
fi
