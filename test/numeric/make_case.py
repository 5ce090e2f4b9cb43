"""Writes a random case to replay with `optgen run` or a generated runner.

    make_case.py OUT NAME=D0xD1... [NAME=SHAPE ...] [--steps S] [--seed N]
                 [--grad-scale X]
                 [--group RULE NAME[,NAME...] [KEY=VALUE ...]] ...
                 [--spec SPEC [--optgen OPTGEN] [-D NAME=VALUE ...]]

NAME*N=SHAPE stands for N parameters of SHAPE, NAME0 to NAME{N-1} (a unit
of more members than a launch's grid has rows). Parameters and gradients
are drawn from a normal distribution (gradients
scaled by --grad-scale), one gradient per step. Without --group or --spec
the case has no groups, so the spec's own groups bind the parameters by
name, with their hyperparameters.

A case's groups (its `groups` metadata, test/golden/README.md) bind
parameters to a rule and set its hyperparameters: `kind` names the rule,
`params` lists the parameters, and every other key is one of the rule's
hyperparameters, by the name its `hyper` declaration gives it (those of
the functions the rule calls included), set to a number or, for a tuple,
a list of numbers. A hyperparameter a group leaves out keeps the rule's
default.

--group RULE NAMES KEY=VALUE...  adds such a group: NAMES are parameters,
    comma-separated; a VALUE is a number or comma-separated numbers (a
    tuple): --group adamw wte,lm_head lr=0.004 betas=0.8,0.96
--spec SPEC  writes, instead, the groups the spec itself would make for
    these parameters, each with every hyperparameter of its rule set to the
    value the spec gives it (the group's setting or the rule's default): a
    case to fill in, whose values replay exactly as the spec's own groups.
    It runs `OPTGEN case new` (default: optgen on the PATH, or
    build/bin/optgen) with the given -D options, which writes such a case
    for a model's shapes file directly.
"""

import argparse
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

import safetensors_io


def parse_value(text):
    """'0.01' -> 0.01, '5' -> 5, '0.9,0.95' -> [0.9, 0.95]."""
    def number(word):
        try:
            return int(word)
        except ValueError:
            return float(word)
    words = text.split(",")
    try:
        if len(words) == 1:
            return number(words[0])
        return [number(w) for w in words]
    except ValueError:
        raise SystemExit(f"make_case.py: '{text}' is not a number or a list "
                         "of numbers")


def explicit_groups(specs, names):
    groups = []
    for spec in specs:
        if len(spec) < 2:
            raise SystemExit("make_case.py: --group takes a rule and the "
                             "parameters it binds")
        rule, params = spec[0], spec[1].split(",")
        for param in params:
            if param not in names:
                raise SystemExit(f"make_case.py: --group {rule}: no parameter "
                                 f"'{param}' in this case")
        group = {"kind": rule, "params": params}
        for setting in spec[2:]:
            key, equals, value = setting.partition("=")
            if not equals or not key:
                raise SystemExit(f"make_case.py: --group {rule}: expected "
                                 f"KEY=VALUE, got '{setting}'")
            group[key] = parse_value(value)
        groups.append(group)
    return groups


def spec_groups(args, shapes):
    """The groups the spec makes for the parameters of the safetensors file
    `shapes`: those of the case `optgen case new` writes for them."""
    optgen = args.optgen or shutil.which("optgen")
    if not optgen:
        here = os.path.dirname(os.path.abspath(__file__))
        optgen = os.path.join(here, "..", "..", "build", "bin", "optgen")
    with tempfile.TemporaryDirectory() as tmp:
        written = os.path.join(tmp, "case.safetensors")
        command = [optgen, "case", "new", args.spec, "--shapes", shapes,
                   "-o", written, "--steps", "1"]
        for define in args.D:
            command += ["-D", define]
        compiled = subprocess.run(command, capture_output=True, text=True)
        if compiled.returncode != 0:
            sys.stderr.write(compiled.stderr)
            raise SystemExit(f"make_case.py: {' '.join(command)} failed")
        with open(written, "rb") as f:
            (length,) = struct.unpack("<Q", f.read(8))
            metadata = json.loads(f.read(length)).get("__metadata__", {})
    return json.loads(metadata.get("groups", "[]"))


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("params", nargs="+",
                        help="NAME=D0xD1x... (shape), or NAME*N=SHAPE")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--grad-scale", type=float, default=0.1)
    parser.add_argument("--group", nargs="+", action="append", default=[],
                        metavar="RULE NAMES [KEY=VALUE]",
                        help="a group: a rule, the parameters it binds "
                             "(comma-separated) and hyperparameter values")
    parser.add_argument("--spec", help="write the groups this spec makes")
    parser.add_argument("--optgen", help="the optgen to run for --spec")
    parser.add_argument("-D", action="append", default=[],
                        help="NAME=VALUE, passed to optgen for --spec")
    args = parser.parse_args()
    if args.group and args.spec:
        parser.error("give --group or --spec, not both")

    expanded = []
    for spec in args.params:
        name, shape_text = spec.split("=")
        if "*" in name:
            prefix, count = name.split("*")
            expanded += [f"{prefix}{i}={shape_text}" for i in range(int(count))]
        else:
            expanded.append(spec)
    args.params = expanded

    rng = random.Random(args.seed)
    tensors = {}
    for spec in args.params:
        name, shape_text = spec.split("=")
        shape = [int(d) for d in shape_text.split("x")]
        numel = 1
        for d in shape:
            numel *= d
        tensors[f"param/{name}"] = (shape, [rng.gauss(0, 1) for _ in range(numel)])
        for step in range(1, args.steps + 1):
            tensors[f"grad/{step}/{name}"] = (
                shape, [rng.gauss(0, args.grad_scale) for _ in range(numel)])
    metadata = {"steps": str(args.steps)}
    names = [p.split("=")[0] for p in args.params]
    groups = explicit_groups(args.group, names)
    if args.spec:
        with tempfile.TemporaryDirectory() as tmp:
            shapes = os.path.join(tmp, "shapes.safetensors")
            safetensors_io.write(shapes, {k: v for k, v in tensors.items()
                                          if k.startswith("param/")})
            groups = spec_groups(args, shapes)
    if groups:
        metadata["groups"] = json.dumps(groups)
    safetensors_io.write(args.out, tensors, metadata)


if __name__ == "__main__":
    main()
