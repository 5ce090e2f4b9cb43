"""Checkpoints of sharded state do not depend on the number of ranks.

checkpoint_ranks.py --runner R [--reference-runner R1] --case C --mpiexec M
                    --ranks N

1. The state saved after the case on N ranks equals the one saved on 1.
2. Loading the 1-rank checkpoint and replaying the case again gives the same
   state and parameters on N ranks as on 1.
The one rank runs R1 when given (a runner compiled for N ranks runs on N
alone). Prints `N passed, M failed`."""

import argparse
import math
import os
import subprocess
import sys
import tempfile

import safetensors_io


def max_rel(a, b):
    worst = 0.0
    for name in a:
        x, y = a[name][1], b[name][1]
        diff = math.sqrt(sum((p - q) ** 2 for p, q in zip(x, y)))
        worst = max(worst, diff / (math.sqrt(sum(p * p for p in x)) or 1.0))
    return worst


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    parser.add_argument("--reference-runner",
                        help="the runner of the one-rank runs (default: --runner)")
    parser.add_argument("--case", required=True)
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--ranks", type=int, required=True)
    args = parser.parse_args()
    os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    many = [args.mpiexec, "-np", str(args.ranks), "--oversubscribe", args.runner]
    quiet = dict(check=True, stdout=subprocess.DEVNULL)
    one = args.reference_runner or args.runner
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([one, "--case", args.case, "--save-state", f"{tmp}/one.st"], **quiet)
        subprocess.run(many + ["--case", args.case, "--save-state", f"{tmp}/many.st"], **quiet)
        results.append(("state saved on %d ranks vs 1" % args.ranks,
                        max_rel(safetensors_io.read(f"{tmp}/one.st")[0],
                                safetensors_io.read(f"{tmp}/many.st")[0])))
        subprocess.run([one, "--case", args.case, "--load-state", f"{tmp}/one.st",
                        "--save-state", f"{tmp}/one2.st", "--out", f"{tmp}/one2.p"], **quiet)
        subprocess.run(many + ["--case", args.case, "--load-state", f"{tmp}/one.st",
                               "--save-state", f"{tmp}/many2.st", "--out", f"{tmp}/many2.p"], **quiet)
        results.append(("state after loading on %d ranks vs 1" % args.ranks,
                        max_rel(safetensors_io.read(f"{tmp}/one2.st")[0],
                                safetensors_io.read(f"{tmp}/many2.st")[0])))
        results.append(("parameters after loading on %d ranks vs 1" % args.ranks,
                        max_rel(safetensors_io.read(f"{tmp}/one2.p")[0],
                                safetensors_io.read(f"{tmp}/many2.p")[0])))
    failed = 0
    for what, rel in results:
        ok = rel < 1e-6
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {what}: rel {rel:.2e}")
    print(f"{len(results) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
