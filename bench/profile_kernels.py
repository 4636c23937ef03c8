#!/usr/bin/env python3
"""Where one mxattn.attention call spends its GPU time, kernel by kernel.

    MXATTN_LIB=build/libmxattn.so python3 bench/profile_kernels.py \
        --families f16,int8-fp8 --dims 128 --seqs 4096,16384

For each problem it prints the per-call GPU time of every kernel the call
launches (torch.profiler, averaged over --calls calls) beside SDPA cuDNN's,
and the end-to-end median with one fixed input set and with rotating sets
(the benchmark's way), so that a gap between bench/attention.py and
`mxattn run` can be pinned on a kernel, on the inputs or on the clocks.
"""
import argparse
import collections
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attention import median_ms  # noqa: E402  (also puts python/ on the path)

import mxattn  # noqa: E402


def kernel_times(fn, calls):
    """{kernel name: mean GPU ms per call} over `calls` calls of fn()."""
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    totals = collections.defaultdict(float)
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            totals[event.name] += event.device_time / 1e3 / calls
    return dict(sorted(totals.items(), key=lambda item: -item[1]))


_L2_FLUSH = None


def clear_then(fn):
    """fn() after zeroing 256 MB, as triton's do_bench does before each call."""
    global _L2_FLUSH
    if _L2_FLUSH is None:
        _L2_FLUSH = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    _L2_FLUSH.zero_()
    return fn()


def events_ms_after_clear(fn, calls=20):
    """Median of events around fn() alone, each after an L2 clear."""
    times = []
    for _ in range(calls):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        clear_then(lambda: None)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default="f16,int8-fp8")
    parser.add_argument("--dims", default="128")
    parser.add_argument("--seqs", default="4096,16384")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--calls", type=int, default=10)
    args = parser.parse_args()
    for dim in map(int, args.dims.split(",")):
        for seq in map(int, args.seqs.split(",")):
            shape = (args.batch, args.heads, seq, dim)
            sets = [tuple(torch.randn(shape, dtype=torch.bfloat16, device="cuda")
                          for _ in range(3)) for _ in range(3)]
            q, k, v = sets[0]
            print(f"== D{dim} N{seq}{' causal' if args.causal else ''}")
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                cudnn = lambda q, k, v: F.scaled_dot_product_attention(  # noqa: E731
                    q, k, v, is_causal=args.causal)
                print(f"  sdpa-cudnn  fixed {median_ms(cudnn, sets[:1]):.4f} ms"
                      f"  rotating {median_ms(cudnn, sets):.4f} ms")
            for family in args.families.split(","):
                run = lambda q, k, v: mxattn.attention(  # noqa: E731
                    q, k, v, family=family, causal=args.causal)
                print(f"  {family:<11} fixed {median_ms(run, sets[:1]):.4f} ms"
                      f"  rotating {median_ms(run, sets):.4f} ms")
                for name, ms in kernel_times(lambda: run(q, k, v), args.calls).items():
                    print(f"      {ms:9.4f} ms  {name[:100]}")
                print(f"    after an L2 clear each call (do_bench's way), events "
                      f"{events_ms_after_clear(lambda: run(q, k, v)):.4f} ms:")
                for name, ms in kernel_times(lambda: clear_then(lambda: run(q, k, v)),
                                             args.calls).items():
                    print(f"      {ms:9.4f} ms  {name[:100]}")


if __name__ == "__main__":
    main()
