#!/usr/bin/env bash
# The GPU check, on a machine with an NVIDIA GPU (sm_90: H100, H200), run
# from the repository root with gpu-bundle/ (scripts/gpu-prepare.sh, run
# where optgen builds) beside it. Nothing here needs MLIR or optgen, only
# nvcc, CMake, ninja and python3:
#
#   0. prints the GPU, nvcc, and where cuBLASLt's and NCCL's headers and
#      libraries were found (the CUDA toolkit, or NVIDIA's pip packages
#      under site-packages/nvidia/*), or NOT FOUND;
#   1. builds the runtime's cuda component, its GPU tests and the generated
#      CUDA of every example in the bundle (nvcc, sm_90);
#   2. runs the runtime's GPU tests;
#   3. replays every example's case on its generated CUDA and compares the
#      updates with the fp64 interpreter's and the CPU target's (made
#      beforehand), and nanochat's golden cases with their tolerances;
#   4. times, at nanochat's depths 12, 20 and 26, the AdamW part (with the
#      card's copy bandwidth) and the whole step against nanochat's under
#      torch.compile, and the host cost of a step (bench/gpu/).
#
# The whole check keeps to a budget, OPTGEN_GPU_BUDGET seconds (default 480,
# eight minutes; 1800 with --build-only), shared out below (`weights`): each
# step runs under a timeout that ends at its share's deadline, so time one
# step leaves goes to the next, and a step with too little time left is not
# started (its row says so). Each step's row of the table is printed the
# moment the step ends, and appended to gpu-check-summary.md; a last line
# counts the rows.
#
# It writes three files under $OUT when set (the device tool's folder, of
# which only a few files come back), else /tmp/optgen-gpu-check:
#   gpu-check-summary.md    the lines printed first, the table, the
#                           benchmarks' tables and the last line
#   gpu-check-logs.tar.gz   every step's log (gpu-check-logs/), packed again
#                           after each row, so a kill loses none of it
#   RESULTS-section.md      the benchmarks' section for bench/RESULTS.md
# The logs themselves are in $OPTGEN_GPU_BUILD/gpu-check-logs; it builds in
# $OPTGEN_GPU_BUILD (default /tmp/optgen-gpu-build). Exits non-zero when a
# check fails, times out or is not run for lack of time.
#
# `scripts/gpu-check.sh --build-only` does steps 0 and 1 alone, and needs no
# GPU: where optgen builds, after scripts/gpu-prepare.sh, it checks that the
# bundle builds as it will on the GPU machine.
set -uo pipefail
build_only=0
[[ ${1:-} == --build-only ]] && build_only=1
cd "$(dirname "$0")/.." || exit 2
root=$(pwd)
bundle="$root/gpu-bundle"
out=${OUT:-/tmp/optgen-gpu-check}
build=${OPTGEN_GPU_BUILD:-/tmp/optgen-gpu-build}
start=$SECONDS
if [[ ! -f $bundle/manifest.txt ]]; then
  echo "gpu-check: no gpu-bundle/: run scripts/gpu-prepare.sh first (where optgen builds)" >&2
  exit 2
fi

# --- the budget ---------------------------------------------------------------
# Each step's share of the budget, in seconds of the default 480 (scaled to
# OPTGEN_GPU_BUDGET); a step's deadline is the sum of the shares up to it.
if ((build_only)); then
  budget=${OPTGEN_GPU_BUDGET:-1800}
  steps=(probe configure build pack)
  weights=(15 35 420 10)
else
  budget=${OPTGEN_GPU_BUDGET:-480}
  steps=(probe configure build tests examples bench_adamw torch_adamw
    bench_step torch_step report pack)
  weights=(15 35 120 45 70 25 60 35 55 10 10)
fi
declare -A deadline
total=0
for w in "${weights[@]}"; do total=$((total + w)); done
sum=0
for i in "${!steps[@]}"; do
  sum=$((sum + weights[i]))
  deadline[${steps[i]}]=$((start + budget * sum / total))
done
grace=5     # a step's command gets TERM at its timeout, KILL 5 s later
min_step=3  # a step with fewer seconds than this left is not started
example_cap=25  # one comparison's timeout, at most

# --- where everything goes ----------------------------------------------------
logs="$build/gpu-check-logs"
summary="$out/gpu-check-summary.md"
archive="$out/gpu-check-logs.tar.gz"
section="$out/RESULTS-section.md"
mkdir -p "$out" "$build"
rm -rf "$logs"
mkdir -p "$logs"
rm -f "$summary" "$archive" "$archive.part" "$section"
: >"$summary"

