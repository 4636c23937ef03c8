#!/usr/bin/env python3
"""Condenses ncu's source page (`ncu --import R --page source --print-source sass --csv`) to
one line per SASS instruction: address, warp instructions executed, stall samples, the top two
stall reasons, the instruction.  The CSV has ~60 columns a line; this keeps what the notes read
(bench/NOTES.md, "Where the quant pass waits", 2026-11-29) small enough to commit."""
import csv
import sys


def main(path):
    rows = list(csv.reader(open(path)))
    hdr = rows[1]
    data = [r for r in rows[2:] if len(r) > 30]
    executed = hdr.index("Instructions Executed")
    samples = hdr.index("Warp Stall Sampling (All Samples)")
    stalls = [i for i, h in enumerate(hdr) if h.startswith("stall_") and "Not Issued" not in h]
    print("# address, warp instructions executed, stall samples, top two stall reasons, SASS")
    for r in data:
        top = sorted(((int(r[i]), hdr[i][6:]) for i in stalls if r[i].isdigit()), reverse=True)[:2]
        reasons = " ".join(f"{name}:{n}" for n, name in top if n)
        print(r[0][-5:], r[executed].rjust(9), r[samples].rjust(6), reasons.ljust(34), r[1].strip())


if __name__ == "__main__":
    main(sys.argv[1])
