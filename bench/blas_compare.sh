#!/usr/bin/env bash
# Which BLAS should the runtime link? Times every candidate CBLAS on the
# matrix products of Polar Express at nanochat's shapes (blas_compare.cpp),
# each library in a fresh process, and prints the tables for RESULTS.md.
#
#   bash bench/blas_compare.sh [--threads 2] [--depths 4,6] [--libs a,b] [--reps 7] [--min-ms 20]
#
# The candidates, all from the package registries (bench/setup.sh installs
# them):
#   openblas-openmp   Debian's OpenBLAS, OpenMP build: what the runtime links
#   openblas-pthread  Debian's OpenBLAS, pthread build
#   blis-openmp       Debian's BLIS, OpenMP build
#   mkl-gnu           PyPI's mkl (libmkl_rt), on GNU OpenMP: how the runtime
#                     would have to run it, sharing libgomp with its loops
#   mkl-intel         the same on Intel's OpenMP (MKL's default)
# Each runs with the thread count given (default 2, this machine's cores),
# set through the variables that library reads. The outputs are kept in
# build-bench/blas-results/.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build="$root/build-bench"
out="$build/blas-results"

threads=2
libs=openblas-openmp,openblas-pthread,blis-openmp,mkl-gnu,mkl-intel
pass=()
while (($#)); do
  case $1 in
    --threads) threads=$2; shift 2 ;;
    --libs) libs=$2; shift 2 ;;
    --depths|--reps|--min-ms) pass+=("$1" "$2"); shift 2 ;;
    *) echo "usage: bench/blas_compare.sh [--threads 2] [--depths 4,6] [--libs a,b] [--reps 7] [--min-ms 20]" >&2
       exit 2 ;;
  esac
done

bench/setup.sh
[[ -f $build/build.ninja ]] ||
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
ninja -C "$build" -j2 optgen-blas-compare

multiarch=/usr/lib/x86_64-linux-gnu
venv_lib="$root/bench/.venv/lib"
mkl_rt=$(ls "$venv_lib"/libmkl_rt.so.* 2>/dev/null | head -n 1 || true)

# run NAME THREADS: one library in a fresh process; everything it reads about
# threads is set explicitly, the rest of the environment as it is.
run() {
  local name=$1 t=$2 lib
  local env=(OMP_NUM_THREADS="$t" OPENBLAS_NUM_THREADS="$t" BLIS_NUM_THREADS="$t"
             MKL_NUM_THREADS="$t" MKL_DYNAMIC=FALSE)
  case $name in
    openblas-openmp) lib=$multiarch/openblas-openmp/libopenblas.so.0 ;;
    openblas-pthread) lib=$multiarch/openblas-pthread/libopenblas.so.0 ;;
    blis-openmp) lib=$multiarch/blis-openmp/libblis.so.4 ;;
    mkl-gnu|mkl-intel)
      lib=$mkl_rt
      local layer=GNU
      [[ $name == mkl-intel ]] && layer=INTEL
      env+=(MKL_THREADING_LAYER=$layer LD_LIBRARY_PATH="$venv_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}") ;;
    *) echo "blas_compare: unknown library $name" >&2; exit 2 ;;
  esac
  if [[ -z $lib || ! -e $lib ]]; then
    echo "blas_compare: $name is not installed (${lib:-no libmkl_rt in $venv_lib}); run bench/setup.sh" >&2
    exit 1
  fi
  # Let the previous process's threads and the machine settle.
  sleep 2
  env "${env[@]}" "$build/bin/optgen-blas-compare" --lib "$lib" --name "$name" "${pass[@]}"
}

unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
mkdir -p "$out"
cpu_busy() { # prints "busy total" jiffies of all CPUs
  awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat
}
read -r b0 t0 < <(cpu_busy)
start=$SECONDS
results=()
for t in ${threads//,/ }; do
  for name in ${libs//,/ }; do
    file="$out/$name-t$t.txt"
    echo "== $name, $t thread(s) =="
    run "$name" "$t" | tee "$file" | grep -v '^ROW'
    results+=("$t:$file")
  done
done
read -r b1 t1 < <(cpu_busy)
# The machine's load while this ran, this script's own work included: with
# 2 CPUs, a clean run is at most ~100% (one process on two threads).
echo "CPUs $(( 100 * (b1 - b0) / (t1 - t0 > 0 ? t1 - t0 : 1) ))% busy over $((SECONDS - start)) s" \
  "(this run's own threads included; load average now: $(cut -d' ' -f1-3 /proc/loadavg))"

python3 - "${results[@]}" <<'EOF'
import sys
from collections import OrderedDict

rows, mixes, libs = [], [], OrderedDict()
for arg in sys.argv[1:]:
    threads, path = arg.split(":", 1)
    for line in open(path):
        kind, _, rest = line.partition(" ")
        if kind in ("ROW", "MIX"):
            fields = dict(f.split("=", 1) for f in rest.split())
            fields["threads"] = threads
            libs[(fields["lib"], threads)] = None
            (rows if kind == "ROW" else mixes).append(fields)

columns = list(libs)
heading = " | ".join(f"{lib} ({t}t)" for lib, t in columns)


def rate(depth, product, op, column):
    for r in rows:
        if (r["depth"], r["product"], r["op"], (r["lib"], r["threads"])) == (depth, product, op, column):
            return float(r["gflops"])
    return None


def cell(values):
    return " / ".join("-" if v is None else f"{v:.0f}" for v in values)


products = list(OrderedDict(((r["depth"], r["product"], r["m"], r["n"], r["k"]), None)
                            for r in rows if r["op"] == "sgemm"))

def op_table(title, kinds, ops):
    """One row per product of the kinds (its m x n x k too), one cell per
    library: the ops' rates."""
    print()
    print(title)
    print(f"| depth | product | m x n x k | {heading} |")
    print("|---" * (3 + len(columns)) + "|")
    for depth, product, m, n, k in products:
        if product.startswith(kinds):
            cells = " | ".join(cell([rate(depth, product, op, c) for op in ops])
                               for c in columns)
            print(f"| {depth} | {product} | {m}x{n}x{k} | {cells} |")


op_table("sgemm GFLOP/s (best of the repetitions), per product of one Polar Express "
         "iteration; product [rows x cols] of X, and m x n x k of the product:",
         ("XXt", "XtX", "AA", "BX", "XB"), ("sgemm",))

op_table("Symmetric products, GFLOP/s counting the full product's 2mnk for each: "
         "sgemm / ssyrk / ssyrk + mirroring the other triangle:",
         ("XXt", "XtX", "AA"), ("sgemm", "ssyrk", "ssyrk+mirror"))
op_table("The product with the symmetric B, GFLOP/s: sgemm / ssymm (reads one "
         "triangle of B, so B needs no mirror):", ("BX", "XB"), ("sgemm", "ssymm"))

print()
print("One Polar Express iteration of one layer's matrices (4 [n,n], [4n,n], "
      "[n,4n]), GFLOP/s of the standard flops: all sgemm / ssyrk for X X^T "
      "and A A, both mirrored, sgemm for B X / ssyrk for both, only A "
      "mirrored, ssymm for B X:")
print(f"| depth | {heading} |")
print("|---" * (1 + len(columns)) + "|")
for depth in OrderedDict((m["depth"], None) for m in mixes):
    def mix(plan, column):
        for m in mixes:
            if (m["depth"], m["plan"], (m["lib"], m["threads"])) == (depth, plan, column):
                return float(m["gflops"])
    cells = " | ".join(cell([mix(p, c) for p in ("sgemm", "ssyrk+sgemm", "ssyrk+ssymm")])
                       for c in columns)
    print(f"| {depth} | {cells} |")
EOF
