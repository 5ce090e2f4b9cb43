"""A case's groups set a rule's hyperparameters by their spec names, those
its functions declare included; make_case.py writes them.

case_groups.py --runner RUNNER --optgen OPTGEN --spec SPEC NAME=SHAPE...
               [--group RULE NAMES]...

1. make_case.py --spec writes the groups the spec makes, every
   hyperparameter spelled out: replayed, the case gives exactly what the
   same case without groups gives (the spec's own groups).
2. make_case.py --group RULE NAMES lr=0 for every rule of the spec: no
   parameter moves (examples/lookahead.opt declares `lr` in a function).
"""

import argparse
import os
import subprocess
import sys
import tempfile

import safetensors_io

HERE = os.path.dirname(os.path.abspath(__file__))


def make_case(out, params, *extra):
    subprocess.run([sys.executable, os.path.join(HERE, "make_case.py"), out,
                    *params, "--steps", "3", "--seed", "5", *extra],
                   check=True)


def replay(runner, case, out):
    subprocess.run([runner, "--case", case, "--out", out], check=True,
                   stdout=subprocess.DEVNULL)
    tensors, _ = safetensors_io.read(out)
    return tensors


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    parser.add_argument("--optgen", required=True)
    parser.add_argument("--spec", required=True)
    parser.add_argument("--group", nargs="+", action="append", default=[],
                        help="RULE NAMES: the groups of step 2")
    parser.add_argument("params", nargs="+")
    args = parser.parse_args()

    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        plain = os.path.join(tmp, "plain.safetensors")
        spelled = os.path.join(tmp, "spelled.safetensors")
        frozen = os.path.join(tmp, "frozen.safetensors")
        make_case(plain, args.params)
        make_case(spelled, args.params, "--spec", args.spec,
                  "--optgen", args.optgen)
        groups = []
        for rule, names in args.group:
            groups += ["--group", rule, names, "lr=0"]
        make_case(frozen, args.params, *groups)

        by_spec = replay(args.runner, plain, os.path.join(tmp, "a"))
        by_case = replay(args.runner, spelled, os.path.join(tmp, "b"))
        for name in sorted(by_spec):
            same = by_spec[name] == by_case[name]
            failures += not same
            print(f"{'ok  ' if same else 'FAIL'} {name}: the spelled-out "
                  "groups replay as the spec's own")

        initial, _ = safetensors_io.read(frozen)
        still = replay(args.runner, frozen, os.path.join(tmp, "c"))
        for name in sorted(still):
            same = still[name] == initial[name]
            failures += not same
            print(f"{'ok  ' if same else 'FAIL'} {name}: lr = 0 from the "
                  "case leaves it where it was")
    print(f"{failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
