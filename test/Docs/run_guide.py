#!/usr/bin/env python3
"""Runs every command of docs/GUIDE.md, in order, as a user would.

    run_guide.py GUIDE.md SOURCE WORK

The guide's ```sh blocks become one bash script (so that `cd` and `export`
carry from one block to the next), started in SOURCE (optgen's clone, as
the guide's first block says) with HOME set to the empty folder WORK/home:
whatever the guide installs or writes under ~ lands there. A fenced block
whose info string names a file (```cpp file=train.cpp) is written, at the
point the script reaches it, into the folder the script stands in (never
inside SOURCE: that fails the run). Other blocks (```text, what a command
prints) are not run.

The script stops at the first command that fails (bash -e, pipefail);
this prints the script's output and exits with its status.
"""

import importlib.machinery
import os
import re
import shlex
import shutil
import subprocess
import sys
import types

FILE_RE = re.compile(r"\bfile=(\S+)")


def read_blocks(path):
    """The fenced blocks of the markdown file, read as the language
    reference's examples are (extract-examples.py)."""
    loader = importlib.machinery.SourceFileLoader(
        "extract_examples",
        os.path.join(os.path.dirname(__file__), "extract-examples.py"))
    module = types.ModuleType(loader.name)
    loader.exec_module(module)
    return module.read_blocks(path)


def script(path):
    """The bash script of the guide's commands and files."""
    parts = ["set -euo pipefail"]
    for number, block in enumerate(read_blocks(path)):
        info, text = block.info, block.text
        named = FILE_RE.search(info)
        if named:
            marker = f"OPTGEN_GUIDE_FILE_{number}"
            if marker in text:
                sys.exit(f"{path}: block {number} holds its own end marker")
            # The guide's files belong to the user's folders, never to
            # optgen's clone.
            parts.append('case "$(pwd -P)/" in "$OPTGEN_GUIDE_WORK"/*) ;; '
                         '"$OPTGEN_GUIDE_SOURCE"/*) echo "run_guide.py: '
                         f'{named.group(1)} would be written into optgen\'s '
                         'sources ($PWD)"; exit 1;; esac')
            parts.append(f"echo '--- guide: writing {named.group(1)}'")
            parts.append(f"cat > {shlex.quote(named.group(1))} <<'{marker}'\n"
                         f"{text}{marker}")
        elif block.tag == "sh":
            # Each command (its continuation lines with it) echoed first.
            command = []
            for line in text.rstrip("\n").split("\n"):
                command.append(line)
                if line.endswith("\\"):
                    continue
                if "".join(command).strip():
                    shown = "\n".join(command)
                    parts.append(f"echo {shlex.quote('--- guide$ ' + shown)}")
                parts.extend(command)
                command = []
            parts.extend(command)
    return "\n".join(parts) + "\n"


def main():
    guide, source, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    home = os.path.join(work, "home")
    os.makedirs(home)
    env = dict(os.environ, HOME=home,
               OPTGEN_GUIDE_SOURCE=os.path.realpath(source),
               OPTGEN_GUIDE_WORK=os.path.realpath(work))
    # Nothing of the caller's own optgen or cache: the guide's must serve.
    for name in ("OPTGEN_ROOT", "OPTGEN_CACHE_DIR", "XDG_CACHE_HOME"):
        env.pop(name, None)
    text = script(guide)
    with open(os.path.join(work, "guide.sh"), "w") as f:
        f.write(text)
    done = subprocess.run(["bash", os.path.join(work, "guide.sh")], cwd=source,
                          env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    sys.stdout.write(done.stdout)
    if done.returncode != 0:
        print(f"run_guide.py: the guide's script ({work}/guide.sh) failed "
              f"with status {done.returncode} at the last command above")
    sys.exit(done.returncode)


if __name__ == "__main__":
    main()
