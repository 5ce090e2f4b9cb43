#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, compile
# the nanochat spec to C++ for the CPU, and train the example character
# model with the optimizer generated from it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
build/bin/optgen compile examples/nanochat.opt --target=cpu -o build/nanochat-cpu
echo "optgen: wrote $(ls build/nanochat-cpu | tr '\n' ' ')to build/nanochat-cpu/"
build/bin/optgen-train
