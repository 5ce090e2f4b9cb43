#!/usr/bin/env python3
"""scripts/gpu-check.sh reports within one device call (defect 6 of the
emulated device's issue): each step under its own timeout, each row of the
table printed the moment its step ends, the logs packed into one archive
that a kill does not lose, and only those few files written under $OUT.

It runs a copy of the script in a tree of its own, with a bundle of one
example and a `cmake` first on PATH that answers --version and otherwise
hangs (a configuration that never ends, as a wedged driver would make it):
  1. under a budget of 150 s the configuration gets its share, about
     10 s: its row says TIMEOUT, the rest NOT RUN, and the script ends well
     inside the budget, its hung cmake killed;
  2. sent TERM while it configures (the device tool's limit), the script
     prints the running step's row as KILLED and its last line, and the
     archive holds the configuration's log.
Before the fix the script waited on the hung step without end: either part
fails by its timeout here.
"""
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2]

FAKE_CMAKE = """#!/bin/sh
if [ "$1" = --version ]; then echo "cmake version 3.25.1 (a stand-in)"; exit 0; fi
echo $$ >> "{pids}"
exec sleep 600
"""


def fail(message, output=""):
    sys.exit(f"gpu_check.py: {message}\n--- its output ---\n{output}")


def make_tree(root):
    (root / "scripts").mkdir(parents=True)
    shutil.copy(SOURCE / "scripts" / "gpu-check.sh", root / "scripts")
    (root / "gpu-bundle").mkdir()
    (root / "gpu-bundle" / "manifest.txt").write_text("adamw 1e-4\n")
    (root / "gpu-bundle" / "commit.txt").write_text("0000000\n")
    bin_dir = root / "bin"
    bin_dir.mkdir()
    pids = root / "cmake-pids.txt"
    cmake = bin_dir / "cmake"
    cmake.write_text(FAKE_CMAKE.format(pids=pids))
    cmake.chmod(0o755)
    return bin_dir, pids


def environment(root, bin_dir, out, budget):
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}:{env.get('PATH', '')}"
    env["OUT"] = str(out)
    env["OPTGEN_GPU_BUILD"] = str(root / "build")
    env["OPTGEN_GPU_BUDGET"] = str(budget)
    return env


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie waits for its parent only; it runs no more.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(") ")[-1][:1] != "Z"


def kill_all(pids):
    if pids.exists():
        for pid in map(int, pids.read_text().split()):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def check_first_lines(output):
    lines = output.splitlines()
    for i, prefix in enumerate(["GPU: ", "nvcc: ", "cmake: ", "cuBLASLt headers: ",
                                "cuBLASLt libraries: ", "NCCL headers: ",
                                "NCCL libraries: "]):
        if i >= len(lines) or not lines[i].startswith(prefix):
            fail(f"line {i + 1} should start with '{prefix}'", output)


def check_out(out, output):
    written = sorted(p.name for p in out.iterdir())
    if written != ["gpu-check-logs.tar.gz", "gpu-check-summary.md"]:
        fail(f"$OUT holds {written}, not the summary and the archive", output)
    with tarfile.open(out / "gpu-check-logs.tar.gz") as archive:
        names = archive.getnames()
    if "gpu-check-logs/configure.log" not in names:
        fail(f"the archive lacks the configuration's log: {names}", output)


def timed_out_step(work):
    root, out = work / "timeout", work / "timeout-out"
    bin_dir, pids = make_tree(root)
    started = time.monotonic()
    try:
        run = subprocess.run(["bash", str(root / "scripts" / "gpu-check.sh")],
                             env=environment(root, bin_dir, out, 150),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, timeout=120)
    except subprocess.TimeoutExpired as expired:
        kill_all(pids)
        printed = expired.stdout or b""
        if isinstance(printed, bytes):
            printed = printed.decode(errors="replace")
        fail("the check was still waiting after 120 s", printed)
    took = time.monotonic() - started
    output = run.stdout
    check_first_lines(output)
    if run.returncode == 0:
        fail("a step that timed out should fail the check", output)
    if "configure | TIMEOUT |" not in output:
        fail("no TIMEOUT row for the hung configuration", output)
    if "build and the rest | NOT RUN |" not in output:
        fail("no NOT RUN row for what the configuration left", output)
    if "gpu-check: 0 ok, 0 failed, 1 timed out, 1 not run" not in output:
        fail("the last line does not count the rows", output)
    # The configuration's share of 150 s is 15.6 s from the start.
    if took > 40:
        fail(f"it took {took:.0f} s, past the configuration's share", output)
    check_out(out, output)
    summary = (out / "gpu-check-summary.md").read_text()
    if "configure | TIMEOUT |" not in summary:
        fail("the summary lacks the TIMEOUT row", output)
    for pid in map(int, pids.read_text().split()):
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
            fail(f"the hung cmake ({pid}) outlived the check", output)


def killed_step(work):
    root, out = work / "signal", work / "signal-out"
    bin_dir, pids = make_tree(root)
    check = subprocess.Popen(["bash", str(root / "scripts" / "gpu-check.sh")],
                             env=environment(root, bin_dir, out, 480),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
    # The configuration has started once its cmake wrote its pid.
    deadline = time.monotonic() + 60
    while not (pids.exists() and pids.read_text().strip()):
        if time.monotonic() > deadline or check.poll() is not None:
            check.kill()
            kill_all(pids)
            fail("the configuration never started", check.communicate()[0])
        time.sleep(0.1)
    check.send_signal(signal.SIGTERM)
    try:
        output, _ = check.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        check.kill()
        kill_all(pids)
        fail("TERM did not end the check within 30 s", check.communicate()[0])
    kill_all(pids)
    if check.returncode != 143:
        fail(f"exit status {check.returncode}, not 143 (TERM)", output)
    if "configure | KILLED |" not in output:
        fail("no KILLED row for the step TERM stopped", output)
    if "gpu-check: 0 ok, 1 failed" not in output:
        fail("no last line after the signal", output)
    check_out(out, output)


def main():
    with tempfile.TemporaryDirectory(prefix="optgen-gpu-check-") as work:
        timed_out_step(Path(work))
        killed_step(Path(work))
    print("gpu-check.sh: a hung step timed out at its share, a TERM printed "
          "its row; the summary and the archive came back")


if __name__ == "__main__":
    main()
