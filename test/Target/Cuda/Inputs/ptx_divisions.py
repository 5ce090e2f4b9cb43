"""64-bit divisions in the element loops of compiled kernels.

A GPU has no 64-bit integer divider: `div.s64`, `rem.s64`, `div.u64` and
`rem.u64` become a call of a software routine, tens of instructions for
every element when they index the elements. This reads PTX (nvcc -ptx) and
prints, for every kernel (`.entry`), how many such instructions it holds
in all and how many inside a loop; it exits 1 when any kernel has one
inside a loop. Loops are the natural loops of each kernel's control-flow
graph (a branch to a block that dominates it), not spans of the text:
nvcc lays slow paths (of std::pow, say) out after the code they return to.

    python ptx_divisions.py KERNELS.ptx...
"""
import re
import sys

DIVISION = re.compile(r"^\s*(?:@!?%\w+\s+)?(div|rem)\.[su]64\b")
LABEL = re.compile(r"^\s*(\$[\w$]+):")
BRANCH = re.compile(r"^\s*(@!?%\w+\s+)?bra(?:\.uni)?\s+(\$[\w$]+);")
EXIT = re.compile(r"^\s*(@!?%\w+\s+)?(ret|exit|trap);")
ENTRY = re.compile(r"\.entry\s+([\w$]+)")


def kernels(text):
    """(name, body lines) of each .entry of the PTX text."""
    name, body = None, []
    for line in text.splitlines():
        match = ENTRY.search(line)
        if match:
            if name:
                yield name, body
            name, body = match.group(1), []
        elif name:
            body.append(line)
    if name:
        yield name, body


def blocks(lines):
    """The basic blocks: (first line, last line, successor block indices)."""
    starts = {0}
    for index, line in enumerate(lines):
        if LABEL.match(line):
            starts.add(index)
        if BRANCH.match(line) or EXIT.match(line):
            starts.add(index + 1)
    starts = sorted(s for s in starts if s < len(lines))
    block_of_label = {}
    for number, start in enumerate(starts):
        match = LABEL.match(lines[start])
        if match:
            block_of_label[match.group(1)] = number
    result = []
    for number, start in enumerate(starts):
        end = (starts[number + 1] if number + 1 < len(starts) else len(lines)) - 1
        last = lines[end]
        successors = []
        branch = BRANCH.match(last)
        exit_ = EXIT.match(last)
        if branch:
            successors.append(block_of_label[branch.group(2)])
        falls_through = not ((branch and not branch.group(1)) or
                             (exit_ and not exit_.group(1)))
        if falls_through and number + 1 < len(starts):
            successors.append(number + 1)
        result.append((start, end, successors))
    return result


def loop_blocks(graph):
    """The blocks inside a natural loop of `graph` (from block 0)."""
    count = len(graph)
    # Only what the entry reaches: text after an unconditional branch and
    # before the next label is no block of the kernel.
    reached, work = {0}, [0]
    while work:
        for successor in graph[work.pop()][2]:
            if successor not in reached:
                reached.add(successor)
                work.append(successor)
    predecessors = [[] for _ in range(count)]
    for number, (_, _, successors) in enumerate(graph):
        if number in reached:
            for successor in successors:
                predecessors[successor].append(number)
    everything = set(range(count))
    dominators = [everything.copy() for _ in range(count)]
    dominators[0] = {0}
    changed = True
    while changed:
        changed = False
        for number in sorted(reached - {0}):
            incoming = [dominators[p] for p in predecessors[number]]
            new = (set.intersection(*incoming) if incoming else set()) | {number}
            if new != dominators[number]:
                dominators[number], changed = new, True
    inside = set()
    for source in sorted(reached):
        for header in graph[source][2]:
            if header in dominators[source]:  # a back edge
                body = {header, source}
                work = [source] if source != header else []
                while work:
                    for p in predecessors[work.pop()]:
                        if p not in body:
                            body.add(p)
                            work.append(p)
                inside |= body
    return inside


def main(paths):
    failed = False
    for path in paths:
        with open(path) as ptx:
            text = ptx.read()
        for name, lines in kernels(text):
            graph = blocks(lines)
            inside = loop_blocks(graph)
            divisions = in_loops = 0
            for number, (first, last, _) in enumerate(graph):
                found = sum(1 for line in lines[first:last + 1]
                            if DIVISION.match(line))
                divisions += found
                if number in inside:
                    in_loops += found
            print(f"{name}: {divisions} 64-bit divisions, {in_loops} in loops")
            failed |= in_loops > 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
