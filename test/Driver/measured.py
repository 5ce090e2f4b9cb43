#!/usr/bin/env python3
"""Runs a command and fails when it takes longer or holds more memory than
allowed; passes its output through and reports the measured wall time and
maximum resident set size on stderr.

Usage: measured.py --max-seconds S --max-rss-mb M -- COMMAND [ARG...]
"""

import argparse
import resource
import subprocess
import sys
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-seconds", type=float, required=True)
    parser.add_argument("--max-rss-mb", type=float, required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    start = time.monotonic()
    code = subprocess.run(command).returncode
    seconds = time.monotonic() - start
    # ru_maxrss is in KiB on Linux; the only child is the command.
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"measured: {seconds:.3f} s, max RSS {rss_mb:.1f} MiB", file=sys.stderr)
    if code != 0:
        sys.exit(code)
    if seconds > args.max_seconds or rss_mb > args.max_rss_mb:
        print(f"error: over the limits of {args.max_seconds} s and "
              f"{args.max_rss_mb} MiB", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
