"""Writes a random case: make_case.py OUT --steps S --seed N NAME=D0xD1 ...

Parameters and gradients are drawn from a normal distribution (gradients
scaled by --grad-scale); the case has no groups, so the spec's own groups
bind the parameters by name."""

import argparse
import random

import safetensors_io


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("params", nargs="+", help="NAME=D0xD1x... (shape)")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--grad-scale", type=float, default=0.1)
    args = parser.parse_args()
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
    safetensors_io.write(args.out, tensors, {"steps": str(args.steps)})


if __name__ == "__main__":
    main()
