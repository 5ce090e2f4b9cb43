"""A spec's `on_nonfinite skip`: a step with a NaN or an infinity in a
gradient changes nothing and is counted, in the compiled code and in the
interpreter, without any runner flag (docs/RELIABILITY.md).

spec_nonfinite.py --runner R --optgen OPTGEN --spec SPEC

A case of 3 steps and the same case without step 2: with a NaN (then an
infinity) in step 2's gradient, the runner (compiled from SPEC) must end
with the bits of the case without step 2 and report one skipped step; the
fp64 interpreter must skip that step too and agree with the runner to f32
rounding. Prints `N passed, M failed`."""

import argparse
import json
import random
import subprocess
import sys
import tempfile

import safetensors_io
from checks import Checks

PARAMS = {"w": [6, 5], "bias": [7], "scale": [1]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    parser.add_argument("--optgen", required=True)
    parser.add_argument("--spec", required=True)
    args = parser.parse_args()
    check = Checks()

    rng = random.Random(5)
    tensors = {}
    for name, shape in PARAMS.items():
        numel = 1
        for d in shape:
            numel *= d
        tensors[f"param/{name}"] = (shape, [rng.gauss(0, 1) for _ in range(numel)])
        for step in (1, 2, 3):
            tensors[f"grad/{step}/{name}"] = (
                shape, [rng.gauss(0, 0.1) for _ in range(numel)])
    with tempfile.TemporaryDirectory() as tmp:
        without = {k: v for k, v in tensors.items() if not k.startswith("grad/")}
        for name in PARAMS:
            without[f"grad/1/{name}"] = tensors[f"grad/1/{name}"]
            without[f"grad/2/{name}"] = tensors[f"grad/3/{name}"]
        safetensors_io.write(f"{tmp}/without.st", without, {"steps": "2"})
        subprocess.run([args.runner, "--case", f"{tmp}/without.st",
                        "--out", f"{tmp}/reference.st"],
                       check=True, stdout=subprocess.DEVNULL)
        reference, _ = safetensors_io.read(f"{tmp}/reference.st")

        for target, value in (("w", float("nan")), ("scale", float("inf"))):
            bad = dict(tensors)
            shape, values = bad[f"grad/2/{target}"]
            values = list(values)
            values[len(values) // 2] = value
            bad[f"grad/2/{target}"] = (shape, values)
            safetensors_io.write(f"{tmp}/bad.st", bad, {"steps": "3"})
            what = f"{value} in step 2's gradient of '{target}'"
            subprocess.run([args.runner, "--case", f"{tmp}/bad.st", "--out",
                            f"{tmp}/out.st", "--report", f"{tmp}/report.json"],
                           check=True, stdout=subprocess.DEVNULL)
            out, _ = safetensors_io.read(f"{tmp}/out.st")
            with open(f"{tmp}/report.json") as f:
                report = json.load(f)
            check(f"compiled: {what} skips the step",
                  report.get("skipped_steps") == 1,
                  f"skipped_steps {report.get('skipped_steps')}")
            check(f"compiled: {what} ends as the case without step 2",
                  all(out[k][1] == reference[k][1] for k in reference),
                  "parameters differ")
            subprocess.run([args.optgen, "run", args.spec, "--interpret",
                            "--case", f"{tmp}/bad.st", "--out",
                            f"{tmp}/interpreted.st", "--report",
                            f"{tmp}/interpreted.json"],
                           check=True, stdout=subprocess.DEVNULL)
            interpreted, _ = safetensors_io.read(f"{tmp}/interpreted.st")
            with open(f"{tmp}/interpreted.json") as f:
                report = json.load(f)
            check(f"interpreter: {what} skips the step",
                  report.get("skipped_steps") == 1,
                  f"skipped_steps {report.get('skipped_steps')}")
            error = max(abs(a - b) for k in reference
                        for a, b in zip(interpreted[k][1], out[k][1]))
            check(f"interpreter: {what} agrees with the compiled code",
                  error < 1e-5, f"largest difference {error}")
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
