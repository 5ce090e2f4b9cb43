#!/usr/bin/env bash
# Every test on a fresh machine: install what is missing, build, run ctest
# (the lit suite, one test per file, and the unit tests).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
