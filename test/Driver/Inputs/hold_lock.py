"""Runs a command while this process holds the lock of a cache entry (as a
build of `optgen run` does):

    hold_lock.py ENTRY [--release-after SECONDS] -- COMMAND...

The lock is the one optgen takes (fcntl's, on ENTRY/build.lock), held until
the command ends or, with --release-after, for that long after starting
it. The command's exit status is this script's."""

import fcntl
import os
import subprocess
import sys
import time


def main():
    split = sys.argv.index("--")
    options, command = sys.argv[1:split], sys.argv[split + 1:]
    entry = options[0]
    release_after = float(options[2]) if options[1:2] == ["--release-after"] else None
    os.makedirs(entry, exist_ok=True)
    with open(os.path.join(entry, "build.lock"), "a") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX)
        process = subprocess.Popen(command)
        if release_after is not None:
            time.sleep(release_after)
            fcntl.lockf(lock, fcntl.LOCK_UN)
        sys.exit(process.wait())


if __name__ == "__main__":
    main()
