"""Writes a random case to replay with `optgen run` or a generated runner.

    make_case.py OUT NAME=D0xD1... [NAME=SHAPE ...] [--steps S] [--seed N]
                 [--grad-scale X]
                 [--group RULE NAME[,NAME...] [KEY=VALUE ...]] ...
                 [--spec SPEC [--optgen OPTGEN] [-D NAME=VALUE ...]]

Parameters and gradients are drawn from a normal distribution (gradients
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
    It runs OPTGEN (default: optgen on the PATH, or build/bin/optgen) with
    the given -D options.
"""

import argparse
import json
import os
import random
import re
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


def shortest_f32(text):
    """The shortest decimal that reads back as the same f32 as `text` (the
    compiler prints f32 attributes with nine digits: 0.899999976 is 0.9)."""
    value = float(text)
    single = struct.unpack("<f", struct.pack("<f", value))[0]
    for digits in range(1, 10):
        candidate = float(f"{single:.{digits}g}")
        if struct.unpack("<f", struct.pack("<f", candidate))[0] == single:
            return candidate
    return single


def attribute_value(text):
    """A hyperparameter attribute as the compiler prints it: `5 : i64`,
    `1.000000e-03 : f32` or `[0.899999976 : f32, 9.990000e-01 : f32]`."""
    text = text.strip()
    if text.startswith("["):
        return [attribute_value(e) for e in text[1:-1].split(",")]
    number, _, kind = text.partition(":")
    if kind.strip().startswith("i"):
        return int(number)
    return shortest_f32(number)


def spec_groups(args, case):
    """The groups the spec makes for the case's parameters, read from the
    planned IR (`optgen compile --shapes CASE --emit=planned`)."""
    optgen = args.optgen or shutil.which("optgen")
    if not optgen:
        here = os.path.dirname(os.path.abspath(__file__))
        optgen = os.path.join(here, "..", "..", "build", "bin", "optgen")
    command = [optgen, "compile", args.spec, "--shapes", case,
               "--emit=planned"]
    for define in args.D:
        command += ["-D", define]
    compiled = subprocess.run(command, capture_output=True, text=True)
    if compiled.returncode != 0:
        sys.stderr.write(compiled.stderr)
        raise SystemExit(f"make_case.py: {' '.join(command)} failed")

    hypers = {}        # rule -> [(name, value)], in declaration order
    rule = None
    groups = {}        # group -> (rule, {setting: value}), in spec order
    bound = {}         # group -> [parameter]
    for line in compiled.stdout.splitlines():
        match = re.match(r"\s*optgen\.rule @(\w+) inputs", line)
        if match:
            rule = match.group(1) if "optgen.specializes" not in line else None
            if rule:
                hypers[rule] = []
            continue
        match = re.match(r'\s*%\S+ = optgen\.hyper "(\w+)"(?: default\((.*)\))? :', line)
        if match and rule:
            default = match.group(2)
            hypers[rule].append(
                (match.group(1),
                 attribute_value(default) if default is not None else None))
            continue
        match = re.match(r"\s*optgen\.group @(\w+) = @(\w+) match \[.*?\] \{(.*?)\}",
                         line)
        if match:
            settings = {}
            for setting in re.findall(r"(\w+) = (\[[^\]]*\]|[^,]+)",
                                      match.group(3)):
                settings[setting[0]] = attribute_value(setting[1])
            groups[match.group(1)] = (match.group(2), settings)
            continue
        match = re.match(r'\s*optgen\.param "([^"]+)" \[.*\] -> @(\w+)', line)
        if match:
            bound.setdefault(match.group(2), []).append(match.group(1))

    result = []
    for name, (rule, settings) in groups.items():
        if name not in bound:
            continue
        group = {"kind": rule, "params": bound[name]}
        for hyper, default in hypers[rule]:
            value = settings.get(hyper, default)
            if value is not None:
                group[hyper] = value
        result.append(group)
    return result


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("params", nargs="+", help="NAME=D0xD1x... (shape)")
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
