"""Copies a spec to a file whose name holds a newline and code, and compiles
it: hostile_file_name.py OPTGEN SPEC DIR (the files go to DIR/out)."""

import os
import shutil
import subprocess
import sys

optgen, spec, folder = sys.argv[1:4]
name = os.path.join(folder, 'a\nint pwned = system("touch pwned");\nint b \\.opt')
shutil.copy(spec, name)
subprocess.run([optgen, "compile", name, "--target=cpu", "-o",
                os.path.join(folder, "out")], check=True)