passed=0 failed=0 timedout=0 notrun=0 skipped=0
child=""      # the running step's timeout process
current=""    # the running step's check
step_log=""   # and its log
step_start=$SECONDS

# Packs the logs into the archive (again): after each row, and at the end.
pack() {
  cp "$summary" "$logs/" 2>/dev/null
  tar -czf "$archive.part" -C "$build" gpu-check-logs 2>/dev/null &&
    mv -f "$archive.part" "$archive"
}

# say LINE: printed, and kept in the summary.
say() {
  printf '%s\n' "$1"
  printf '%s\n' "$1" >>"$summary"
}

# row CHECK RESULT SECONDS DETAIL: one row of the table, at once.
row() {
  case $2 in
    ok) passed=$((passed + 1)) ;;
    FAILED | KILLED | "NO DEVICE") failed=$((failed + 1)) ;;
    TIMEOUT) timedout=$((timedout + 1)) ;;
    "NOT RUN") notrun=$((notrun + 1)) ;;
    *) skipped=$((skipped + 1)) ;;
  esac
  say "$1 | $2 | $3 s | $4"
  pack
}

# excerpt LOG: the end of a failed step's log, indented (not in the summary;
# the whole log is in the archive).
excerpt() {
  [[ -s $1 ]] && tail -n 12 "$1" | cut -c1-200 | sed 's/^/    > /'
}

# run_step STEP CAP LOG CMD...: runs CMD, its output in LOG, under a timeout
# of what is left before STEP's deadline (at most CAP seconds, when CAP is
# not 0). Sets rc (CMD's status: 77 when a runner found no GPU, 124 or 137
# when it timed out; or "skip" when too little time was left to start it),
# took and limit.
run_step() {
  local step=$1 cap=$2 log=$3
  shift 3
  limit=$((deadline[$step] - SECONDS - grace))
  ((cap > 0 && cap < limit)) && limit=$cap
  took=0
  if ((limit < min_step)); then
    rc=skip
    : >"$log"
    return
  fi
  step_start=$SECONDS
  step_log=$log
  timeout --signal=TERM --kill-after="$grace" "$limit" "$@" >"$log" 2>&1 &
  child=$!
  wait "$child" 2>/dev/null  # (without bash's note of a KILL)
  rc=$?
  child=""
  took=$((SECONDS - step_start))
}

# outcome CHECK LOG DETAIL: the row of the step run_step just ran.
outcome() {
  local check=$1 log=$2 detail=${3:-(its log is empty)}
  case $rc in
    0) row "$check" ok "$took" "$detail" ;;
    skip) row "$check" "NOT RUN" 0 "too little of the budget left (${limit} s)" ;;
    77) row "$check" "NO DEVICE" "$took" "it found no GPU to run on; $(basename "$log")" ;;
    124 | 137)
      row "$check" TIMEOUT "$took" "stopped at its ${limit} s limit; $detail; $(basename "$log")"
      excerpt "$log" ;;
    *)
      row "$check" FAILED "$took" "exit $rc; $detail; $(basename "$log")"
      excerpt "$log" ;;
  esac
}

# finish STATUS: the benchmarks' tables, the last line, the logs packed.
finish() {
  trap - EXIT TERM INT HUP
  if [[ -s $logs/bench-table.txt ]]; then
    say ""
    while IFS= read -r line; do say "$line"; done <"$logs/bench-table.txt"
  fi
  local status=$1
  ((failed + timedout + notrun > 0 && status == 0)) && status=1
  say ""
  say "gpu-check: $passed ok, $failed failed, $timedout timed out, $notrun not run, $skipped skipped; $((SECONDS - start)) s of a ${budget} s budget; logs in $(basename "$archive")"
  pack
  echo "(the table again, as $summary holds it)"
  sed -n '/^check | result/,$p' "$summary"
  exit "$status"
}

# A signal (the device tool's limit, say): the running step is stopped, its
# row says so, and what ran is packed.
# shellcheck disable=SC2317 # called by the trap
on_signal() {
  trap - TERM INT HUP
  local child_was=$child
  if [[ -n $child ]]; then
    kill -TERM "$child" 2>/dev/null
    wait "$child" 2>/dev/null
  fi
  row "${current:-gpu-check}" KILLED "$((SECONDS - step_start))" "gpu-check.sh was sent a signal"
  [[ -n $child_was ]] && excerpt "$step_log"
  finish 143
}
trap on_signal TERM INT HUP
trap 'pack' EXIT

