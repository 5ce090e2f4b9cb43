"""Runs a command and prints its output, then its exit status, so that a lit
test can check which status a command exits with (lit's `not` only says
that it was not 0): exit_status.py COMMAND [ARGS...]"""

import subprocess
import sys

ran = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE,
                     stderr=subprocess.STDOUT, text=True)
sys.stdout.write(ran.stdout)
print(f"exit status {ran.returncode}")
