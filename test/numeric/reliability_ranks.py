"""No rank is left waiting, and every rank says why (docs/RELIABILITY.md).

reliability_ranks.py --runner R --mpiexec M --ranks N

Runs a runner of examples/nanochat.opt under mpirun on N ranks (MPMD: the
last rank gets other arguments) in the ways a distributed run goes wrong:
ranks whose parameters differ (one more, one fewer, transposed, in another
order), whose cases have different step counts or hyperparameters, of
which one alone skips non-finite steps, a checkpoint saved to a
missing folder, loaded from a file one rank lacks or from different files,
a case one rank cannot read, an output that is the case, and a rank that
fails inside a step. Each must end every rank within --limit seconds with
a non-zero status and the expected message (on every rank when the ranks
agreed on the failure). Prints each run's time and `N passed, M failed`."""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import safetensors_io
from checks import Checks

NAMES = {
    "transformer.wte.weight": [64, 16],
    "resid_lambdas": [3],
    "transformer.h.0.attn.c_q.weight": [16, 16],
    "transformer.h.1.mlp.c_fc.weight": [32, 16],
}


def groups(lr):
    """A case's groups, as `optgen case new` writes them for NAMES, with the
    matrices' lr."""
    import json
    return json.dumps([
        {"kind": "adamw", "params": ["transformer.wte.weight"], "lr": 0.2,
         "betas": [0.8, 0.995], "eps": 1e-10, "weight_decay": 0.001},
        {"kind": "adamw", "params": ["resid_lambdas"], "lr": 0.005,
         "betas": [0.8, 0.95], "eps": 1e-10, "weight_decay": 0},
        {"kind": "muon", "params": ["transformer.h.0.attn.c_q.weight",
                                    "transformer.h.1.mlp.c_fc.weight"],
         "lr": lr, "momentum": 0.95, "ns_steps": 5, "beta2": 0.9,
         "weight_decay": 0}])


