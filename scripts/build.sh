#!/usr/bin/env bash
# Configures (once) and builds optgen in build/.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -f build/build.ninja ]] || cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build
