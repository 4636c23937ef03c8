#!/usr/bin/env python3
"""Compares two bench/attention.py runs row by row.

    python3 bench/compare_runs.py OLD/results.json NEW/results.json [--families f16,sdpa-cudnn]
    python3 bench/compare_runs.py OLD NEW --any-config --vs-cudnn --accuracy --md ab.md

For each (implementation, D, N, causal) in both runs whose kernel
configuration is the same (mxattn rows: the plan's config), prints the
ratio new/old of TOPS, then the median and the largest deviation.  Rows
whose configuration changed between the runs are listed apart: they measure
a different kernel, not noise.  Pure Python.

An A/B of two builds (a refactor that must not move speed) compares rows
whatever their config text says (--any-config: a deleted knob changes the
text, not the kernel), divides each row by its own run's sdpa-cudnn row
(--vs-cudnn: the board's clock drifts between two runs, and cuDNN drifts
with it), flags rows outside --tolerance, and checks that the accuracy
columns (cos, rel-L1) agree to --accuracy-digits (--accuracy).  --md writes
the comparison as a table.  Exits 1 when a row falls outside the tolerance
or an accuracy figure moved.
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


def load(path):
    with open(path) as f:
        return {key(r): r for r in json.load(f) if r.get("tops")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--families", default=None, help="comma-separated; default: all")
    parser.add_argument("--any-config", action="store_true",
                        help="compare rows whose config text differs too")
    parser.add_argument("--vs-cudnn", action="store_true",
                        help="compare each row's ratio to its own run's sdpa-cudnn row")
    parser.add_argument("--tolerance", type=float, default=0.02,
                        help="largest |new/old - 1| accepted (default 0.02)")
    parser.add_argument("--accuracy", action="store_true",
                        help="also require cos and rel-L1 to agree")
    parser.add_argument("--accuracy-digits", type=int, default=4,
                        help="significant digits of cos / rel-L1 that must agree (default 4)")
    parser.add_argument("--md", default=None, help="write the comparison as a markdown table here")
    args = parser.parse_args()
    if args.vs_cudnn or args.any_config or args.accuracy or args.md:
        return ab(args)
    old, new = load(args.old), load(args.new)
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


def cudnn_key(k):
    return ("sdpa-cudnn",) + k[1:]


def same_figure(a, b, digits):
    if a is None or b is None:
        return a is None and b is None
    return f"{a:.{digits}g}" == f"{b:.{digits}g}"


def ab(args):
    old, new = load(args.old), load(args.new)
    wanted = set(args.families.split(",")) if args.families else None
    lines = ["| implementation | shape | causal | old | new | new/old | cos old / new | rel-L1 old / new | |",
             "|---|---|---|---|---|---|---|---|---|"]
    ratios, bad = [], 0
    for k in sorted(set(old) & set(new), key=str):
        if k[0].startswith("sdpa") or (wanted and k[0] not in wanted):
            continue
        if not args.any_config and config(old[k]) != config(new[k]):
            continue
        o, n = old[k]["tops"], new[k]["tops"]
        unit = "TOPS"
        if args.vs_cudnn:
            co, cn = old.get(cudnn_key(k)), new.get(cudnn_key(k))
            if not co or not cn:
                continue
            o, n, unit = o / co["tops"], n / cn["tops"], "x cuDNN"
        ratio = n / o
        ratios.append((ratio, k))
        flags = []
        if abs(ratio - 1) > args.tolerance:
            flags.append("speed")
        if args.accuracy:
            for col in ("cos", "rel_l1"):
                if not same_figure(old[k].get(col), new[k].get(col), args.accuracy_digits):
                    flags.append(col)
        bad += bool(flags)
        acc = lambda c: f"{old[k].get(c)} / {new[k].get(c)}"
        lines.append(f"| {k[0]} | {label(k).strip()} | {'yes' if k[3] else 'no'} | {o:.3f} | {n:.3f} | "
                     f"{ratio:.3f} | {acc('cos')} | {acc('rel_l1')} | {' '.join(flags)} |")
        print(f"{k[0]:<18} {label(k)} {'causal' if k[3] else '      '} {o:8.3f} -> {n:8.3f} {unit}"
              f"  x{ratio:.3f} {' '.join(flags)}")
    if ratios:
        values = [r for r, _ in ratios]
        worst = max(ratios, key=lambda item: abs(item[0] - 1))
        summary = (f"{len(values)} rows: median x{statistics.median(values):.3f}, largest deviation "
                   f"x{worst[0]:.3f} ({worst[1][0]} {short_label(worst[1])}); {bad} outside "
                   f"{args.tolerance:.0%} or with a changed accuracy figure")
        print("\n" + summary)
        lines += ["", summary]
    if args.md:
        with open(args.md, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 1 if bad or not ratios else 0


if __name__ == "__main__":
    raise SystemExit(main())
