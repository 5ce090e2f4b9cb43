"""The compiled code and the fp64 interpreter compute %, floordiv and floor
as Python does (python_ops.opt): remainders take the divisor's sign, the
quotient rounds down, ints stay ints, and an int divided by 0 gives a
quotient of 0 and a remainder equal to the dividend.

python_ops.py --runner RUNNER [--optgen OPTGEN --spec SPEC]

Writes a case whose last gradient holds chosen values (negative and
positive, exact multiples, values just off them) and random f32 ones, runs
the runner (a generated runner of python_ops.opt) and, with --optgen, the
interpreter, and checks each result against Python's own operators,
rounded to f32 once. Exits 77 when the runner has no device to run on."""

import argparse
import math
import os
import random
import struct
import subprocess
import sys
import tempfile

import safetensors_io

NO_DEVICE = 77
STEPS = 7

CHOSEN = [5.25, -5.25, 6.0, -6.0, 0.5, -0.5, 0.0, 2.0, -2.0, 1.75, -1.75,
          7.9375, -7.9375, 0.001, -0.001, 123.4, -123.4, 1e-30, -1e-30,
          3.0e6, -3.0e6]


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def expected(values):
    """What each parameter holds after the last step, by Python."""
    def floordiv(a, b):
        return a // b
    ints = {}
    for name, k in (("ints_pos", 3), ("ints_neg", -3)):
        total = 0
        for step in range(1, STEPS + 1):
            n = step - 5
            total += n % k + 10 * (n // k) + 100 * step + 1000 * 0 + 10000 * n
        ints[name] = [float(total)] * len(values)
    return {
        "mod_pos": [f32(v % 2.0) for v in values],
        "mod_neg": [f32(v % -2.0) for v in values],
        "div_pos": [f32(floordiv(v, 2.0)) for v in values],
        "div_neg": [f32(floordiv(v, -2.0)) for v in values],
        "floor": [f32(math.floor(v)) for v in values],
        "literals": [f32(f32(v % -0.75) + f32(10 * (v // 0.75)))
                     for v in values],
        **ints,
    }


def check(label, path, want, initial):
    got, _ = safetensors_io.read(path)
    failures = 0
    for name in sorted(want):
        _, values = got[f"param/{name}"]
        for i, (a, b) in enumerate(zip(values, want[name])):
            if a != b and not (math.isnan(a) and math.isnan(b)):
                failures += 1
                if failures <= 20:
                    print(f"FAIL {label} {name}[{i}]: gradient "
                          f"{initial[i]!r} gives {a!r}, Python {b!r}")
    print(f"{label}: {'ok' if not failures else f'{failures} mismatches'}")
    return failures == 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    parser.add_argument("--optgen")
    parser.add_argument("--spec")
    args = parser.parse_args()

    rng = random.Random(5)
    values = [f32(v) for v in CHOSEN]
    values += [f32(rng.uniform(-20, 20)) for _ in range(40)]
    want = expected(values)
    tensors = {}
    for name in want:
        tensors[f"param/{name}"] = ([len(values)], [0.0] * len(values))
        for step in range(1, STEPS + 1):
            grad = values if step == STEPS else [
                f32(rng.gauss(0, 4)) for _ in values]
            tensors[f"grad/{step}/{name}"] = ([len(values)], grad)

    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        case = os.path.join(tmp, "case.safetensors")
        safetensors_io.write(case, tensors, {"steps": str(STEPS)})
        out = os.path.join(tmp, "compiled.safetensors")
        ran = subprocess.run([args.runner, "--case", case, "--out", out],
                             stdout=subprocess.DEVNULL)
        if ran.returncode == NO_DEVICE:
            print(f"{args.runner}: no device to run on: skipped")
            sys.exit(NO_DEVICE)
        if ran.returncode != 0:
            sys.exit(f"{args.runner} failed with status {ran.returncode}")
        ok &= check("compiled", out, want, values)
        if args.optgen:
            reference = os.path.join(tmp, "interpreted.safetensors")
            subprocess.run([args.optgen, "run", args.spec, "--interpret",
                            "--case", case, "--out", reference],
                           check=True, stdout=subprocess.DEVNULL)
            ok &= check("interpreter", reference, want, values)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
