#!/usr/bin/env bash
# The CPU benchmark: optgen's generated nanochat step against the same math
# in eager PyTorch, side by side.
#
#   bash bench/run.sh [--bf16] [--depths 2,4,6] [--steps N] [--warmup W]
#
# Installs what is missing (Debian's python3-torch and the pthread OpenBLAS,
# which torch must get through the libblas.so.3 alternative), builds
# optgen-bench in build-bench/ (never build/), runs both programs with the
# same options, and prints the two tables and the speedup per depth (against
# the faster of PyTorch's thread counts, see baseline_torch.py). The
# outputs are kept in build-bench/bench-results/. --bf16 also runs the
# compute=bf16 variant (for reference; not the one compared).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build="$root/build-bench"
out="$build/bench-results"

bf16=0
args=()
for arg in "$@"; do
  if [[ $arg == --bf16 ]]; then bf16=1; else args+=("$arg"); fi
done

# --- dependencies (idempotent: apt only when something is missing) --------
scripts/install-deps.sh
missing=()
for package in python3-torch libopenblas0-pthread; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if ((${#missing[@]})); then
  echo "bench: installing ${missing[*]}"
  sudo=""
  [[ $(id -u) == 0 ]] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# Debian's torch calls libblas.so.3; with the reference BLAS behind it a
# matmul is ~40x slower and the baseline means nothing. Installing OpenBLAS
# makes it the automatic choice; refuse to go on if somebody pinned another.
blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3)
if [[ $blas != *openblas* ]]; then
  echo "bench: libblas.so.3 is $blas, not OpenBLAS; run" >&2
  echo "  update-alternatives --auto libblas.so.3-x86_64-linux-gnu" >&2
  exit 1
fi

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
echo "== PyTorch eager baseline (fp32) =="
/usr/bin/python3 bench/baseline_torch.py "${args[@]}" | tee "$out/torch.txt"

# --- side by side ------------------------------------------------------------
/usr/bin/python3 - "$out/optgen.txt" "$out/torch.txt" <<'EOF'
import sys

def results(path):
    rows = {}
    for line in open(path):
        if line.startswith("RESULT "):
            fields = dict(f.split("=", 1) for f in line.split()[1:])
            rows[int(fields["depth"])] = fields
    return rows

optgen, torch = results(sys.argv[1]), results(sys.argv[2])

def close(a, b, tol):
    a, b = float(a), float(b)
    return abs(a - b) <= tol * max(abs(a), abs(b), 1e-30)

print()
print("| depth | params | optgen step ms | PyTorch step ms (threads) | speedup | "
      "optgen AdamW ms | % of bound | PyTorch AdamW ms (threads) | AdamW speedup | "
      "results agree | others' CPU (optgen / torch) |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for depth in sorted(optgen):
    o, t = optgen[depth], torch.get(depth)
    if t is None:
        continue
    # The step's deltas from identical data: the abs sums must agree closely
    # (fp32, different summation orders), the signed sums loosely (they
    # cancel).
    agree = (close(o["adamw_abs"], t["adamw_abs"], 1e-4) and
             close(o["muon_abs"], t["muon_abs"], 1e-3))
    fo, ft = float(o["full_ms"]), float(t["full_ms"])
    ao, at = float(o["adamw_ms"]), float(t["adamw_ms"])
    print(f"| {depth} | {o['params']} | {fo:.1f} | {ft:.1f} ({t['full_threads']}) | "
          f"{ft / fo:.2f}x | {ao:.2f} | {o['adamw_bound_pct']}% | "
          f"{at:.2f} ({t['adamw_threads']}) | {at / ao:.2f}x | "
          f"{'yes' if agree else 'NO'} | {o['others_pct']}% / {t['others_pct']}% |")
print()
print("PyTorch: the faster of its thread counts per depth and part (in "
      "brackets). % of bound: the AdamW step against the pure-traffic bound "
      "measured next to it. others' CPU: the share of the CPUs other processes "
      "used while timing; above ~10% the times are not clean.")
EOF
