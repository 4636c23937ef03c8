"""Opcode histogram of the main loop of each kernel in `cuobjdump -sass` output.

The main loop is the backward branch's range that holds the most warpgroup
MMAs (*GMMA), so for the attention kernels it is the key-tile loop.  Counts
are static: a branch skipped at run time (the rescale of O, the causal mask)
still counts.  Used to check where the issue slots of a tile go:

    mxattn compile --family int8-fp8 --head-dim 128 --cubin k.cubin
    cuobjdump -sass k.cubin > k.sass          # on the GPU machine
    python3 bench/sass_histogram.py k.sass
"""
import argparse
import collections
import re

INSTRUCTION = re.compile(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?);")
PREDICATE = re.compile(r"^@!?U?P\w+\s+")


def functions(path):
    """[(name, [(address, opcode, text)])] in file order."""
    out = []
    for line in open(path):
        m = re.search(r"Function : (\S+)", line)
        if m:
            out.append((m.group(1), []))
            continue
        m = INSTRUCTION.match(line)
        if m and out:
            text = PREDICATE.sub("", m.group(2).strip())
            out[-1][1].append((int(m.group(1), 16), text.split()[0], text))
    return out


def main_loop(instructions):
    """The instructions of the backward-branch range with the most *GMMA."""
    best = None
    for addr, op, text in instructions:
        target = re.search(r"0x([0-9a-f]+)", text) if op.startswith("BRA") else None
        if not target or int(target.group(1), 16) >= addr:
            continue
        body = [x for x in instructions if int(target.group(1), 16) <= x[0] <= addr]
        key = (sum("GMMA" in x[1] for x in body), len(body))
        if best is None or key > best[0]:
            best = (key, body)
    return best[1] if best else []


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sass", nargs="+")
    parser.add_argument("--top", type=int, default=24)
    args = parser.parse_args()
    for path in args.sass:
        for name, instructions in functions(path):
            body = main_loop(instructions)
            if not body:
                continue
            counts = collections.Counter(op.split(".")[0] for _, op, _ in body)
            print(f"{path}: {name}: {len(instructions)} instructions, main loop {len(body)}")
            print("  " + ", ".join(f"{op} {n}" for op, n in counts.most_common(args.top)))


if __name__ == "__main__":
    main()