# --- 0. the machine -----------------------------------------------------------
current=probe
if command -v nvidia-smi >/dev/null; then
  gpus=$(timeout 15 nvidia-smi --query-gpu=name,driver_version,memory.total \
    --format=csv,noheader 2>&1 | paste -sd ';' -)
  say "GPU: ${gpus:-nvidia-smi answered nothing}"
else
  say "GPU: none (no nvidia-smi)"
fi
nvcc=$(command -v nvcc || true)
for candidate in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
  [[ -z $nvcc && -n $candidate && -x $candidate/bin/nvcc ]] && nvcc=$candidate/bin/nvcc
done
if [[ -n $nvcc ]]; then
  say "nvcc: $nvcc, $(timeout 15 "$nvcc" --version 2>&1 | grep -m1 release || echo 'no version')"
  toolkit=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
else
  say "nvcc: NOT FOUND"
  toolkit=""
fi
say "cmake: $(cmake --version 2>/dev/null | head -1 || echo NOT FOUND); ninja: $(ninja --version 2>/dev/null || echo NOT FOUND); $(python3 --version 2>&1)"

# The folders to look in: the toolkit's (and the system's), and NVIDIA's pip
# packages (site-packages/nvidia/NAME/{include,lib}: nvidia-cublas puts
# cuBLAS under nvidia/cu13, nvidia-nccl-cu13 NCCL under nvidia/nccl).
include_dirs=() library_dirs=()
roots=()
for r in "$toolkit" "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
  [[ -n $r && -d $r ]] && roots+=("$r")
done
for r in "${roots[@]}"; do
  include_dirs+=("$r/include" "$r"/targets/*/include)
  library_dirs+=("$r/lib64" "$r/lib" "$r"/targets/*/lib)
