#!/usr/bin/env python3
"""The cost model's compute times against measured ones (issue 9, item 5).

CPU, on this machine: per depth, `optgen explain --simulate --machine cpu`
predicts the compute time of every unit of nanochat's step on one rank
(--world-size 1: each bucket of examples/nanochat.opt, -D compute=f32, at
the CPU benchmark's vocabulary of 8192, is one unit), and `optgen-bench
--quick --only NAMES` times the generated CPU step of that bucket's
parameters alone (the median of its timed steps; --runs such timings, of
which the table gives the median and the range: this machine has a slow
mode, see bench/RESULTS.md). The whole step is predicted
as the sum of its units and timed with every parameter.

GPU, where scripts/gpu-check.sh has run (--gpu DIR, its output folder):
the same model with the h100-nvlink or h200-nvlink preset (by the card in
DIR/gpu.txt; one GPU, so no link is used) on nanochat's shapes at the
vocabulary of 32768 and compute bf16, against the RESULT lines of
bench-step.txt (the whole step) and bench-adamw.txt (the AdamW part; that
benchmark steps examples/adamw.opt over the same parameters, the same
elementwise math).

Not a test: the times depend on the machine and its load (the table gives
the share of the CPUs other processes took while each part was timed).
Record its table in bench/RESULTS.md and docs/DISTRIBUTED.md.

  bench/sim_check.py [--build build-bench] [--depths 4,6] [--runs 5]
                     [--gpu DIR]

It builds `optgen` and `optgen-bench` in the build folder (configured by
bench/run.sh, or any Release build of this tree).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPES = os.path.join(ROOT, "test", "Driver", "nanochat_shapes.py")
SPEC = os.path.join(ROOT, "examples", "nanochat.opt")

# A unit's first member -> the names optgen-bench --only keeps (that
# bucket's parameters) and a label.
BUCKETS = [
    ("lm_head.", "lm_head", "lm_head (AdamW)"),
    ("transformer.wte.", "transformer.wte,value_embeds",
     "embeddings (AdamW)"),
    ("resid_lambdas", "lambdas", "scalars (AdamW)"),
    (".attn.", "attn.", "attention [n, n] (Muon)"),
    (".mlp.c_fc.", "mlp.c_fc", "c_fc [4n, n] (Muon)"),
    (".mlp.c_proj.", "mlp.c_proj", "c_proj [n, 4n] (Muon)"),
]


def bucket_of(first):
    for key, only, label in BUCKETS:
        if key in first:
            return only, label
    return None, first


def predict(optgen, depth, vocab, machine, defines, tmp):
    shapes = os.path.join(tmp, f"shapes_d{depth}_v{vocab}.safetensors")
    subprocess.run([sys.executable, SHAPES, "--depth", str(depth), "--vocab",
                    str(vocab), shapes], check=True)
    report = os.path.join(tmp, f"model_d{depth}_{machine}.json")
    command = [optgen, "explain", SPEC, "--shapes", shapes, "--world-size",
               "1", "--simulate", "--machine", machine, "--report", report]
    for define in defines:
        command += ["-D", define]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    with open(report) as f:
        return json.load(f)["simulation"]


def busy_share(seconds=3.0):
    """The share of all CPUs busy over `seconds` (/proc/stat)."""
    def sample():
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        idle = fields[3] + fields[4]
        return sum(fields) - idle, sum(fields)
    b0, t0 = sample()
    time.sleep(seconds)
    b1, t1 = sample()
    return (b1 - b0) / max(t1 - t0, 1)


QUIET_WAIT = 0


def wait_quiet():
    """As bench/run.sh: wait until others leave the CPUs alone (under 10%
    busy over 3 s), for at most QUIET_WAIT seconds."""
    deadline = time.monotonic() + QUIET_WAIT
    while time.monotonic() < deadline and busy_share() > 0.10:
        pass


def quick(bench, depth, only):
    wait_quiet()
    command = [bench, "--quick", "--depths", str(depth)]
    if only:
        command += ["--only", only]
    out = subprocess.run(command, check=True, capture_output=True,
                         text=True).stdout
    line = next(l for l in out.splitlines() if l.startswith("QUICK "))
    fields = dict(kv.split("=", 1) for kv in line.split()[1:])
    return float(fields["median_ms"]), float(fields["others_pct"])


def timed(bench, depth, only, runs):
    """The median over `runs` of optgen-bench's medians, their range, and
    the most CPU other processes took while one was timed."""
    results = [quick(bench, depth, only) for _ in range(runs)]
    times = sorted(ms for ms, _ in results)
    middle = (times[(runs - 1) // 2] + times[runs // 2]) / 2
    return middle, times[0], times[-1], max(o for _, o in results)


def cpu_table(build, depths, runs, tmp):
    optgen = os.path.join(build, "bin", "optgen")
    bench = os.path.join(build, "bin", "optgen-bench")
    rows = [f"| depth | unit | predicted ms | measured ms, median of {runs} "
            "(min–max) | measured / predicted | others' CPU (most) |",
            "|---|---|---|---|---|---|"]
    for depth in depths:
        sim = predict(optgen, depth, 8192, "cpu", ["compute=f32"], tmp)
        total = 0.0
        for unit in sim["optgen"]["units"]:
            predicted = unit["compute_ms_max"]
            total += predicted
            only, label = bucket_of(unit["first"])
            # The lambdas (a few dozen floats) are too small to time.
            if only is None or predicted < 0.05:
                continue
            measured, low, high, others = timed(bench, depth, only, runs)
            rows.append(f"| {depth} | {label} | {predicted:.2f} | "
                        f"{measured:.2f} ({low:.2f}–{high:.2f}) | "
                        f"{measured / predicted:.2f} | {others:.0f}% |")
        measured, low, high, others = timed(bench, depth, None, runs)
        rows.append(f"| {depth} | **whole step** | {total:.2f} | "
                    f"{measured:.2f} ({low:.2f}–{high:.2f}) | "
                    f"{measured / total:.2f} | {others:.0f}% |")
    return rows


def results(path):
    """depth -> the RESULT line's fields (bench/gpu's format)."""
    rows = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.startswith("RESULT "):
                    fields = dict(kv.split("=", 1) for kv in line.split()[1:])
                    rows[int(fields["depth"])] = fields
    return rows


def gpu_table(build, folder, tmp):
    optgen = os.path.join(build, "bin", "optgen")
    card = open(os.path.join(folder, "gpu.txt")).read()
    machine = "h200-nvlink" if re.search("H200", card) else "h100-nvlink"
    step = results(os.path.join(folder, "bench-step.txt"))
    adamw = results(os.path.join(folder, "bench-adamw.txt"))
    rows = [f"GPU: {card.strip()} against the {machine} preset", "",
            "| depth | part | predicted ms | measured ms | "
            "measured / predicted |", "|---|---|---|---|---|"]
    for depth in sorted(set(step) | set(adamw)):
        sim = predict(optgen, depth, 32768, machine, [], tmp)
        units = sim["optgen"]["units"]
        whole = sum(u["compute_ms_max"] for u in units)
        elementwise = sum(u["compute_ms_max"] for u in units
                          if "(AdamW)" in bucket_of(u["first"])[1])
        for part, predicted, measured in (
                ("whole step", whole, step.get(depth)),
                ("AdamW part", elementwise, adamw.get(depth))):
            if measured:
                ms = float(measured["step_ms"])
                rows.append(f"| {depth} | {part} | {predicted:.3f} | "
                            f"{ms:.3f} | {ms / predicted:.2f} |")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build-bench"))
    parser.add_argument("--depths", default="4,6")
    parser.add_argument("--gpu", metavar="DIR",
                        help="scripts/gpu-check.sh's output folder")
    parser.add_argument("--no-cpu", action="store_true",
                        help="only the GPU comparison")
    parser.add_argument("--runs", type=int, default=5,
                        help="timings of each unit (default 5)")
    parser.add_argument("--quiet-wait", type=float, default=900,
                        help="seconds to wait, before each timing, for a "
                             "quiet machine (default 900)")
    args = parser.parse_args()
    global QUIET_WAIT
    QUIET_WAIT = args.quiet_wait
    targets = ["optgen"] + ([] if args.no_cpu else ["optgen-bench"])
    subprocess.run(["ninja", "-C", args.build] + targets, check=True,
                   stdout=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory() as tmp:
        if not args.no_cpu:
            depths = [int(d) for d in args.depths.split(",")]
            print("\n".join(cpu_table(args.build, depths, args.runs, tmp)))
        if args.gpu:
            print()
            print("\n".join(gpu_table(args.build, args.gpu, tmp)))


if __name__ == "__main__":
    main()
