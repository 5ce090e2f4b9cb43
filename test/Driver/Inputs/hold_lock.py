"""Runs a command while this process holds the lock of a cache entry (as a
build of `optgen run` does): hold_lock.py ENTRY -- COMMAND...

The lock is the one optgen takes (fcntl's, on ENTRY/build.lock); the
command's exit status is this script's."""

import fcntl
import os
import subprocess
import sys


def main():
    entry, command = sys.argv[1], sys.argv[sys.argv.index("--") + 1:]
    with open(os.path.join(entry, "build.lock"), "a") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX)
        sys.exit(subprocess.run(command).returncode)


if __name__ == "__main__":
    main()
