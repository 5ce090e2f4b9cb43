#!/usr/bin/env bash
# Fuzzes the spec front end, the IR tools (optgen-opt's parser, verifiers
# and pipelines, the printers of optgen-translate, explain) and the
# runtime's readers (safetensors files, cases, checkpoints) with libFuzzer,
# ASan and UBSan: builds fuzz/ with clang in build-fuzz/, then runs each
# target for FUZZ_SECONDS (default 60) from its committed seed corpus
# (fuzz/corpus/<target>/; for fuzz_ir also every .mlir test, split at
# `// -----`), two at a time.
# A crash, a sanitizer report or a timeout fails the run and leaves the
# input that caused it in build-fuzz/findings/<target>/; each target's
# figures (inputs tried, corpus size) are printed at the end.
#
#   bash scripts/fuzz.sh                  # as CI runs it
#   FUZZ_SECONDS=3600 bash scripts/fuzz.sh   # a longer run
#   FUZZ_TARGETS=fuzz_ir FUZZ_SECONDS=3600 bash scripts/fuzz.sh   # one target
#   FUZZ_KEEP_GOING=1 ...   # a long run: every finding kept, none stops it
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
seconds=${FUZZ_SECONDS:-60}
build=build-fuzz

mkdir -p "$build"
# -O1 with line tables, as libFuzzer's documentation builds its targets:
# reports name file and line, and the build (the compiler's libraries with
# clang, ASan and UBSan) takes less of CI than -O2 -g.
[[ -f $build/build.ninja ]] ||
  CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
    -DOPTGEN_FUZZ=ON >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log"; exit 1; }
all=(fuzz_spec fuzz_ir fuzz_safetensors fuzz_case fuzz_checkpoint)
read -r -a targets <<<"${FUZZ_TARGETS:-${all[*]}}"
for target in "${targets[@]}"; do
  [[ " ${all[*]} " == *" $target "* ]] ||
    { echo "fuzz.sh: no target '$target' (${all[*]})" >&2; exit 2; }
done
cmake --build "$build" --target "${targets[@]}"

# The checkpoint fuzzer's optimizer writes its own checkpoint as a seed
# too: the format's current version, whatever the committed seeds hold.
mkdir -p "$build/corpus" "$build/findings"
# allow_user_poisoning=0: LLVM's allocators poison memory by hand where
# LLVM is built with ASan, which the fuzz targets' instrumented copies of
# its inline code believe; Debian's LLVM and MLIR libraries are not, and
# then report their own valid accesses. Heap errors are still caught.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:allow_user_poisoning=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

run() {
  set +e
  local target=$1
  local corpus="$build/corpus/$target" findings="$build/findings/$target"
  # This run's findings only (a finding fails the run).
  rm -rf "$findings"
  mkdir -p "$corpus" "$findings"
  if [[ $target == fuzz_checkpoint ]]; then
    OPTGEN_FUZZ_SEED="$corpus/own.safetensors" "$build/bin/$target" -runs=0 \
      >/dev/null 2>&1 || true
  fi
  # -close_fd_mask=3: the targets' own messages (errors they report, as
  # they should) would drown libFuzzer's.
  local seeds=() options=()
  [[ -d fuzz/corpus/$target ]] && seeds=("fuzz/corpus/$target")
  if [[ $target == fuzz_ir ]]; then
    # Each case of each .mlir test a seed, as the tests stand now.
    local split="$build/seeds/fuzz_ir"
    rm -rf "$split" && mkdir -p "$split"
    git ls-files 'test/*.mlir' | while read -r file; do
      awk -v out="$split/$(echo "$file" | tr / _)" \
        '/^\/\/ -----/ { ++n; next } { print > (out "." n+0) }' "$file"
    done
    seeds+=("$split")
    options=(-dict=fuzz/ir.dict)
  fi
  # A long run goes on past a finding (libFuzzer's fork mode) to collect
  # them all; the run still fails when there is any.
  [[ -n ${FUZZ_KEEP_GOING:-} ]] &&
    options+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  "$build/bin/$target" "$corpus" "${seeds[@]}" "${options[@]}" \
    -max_total_time="$seconds" -timeout=25 -rss_limit_mb=4096 \
    -close_fd_mask=3 -print_final_stats=1 \
    -artifact_prefix="$findings/" >"$build/$target.log" 2>&1
  local status=$?
  ((status == 0)) && [[ -n $(ls "$findings") ]] && status=1
  echo "$status" >"$build/$target.status"
  return "$status"
}

failed=0
pids=()
for target in "${targets[@]}"; do
  run "$target" &
  pids+=($!)
  # Two at a time: one per core of the CI machine.
  if ((${#pids[@]} == 2)); then
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    pids=()
  fi
done
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done

echo "target | inputs tried | corpus | result"
for target in "${targets[@]}"; do
  log="$build/$target.log"
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  # (Fork mode reports its progress lines only.)
  [[ -n $runs ]] || runs=$(sed -n 's/^#\([0-9]*\):.*/\1/p' "$log" | tail -1)
  corpus=$(ls "$build/corpus/$target" | wc -l)
  result=ok
  if [[ $(cat "$build/$target.status" 2>/dev/null) != 0 ]]; then
    result="FAILED (exit $(cat "$build/$target.status" 2>/dev/null || echo '?')): $(ls "$build/findings/$target" | head -3 | tr '\n' ' ')"
    grep -m 20 -E 'ERROR|runtime error|SUMMARY|Test unit written' "$log" || tail -5 "$log"
  fi
  echo "$target | ${runs:-?} | $corpus | $result"
done
exit $failed
