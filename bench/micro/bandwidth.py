#!/usr/bin/env python3
"""What this GPU streams: read-only and copy bandwidth on tensors the size of an int8-fp8
call's pre-pass operands (B=4 H=32 N D bf16), for judging the stats and quant passes.

    python3 bench/micro/bandwidth.py [--seq 4096 --dim 128]
"""
import argparse

import torch


def best_ms(fn, reps=20):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    return min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--dim", type=int, default=128)
    a = ap.parse_args()
    k = torch.randn(4, 32, a.seq, a.dim, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    out8 = torch.empty(k.shape, device="cuda", dtype=torch.int8)
    nbytes = k.numel() * 2
    cases = {
        "read K and V (sum over keys, fp32)": (lambda: (k.sum(dim=2, dtype=torch.float32), v.abs().amax(dim=2)), 2 * nbytes),
        "copy K -> K (bf16)": (lambda: k.clone(), 2 * nbytes),
        "K -> int8 (read 2 B, write 1 B an element)": (lambda: out8.copy_(k), 1.5 * nbytes),
    }
    for name, (fn, moved) in cases.items():
        ms = best_ms(fn)
        print(f"N={a.seq} D={a.dim}: {ms * 1e3:7.1f} us  {moved / ms / 1e9:5.2f} TB/s  {name}")


if __name__ == "__main__":
    main()
