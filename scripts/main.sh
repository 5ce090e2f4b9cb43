#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build, and
# compile the nanochat example, printing its MLIR.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
build/bin/optgen compile examples/nanochat.opt
