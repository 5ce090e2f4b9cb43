#!/usr/bin/env bash
# Every test on a fresh machine: install what is missing, build, run ctest
# (the lit suite, one test per file, and the unit tests), then the sanitizer
# suite and the fuzzers.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
# The runtime and generated code under ASan and UBSan, then each fuzzer for
# half a minute (docs/RELIABILITY.md; a minute by itself, and more with
# FUZZ_SECONDS: CI must stay under 40 minutes on 2 cores).
scripts/sanitize.sh
FUZZ_SECONDS=${FUZZ_SECONDS:-30} scripts/fuzz.sh
