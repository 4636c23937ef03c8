#!/usr/bin/env python3
"""Can a quantized call's memory-bound passes run under another call's attention kernel?

    MXATTN_LIB=build/libmxattn.so python3 bench/micro/two_streams.py [--dim 128 --seq 4096]

Two halves of a B=4 H=32 int8-fp8 problem (B=2 H=32 and B=4 H=16: the same work, two plans,
two workspaces), called `--reps` times each, either all on one stream (each call's stats and
quant passes wait for the previous call's attention) or alternating between two streams (the
GPU may run one call's passes beside the other's attention), with and without stream
priorities; against the whole problem in one call.  Time per B=4 H=32 problem, from events
around all reps.  A question for the design of issue #7's N=4096 target (bench/NOTES.md,
2026-11-30), not a benchmark.
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import mxattn  # noqa: E402


def timed_ms(fn, reps):
    """Host time a rep around a synchronize: the events of one stream cannot see the others'.
    Launches run ahead of the GPU (a call takes ~0.7 ms of GPU time, tens of us of host)."""
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3 / reps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    torch.manual_seed(0)
    d, n = args.dim, args.seq

    def inputs(b, h):
        return [torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16) for _ in range(3)]

    whole = inputs(4, 32)
    half_a, half_b = inputs(2, 32), inputs(4, 16)
    call = lambda t: mxattn.attention(*t, family="int8-fp8")  # noqa: E731
    main_stream = torch.cuda.current_stream()
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    lo, hi = torch.cuda.Stream(priority=0), torch.cuda.Stream(priority=-1)

    def one_stream():
        call(half_a)
        call(half_b)

    def two_streams(sa, sb):
        def run():
            ev = torch.cuda.Event()
            ev.record(main_stream)
            sa.wait_event(ev)
            sb.wait_event(ev)
            with torch.cuda.stream(sa):
                call(half_a)
            with torch.cuda.stream(sb):
                call(half_b)
            main_stream.wait_stream(sa)
            main_stream.wait_stream(sb)
        return run

    def pipelined(sa, sb):
        # No join per rep: call i+1 of one half may overlap call i of the other.
        def run():
            with torch.cuda.stream(sa):
                call(half_a)
            with torch.cuda.stream(sb):
                call(half_b)
        return run

    cases = [("whole problem, one call", lambda: call(whole)),
             ("two halves, one stream", one_stream),
             ("two halves, two streams, joined each rep", two_streams(s1, s2)),
             ("two halves, two streams, free-running", pipelined(s1, s2)),
             ("two halves, free-running, half B high priority", pipelined(lo, hi))]
    for r in range(args.rounds):
        for name, fn in cases:
            ms = timed_ms(fn, args.reps)
            print(f"round {r} D={d} N={n}: {ms:8.4f} ms  {name}", flush=True)


if __name__ == "__main__":
    main()
