#!/usr/bin/env python3
"""Prints the README's speed and accuracy tables from a bench run's results.json.

    python3 bench/readme_table.py bench/results/h200/results.json

One row per (D, N, causal): every implementation's TOPS and, in brackets, its
ratio to SDPA cuDNN in the same run; then cosine and relative L1 at the
largest D=128 configuration.  Pure Python, no torch: runs anywhere.
"""
import json
import sys


def speed_table(rows):
    names = list(dict.fromkeys(r["family"] for r in rows if r["family"] != "sdpa-efficient"))
    keys = list(dict.fromkeys((r["head_dim"], r["seq_len"], r["causal"]) for r in rows))
    by_key = {(r["head_dim"], r["seq_len"], r["causal"], r["family"]): r for r in rows}
    lines = ["| D | N | causal | " + " | ".join(names) + " |",
             "|---" * (3 + len(names)) + "|"]
    for d, n, causal in keys:
        cells = []
        for name in names:
            r = by_key.get((d, n, causal, name))
            if r is None or r.get("error") or r.get("tops") is None:
                cells.append("-")
            else:
                cells.append(f"{r['tops']:.0f} ({r['ratio_vs_cudnn']:.2f}x)")
        lines.append(f"| {d} | {n} | {'yes' if causal else 'no'} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def accuracy_table(rows):
    d128 = [r for r in rows if r["head_dim"] == 128 and not r["causal"] and r.get("cos") is not None]
    if not d128:
        return ""
    n = max(r["seq_len"] for r in d128)
    lines = [f"Accuracy at D=128, N={n} ({d128[0]['accuracy_scope']}):", "",
             "| implementation | cos | rel-L1 |", "|---|---|---|"]
    for r in d128:
        if r["seq_len"] == n and r["family"] != "sdpa-efficient":
            lines.append(f"| {r['family']} | {r['cos']:.5f} | {r['rel_l1']:.4f} |")
    return "\n".join(lines)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        rows = json.load(f)
    print(speed_table(rows))
    print()
    print(accuracy_table(rows))


if __name__ == "__main__":
    main()
