#!/usr/bin/env python3
"""Checks the spec examples of a markdown file against the optgen compiler.

    extract-examples.py [--update] DOC.md OPTGEN TMPDIR

Every fenced block tagged ```opt must be a whole spec that compiles. Every
block tagged ```opt-error must fail to compile and hold one or more lines
`// error: TEXT`; each TEXT must appear in the compiler's error output. A
block may hold a line `// flags: ARGS` (e.g. `-D compute=f32`), which is
passed to `optgen compile`.

A block tagged ```output right after an example (with only prose or blank
lines between) must equal what that example prints: the errors of an
```opt-error block, the MLIR of an ```opt block. Each example is compiled as
TMPDIR/L<line>/spec.opt from inside that folder, so messages say `spec.opt`.

Prints one line per failure, naming the block's line in DOC.md, then
`N passed, M failed`; exits with 1 when anything failed. With --update, the
```output blocks are first rewritten with what optgen prints now (review the
diff before committing it).
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import time

EXAMPLE_TAGS = ("opt", "opt-error")
FLAGS_RE = re.compile(r"^\s*//\s*flags:\s*(.*?)\s*$")
ERROR_RE = re.compile(r"^\s*//\s*error:\s*(.*?)\s*$")
FENCE_RE = re.compile(r"^( {0,3})(`{3,})(.*)$")


class Block:
    def __init__(self, tag, line, text, info=""):
        self.tag = tag  # the info string's first word
        self.info = info  # the whole info string
        self.line = line  # line of the opening fence, 1-based
        self.text = text
        self.num_lines = text.count("\n")  # lines between the fences
        self.output = None  # the ```output block that follows, if any
        self.shown = None  # what optgen printed for it, once compiled


def read_blocks(path):
    """Returns the fenced blocks of the markdown file at `path`."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks = []
    i = 0
    while i < len(lines):
        m = FENCE_RE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m.group(2), m.group(3).strip()
        start = i + 1
        body = []
        i += 1
        while i < len(lines):
            close = FENCE_RE.match(lines[i])
            if close and len(close.group(2)) >= len(fence) and not close.group(3).strip():
                break
            body.append(lines[i])
            i += 1
        else:
            raise SystemExit(f"{path}:{start}: unterminated code block")
        i += 1
        tag = info.split()[0] if info else ""
        blocks.append(Block(tag, start, "".join(line + "\n" for line in body),
                            info))
    return blocks


def run_optgen(optgen, args, cwd):
    """Runs optgen; waits a little if the binary is being rebuilt."""
    deadline = time.time() + 90
    while True:
        try:
            return subprocess.run([optgen, "compile", "spec.opt"] + args, cwd=cwd,
                                  capture_output=True, text=True, timeout=120)
        except (FileNotFoundError, PermissionError, OSError):
            if time.time() > deadline:
                raise
            time.sleep(5)


def normalize(text):
    return "\n".join(line.rstrip() for line in text.strip("\n").split("\n"))


def check(block, optgen, tmp):
    """Returns None when `block` behaves as its tag says, else the reason."""
    flags, expected = [], []
    for line in block.text.split("\n"):
        m = FLAGS_RE.match(line)
        if m:
            flags += shlex.split(m.group(1))
        m = ERROR_RE.match(line)
        if m:
            expected.append(m.group(1))

    folder = os.path.join(tmp, f"L{block.line}")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    with open(os.path.join(folder, "spec.opt"), "w", encoding="utf-8") as f:
        f.write(block.text)
    result = run_optgen(optgen, flags, folder)
    if result.returncode < 0:
        return f"optgen crashed (signal {-result.returncode}):\n{result.stderr}"

    if block.tag == "opt":
        if result.returncode != 0:
            return f"the spec does not compile:\n{result.stderr}"
        shown = result.stdout
    else:
        if not expected:
            return "an opt-error block needs a line '// error: <text>'"
        if result.returncode == 0:
            return "the spec compiles, but an error was expected"
        missing = [e for e in expected if e not in result.stderr]
        if missing:
            return (f"the error output lacks {missing[0]!r}; it is:\n"
                    f"{result.stderr}")
        shown = result.stderr

    block.shown = shown
    if block.output is not None and normalize(shown) != normalize(block.output.text):
        return (f"the ```output block at line {block.output.line} differs; "
                f"optgen prints:\n{shown}")
    return None


def update_outputs(doc, examples, optgen, tmp):
    """Rewrites every ```output block of `doc` with what optgen prints."""
    with open(doc, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for block in sorted((b for b in examples if b.output is not None),
                        key=lambda b: b.line, reverse=True):
        check(block, optgen, tmp)
        out = block.output
        new = block.shown.rstrip("\n").split("\n") if block.shown.strip() else []
        lines[out.line:out.line + out.num_lines] = new
    with open(doc, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def main(argv):
    update = "--update" in argv[1:2]
    if update:
        argv = argv[:1] + argv[2:]
    if len(argv) != 4:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    doc, optgen, tmp = argv[1], os.path.abspath(argv[2]), argv[3]
    os.makedirs(tmp, exist_ok=True)
    name = os.path.basename(doc)

    examples, problems = [], []
    last = None
    for block in read_blocks(doc):
        if block.tag in EXAMPLE_TAGS:
            examples.append(block)
            last = block
        elif block.tag == "output":
            if last is None or last.output is not None:
                problems.append(f"{name}:{block.line}: an ```output block must "
                                "follow an ```opt or ```opt-error block")
            else:
                last.output = block
        else:
            if block.tag.startswith("opt"):
                problems.append(f"{name}:{block.line}: unknown block tag "
                                f"{block.tag!r} (use opt, opt-error or output)")
            last = None

    if update and not problems:
        update_outputs(doc, examples, optgen, tmp)
        return main(argv)

    if not examples:
        problems.append(f"{name}: no ```opt or ```opt-error blocks found")
    passed = 0
    for block in examples:
        reason = check(block, optgen, tmp)
        if reason is None:
            passed += 1
        else:
            problems.append(f"{name}:{block.line}: ```{block.tag} block: "
                            f"{reason.rstrip()}")
    failed = len(problems)
    for problem in problems:
        print(problem)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
