#!/usr/bin/env python3
"""Runs a command with its output into a file and fails unless it succeeds
within a time bound: timed.py SECONDS OUT COMMAND... (prints the seconds
it took, to stderr)."""

import subprocess
import sys
import time

bound, out, command = float(sys.argv[1]), sys.argv[2], sys.argv[3:]
start = time.monotonic()
with open(out, "wb") as f:
    status = subprocess.run(command, stdout=f).returncode
seconds = time.monotonic() - start
print(f"{seconds:.2f} s", file=sys.stderr)
if status != 0:
    sys.exit(f"exit status {status}")
if seconds > bound:
    sys.exit(f"took {seconds:.2f} s, more than {bound} s")
