#!/usr/bin/env python3
"""The simulated tables of docs/DISTRIBUTED.md: `optgen explain --simulate`
on nanochat's shapes (test/Driver/nanochat_shapes.py, vocabulary 32768,
examples/nanochat.opt as written: bf16 Polar Express, f32 payloads) at the
given depths and world sizes, for optgen's plan as the spec distributes it
(one shard group), for the shard group the cost model chooses
(--shard-group auto), and for nanochat's own scheme. Every figure is
predicted by the model, none measured.

  bench/sim_tables.py [--optgen build/bin/optgen] [--machine h100-ib]
                      [--depths 26,32] [--ranks 8,64,256,1024]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def simulate(optgen, shapes, ranks, machine, auto, tmp):
    report = os.path.join(tmp, "report.json")
    command = [optgen, "explain", os.path.join(ROOT, "examples", "nanochat.opt"),
               "--shapes", shapes, "--world-size", str(ranks), "--simulate",
               "--machine", machine, "--report", report]
    if auto:
        command += ["--shard-group", "auto"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    with open(report) as f:
        return json.load(f)


def row(depth, ranks, label, group, scheme):
    if "unavailable" in scheme:
        return f"| {depth} | {ranks} | {label} | cannot run: {scheme['unavailable']} |||||||"
    return (f"| {depth} | {ranks} | {label} | {group} | "
            f"{scheme['step_ms']:.1f} | {scheme['collectives']} | "
            f"{scheme['padding_percent']:.2f}% | {scheme['imbalance']:.2f} | "
            f"{scheme['compute_ms_max']:.2f} | {scheme['exposed_ms_max']:.1f} | "
            f"{scheme['idle_ms_max']:.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--optgen", default=os.path.join(ROOT, "build", "bin",
                                                         "optgen"))
    parser.add_argument("--machine", default="h100-ib")
    parser.add_argument("--depths", default="26,32")
    parser.add_argument("--ranks", default="8,64,256,1024")
    args = parser.parse_args()
    print(f"Machine: {args.machine}. Predicted by the cost model; none of "
          "these figures is measured.\n")
    print("| depth | ranks | scheme | shard group | step ms | collectives | "
          "padding | imbalance | compute ms (max) | exposed comm ms (max) | "
          "idle ms (max) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for depth in (int(d) for d in args.depths.split(",")):
            shapes = os.path.join(tmp, f"d{depth}.safetensors")
            subprocess.run([sys.executable, os.path.join(
                ROOT, "test", "Driver", "nanochat_shapes.py"), "--depth",
                str(depth), shapes], check=True)
            for ranks in (int(n) for n in args.ranks.split(",")):
                flat = simulate(args.optgen, shapes, ranks, args.machine,
                                False, tmp)
                auto = simulate(args.optgen, shapes, ranks, args.machine,
                                True, tmp)
                sim = flat["simulation"]
                print(row(depth, ranks, "nanochat (DistMuonAdamW)", "–",
                          sim["nanochat"]))
                print(row(depth, ranks, "optgen, one group",
                          flat.get("group_size", ranks), sim["optgen"]))
                print(row(depth, ranks, "optgen, --shard-group auto",
                          auto.get("group_size", ranks),
                          auto["simulation"]["optgen"]))


if __name__ == "__main__":
    main()
