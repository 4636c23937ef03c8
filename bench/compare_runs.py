#!/usr/bin/env python3
"""Compares two bench/attention.py runs row by row.

    python3 bench/compare_runs.py OLD/results.json NEW/results.json [--families f16,sdpa-cudnn]

For each (implementation, D, N, causal) in both runs whose kernel
configuration is the same (mxattn rows: the plan's config), prints the
ratio new/old of TOPS, then the median and the largest deviation.  Rows
whose configuration changed between the runs are listed apart: they measure
a different kernel, not noise.  Pure Python.
"""
import argparse
import json
import statistics


def key(row):
    """(family, D, N, causal, then the rest of the shape): `--suite shapes`
    rows also differ in B, heads, Nq != Nk (seq_len None) and alignment."""
    return (row["family"], row["head_dim"], row["seq_len"], row["causal"], row["batch"],
            row["heads"], row["heads_kv"], row.get("seq_q", row["seq_len"]),
            row.get("seq_k", row["seq_len"]), row.get("causal_alignment"))


def label(k):
    shape = f"N{k[2]:<6}" if k[2] is not None else f"Nq{k[7]} Nk{k[8]}"
    if (k[4], k[5], k[6]) != (4, 32, 32) or k[2] is None:  # the plain grid's B and heads
        shape += f" B{k[4]} H{k[5]}/{k[6]}"
    return f"D{k[1]:<4} {shape}"


def short_label(k):
    return f"D{k[1]} " + (f"N{k[2]}" if k[2] is not None else f"Nq{k[7]} Nk{k[8]}")


def config(row):
    plan = row.get("plan") or {}
    return plan.get("config")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--families", default=None, help="comma-separated; default: all")
    args = parser.parse_args()
    with open(args.old) as f:
        old = {key(r): r for r in json.load(f) if r.get("tops")}
    with open(args.new) as f:
        new = {key(r): r for r in json.load(f) if r.get("tops")}
    wanted = set(args.families.split(",")) if args.families else None
    ratios, changed = [], []
    for k in sorted(set(old) & set(new), key=str):
        if wanted and k[0] not in wanted:
            continue
        if config(old[k]) != config(new[k]):
            changed.append(k)
            continue
        ratio = new[k]["tops"] / old[k]["tops"]
        ratios.append((ratio, k))
        print(f"{k[0]:<18} {label(k)} {'causal' if k[3] else '      '} "
              f"{old[k]['tops']:7.1f} -> {new[k]['tops']:7.1f}  x{ratio:.3f}")
    if ratios:
        values = [r for r, _ in ratios]
        worst = max(ratios, key=lambda item: abs(item[0] - 1))
        print(f"\n{len(values)} rows with the same kernel: median x{statistics.median(values):.3f}, "
              f"largest deviation x{worst[0]:.3f} ({worst[1][0]} {short_label(worst[1])})")
    if changed:
        print(f"{len(changed)} rows ran another kernel configuration (not compared): "
              + ", ".join(sorted({k[0] for k in changed})))


if __name__ == "__main__":
    main()
