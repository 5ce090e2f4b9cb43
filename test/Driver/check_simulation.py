#!/usr/bin/env python3
"""Reads `optgen explain --simulate --report` files and checks what issue 9
asks of the plan on nanochat's shapes: planned in under a second, padding
under 1% of the parameters, and a load imbalance (the busiest rank's
compute over the mean) and a step time no worse than nanochat's scheme
on the same model machine. Prints one line per report (for FileCheck) and
exits 1 if any check fails.

Usage: check_simulation.py LABEL=REPORT.json ...
"""

import json
import sys


def main():
    failed = False
    for arg in sys.argv[1:]:
        label, path = arg.split("=", 1)
        with open(path) as f:
            report = json.load(f)
        sim = report["simulation"]
        ours, theirs = sim["optgen"], sim["nanochat"]
        group = report.get("group_size", report["world_size"])
        checks = {
            "plan under 1 s": report["plan_seconds"] < 1.0,
            "padding under 1%": ours["padding_percent"] < 1.0,
        }
        if "unavailable" not in theirs:
            checks["imbalance no worse"] = (
                ours["imbalance"] <= theirs["imbalance"] + 1e-9)
            checks["step no worse"] = ours["step_ms"] <= theirs["step_ms"]
        line = (f"{label}: groups of {group}, padding "
                f"{ours['padding_percent']:.3f}%, imbalance "
                f"{ours['imbalance']:.3f}")
        if "unavailable" in theirs:
            line += f"; nanochat's scheme cannot run ({theirs['unavailable']})"
        else:
            line += (f"; nanochat's scheme: padding "
                     f"{theirs['padding_percent']:.3f}%, imbalance "
                     f"{theirs['imbalance']:.3f}")
        bad = [name for name, ok in checks.items() if not ok]
        line += "; " + ("ok" if not bad else "FAILED: " + ", ".join(bad))
        failed = failed or bool(bad)
        print(line)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
