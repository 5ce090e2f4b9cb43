"""One rank's runner, and `optgen run`'s build cache, in the ways they used
to crash or lose files (docs/RELIABILITY.md).

runner_reliability.py --runner R --plain-runner P
runner_reliability.py --runner R --optgen OPTGEN --spec SPEC --build-dir D

With --runner (a runner of examples/nanochat.opt): a parameter without
elements ([0, 8], a Muon matrix) steps, and the others end as without it.
With --plain-runner (one of examples/adamw.opt, which does not start MPI,
whose files the limit would break): a full disk (the file size limit) while
writing --out or --save-state leaves the previous file whole and no
temporary behind. With --optgen: a
cached runner cut short, and a cache whose configure was interrupted, are
detected and rebuilt. Prints `N passed, M failed`."""

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile

import safetensors_io
from checks import Checks


def limited(size):
    """For preexec_fn: files of at most `size` bytes, as on a full disk."""
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, resource.RLIM_INFINITY))
    return apply


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    parser.add_argument("--plain-runner")
    parser.add_argument("--optgen")
    parser.add_argument("--spec")
    parser.add_argument("--build-dir")
    args = parser.parse_args()
    check = Checks()

    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    with tempfile.TemporaryDirectory() as tmp:
        here = os.path.dirname(os.path.abspath(__file__))
        params = ["transformer.wte.weight=64x16", "resid_lambdas=3",
                  "transformer.h.0.attn.c_q.weight=16x16"]
        case, empty = f"{tmp}/case.st", f"{tmp}/empty.st"
        make = [sys.executable, f"{here}/make_case.py"]
        subprocess.run(make + [case] + params + ["--steps", "3", "--seed", "2"], check=True)
        subprocess.run(make + [empty] + params +
                       ["transformer.h.1.attn.c_q.weight=0x8", "lm_head.weight=0x16",
                        "--steps", "3", "--seed", "2"], check=True)

        if args.optgen:
            # `optgen run` builds its runner once; a broken entry is rebuilt.
            build = args.build_dir
            run = [args.optgen, "run", args.spec, "-Dcompute=f32", "--case", case,
                   "--build-dir", build, "--out", f"{tmp}/o.st"]
            done = subprocess.run(run, **quiet)
            check("optgen run builds its runner", done.returncode == 0, done.stderr)
            runner = f"{build}/build/nanochat_muon_adamw_runner"
            with open(runner, "r+b") as f:
                f.truncate(os.path.getsize(runner) // 3)
            done = subprocess.run(run, **quiet)
            check("a cached runner cut short is built again",
                  done.returncode == 0 and "building it again" in done.stderr, done.stderr)
            os.remove(f"{build}/configured.ok")
            with open(f"{build}/build/CMakeCache.txt", "w") as f:
                f.write("# a configure that was interrupted\n")
            done = subprocess.run(run, **quiet)
            check("a cache whose configure was interrupted is configured again",
                  done.returncode == 0, done.stderr)
            sys.exit(check.summary())

        subprocess.run([args.runner, "--case", case, "--out", f"{tmp}/a.st"], check=True,
                       stdout=subprocess.DEVNULL)
        done = subprocess.run([args.runner, "--case", empty, "--out", f"{tmp}/b.st"], **quiet)
        a, _ = safetensors_io.read(f"{tmp}/a.st")
        b, _ = safetensors_io.read(f"{tmp}/b.st") if done.returncode == 0 else ({}, {})
        same = all(a[k] == b.get(k) for k in a)
        check("parameters [0, 8] and [0, 16] step, the others as without them",
              done.returncode == 0 and same and b.get("param/transformer.h.1.attn.c_q.weight")
              == ([0, 8], []), done.stderr)

        # ns_steps bounds a table's slice: a negative one ran no iteration,
        # a huge one was an undefined conversion.
        tensors, meta = safetensors_io.read(case)
        for value, said in ((-1, "is -1: it counts"),
                            (1e30, "is an int (within 2^53), not 1e+30")):
            meta["groups"] = json.dumps([{
                "kind": "muon", "params": ["transformer.h.0.attn.c_q.weight"],
                "lr": 0.02, "ns_steps": value}])
            safetensors_io.write(f"{tmp}/ns.st", tensors, meta)
            done = subprocess.run([args.runner, "--case", f"{tmp}/ns.st"], **quiet)
            check(f"ns_steps = {value} is refused", done.returncode == 1 and
                  f"hyperparameter 'ns_steps' of group 'case0.muon' {said}" in done.stderr,
                  done.stderr)

        # A key that is no hyperparameter of the group's rule: the error
        # lists those there are (as the interpreter's: Driver/run-errors.test).
        meta["groups"] = json.dumps([{
            "kind": "adamw", "params": ["transformer.wte.weight"], "lrr": 0.5}])
        safetensors_io.write(f"{tmp}/lrr.st", tensors, meta)
        done = subprocess.run([args.runner, "--case", f"{tmp}/lrr.st"], **quiet)
        check("an unknown hyperparameter key is refused, naming the known ones",
              done.returncode == 1 and "group 'case0.adamw' (rule 'adamw') has no "
              "hyperparameter 'lrr'; its hyperparameters are lr, betas, eps, "
              "weight_decay" in done.stderr, done.stderr)

        for flag in ("--out", "--save-state"):
            path = f"{tmp}/previous{flag}"
            subprocess.run([args.plain_runner, "--case", case, flag, path], check=True,
                           stdout=subprocess.DEVNULL)
            with open(path, "rb") as f:
                before = f.read()
            done = subprocess.run([args.plain_runner, "--case", case, "--repeat", "2",
                                   flag, path],
                                  preexec_fn=limited(2048), **quiet)
            with open(path, "rb") as f:
                after = f.read()
            leftovers = [n for n in os.listdir(tmp) if ".tmp." in n]
            check(f"a full disk while writing {flag} keeps the previous file",
                  done.returncode == 1 and "cannot write" in done.stderr and
                  before == after and not leftovers,
                  f"status {done.returncode}, {done.stderr}, left {leftovers}")

    sys.exit(check.summary())


if __name__ == "__main__":
    main()
