#!/usr/bin/env python3
"""Prints the README's speed and accuracy tables from a bench run's results.json.

    python3 bench/readme_table.py bench/results/h200/results.json

One row per (D, N, causal): every implementation's TOPS and, in brackets, its
ratio to SDPA cuDNN in the same run; then cosine and relative L1 at the
largest D=128 configuration.  Pure Python, no torch: runs anywhere.
"""
import json
import sys


def shape(r):
    """A row's problem.  Rows of `--suite shapes` also differ in B, heads,
    Nq != Nk (seq_len None) and the causal mask's alignment."""
    return (r.get("group"), r["batch"], r["heads"], r["heads_kv"], r["head_dim"],
            r.get("seq_q", r["seq_len"]), r.get("seq_k", r["seq_len"]), r["causal"],
            r.get("causal_alignment"))


def cell(r):
    if r is None or r.get("error") or r.get("tops") is None:
        return "-"
    ratio = "" if r.get("ratio_vs_cudnn") is None else f" ({r['ratio_vs_cudnn']:.2f}x)"
    if r.get("ratio_baseline") not in (None, "sdpa-cudnn"):
        ratio = ratio[:-1] + " of flash)"
    if r.get("kv_tbps") is not None:  # decode: bound by reading K and V
        return f"{r['kv_tbps']:.2f} TB/s{ratio}"
    return f"{r['tops']:.0f}{ratio}"


def speed_table(rows):
    rows = [r for r in rows if r["family"] != "(config)"]
    names = list(dict.fromkeys(r["family"] for r in rows if r["family"] != "sdpa-efficient"))
    keys = list(dict.fromkeys(shape(r) for r in rows))
    by_key = {shape(r) + (r["family"],): r for r in rows}
    suite = any(r.get("group") for r in rows)
    head = "| group | B | Hq | Hkv | D | Nq | Nk | causal | " if suite else "| D | N | causal | "
    lines = [head + " | ".join(names) + " |",
             "|---" * ((8 if suite else 3) + len(names)) + "|"]
    for key in keys:
        group, b, h, hkv, d, nq, nk, causal, alignment = key
        cells = [cell(by_key.get(key + (name,))) for name in names]
        if suite:
            mask = (alignment or "yes") if causal else "no"
            lines.append(f"| {group} | {b} | {h} | {hkv} | {d} | {nq} | {nk} | {mask} | "
                         + " | ".join(cells) + " |")
        else:
            lines.append(f"| {d} | {nq} | {'yes' if causal else 'no'} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def accuracy_table(rows):
    d128 = [r for r in rows if r["head_dim"] == 128 and not r["causal"] and r.get("cos") is not None
            and r["seq_len"] is not None and r["heads_kv"] == r["heads"]]
    if not d128:
        return ""
    n = max(r["seq_len"] for r in d128)
    lines = [f"Accuracy at D=128, N={n} ({d128[0]['accuracy_scope']}):", "",
             "| implementation | cos | rel-L1 |", "|---|---|---|"]
    first = {}  # a suite has several D=128 shapes at one N: the first of each family's
    for r in d128:
        if r["seq_len"] == n and r["family"] != "sdpa-efficient":
            first.setdefault(r["family"], r)
    for r in first.values():
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
