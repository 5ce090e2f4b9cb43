#!/usr/bin/env bash
# The CPU benchmark: optgen's generated nanochat step against the same math
# as nanochat runs it, under torch.compile (the baseline), in one run.
#
#   bash bench/run.sh [--bf16] [--no-eager] [--depths 4,6] [--steps N] [--warmup W]
#
# Installs what is missing (bench/setup.sh: PyTorch 2.x from PyPI in
# bench/.venv), builds optgen-bench in build-bench/ (never build/), runs
# optgen-bench, then bench/baseline_torch.py under torch.compile and (unless
# --no-eager) uncompiled, with the same options, and prints the speedup per
# depth against torch.compile (and eager). Depths 4 and 6 unless --depths
# says otherwise. BENCH_TORCH_THREADS (e.g. "2,1") sets the torch intra-op
# thread counts tried (default: torch's own). The outputs are kept in
# build-bench/bench-results/. --bf16 also runs the compute=bf16 variant (for
# reference; not the one compared).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build="$root/build-bench"
out="$build/bench-results"
python="$root/bench/.venv/bin/python"

bf16=0
eager=1
depths=0
args=()
for arg in "$@"; do
  case $arg in
    --bf16) bf16=1 ;;
    --no-eager) eager=0 ;;
    *) [[ $arg == --depths ]] && depths=1; args+=("$arg") ;;
  esac
done
((depths)) || args+=(--depths 4,6)
torch_args=("${args[@]}")
[[ -n ${BENCH_TORCH_THREADS:-} ]] && torch_args+=(--threads "$BENCH_TORCH_THREADS")

# --- dependencies (idempotent: installs only what is missing) ----------------
bench/setup.sh

# --- build -------------------------------------------------------------------
[[ -f $build/build.ninja ]] ||
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
targets=(optgen-bench)
((bf16)) && targets+=(optgen-bench-bf16)
ninja -C "$build" -j2 "${targets[@]}"

# --- run ---------------------------------------------------------------------
# The machine may be shared (builds): before each program, wait until the
# other processes leave the CPUs alone (under 10% busy over 3 s), for at most
# BENCH_QUIET_WAIT seconds (default 900); both programs also report the CPU
# share others took while they timed.
cpu_busy() { # prints "busy total" jiffies of all CPUs
  awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat
}
wait_quiet() {
  local deadline=$((SECONDS + ${BENCH_QUIET_WAIT:-900}))
  while :; do
    read -r b0 t0 < <(cpu_busy); sleep 3; read -r b1 t1 < <(cpu_busy)
    local busy=$(( 100 * (b1 - b0) / (t1 - t0 > 0 ? t1 - t0 : 1) ))
    ((busy < 10)) && return
    if ((SECONDS >= deadline)); then
      echo "bench: the CPUs are still ${busy}% busy; measuring anyway" >&2
      return
    fi
    echo "bench: CPUs ${busy}% busy with other work; waiting" >&2
    sleep 20
  done
}
# Some machines set OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE for the tests; the
# benchmark runs both sides without them (OpenBLAS detects the processor),
# alike, so neither side gets a different BLAS kernel.
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
mkdir -p "$out"
wait_quiet
echo "== optgen-bench (compute=f32) =="
"$build/bin/optgen-bench" "${args[@]}" | tee "$out/optgen.txt"
if ((bf16)); then
  wait_quiet
  echo "== optgen-bench-bf16 (compute=bf16, for reference) =="
  "$build/bin/optgen-bench-bf16" "${args[@]}" | tee "$out/optgen-bf16.txt"
fi
wait_quiet
echo "== PyTorch, torch.compile (fp32): the baseline =="
"$python" bench/baseline_torch.py --mode compile "${torch_args[@]}" | tee "$out/torch-compile.txt"
rm -f "$out/torch-eager.txt"
if ((eager)); then
  wait_quiet
  echo "== PyTorch eager (fp32), for reference =="
  "$python" bench/baseline_torch.py --mode eager "${torch_args[@]}" | tee "$out/torch-eager.txt"
fi

# --- side by side ------------------------------------------------------------
"$python" - "$out/optgen.txt" "$out/torch-compile.txt" "$out/torch-eager.txt" <<'EOF'
import os
import sys


def results(path):
    rows = {}
    if os.path.exists(path):
        for line in open(path):
            if line.startswith("RESULT "):
                fields = dict(f.split("=", 1) for f in line.split()[1:])
                rows[int(fields["depth"])] = fields
    return rows


optgen, compiled, eager = (results(path) for path in sys.argv[1:4])


def close(a, b, tol):
    a, b = float(a), float(b)
    return abs(a - b) <= tol * max(abs(a), abs(b), 1e-30)


def agree(o, t):
    # The step's deltas from identical data: the abs sums must agree closely
    # (fp32, different summation orders), the signed sums loosely (they
    # cancel), so only the abs sums are compared.
    return close(o["adamw_abs"], t["adamw_abs"], 1e-4) and close(o["muon_abs"], t["muon_abs"], 1e-3)


print()
print("| depth | params | optgen step ms | torch.compile step ms | speedup | "
      "eager step ms | speedup vs eager | optgen AdamW ms | % of bound | "
      "torch.compile AdamW ms | AdamW speedup | optgen Polar GFLOP/s | "
      "sgemm GFLOP/s (shapes) | % of sgemm | torch.compile Polar GFLOP/s | "
      "results agree | others' CPU (optgen / compile / eager) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for depth in sorted(optgen):
    o, c, e = optgen[depth], compiled.get(depth), eager.get(depth)
    if c is None:
        continue
    fo, fc = float(o["full_ms"]), float(c["full_ms"])
    ao, ac = float(o["adamw_ms"]), float(c["adamw_ms"])
    eager_cols = (f"{float(e['full_ms']):.1f} ({e['full_threads']}) | "
                  f"{float(e['full_ms']) / fo:.2f}x" if e else "- | -")
    ok = agree(o, c) and (e is None or agree(o, e))
    print(f"| {depth} | {o['params']} | {fo:.1f} | {fc:.1f} ({c['full_threads']}) | "
          f"{fc / fo:.2f}x | {eager_cols} | {ao:.2f} | {o['adamw_bound_pct']}% | "
          f"{ac:.2f} ({c['adamw_threads']}) | {ac / ao:.2f}x | {o['muon_gflops']} | "
          f"{o['blas_gflops']} | {o['muon_blas_pct']}% | {c['muon_gflops']} | "
          f"{'yes' if ok else 'NO'} | {o['others_pct']}% / {c['others_pct']}% / "
          f"{e['others_pct'] + '%' if e else '-'} |")
print()
print("Speedups against torch.compile (nanochat's compiled step functions), the "
      "baseline; eager for reference; torch thread counts in brackets. "
      "Polar GFLOP/s: the standard flops of Polar Express's products over the "
      "Muon part's time (full step - AdamW step), so Muon's elementwise work is "
      "counted against it; % of sgemm: against cblas_sgemm on the same products, "
      "measured in the same optgen-bench run with the same BLAS. % of bound: the "
      "AdamW step against the pure-traffic bound measured next to it. others' CPU: "
      "the share of the CPUs other processes used while timing; above ~10% the "
      "times are not clean.")
EOF
