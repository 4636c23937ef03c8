#!/usr/bin/env python3
"""Host time of one attention call, where the GPU work is too small to hide it.

    MXATTN_LIB=build/libmxattn.so python3 bench/call_overhead.py

Prints microseconds per call for mxattn.attention, for the library's
mxattn_run alone (through ctypes, on a plan made beforehand) and for SDPA's
flash and cuDNN backends, on a tiny problem (the launches queue up faster than
the GPU drains them only if the host is the bottleneck), and then the top of a
cProfile of mxattn.attention.  triton's do_bench clears L2 between calls and
times from an event recorded after the clear: host time beyond the clear's
~80 us shows up as GPU time there, so this is worth keeping small.
"""
import argparse
import cProfile
import os
import pstats
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import mxattn  # noqa: E402
from mxattn import _native, _plans  # noqa: E402


def us_per_call(fn, calls):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    begin = time.perf_counter()
    for _ in range(calls):
        fn()
    host = (time.perf_counter() - begin) * 1e6 / calls
    torch.cuda.synchronize()
    return host


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="f16")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--head-dim", type=int, default=128)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    shape = (1, 2, args.seq, args.head_dim)
    q, k, v = (torch.randn(shape, dtype=torch.bfloat16, device="cuda") for _ in range(3))
    call = lambda: mxattn.attention(q, k, v, family=args.family)  # noqa: E731
    print(f"mxattn.attention ({args.family}) {us_per_call(call, args.calls):8.1f} us/call")

    plan = next(iter(_plans._plans.values()))
    out = torch.empty_like(q)
    stream = torch.cuda.current_stream().cuda_stream
    raw_args = (plan.handle, q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), None, stream)
    run = lambda: _native.lib.mxattn_run(*raw_args)  # noqa: E731
    print(f"mxattn_run via ctypes          {us_per_call(run, args.calls):8.1f} us/call")

    for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        with sdpa_kernel(backend):
            sdpa = lambda: F.scaled_dot_product_attention(q, k, v)  # noqa: E731
            print(f"sdpa {name:<26}{us_per_call(sdpa, args.calls):8.1f} us/call")

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(500):
        call()
    profiler.disable()
    torch.cuda.synchronize()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