done
include_dirs+=(/usr/include)
library_dirs+=(/usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib)
system_count=${#include_dirs[@]}
system_library_count=${#library_dirs[@]}
mapfile -t pip_dirs < <(timeout 20 python3 - 2>/dev/null <<'EOF'
import os, site, sysconfig
dirs = set(site.getsitepackages())
dirs.update(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
try:
    dirs.add(site.getusersitepackages())
except Exception:
    pass
found = {os.path.join(d, "nvidia") for d in dirs}
try:
    import nvidia
    found.update(nvidia.__path__)
except Exception:
    pass
for d in sorted(found):
    if os.path.isdir(d):
        print(os.path.realpath(d))
EOF
)
for p in "${pip_dirs[@]}"; do
  include_dirs+=("$p"/*/include)
  library_dirs+=("$p"/*/lib)
done

# locate KIND NAME: each copy of header NAME (KIND header) or of library
# libNAME.so (KIND library; per folder the unversioned one, else the first
# versioned), one per real file, as "PATH (toolkit|pip)".
locate() {
  local kind=$1 name=$2 i dir file where
  local -A seen=()
  if [[ $kind == header ]]; then
    for i in "${!include_dirs[@]}"; do
      file="${include_dirs[i]}/$name"
      [[ -f $file ]] || continue
      where=toolkit
      ((i >= system_count)) && where=pip
      [[ -n ${seen[$(readlink -f "$file")]:-} ]] && continue
      seen[$(readlink -f "$file")]=1
      echo "$file ($where)"
    done
  else
    for i in "${!library_dirs[@]}"; do
      dir=${library_dirs[i]}
      file="$dir/lib$name.so"
      [[ -e $file ]] || file=$(compgen -G "$dir/lib$name.so.*" | sort | head -1)
      [[ -n $file && -e $file ]] || continue
      where=toolkit
      ((i >= system_library_count)) && where=pip
      [[ -n ${seen[$(readlink -f "$file")]:-} ]] && continue
      seen[$(readlink -f "$file")]=1
      echo "$file ($where)"
    done
  fi
}
found_line() { if [[ -n $1 ]]; then paste -sd ';' - <<<"$1" | sed 's/;/; /g'; else echo "NOT FOUND"; fi; }
cublas_headers=$(locate header cublasLt.h)
cublas_libraries=$(locate library cublasLt)
nccl_headers=$(locate header nccl.h)
nccl_libraries=$(locate library nccl)
say "cuBLASLt headers: $(found_line "$cublas_headers")"
say "cuBLASLt libraries: $(found_line "$cublas_libraries")"
say "NCCL headers: $(found_line "$nccl_headers")"
say "NCCL libraries: $(found_line "$nccl_libraries")"
commit=$(git rev-parse --short HEAD 2>/dev/null || cat "$bundle/commit.txt" 2>/dev/null || echo unknown)
say "commit: $commit (bundle made at $(cat "$bundle/commit.txt" 2>/dev/null || echo unknown)); budget ${budget} s"

# What CMake is handed: NCCL_ROOT, else the pip package's NCCL (its find
# looks there first); the pip package's cuBLASLt only where the toolkit has
# no libcublasLt.so of its own (CMake's FindCUDAToolkit finds none then).
nccl_root=${NCCL_ROOT:-}
if [[ -z $nccl_root ]]; then
  pip_nccl=$(grep -m1 '(pip)$' <<<"$nccl_headers" | sed 's/ (pip)$//')
  [[ -n $pip_nccl ]] && nccl_root=$(dirname "$(dirname "$pip_nccl")")
fi
cublas_flags=()
if ! grep -q '/libcublasLt\.so (toolkit)$' <<<"$cublas_libraries"; then
  pip_cublas=$(grep -m1 '(pip)$' <<<"$cublas_libraries" | sed 's/ (pip)$//')
  if [[ -n $pip_cublas ]]; then
    cublas_flags+=(-DCUDA_cublasLt_LIBRARY="$pip_cublas")
    if ! grep -q '(toolkit)$' <<<"$cublas_headers"; then
      pip_include=$(dirname "$(grep -m1 '(pip)$' <<<"$cublas_headers" | sed 's/ (pip)$//')")
      cublas_flags+=(-DCMAKE_CXX_FLAGS="-isystem $pip_include"
        -DCMAKE_CUDA_FLAGS="-isystem $pip_include")
    fi
    say "cuBLASLt for the build: $pip_cublas (the toolkit has no libcublasLt.so)"
  fi
fi
say ""
say "check | result | time | detail"
say "---|---|---|---"

# --- 1. build -----------------------------------------------------------------
current=configure
run_step configure 0 "$logs/configure.log" \
  cmake -S scripts/gpu -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DOPTGEN_ROOT="$root" ${nccl_root:+-DNCCL_ROOT="$nccl_root"} "${cublas_flags[@]}"
outcome configure "$logs/configure.log" "cmake, $(grep -c 'CMake Error' "$logs/configure.log") errors"
if [[ $rc != 0 ]]; then
  row "build and the rest" "NOT RUN" 0 "the configuration did not finish"
  finish 1
fi
cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
cublas=$(cache CUDA_cublasLt_LIBRARY)
if [[ -n $cublas && $cublas != *NOTFOUND ]]; then
  row cuBLASLt ok 0 "$cublas"
else
  row cuBLASLt FAILED 0 "NOT FOUND by CMake"
fi
nccl=$(cache OPTGEN_NCCL_LIBRARY)
if [[ -n $nccl && $nccl != *NOTFOUND ]]; then
  row NCCL ok 0 "$nccl"
else
  row NCCL FAILED 0 "NOT FOUND: its communicator and tests were not built"
fi

current=build
# -k 0: one target that fails leaves the others built (and checked below).
run_step build 0 "$logs/build.log" cmake --build "$build" -j "$(nproc)" -- -k 0
failures=$(grep '^FAILED: ' "$logs/build.log" | sed 's/^FAILED: //; s/ .*//' | head -3 | paste -sd ' ' -)
outcome build "$logs/build.log" \
  "$(grep -c '^\[[0-9]*/[0-9]*\]' "$logs/build.log") steps, $(grep -c '^FAILED: ' "$logs/build.log") failed${failures:+: $failures}"
if ((build_only)); then
  finish 0
fi

# --- 2. the runtime's GPU tests -----------------------------------------------
current="runtime GPU tests"
tests="$build/runtime/optgen-runtime-cuda-tests"
log="$logs/runtime-tests.log"
if [[ -x $tests ]]; then
  run_step tests 0 "$log" "$tests" --gtest_color=no
  detail="$(grep -c '^\[       OK \]' "$log") passed, $(grep -c '^\[  SKIPPED \]' "$log") skipped, $(grep '^\[  FAILED  \] [^ ]* (' "$log" | sort -u | wc -l) failed"
  failing=$(grep '^\[  FAILED  \] [^ ]* (' "$log" | sed 's/^\[  FAILED  \] //; s/ (.*//' | sort -u | head -5 | paste -sd ' ' -)
  [[ -n $failing ]] && detail+=": $failing"
  if [[ $rc == 124 || $rc == 137 ]]; then
    detail+="; running $(grep '^\[ RUN      \]' "$log" | tail -1 | sed 's/^\[ RUN      \] //')"
  fi
  outcome "runtime GPU tests" "$log" "$detail"
else
  row "runtime GPU tests" FAILED 0 "not built"
fi

# --- 3. the examples against the fp64 interpreter -----------------------------
# Each comparison under its own timeout; the examples and golden cases share
# one deadline, and those it leaves no time for are named in one row.
not_run=()
while read -r name tolerance rest; do
  if [[ $tolerance == skipped ]]; then
    row "$name" skipped 0 "$rest"
    continue
  fi
  runner="$build/gen/$name/${name}_runner"
  [[ -x $runner ]] || runner=$(find "$build/gen/$name" -maxdepth 1 -name '*_runner' -type f 2>/dev/null | head -1)
  for reference in reference cpu; do
    what="fp64 interpreter"
    [[ $reference == cpu ]] && what="CPU target"
    current="$name vs $what"
    if [[ -z $runner || ! -x $runner ]]; then
      row "$current" FAILED 0 "no runner built"
      continue
    fi
    log="$logs/$name.$reference.log"
    run_step examples "$example_cap" "$log" \
      python3 test/numeric/compare.py --case "$bundle/cases/$name.safetensors" \
      --tolerance "$tolerance" --runner "$runner" \
      --reference "$bundle/cases/$name.$reference.safetensors"
    if [[ $rc == skip ]]; then
      not_run+=("$current")
      continue
    fi
    outcome "$current" "$log" "$(tail -1 "$log")"
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
    current="golden $dtype $version"
    log="$logs/golden-$dtype-$version.log"
    run_step examples "$example_cap" "$log" \
      python3 test/golden/check_golden.py \
      --case "test/golden/mixed_small.$dtype.$version.safetensors" -- "$runner"
    if [[ $rc == skip ]]; then
      not_run+=("$current")
      continue
    fi
    outcome "$current" "$log" "$(tail -1 "$log")"
  done
done
if ((${#not_run[@]})); then
  row "${#not_run[@]} comparisons" "NOT RUN" 0 "too little of the budget left: ${not_run[*]}"
fi

# --- 4. the benchmarks against torch.compile --------------------------------
# The AdamW part (with the card's copy bandwidth), then the whole step, each
# program under its own timeout; their RESULT lines (one per depth) are kept
# as they come (line-buffered), so a timeout keeps the depths that ran.
bench="$build/bench"
linebuf=()
command -v stdbuf >/dev/null && linebuf=(stdbuf -oL)
export PYTHONUNBUFFERED=1
# benchmark STEP CHECK LOG CMD...
benchmark() {
  local step=$1 check=$2 log=$3
  shift 3
  current=$check
  if [[ ! -x $1 && $1 != python3 ]]; then
    : >"$log"
    row "$check" FAILED 0 "not built"
    return
  fi
  run_step "$step" 0 "$log" "${linebuf[@]}" "$@"
  outcome "$check" "$log" "$(grep -c '^RESULT ' "$log") of 3 depths"
}
benchmark bench_adamw "benchmark AdamW, optgen" "$logs/bench-adamw.txt" \
  "$bench/optgen-gpu-bench-adamw"
benchmark torch_adamw "benchmark AdamW, torch.compile" "$logs/bench-adamw-torch.txt" \
  python3 bench/gpu/baseline_adamw.py
benchmark bench_step "benchmark step, optgen" "$logs/bench-step.txt" \
  "$bench/optgen-gpu-bench-step"
benchmark torch_step "benchmark step, torch.compile" "$logs/bench-step-torch.txt" \
  python3 bench/gpu/baseline_step.py

current="benchmark tables"
card=$(timeout 15 nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
if cat "$logs"/bench-*.txt 2>/dev/null | grep -q '^RESULT '; then
  run_step report 0 "$logs/bench-table.txt" \
    python3 bench/gpu/report.py "$logs/bench-adamw.txt" "$logs/bench-adamw-torch.txt" \
    --step "$logs/bench-step.txt" "$logs/bench-step-torch.txt" \
    --card "${card:-unknown}" --commit "$commit" --out "$section"
  outcome "benchmark tables" "$logs/bench-table.txt" \
    "below; a section for bench/RESULTS.md in $(basename "$section")"
else
  row "benchmark tables" "NOT RUN" 0 "no benchmark printed a result"
fi

finish 0
