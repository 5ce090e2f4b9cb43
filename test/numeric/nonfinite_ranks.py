"""A step with a non-finite gradient on one rank changes nothing on any rank
under --skip-nonfinite, and is counted (docs/RELIABILITY.md).

nonfinite_ranks.py --runner R --mpiexec M

A case of 3 steps (gradients of 12 significant bits: the ranks' mean is
exact), the same case with a NaN (or an infinity) in one element of step
2's gradient of a Muon matrix (or of a vector), and the case without step 2.
On 1 to 3 ranks, the last rank replays the bad case, the others the good
one, with --skip-nonfinite: every rank must end with the bits of the case
without step 2, and the report count one skipped step. Without the flag,
the NaN reaches the parameters (the default, documented). Prints `N
passed, M failed`."""

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile

import safetensors_io
from checks import Checks

PARAMS = {"transformer.wte.weight": [64, 16], "resid_lambdas": [3],
          "transformer.h.0.attn.c_q.weight": [16, 16],
          "transformer.h.1.attn.c_q.weight": [16, 16]}


def short(x, bits=12):
    if x == 0:
        return 0.0
    m, e = math.frexp(x)
    return math.ldexp(round(m * (1 << bits)) / (1 << bits), e)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    parser.add_argument("--mpiexec", required=True)
    args = parser.parse_args()
    os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    check = Checks()

    rng = random.Random(9)
    tensors = {}
    for name, shape in PARAMS.items():
        numel = math.prod(shape)
        tensors[f"param/{name}"] = (shape, [rng.gauss(0, 1) for _ in range(numel)])
        for step in (1, 2, 3):
            tensors[f"grad/{step}/{name}"] = (
                shape, [short(rng.gauss(0, 0.1)) for _ in range(numel)])
    with tempfile.TemporaryDirectory() as tmp:
        good, without = f"{tmp}/good.st", f"{tmp}/without.st"
        safetensors_io.write(good, tensors, {"steps": "3"})
        two = {k: v for k, v in tensors.items() if not k.startswith("grad/2/")}
        two.update({k.replace("grad/3/", "grad/2/"): v for k, v in tensors.items()
                    if k.startswith("grad/3/")})
        two = {k: v for k, v in two.items() if not k.startswith("grad/3/")}
        safetensors_io.write(without, two, {"steps": "2"})
        subprocess.run([args.runner, "--case", without, "--out", f"{tmp}/ref.st"],
                       check=True, stdout=subprocess.DEVNULL)
        reference, _ = safetensors_io.read(f"{tmp}/ref.st")

        for target, value in (("transformer.h.1.attn.c_q.weight", float("nan")),
                              ("resid_lambdas", float("inf"))):
            bad = f"{tmp}/bad.st"
            poisoned = dict(tensors)
            shape, values = poisoned[f"grad/2/{target}"]
            values = list(values)
            values[len(values) // 2] = value
            poisoned[f"grad/2/{target}"] = (shape, values)
            safetensors_io.write(bad, poisoned, {"steps": "3"})
            for ranks in (1, 2, 3):
                command = [args.mpiexec, "--oversubscribe"]
                if ranks > 1:
                    command += ["-np", str(ranks - 1), args.runner, "--case", good,
                                "--skip-nonfinite", ":"]
                command += ["-np", "1", args.runner, "--case", bad, "--skip-nonfinite",
                            "--out", f"{tmp}/out.st", "--report", f"{tmp}/r.json"]
                if ranks == 1:
                    command = command[2 + 2:]  # the runner alone, no mpirun
                done = subprocess.run(command, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True)
                if done.returncode != 0:
                    check(f"{value} in '{target}' on the last of {ranks} ranks", False,
                          done.stderr)
                    continue
                out, _ = safetensors_io.read(f"{tmp}/out.st")
                with open(f"{tmp}/r.json") as f:
                    report = json.load(f)
                check(f"{value} in '{target}' on the last of {ranks} ranks: skipped, "
                      "every parameter as without that step",
                      out == reference and report.get("skipped_steps") == 1,
                      f"skipped_steps {report.get('skipped_steps')}")
        done = subprocess.run([args.runner, "--case", bad, "--out", f"{tmp}/nan.st"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        out, _ = safetensors_io.read(f"{tmp}/nan.st")
        check("by default a non-finite gradient reaches the parameter (status 0)",
              done.returncode == 0 and any(math.isnan(x) or math.isinf(x)
                                           for x in out["param/resid_lambdas"][1]))

    sys.exit(check.summary())


if __name__ == "__main__":
    main()
