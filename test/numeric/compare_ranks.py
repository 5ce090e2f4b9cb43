"""The distributed step against one rank: compare_ranks.py --runner R
[--reference-runner R1] --case C --mpiexec M --ranks N [--split-grads]
[--replicated-bytes B]
[--explain-with OPTGEN --spec SPEC [--define NAME=VALUE] [--shard-group G]]

Replays the case with 1 rank and with N ranks (mpirun) and checks that every
parameter ends the same (rel < 1e-6), and so does every global the reports
give (the spec's `global`s, the last step's). The one rank runs R1 when given (a
runner compiled for N ranks runs on N alone). With --replicated-bytes, also that
rank 0's optimizer state is within 2% of 1/N of the one-rank state plus what
is replicated (the state of the tensors under small_numel). With
--explain-with, that `optgen explain` predicts the state rank 0 holds, to the byte. Prints
`N passed, M failed`."""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import safetensors_io


def run(command, case, out, report):
    subprocess.run(command + ["--case", case, "--out", out, "--report", report],
                   check=True, stdout=subprocess.DEVNULL)
    with open(report) as f:
        return json.load(f)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    parser.add_argument("--runner-arg", action="append", default=[],
                        help="an argument the runner takes first (optgen run SPEC ...)")
    parser.add_argument("--reference-runner",
                        help="the runner of the one-rank replay (default: --runner)")
    parser.add_argument("--case", required=True)
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--ranks", type=int, required=True)
    parser.add_argument("--split-grads", action="store_true")
    parser.add_argument("--replicated-bytes", type=int)
    parser.add_argument("--explain-with", metavar="OPTGEN")
    parser.add_argument("--spec")
    parser.add_argument("--define", action="append", default=[])
    parser.add_argument("--shard-group", help="explain's --shard-group")
    args = parser.parse_args()
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    os.environ.update(env)
    split = ["--split-grads"] if args.split_grads else []
    with tempfile.TemporaryDirectory() as tmp:
        runner = [args.runner] + args.runner_arg
        reference = [args.reference_runner] if args.reference_runner else runner
        one = run(reference, args.case, f"{tmp}/one.safetensors", f"{tmp}/one.json")
        many = run([args.mpiexec, "-np", str(args.ranks), "--oversubscribe"] + runner + split,
                   args.case, f"{tmp}/many.safetensors", f"{tmp}/many.json")
        a, _ = safetensors_io.read(f"{tmp}/one.safetensors")
        b, _ = safetensors_io.read(f"{tmp}/many.safetensors")
        explained = None
        if args.explain_with:
            defines = [f"-D{d}" for d in args.define]
            groups = ["--shard-group", args.shard_group] if args.shard_group else []
            subprocess.run([args.explain_with, "explain", args.spec, *defines,
                            "--shapes", args.case, *groups,
                            "--world-size", str(args.ranks), "--report", f"{tmp}/plan.json"],
                           check=True, stdout=subprocess.DEVNULL)
            with open(f"{tmp}/plan.json") as f:
                explained = json.load(f)

    passed = failed = 0
    for name in sorted(a):
        x, y = a[name][1], b[name][1]
        diff = math.sqrt(sum((p - q) ** 2 for p, q in zip(x, y)))
        rel = diff / max(math.sqrt(sum(p * p for p in x)), 1e-30)
        ok = rel < 1e-6
        passed += ok
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name:40s} rel {rel:.2e} ({args.ranks} ranks vs 1)")
    one_globals, many_globals = one.get("globals", {}), many.get("globals", {})
    if one_globals or many_globals:
        same_names = sorted(one_globals) == sorted(many_globals)
        passed += same_names
        failed += not same_names
        print(f"{'ok  ' if same_names else 'FAIL'} globals reported: "
              f"{sorted(many_globals)} ({args.ranks} ranks), {sorted(one_globals)} (1)")
        for name in sorted(set(one_globals) & set(many_globals)):
            x, y = one_globals[name], many_globals[name]
            rel = abs(x - y) / max(abs(x), 1e-30)
            ok = rel < 1e-6
            passed += ok
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} global {name:33s} rel {rel:.2e} "
                  f"({y} on {args.ranks} ranks, {x} on 1)")
    if args.replicated_bytes is not None:
        full, rank0 = one["state_bytes_rank0"], many["state_bytes_rank0"]
        want = (full - args.replicated_bytes) / args.ranks + args.replicated_bytes
        ok = abs(rank0 - want) <= 0.02 * want
        passed += ok
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} state bytes on rank 0: {rank0} "
              f"(one rank {full}, expected {want:.0f} within 2%)")
    if explained is not None:
        for what, key in (("state", "state_bytes"), ("sent", "sent_bytes"),
                          ("received", "received_bytes")):
            predicted = explained["ranks"][0][key]
            measured = many.get(f"{key}_rank0", 0)
            ok = predicted == measured
            passed += ok
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} optgen explain predicts {predicted} {what} bytes "
                  f"on rank 0; the runtime counts {measured}")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main()
