"""Compares the compiled optimizer with the reference interpreter on a case.

compare.py --case CASE --tolerance TOL --runner RUNNER
           (--optgen OPTGEN --spec SPEC [-D NAME=VALUE ...] | --reference REF)

Replays the case on the runner (the generated code) and on optgen run
--interpret (the fp64 interpreter), or takes the interpreter's result from
REF (made beforehand, where optgen runs: scripts/gpu-prepare.sh), and
checks, per parameter, the update error
rel = |(a - p0) - (b - p0)| / |b - p0| < TOL. Prints one line per parameter
and `N passed, M failed`."""

import argparse
import math
import os
import subprocess
import sys
import tempfile

import safetensors_io

# A runner's status when it has no device to run on (a CUDA runner without a
# GPU): the comparison is skipped, and says so.
NO_DEVICE = 77


def update_error(initial, got, want):
    """rel = |(got - p0) - (want - p0)| / |want - p0| (Frobenius norms) of
    three parameters' elements."""
    diff = sum(((x - p) - (y - p)) ** 2 for x, y, p in zip(got, want, initial))
    ref = sum((y - p) ** 2 for y, p in zip(want, initial))
    return math.sqrt(diff / ref) if ref > 0 else math.sqrt(diff)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", required=True)
    parser.add_argument("--tolerance", type=float, required=True)
    parser.add_argument("--runner", required=True)
    parser.add_argument("--optgen")
    parser.add_argument("--spec")
    parser.add_argument("-D", action="append", default=[])
    parser.add_argument("--reference")
    args = parser.parse_args()
    if not args.reference and not (args.optgen and args.spec):
        parser.error("give --reference, or --optgen and --spec")

    with tempfile.TemporaryDirectory() as tmp:
        compiled = os.path.join(tmp, "compiled.safetensors")
        ran = subprocess.run([args.runner, "--case", args.case, "--out",
                              compiled], stdout=subprocess.DEVNULL)
        if ran.returncode == NO_DEVICE:
            print(f"{args.runner}: no device to run on: skipped")
            sys.exit(NO_DEVICE)
        if ran.returncode != 0:
            sys.exit(f"{args.runner} failed with status {ran.returncode}")
        reference = args.reference
        if not reference:
            reference = os.path.join(tmp, "reference.safetensors")
            defines = [f"-D{d}" for d in args.D]
            subprocess.run([args.optgen, "run", args.spec, *defines,
                            "--interpret", "--case", args.case, "--out",
                            reference],
                           check=True, stdout=subprocess.DEVNULL)
        initial, _ = safetensors_io.read(args.case)
        got, _ = safetensors_io.read(compiled)
        want, _ = safetensors_io.read(reference)

    passed = failed = 0
    for name in sorted(got):
        shape, a = got[name]
        _, b = want[name]
        _, p0 = initial[name]
        rel = update_error(p0, a, b)
        ok = rel < args.tolerance and all(math.isfinite(x) for x in a)
        passed += ok
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name:40s} {str(shape):14s} rel {rel:.3e}")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main()
