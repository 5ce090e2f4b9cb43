"""What the numeric test scripts share: named checks, each printed as `ok`
or `FAIL` (with what went wrong) as it is made, and the `N passed, M failed`
line the scripts end with."""

import sys


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def __call__(self, what, ok, detail=""):
        """Records one check; `detail` is printed when it failed."""
        self.passed += bool(ok)
        self.failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {what}{': ' + detail if detail and not ok else ''}")
        sys.stdout.flush()

    def summary(self):
        """Prints the summary line; returns the exit status (1 if any failed)."""
        print(f"{self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0
