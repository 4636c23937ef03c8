#!/usr/bin/env python3
"""Session 18: a plan's call time (CUDA events, median of 5 rounds of 20 calls) for the
problems given, in one process.  Run once per MXATTN_EXP_OFC_* setting, each with a fresh
MXATTN_CACHE, so every plan compiles under that setting.  Prints one line a problem."""
import statistics, sys, time, torch
sys.path.insert(0, "python")
import mxattn

def time_call(fn, reps=20, rounds=5):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(rounds):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(reps): fn()
        b.record(); torch.cuda.synchronize()
        out.append(a.elapsed_time(b) / reps)
    return statistics.median(out)

tag = sys.argv[1]
for spec in sys.argv[2:]:
    fam, d, n = spec.split(":"); d, n = int(d), int(n)
    B, H = (4, 32) if n >= 4096 else (1, 8)
    g = torch.Generator(device="cuda").manual_seed(1)
    q, k, v = (torch.randn(B, H, n, d, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
    t0 = time.perf_counter()
    o = mxattn.attention(q, k, v, family=fam)
    torch.cuda.synchronize()
    first = (time.perf_counter() - t0) * 1e3
    ref = torch.nn.functional.scaled_dot_product_attention(q[:1, :2].float(), k[:1, :2].float(), v[:1, :2].float())
    err = ((o[:1, :2].float() - ref).abs().sum() / ref.abs().sum()).item()
    ms = time_call(lambda: mxattn.attention(q, k, v, family=fam))
    print(f"{tag:12s} {fam:13s} D={d:3d} N={n:5d}: {ms:.4f} ms/call  first call {first:.0f} ms  rel_l1 {err:.4f}", flush=True)
