#!/usr/bin/env bash
# The GPU check, on a machine with an NVIDIA GPU (sm_90: H100, H200), run
# from the repository root with gpu-bundle/ (scripts/gpu-prepare.sh, run
# where optgen builds) beside it. Nothing here needs MLIR or optgen, only
# nvcc, CMake, ninja and python3:
#
#   1. builds the runtime's cuda component, its GPU tests and the generated
#      CUDA of every example in the bundle (nvcc, sm_90);
#   2. runs the runtime's GPU tests;
#   3. replays every example's case on its generated CUDA and compares the
#      updates with the fp64 interpreter's and the CPU target's (made
#      beforehand), and nanochat's golden cases with their tolerances;
#   4. times, at nanochat's depths 12, 20 and 26, the AdamW part (with the
#      card's copy bandwidth) and the whole step against nanochat's under
#      torch.compile, and the host cost of a step (bench/gpu/);
#   5. prints a short table last.
#
# Everything it writes goes under $OUT when set (the device tool's folder),
# else /tmp/optgen-gpu-check; it builds in $OPTGEN_GPU_BUILD (default
# /tmp/optgen-gpu-build). Exits non-zero when a check fails.
#
# `scripts/gpu-check.sh --build-only` does step 1 alone, and needs no GPU:
# where optgen builds, after scripts/gpu-prepare.sh, it checks that the
# bundle builds as it will on the GPU machine.
set -uo pipefail
build_only=0
[[ ${1:-} == --build-only ]] && build_only=1
cd "$(dirname "$0")/.."
root=$(pwd)
bundle="$root/gpu-bundle"
out=${OUT:-/tmp/optgen-gpu-check}
build=${OPTGEN_GPU_BUILD:-/tmp/optgen-gpu-build}
mkdir -p "$out"
start=$SECONDS
if [[ ! -f $bundle/manifest.txt ]]; then
  echo "gpu-check: no gpu-bundle/: run scripts/gpu-prepare.sh first (where optgen builds)" >&2
  exit 2
fi

declare -a rows
failures=0
row() { rows+=("$1"); }
fail() { failures=$((failures + 1)); row "$1"; }

if ((!build_only)); then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader |
    tee "$out/gpu.txt"
fi

# --- 1. build -----------------------------------------------------------------
# NCCL from NVIDIA's pip package (nvidia-nccl-cu13) when the toolkit has none.
nccl_root=$(python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null || true)
if cmake -S scripts/gpu -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
     -DOPTGEN_ROOT="$root" ${nccl_root:+-DNCCL_ROOT="$nccl_root"} \
     >"$out/configure.log" 2>&1 &&
   cmake --build "$build" -j "$(nproc)" >"$out/build.log" 2>&1; then
  row "build | ok | $((SECONDS - start)) s"
  nccl=$(sed -n 's/^OPTGEN_NCCL_LIBRARY:FILEPATH=//p' "$build/CMakeCache.txt")
  if [[ -n $nccl && $nccl != *NOTFOUND ]]; then
    row "NCCL | found | $nccl"
  else
    fail "NCCL | NOT FOUND | its communicator and tests were not built"
  fi
else
  tail -n 40 "$out/configure.log" "$out/build.log"
  fail "build | FAILED | see build.log"
  printf '%s\n' "${rows[@]}"
  exit 1
fi

if ((build_only)); then
  printf '%s\n' "${rows[@]}"
  exit $((failures > 0))
fi

# --- 2. the runtime's GPU tests -----------------------------------------------
tests="$build/runtime/optgen-runtime-cuda-tests"
if "$tests" >"$out/runtime-tests.log" 2>&1; then
  row "runtime GPU tests | ok | $(grep -c '^\[       OK \]' "$out/runtime-tests.log") passed, $(grep -c '^\[  SKIPPED \]' "$out/runtime-tests.log") skipped"
else
  tail -30 "$out/runtime-tests.log"
  fail "runtime GPU tests | FAILED | see runtime-tests.log"
fi

# --- 3. the examples against the fp64 interpreter -----------------------------
while read -r name tolerance rest; do
  if [[ $tolerance == skipped ]]; then
    row "$name | skipped | $rest"
    continue
  fi
  runner="$build/gen/$name/${name}_runner"
  [[ -x $runner ]] || runner=$(find "$build/gen/$name" -maxdepth 1 -name '*_runner' -type f | head -1)
  for reference in reference cpu; do
    what="fp64 interpreter"
    [[ $reference == cpu ]] && what="CPU target"
    log="$out/$name.$reference.log"
    if python3 test/numeric/compare.py --case "$bundle/cases/$name.safetensors" \
         --tolerance "$tolerance" --runner "$runner" \
         --reference "$bundle/cases/$name.$reference.safetensors" \
         >"$log" 2>&1; then
      row "$name vs $what | ok | $(tail -1 "$log")"
    else
      tail -20 "$log"
      fail "$name vs $what | FAILED | $(tail -1 "$log")"
    fi
  done
done <"$bundle/manifest.txt"

# nanochat's own golden cases (test/golden), on the CUDA of both versions of
# its optimizer, with the golden tolerances.
for version in a9d0a86 6ed7d1d; do
  for dtype in f32 bf16; do
    name=nanochat_$dtype
    [[ $version == 6ed7d1d ]] && name=nanochat_6ed7d1d_$dtype
    runner="$build/gen/$name/${name}_runner"
    [[ -x $runner ]] || continue
    log="$out/golden-$dtype-$version.log"
    if python3 test/golden/check_golden.py \
         --case "test/golden/mixed_small.$dtype.$version.safetensors" -- \
         "$runner" >"$log" 2>&1; then
      row "golden $dtype $version | ok | $(tail -1 "$log")"
    else
      tail -20 "$log"
      fail "golden $dtype $version | FAILED | $(tail -1 "$log")"
    fi
  done
done

# --- 4. the benchmarks against torch.compile --------------------------------
# The AdamW part (with the card's copy bandwidth), then the whole step.
bench="$build/bench"
if [[ -x $bench/optgen-gpu-bench-adamw && -x $bench/optgen-gpu-bench-step ]]; then
  ok=1
  "$bench/optgen-gpu-bench-adamw" >"$out/bench-adamw.txt" 2>&1 || ok=0
  timeout 200 python3 bench/gpu/baseline_adamw.py >"$out/bench-adamw-torch.txt" 2>&1 || ok=0
  timeout 200 "$bench/optgen-gpu-bench-step" >"$out/bench-step.txt" 2>&1 || ok=0
  timeout 300 python3 bench/gpu/baseline_step.py >"$out/bench-step-torch.txt" 2>&1 || ok=0
  card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  python3 bench/gpu/report.py "$out/bench-adamw.txt" "$out/bench-adamw-torch.txt" \
    --step "$out/bench-step.txt" "$out/bench-step-torch.txt" \
    --card "$card" --commit "$commit" --out "$out/RESULTS-section.md" \
    >"$out/bench-table.txt" 2>&1 || ok=0
  if ((ok)); then
    row "benchmarks | ok | tables below; a section for bench/RESULTS.md in RESULTS-section.md"
  else
    tail -n 5 "$out"/bench-*.txt
    fail "benchmarks | FAILED | see bench-*.txt (tables hold what ran)"
  fi
fi

# --- 5. the table -------------------------------------------------------------
echo
echo "check | result | detail"
echo "---|---|---"
printf '%s\n' "${rows[@]}"
[[ -f $out/bench-table.txt ]] && { echo; cat "$out/bench-table.txt"; }
echo "($((SECONDS - start)) s; logs in $out)"
exit $((failures > 0))
