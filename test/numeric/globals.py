"""A spec's globals (`global NAME(p, g) = ...`) against independent
references, on one rank or on N (mpirun).

globals.py --runner R --optgen OPTGEN --spec SPEC --case CASE --tolerance TOL
           [--norm NAME] [--peak NAME] [--clip MAX_NORM (active|inactive)]
           [--mpiexec M --ranks N]

Replays the case on the runner (the compiled step; on N ranks under
mpiexec, each rank with a different gradient whose mean is the case's) and
on `optgen run --interpret` (the fp64 interpreter), and checks:
- every parameter's update against the interpreter's, rel < TOL;
- every global the runner reports (the last step's) against the
  interpreter's report, rel < 1e-6;
- --norm NAME: that global against sqrt(sum of g * g) over every element of
  the last step's gradients, computed here from the case; --peak NAME: max
  |g| likewise; rel < 1e-6;
- --clip MAX_NORM active|inactive: that the case is one the clip acts on
  (every step's gradient norm above MAX_NORM) or not (every one below), so
  that both paths of the clipping rule are compared.
Prints `N passed, M failed`."""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import safetensors_io
from checks import Checks


# A runner's status when it has no device to run on (a CUDA runner without a
# GPU): the test is skipped, and says so.
NO_DEVICE = 77


def relative(x, y):
    return abs(x - y) / max(abs(y), 1e-30)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    parser.add_argument("--optgen", required=True)
    parser.add_argument("--spec", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--tolerance", type=float, required=True)
    parser.add_argument("--norm")
    parser.add_argument("--peak")
    parser.add_argument("--clip", nargs=2, metavar=("MAX_NORM", "WHEN"))
    parser.add_argument("--mpiexec")
    parser.add_argument("--ranks", type=int, default=1)
    args = parser.parse_args()
    check = Checks()

    tensors, metadata = safetensors_io.read(args.case)
    steps = int(metadata["steps"])
    names = sorted(k[len("param/"):] for k in tensors if k.startswith("param/"))

    def gradients(step):
        return [g for name in names for g in tensors[f"grad/{step}/{name}"][1]]

    if args.clip:
        max_norm, when = float(args.clip[0]), args.clip[1]
        norms = [math.sqrt(sum(g * g for g in gradients(s)))
                 for s in range(1, steps + 1)]
        active = all(n > max_norm for n in norms)
        inactive = all(n < max_norm for n in norms)
        check(f"every step's gradient norm ({', '.join(f'{n:.3g}' for n in norms)}) "
              f"{'above' if when == 'active' else 'below'} max_norm {max_norm}",
              active if when == "active" else inactive)

    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    with tempfile.TemporaryDirectory() as tmp:
        runner = [args.runner]
        if args.mpiexec:
            runner = [args.mpiexec, "-np", str(args.ranks), "--oversubscribe",
                      args.runner, "--split-grads"]
        ran = subprocess.run(runner + ["--case", args.case, "--out",
                                       f"{tmp}/compiled.st", "--report",
                                       f"{tmp}/compiled.json"],
                             stdout=subprocess.DEVNULL, env=env)
        if ran.returncode == NO_DEVICE:
            print(f"{args.runner}: no device to run on: skipped")
            sys.exit(NO_DEVICE)
        if ran.returncode != 0:
            sys.exit(f"{args.runner} failed with status {ran.returncode}")
        subprocess.run([args.optgen, "run", args.spec, "--interpret", "--case",
                        args.case, "--out", f"{tmp}/reference.st", "--report",
                        f"{tmp}/reference.json"],
                       check=True, stdout=subprocess.DEVNULL)
        got, _ = safetensors_io.read(f"{tmp}/compiled.st")
        want, _ = safetensors_io.read(f"{tmp}/reference.st")
        with open(f"{tmp}/compiled.json") as f:
            compiled = json.load(f)
        with open(f"{tmp}/reference.json") as f:
            reference = json.load(f)

    where = f" ({args.ranks} ranks)" if args.mpiexec else ""
    for name in names:
        p0 = tensors[f"param/{name}"][1]
        a, b = got[f"param/{name}"][1], want[f"param/{name}"][1]
        diff = sum(((x - p) - (y - p)) ** 2 for x, y, p in zip(a, b, p0))
        ref = sum((y - p) ** 2 for y, p in zip(b, p0))
        rel = math.sqrt(diff / ref) if ref > 0 else math.sqrt(diff)
        check(f"{name:32s} update rel {rel:.2e} against the interpreter{where}",
              rel < args.tolerance and all(math.isfinite(x) for x in a))

    values, expected = compiled.get("globals", {}), reference.get("globals", {})
    check(f"the runner reports the interpreter's globals {sorted(expected)}",
          sorted(values) == sorted(expected) and values,
          f"the runner reports {sorted(values)}")
    for name in sorted(set(values) & set(expected)):
        rel = relative(values[name], expected[name])
        check(f"global {name:25s} {values[name]:.9g}, rel {rel:.2e} against "
              f"the interpreter's{where}", rel < 1e-6)
    last = gradients(steps)
    independent = []
    if args.norm:
        independent.append((args.norm, math.sqrt(sum(g * g for g in last)),
                            "sqrt(sum g^2)"))
    if args.peak:
        independent.append((args.peak, max(abs(g) for g in last), "max |g|"))
    for name, value, what in independent:
        rel = relative(values.get(name, math.nan), value)
        check(f"global {name:25s} against {what} of the last step's gradients, "
              f"summed here: rel {rel:.2e}{where}", rel < 1e-6)
    sys.exit(check.summary())


if __name__ == "__main__":
    main()
