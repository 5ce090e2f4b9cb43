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
# a minute (docs/RELIABILITY.md).
scripts/sanitize.sh
scripts/fuzz.sh
