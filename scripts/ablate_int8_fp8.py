#!/usr/bin/env python3
"""Template folders with one piece of int8-fp8's unmasked tile removed, to time what each costs.

    scripts/ablate_int8_fp8.py BUILD      writes BUILD/tpl/ablate-<name>/templates, prints AB_TEMPLATES

Each copy of templates/ changes the wgmma kernel's softmax_acc or fold_pv (the path of every
tile without a mask) so that it computes garbage faster: for `scripts/device.sh --ab` with
`--check-heads 0` only (timing, never checked). What an ablation saves bounds what any
optimisation of that piece can save (bench/NOTES.md, 2026-11-30).
  nomax    no row maximum: m is a constant (the integer max, its conversion, the quad shuffles)
  noexp    no exponential: P is the scaled score itself (MUFU's 64 ex2 a warp and tile)
  nofold   no O = O * alpha + P V (its 64 FFMA a warp and tile; P V still issued and waited on;
           the compiler then drops O: 96 registers where the kernel has 168, still three blocks an
           SM, which shared memory bounds)
  nomax-noexp  both of the first two
  stalemax the exponentials against the row's maximum before this tile (minus 3, the headroom a
           lagging reference would keep) while the tile's maximum is still taken and kept: the
           steady state of a softmax whose exponentials do not wait for the tile's maximum (a
           reference max moved only when a tile exceeds it by more than the headroom, a rare
           fallback rescaling P: bench/NOTES.md, 2026-11-30); its first tile overflows
"""
import os
import re
import shutil
import sys

FAMILY = "families/int8_fp8_wgmma.lua"
MAX_LOOP = re.compile(r"float m = MX_NEG_INF;\n.*?m = fmaxf\(row_max\[0\]\[h\], quad_max\(m\)\);[^\n]*\n", re.S)
EXP = "s[0][nt][e] = fast_exp2(fmaf(s[0][nt][e], scale, -c));"
FOLD = "x = fmaf(x, alphas[0][e / 2], pv[0][dt][e]);"
ALPHA = "    alphas[0][h] = fast_exp2(row_max[0][h] - m);\n"
C_FROM_M = "c = fmaf(12582912.f * qscale, kscale[g], m - LOG2_448);"

ABLATIONS = {
    "nomax": lambda s: MAX_LOOP.sub("float m = 20.f;   // ablation: no row maximum\n", s, count=1),
    "noexp": lambda s: s.replace(EXP, "s[0][nt][e] = fmaf(s[0][nt][e], scale, -c);   // ablation: no ex2", 1),
    "nofold": lambda s: s.replace(FOLD, "(void)x;   // ablation: no fold", 1),
}
ABLATIONS["stalemax"] = lambda s: s.replace(ALPHA, "    const float m_ref = row_max[0][h];   // ablation: stale max\n" + ALPHA, 1).replace(
    C_FROM_M, "c = fmaf(12582912.f * qscale, kscale[g], m_ref - (LOG2_448 - 3.f));", 1)
ABLATIONS["nomax-noexp"] = lambda s: ABLATIONS["nomax"](ABLATIONS["noexp"](s))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    src = os.path.join(root, "templates")
    text = open(os.path.join(src, FAMILY)).read()
    dirs = []
    for name, change in ABLATIONS.items():
        changed = change(text)
        if changed == text:
            sys.exit(f"ablate: {name} found nothing to change in {FAMILY}")
        dest = os.path.join(sys.argv[1], "tpl", "ablate-" + name, "templates")
        shutil.rmtree(os.path.dirname(dest), ignore_errors=True)
        shutil.copytree(src, dest)
        with open(os.path.join(dest, FAMILY), "w") as f:
            f.write(changed)
        dirs.append(dest)
    print(" ".join(dirs))


if __name__ == "__main__":
    main()
