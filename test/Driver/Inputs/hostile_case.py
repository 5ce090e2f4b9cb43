"""Writes a case meant to break a replay: hostile_case.py KIND OUT

KIND: good, short-expect, long-expect, orphan-expect, steps-suffix,
steps-negative, group-twice, group-unknown, hyper-unknown, zero (a [0, 8]
parameter)."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "numeric"))
import safetensors_io  # noqa: E402


def main():
    kind, out = sys.argv[1], sys.argv[2]
    params = {"w": [4, 3], "b": [5]}
    if kind == "zero":
        params["z"] = [0, 8]
    tensors = {}
    for n, (name, shape) in enumerate(params.items()):
        numel = 1
        for d in shape:
            numel *= d
        tensors[f"param/{name}"] = (shape, [0.5 + 0.01 * (i + n) for i in range(numel)])
        for step in (1, 2):
            tensors[f"grad/{step}/{name}"] = (shape, [0.1 - 0.02 * ((i + step) % 5)
                                                     for i in range(numel)])
    metadata = {"steps": "2"}
    if kind == "short-expect":
        tensors["expect/w"] = ([2, 3], [0.0] * 6)
    elif kind == "long-expect":
        tensors["expect/w"] = ([4, 4], [0.0] * 16)
    elif kind == "orphan-expect":
        tensors["expect/q"] = ([2], [0.0, 0.0])
    elif kind == "steps-suffix":
        metadata["steps"] = "2abc"
    elif kind == "steps-negative":
        metadata["steps"] = "-2"
    elif kind == "group-twice":
        metadata["groups"] = json.dumps([{"kind": "adamw", "params": ["w", "b"]},
                                         {"kind": "adamw", "params": ["w"], "lr": 0.5}])
    elif kind == "group-unknown":
        metadata["groups"] = json.dumps([{"kind": "adamw", "params": ["w", "nothere"]}])
    elif kind == "hyper-unknown":
        metadata["groups"] = json.dumps([{"kind": "adamw", "params": ["w", "b"],
                                          "lrr": 0.5}])
    elif kind not in ("good", "zero"):
        sys.exit(f"unknown kind {kind}")
    safetensors_io.write(out, tensors, metadata)


if __name__ == "__main__":
    main()
