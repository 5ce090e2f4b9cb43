#!/usr/bin/env bash
# The sanitizer suite: the runtime, its unit and MPI tests and the
# generated CPU code of the numeric and distributed tests, and the emulated
# CUDA device's suite, built with ASan and UBSan in build-sanitize/
# (test/sanitize/CMakeLists.txt) against the optgen of build/
# (scripts/build.sh first), and run; then the emulated device's suite with
# ThreadSanitizer in build-tsan/. Any sanitizer report fails its test.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
[[ -x build/bin/optgen ]] || scripts/build.sh
[[ -f build-sanitize/build.ninja ]] ||
  cmake -S test/sanitize -B build-sanitize -G Ninja \
    -DOPTGEN_EXECUTABLE="$root/build/bin/optgen" >/dev/null
cmake --build build-sanitize
# alloc_dealloc_mismatch=0: GCC 12's libstdc++ frees std::stable_sort's
# temporary buffer in a way ASan takes for a mismatch (a false report).
export ASAN_OPTIONS=alloc_dealloc_mismatch=0:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Leaks are checked where no MPI is linked: Open MPI keeps allocations of
# plugins it has unloaded until exit, which LeakSanitizer cannot name (so
# cannot suppress). Runners link MPI, so the numeric tests and the MPI
# ones run without leak checks (ASan's other checks and UBSan's stay on).
# `optgen run` builds its own (unsanitized) runner: the main suite runs it.
status=0
ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=1 \
  ctest --test-dir build-sanitize --output-on-failure -j "$(nproc)" \
    -E 'optgen-run|numeric/|mpi-' || status=1
ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 \
  ctest --test-dir build-sanitize --output-on-failure -j "$(nproc)" \
    -R 'numeric/|mpi-' -E optgen-run || status=1

# ThreadSanitizer: the emulated device's suite. The host optimizer the GPU tests compare with runs on one OpenMP thread
# (libgomp is not instrumented: its threads' order is invisible to
# ThreadSanitizer).
[[ -f build-tsan/build.ninja ]] ||
  cmake -S test/sanitize -B build-tsan -G Ninja -DOPTGEN_SANITIZER=thread \
    -DOPTGEN_EXECUTABLE="$root/build/bin/optgen" >/dev/null
cmake --build build-tsan --target optgen-runtime-cuda-emulated-tests \
  optgen-emu-violations tsan_nanochat_runner tsan_adamw_runner
# The distributed step at 1, 2 and 3 ranks (one, a pair, an odd count with
# uneven shards): 4 ranks take the same paths and the longest of the stage
# (ASan's run and the main suite have them).
OMP_NUM_THREADS=1 TSAN_OPTIONS=halt_on_error=1:exitcode=66 \
  ctest --test-dir build-tsan --output-on-failure -j "$(nproc)" \
    -R 'runtime/cuda-emulated/|tsan/' -E 'EndsWithOneRanksBits/.*N4' || status=1
exit $status
