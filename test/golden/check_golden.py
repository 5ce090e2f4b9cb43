"""Replays a golden case and applies the tolerances of README.md.

check_golden.py --case CASE -- COMMAND...   (COMMAND replays a case and
accepts --case CASE --report REPORT: a generated runner, or optgen run;
a runner that exits 77 had no device, and the check is skipped)

f32 cases: every parameter's update error < 1e-4. bf16 cases: AdamW
parameters < 1e-5; Muon parameters < 0.2 where the matrix's sides are
within a factor 2, and < 1 (a sanity bound, reported) where more skewed."""

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

# A runner's status when it has no device to run on (a CUDA runner without a
# GPU): the check is skipped, and says so.
NO_DEVICE = 77


def case_metadata(path):
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(length)).get("__metadata__", {})


def tolerance(kind, shape, exact):
    """The README's gate on a parameter's update error (rule `kind`, `shape`)
    in an f32 case (`exact`) or a bf16 one: (limit, note)."""
    if exact:
        return 1e-4, ""
    if kind == "adamw":
        return 1e-5, ""
    if max(shape) < 2 * min(shape):
        return 0.2, ""
    return 1.0, " (skewed: reported, sanity bound)"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command

    metadata = case_metadata(args.case)
    kind = {name: group["kind"] for group in json.loads(metadata["groups"])
            for name in group["params"]}
    exact = metadata["muon_dtype"] == "f32"

    with tempfile.TemporaryDirectory() as tmp:
        report_path = os.path.join(tmp, "report.json")
        ran = subprocess.run(command + ["--case", args.case, "--report",
                                        report_path],
                             stdout=subprocess.DEVNULL)
        if ran.returncode == NO_DEVICE:
            print(f"{command[0]}: no device to run on: skipped")
            sys.exit(NO_DEVICE)
        if ran.returncode != 0:
            sys.exit(f"{command[0]} failed with status {ran.returncode}")
        with open(report_path) as f:
            report = json.load(f)

    passed = failed = 0
    for name, entry in sorted(report["params"].items()):
        rel, shape = entry["rel"], entry["shape"]
        limit, note = tolerance(kind[name], shape, exact)
        ok = rel < limit
        passed += ok
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name:10s} {kind[name]:6s} {str(shape):10s} "
              f"rel {rel:.3e} < {limit:g}{note}")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main()