def make_case(path, params, steps=3, reverse=False, seed=5, metadata=None):
    """A case of `params` (name -> shape); with `reverse`, its header lists
    the tensors in reverse name order (the order the runner registers)."""
    import random
    rng = random.Random(seed)
    tensors = {}
    for name, shape in params.items():
        numel = 1
        for d in shape:
            numel *= d
        tensors[f"param/{name}"] = (shape, [rng.gauss(0, 1) for _ in range(numel)])
        for step in range(1, steps + 1):
            tensors[f"grad/{step}/{name}"] = (shape, [rng.gauss(0, 0.1) for _ in range(numel)])
    if not reverse:
        safetensors_io.write(path, tensors, dict(metadata or {}, steps=str(steps)))
        return
    import json
    import struct
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors, reverse=True):
        shape, values = tensors[name]
        blob = struct.pack(f"<{len(values)}f", *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    header["__metadata__"] = {"steps": str(steps)}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--ranks", type=int, required=True)
    parser.add_argument("--limit", type=float, default=30.0,
                        help="seconds within which every rank must have ended")
    args = parser.parse_args()
    os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    n = args.ranks
    last = n - 1
    check = Checks()

    with tempfile.TemporaryDirectory() as tmp:
        case = f"{tmp}/case.safetensors"
        make_case(case, NAMES)
        cases = {
            "extra": dict(NAMES, **{"transformer.h.2.attn.c_q.weight": [16, 16]}),
            "missing": {k: v for k, v in NAMES.items() if k != "resid_lambdas"},
            "transposed": dict(NAMES, **{"transformer.h.1.mlp.c_fc.weight": [16, 32]}),
        }
        for name, params in cases.items():
            make_case(f"{tmp}/{name}.safetensors", params)
        make_case(f"{tmp}/reversed.safetensors", NAMES, reverse=True)
        make_case(f"{tmp}/four.safetensors", NAMES, steps=4)
        make_case(f"{tmp}/lr.safetensors", NAMES, metadata={"groups": groups(0.02)})
        make_case(f"{tmp}/other-lr.safetensors", NAMES, metadata={"groups": groups(0.03)})
        subprocess.run([args.runner, "--case", case, "--save-state", f"{tmp}/good.st"],
                       check=True, stdout=subprocess.DEVNULL)
        make_case(f"{tmp}/seed6.safetensors", NAMES, seed=6)
        subprocess.run([args.runner, "--case", f"{tmp}/seed6.safetensors", "--save-state",
                        f"{tmp}/other.st"], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([args.runner, "--case", f"{tmp}/four.safetensors", "--save-state",
                        f"{tmp}/later.st"], check=True, stdout=subprocess.DEVNULL)

        def run(what, first, others, expect, everywhere=True, status_zero=False):
            """mpirun with `first` on ranks 0..N-2 and `others` on the last."""
            command = [args.mpiexec, "--oversubscribe"]
            if n > 1:
                command += ["-np", str(n - 1), args.runner] + first + [":"]
            command += ["-np", "1", args.runner] + others
            start = time.monotonic()
            try:
                done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      text=True, timeout=args.limit * 4)
                seconds = time.monotonic() - start
            except subprocess.TimeoutExpired:
                check(what, False, f"still running after {args.limit * 4:.0f} s: a hang")
                return
            lines = [l for l in done.stderr.splitlines() if l.startswith("optgen: error:")]
            said = sum(expect in l for l in lines)
            ok = (done.returncode == 0) == status_zero and seconds < args.limit and \
                said >= (0 if status_zero else n if everywhere else 1)
            check(f"{what} ({seconds:.1f} s, status {done.returncode})", ok,
                  f"expected '{expect}' on {'every rank' if everywhere else 'a rank'}; "
                  f"stderr:\n{done.stderr}")

        base = ["--case", case]
        run("a rank has one more parameter", base, ["--case", f"{tmp}/extra.safetensors"],
            f"rank {last} has parameter 'transformer.h.2.attn.c_q.weight', which rank 0 does not have")
        run("a rank lacks a parameter", base, ["--case", f"{tmp}/missing.safetensors"],
            f"rank {last} has no parameter 'resid_lambdas', which rank 0 has")
        run("a rank has a parameter transposed", base, ["--case", f"{tmp}/transposed.safetensors"],
            f"rank {last}: parameter 'transformer.h.1.mlp.c_fc.weight' has shape [16, 32], "
            "rank 0 has [32, 16]")
        run("a rank lists the parameters in another order", base,
            ["--case", f"{tmp}/reversed.safetensors"],
            f"rank {last} registers the parameters in another order than rank 0")
        run("the ranks' cases have different step counts", base,
            ["--case", f"{tmp}/four.safetensors"],
            f"rank {last}'s case has 4 steps, rank 0's has 3")
        run("a rank cannot read its case", base, ["--case", f"{tmp}/nothing.safetensors"],
            f"rank {last}: '{tmp}/nothing.safetensors': cannot open")
        run("a rank's output is its case", base, base + ["--out", case],
            f"rank {last}: --out '{case}' is the file --case reads")
        run("--save-state into a missing folder", base + ["--save-state", f"{tmp}/no/s.st"],
            base + ["--save-state", f"{tmp}/no/s.st"],
            f"rank 0: '{tmp}/no/s.st': cannot write: the folder '{tmp}/no' does not exist")
        run("--load-state of a file one rank lacks", base + ["--load-state", f"{tmp}/good.st"],
            base + ["--load-state", f"{tmp}/absent.st"],
            f"rank {last}: '{tmp}/absent.st': cannot open")
        run("--load-state of different files", base + ["--load-state", f"{tmp}/good.st"],
            base + ["--load-state", f"{tmp}/other.st"],
            f"rank {last} read another checkpoint than rank 0 (checksums ")
        run("--load-state of another run's checkpoint on one rank",
            base + ["--load-state", f"{tmp}/good.st"], base + ["--load-state", f"{tmp}/later.st"],
            f"rank {last} read another checkpoint")
        run("a rank steps with another lr", ["--case", f"{tmp}/lr.safetensors"],
            ["--case", f"{tmp}/other-lr.safetensors"],
            f"rank {last} steps with hyperparameter 'lr' of group 'case2.muon' = "
            "0.03, rank 0 with 0.02")
        run("a rank alone skips non-finite steps", base, base + ["--skip-nonfinite"],
            f"rank {last} skips steps with non-finite gradients, rank 0 does not")
        run("a rank fails inside a step", base, base + ["--fail-at-step", "2"],
            f"rank {last}: failing before step 2", everywhere=False)
        run("every rank well", base + ["--load-state", f"{tmp}/good.st"],
            base + ["--load-state", f"{tmp}/good.st"], "", everywhere=False, status_zero=True)

    sys.exit(check.summary())


if __name__ == "__main__":
    main()
