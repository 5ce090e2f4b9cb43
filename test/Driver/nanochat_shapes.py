#!/usr/bin/env python3
"""Writes the parameters of a nanochat model of a given depth as a sparse
safetensors file: a real header, and a data section that the file system
stores as a hole (the file is as long as the checkpoint, but takes no disk
space and no time to write). It is for tests that must read only the header.

nanochat's GPT at depth d: n_embd = 64 d; the vocabulary padded to 32768;
per layer the attention's c_q, c_k, c_v, c_proj [n, n] (as many key/value
heads as query heads), the MLP's c_fc [4n, n] and c_proj [n, 4n]; the token
embedding and the head [vocab, n]; a value embedding [vocab, n] on alternate
layers (those of the last layer's parity); resid_lambdas and x0_lambdas [d].

Usage: nanochat_shapes.py --depth 32 [--vocab 32768] OUT.safetensors
(bench/sim_check.py takes the CPU benchmark's vocabulary, 8192.)
"""

import argparse
import json

DTYPE_BYTES = {"F32": 4, "BF16": 2}


def nanochat_shapes(depth, vocab=32768):
    n = 64 * depth
    shapes = {"transformer.wte.weight": [vocab, n], "lm_head.weight": [vocab, n],
              "resid_lambdas": [depth], "x0_lambdas": [depth]}
    for i in range(depth):
        for name in ("c_q", "c_k", "c_v", "c_proj"):
            shapes[f"transformer.h.{i}.attn.{name}.weight"] = [n, n]
        shapes[f"transformer.h.{i}.mlp.c_fc.weight"] = [4 * n, n]
        shapes[f"transformer.h.{i}.mlp.c_proj.weight"] = [n, 4 * n]
        if i % 2 == (depth - 1) % 2:
            shapes[f"value_embeds.{i}.weight"] = [vocab, n]
    return shapes


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--depth", type=int, required=True)
    parser.add_argument("--dtype", choices=sorted(DTYPE_BYTES), default="F32")
    parser.add_argument("--vocab", type=int, default=32768)
    args = parser.parse_args()
    header, offset = {}, 0
    # Laid out by name, as the reference writer lays out tensors of one dtype.
    for name, shape in sorted(nanochat_shapes(args.depth, args.vocab).items()):
        size = DTYPE_BYTES[args.dtype]
        for d in shape:
            size *= d
        header[name] = {"dtype": args.dtype, "shape": shape,
                        "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(args.out, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        f.truncate(8 + len(text) + offset)


if __name__ == "__main__":
    main()
