#!/usr/bin/env python3
"""How what runs between two attention calls changes the second one's time.

    MXATTN_LIB=build/libmxattn.so python3 bench/between_calls.py [--dim 128 --seq 4096]

bench/attention.py times each call after triton's do_bench clears L2 (a 256 MB
memset), and there our kernels read 6-9% slower than back to back (bench/NOTES.md,
2026-11-29), a cause never found.  This times each implementation after
each of: nothing (back to back), the 256 MB memset, a 256 MB read (L2 evicted
without dirty lines) and an idle GPU (a spin kernel on one thread for about a
millisecond), in interleaved rounds, and prints the median of each: whether
SDPA's backends pay the same, and whether dirty lines, eviction or idleness
is what costs.
"""
import argparse
import os
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import mxattn  # noqa: E402

CLEAR_BYTES = 256 << 20  # triton.testing.do_bench's cache clear


def implementations(families):
    def sdpa(backend):
        def run(q, k, v, causal):
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return run

    def mx(family):
        return lambda q, k, v, causal: mxattn.attention(q, k, v, family=family, causal=causal)
    impls = {"sdpa-cudnn": sdpa(SDPBackend.CUDNN_ATTENTION), "sdpa-flash": sdpa(SDPBackend.FLASH_ATTENTION)}
    impls.update({f: mx(f) for f in families})
    return impls


def conditions():
    buffer = torch.empty(CLEAR_BYTES, dtype=torch.int8, device="cuda")
    sink = torch.empty((), dtype=torch.int64, device="cuda")   # the sum's shape: no resize warning
    return {
        "back to back": lambda: None,
        "after memset": lambda: buffer.zero_(),
        "after read": lambda: torch.sum(buffer.view(torch.int64), dim=0, out=sink),
        "after idle": lambda: torch.cuda._sleep(2_000_000),
    }


def time_calls(run, before, inputs, causal, reps):
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        before()
        starts[i].record()
        run(*inputs[i % len(inputs)], causal)
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--families", default="f16,int8-fp8")
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    shape = (args.batch, args.heads, args.seq, args.dim)
    inputs = [tuple(torch.randn(shape, dtype=torch.bfloat16, device="cuda") for _ in range(3)) for _ in range(2)]
    impls = implementations([f for f in args.families.split(",") if f])
    conds = conditions()
    for run in impls.values():  # plans, compiles, warm-up
        run(*inputs[0], args.causal)
    torch.cuda.synchronize()
    times = {(i, c): [] for i in impls for c in conds}
    for r in range(args.rounds):
        for impl, run in impls.items():
            for cond, before in conds.items():
                times[impl, cond].append(time_calls(run, before, inputs, args.causal, args.reps))
    flops = 4 * args.batch * args.heads * args.seq * args.seq * args.dim / (2 if args.causal else 1)
    print(f"{torch.cuda.get_device_name()}: B={args.batch} H={args.heads} N={args.seq} D={args.dim} "
          f"causal={int(args.causal)}; median ms of {args.reps} calls, median of {args.rounds} rounds (TOPS)")
    print(f"{'':14}" + "".join(f"{c:>22}" for c in conds))
    for impl in impls:
        cells = []
        for cond in conds:
            ms = statistics.median(times[impl, cond])
            cells.append(f"{ms:8.4f} ({flops / ms / 1e9:6.1f})")
        print(f"{impl:14}" + "".join(f"{c:>22}" for c in cells))


if __name__ == "__main__":
    main()
