"""A run resumed from a checkpoint ends bitwise where the uninterrupted run
ends, at the same and at other world sizes (docs/RELIABILITY.md).

resume_ranks.py --runner R --mpiexec M [--python-safetensors]

The case's gradients have 12 significant bits, so that the ranks' mean is
exact and the step's bits do not depend on the number of ranks (checked
first: 1 to 4 ranks give the same bytes). Then, for each (N, M) of
(1, 1), (4, 4), (4, 2), (4, 3), (2, 4), (3, 4): `--save-at 3 DIR` on N
ranks, `--resume DIR` on M ranks; the parameters and the optimizer state
after the last step must be the uninterrupted run's, byte for byte. With
--python-safetensors, the checkpoint also opens with Python's safetensors
library (exit 77, skipped, when it is not installed). Prints `N passed, M
failed`."""

import argparse
import math
import os
import random
import subprocess
import sys
import tempfile

import safetensors_io

STEPS = 6
SAVE_AT = 3


def short(x, bits=12):
    """x rounded to `bits` significant bits: sums of up to 4 are exact."""
    if x == 0:
        return 0.0
    m, e = math.frexp(x)
    return math.ldexp(round(m * (1 << bits)) / (1 << bits), e)


def make_case(path):
    rng = random.Random(3)
    params = {"transformer.wte.weight": [640, 16], "lm_head.weight": [640, 16],
              "resid_lambdas": [3], "value_embeds.0.weight": [100, 13]}
    for i in range(8):
        params[f"transformer.h.{i}.attn.c_q.weight"] = [64, 64]
    tensors = {}
    for name, shape in params.items():
        numel = math.prod(shape)
        tensors[f"param/{name}"] = (shape, [rng.gauss(0, 1) for _ in range(numel)])
        for step in range(1, STEPS + 1):
            tensors[f"grad/{step}/{name}"] = (
                shape, [short(rng.gauss(0, 0.1)) for _ in range(numel)])
    safetensors_io.write(path, tensors, {"steps": str(STEPS)})


def tensor_bytes(path):
    """name -> raw bytes of every tensor of a safetensors file."""
    import json
    import struct
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    header.pop("__metadata__", None)
    body = data[8 + length:]
    return {name: body[info["data_offsets"][0]:info["data_offsets"][1]]
            for name, info in header.items()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--python-safetensors", action="store_true")
    args = parser.parse_args()
    os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    passed = failed = 0

    def check(what, ok):
        nonlocal passed, failed
        passed += ok
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {what}")
        sys.stdout.flush()

    def run(ranks, *extra):
        command = [args.mpiexec, "--oversubscribe", "-np", str(ranks), args.runner] \
            if ranks > 1 else [args.runner]
        subprocess.run(command + list(extra), check=True, stdout=subprocess.DEVNULL)

    with tempfile.TemporaryDirectory() as tmp:
        case = f"{tmp}/case.safetensors"
        make_case(case)
        if args.python_safetensors:
            try:
                from safetensors import safe_open
            except ImportError:
                print("Python's safetensors is not installed: skipped")
                sys.exit(77)
            run(2, "--case", case, "--save-at", str(SAVE_AT), f"{tmp}/ck")
            for name in ("optimizer.safetensors", "params.safetensors"):
                with safe_open(f"{tmp}/ck/{name}", framework="numpy") as f:
                    keys = list(f.keys())
                    meta = f.metadata()
                    ok = bool(keys) and all(f.get_tensor(k) is not None for k in keys)
                    if name == "optimizer.safetensors":
                        m = f.get_tensor("state/transformer.h.0.attn.c_q.weight/momentum_buffer")
                        ok = ok and list(m.shape) == [64, 64] and \
                            meta["format"] == "optgen-optimizer-state" and \
                            int(f.get_tensor("step/resid_lambdas")) == SAVE_AT
                check(f"{name} opens with safetensors {__import__('safetensors').__version__}"
                      f" ({len(keys)} tensors)", ok)
            print(f"{passed} passed, {failed} failed")
            sys.exit(1 if failed else 0)

        # The uninterrupted run, on 1 to 4 ranks.
        reference = None
        for ranks in (1, 2, 3, 4):
            out, state = f"{tmp}/out{ranks}", f"{tmp}/state{ranks}"
            run(ranks, "--case", case, "--out", out, "--save-state", state)
            got = (tensor_bytes(out), tensor_bytes(state))
            if reference is None:
                reference = got
            else:
                check(f"the uninterrupted run on {ranks} ranks ends with 1 rank's bits",
                      got == reference)

        for save, resume in ((1, 1), (4, 4), (4, 2), (4, 3), (2, 4), (3, 4)):
            ck = f"{tmp}/ck{save}-{resume}"
            out, state = f"{tmp}/resumed-out", f"{tmp}/resumed-state"
            run(save, "--case", case, "--save-at", str(SAVE_AT), ck)
            run(resume, "--case", case, "--resume", ck, "--out", out, "--save-state", state)
            params, states = tensor_bytes(out), tensor_bytes(state)
            check(f"saved after step {SAVE_AT} on {save}, resumed on {resume}: "
                  f"parameters bitwise the uninterrupted run's", params == reference[0])
            check(f"saved after step {SAVE_AT} on {save}, resumed on {resume}: "
                  f"optimizer state bitwise the uninterrupted run's", states == reference[1])

        # A checkpoint whose two files do not belong together is refused.
        a, b = f"{tmp}/ck4-2", f"{tmp}/ck4-3"
        run(1, "--case", case, "--save-at", "2", b)
        os.replace(f"{b}/optimizer.safetensors", f"{a}/optimizer.safetensors")
        done = subprocess.run([args.runner, "--case", case, "--resume", a],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        check("a checkpoint folder whose files come from two saves is refused",
              done.returncode == 1 and "is inconsistent" in done.stderr)

    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
