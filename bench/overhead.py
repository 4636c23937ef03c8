#!/usr/bin/env python3
"""Host overhead per attention call: mxattn's Python paths beside a plain SDPA call.

    MXATTN_LIB=build/libmxattn.so python3 bench/overhead.py [--out overhead.json]

At a shape where the kernel takes a few microseconds (default B1 H1 N64 D64,
bfloat16), the time per call is what the host spends getting the kernel
launched.  Each row times `--iters` back-to-back calls, --repeats times, and
reports the median over repeats of
  host_us  the time to issue one call (the loop without the final synchronize)
  wall_us  issue and finish, divided by the calls (the loop plus one synchronize)
Rows: PyTorch SDPA on its cuDNN and flash kernels; mxattn.scaled_dot_product_attention
(eager: the library called directly), mxattn.attention (the full-option form),
the mxattn::sdpa op through PyTorch's dispatcher (what compiled code calls),
the same kernel registered with torch.library.custom_op (what the direct
registration is compared with), torch.compile(fullgraph=True) of a function
calling each SDPA, and one CUDA-graph replay of a captured call.  GPU only.
"""
import argparse
import contextlib
import datetime
import json
import os
import platform
import statistics
import sys
import time

REPO_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO_DIR, "python"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

import mxattn  # noqa: E402


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="1,1,64,64", help="B,H,N,D (default 1,1,64,64)")
    parser.add_argument("--dtype", choices=("bf16", "f16"), default="bf16")
    parser.add_argument("--family", default="f16", help="mxattn family (default f16)")
    parser.add_argument("--causal", action="store_true", help="is_causal=True everywhere")
    parser.add_argument("--iters", type=int, default=500, help="calls per timing loop")
    parser.add_argument("--repeats", type=int, default=15, help="timing loops per row")
    parser.add_argument("--out", default="overhead.json", help="JSON results (default overhead.json)")
    return parser.parse_args()


def time_calls(fn, iters, repeats):
    """(median host us per call, median wall us per call) over repeats."""
    for _ in range(max(10, iters // 10)):
        fn()
    torch.cuda.synchronize()
    host, wall = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(iters):
            fn()
        issued = time.perf_counter()
        torch.cuda.synchronize()
        done = time.perf_counter()
        host.append((issued - start) / iters * 1e6)
        wall.append((done - start) / iters * 1e6)
    return statistics.median(host), statistics.median(wall)


def custom_op_variant(family):
    """The same call registered with torch.library.custom_op, for comparison."""
    @torch.library.custom_op("mxattn_overhead_bench::sdpa", mutates_args=())
    def sdpa_custom_op(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                       is_causal: bool, family: str) -> torch.Tensor:
        return mxattn.attention(query, key, value, family=family, causal=is_causal)

    @sdpa_custom_op.register_fake
    def _(query, key, value, is_causal, family):
        return query.new_empty(query.shape)

    return sdpa_custom_op


def graph_replay(fn, context):
    """A callable replaying a CUDA graph of one fn() call (fn warmed up first)."""
    with context() if context else contextlib.nullcontext():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
    return graph.replay


def rows(q, k, v, args):
    causal = args.causal
    op = mxattn.register_op()
    custom = custom_op_variant(args.family)

    def torch_plain():
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def mx_sdpa():
        return mxattn.scaled_dot_product_attention(q, k, v, is_causal=causal, family=args.family)

    def mx_attention():
        return mxattn.attention(q, k, v, causal=causal, family=args.family)

    def mx_op():
        return op(q, k, v, causal, None, args.family, "", 1)

    def mx_custom_op():
        return custom(q, k, v, causal, args.family)

    compiled_torch = torch.compile(torch_plain, fullgraph=True)
    compiled_mx = torch.compile(mx_sdpa, fullgraph=True)
    # The backend is chosen once around the whole timing, so that the
    # context manager's own cost is not counted in torch's rows.
    cudnn = lambda: sdpa_kernel(SDPBackend.CUDNN_ATTENTION)  # noqa: E731
    flash = lambda: sdpa_kernel(SDPBackend.FLASH_ATTENTION)  # noqa: E731
    yield "sdpa-cudnn", torch_plain, cudnn
    yield "sdpa-flash", torch_plain, flash
    yield "sdpa (default dispatch)", torch_plain, None
    yield "mxattn.scaled_dot_product_attention", mx_sdpa, None
    yield "mxattn.attention", mx_attention, None
    yield "torch.ops.mxattn.sdpa (direct registration)", mx_op, None
    yield "torch.library.custom_op (same kernel)", mx_custom_op, None
    yield "torch.compile(sdpa)", compiled_torch, None
    yield "torch.compile(mxattn sdpa)", compiled_mx, None
    yield "cuda graph replay: sdpa-cudnn", lambda: graph_replay(torch_plain, cudnn), "build"
    yield "cuda graph replay: mxattn sdpa", lambda: graph_replay(mx_sdpa, None), "build"


def main():
    args = parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench/overhead.py needs a CUDA GPU")
    batch, heads, seq, head_dim = (int(x) for x in args.shape.split(","))
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    torch.manual_seed(0)
    q, k, v = (torch.randn(batch, heads, seq, head_dim, dtype=dtype, device="cuda")
               for _ in range(3))
    reference = F.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                               is_causal=args.causal)
    results = []
    with torch.inference_mode():
        for name, fn, context in rows(q, k, v, args):
            try:
                error = None
                if context == "build":  # a graph replay: built here, returns nothing
                    fn, context = fn(), None
                with context() if context else contextlib.nullcontext():
                    out = fn()
                    torch.cuda.synchronize()
                    if isinstance(out, torch.Tensor):
                        error = ((out.double() - reference).abs().sum()
                                 / reference.abs().sum()).item()
                    host_us, wall_us = time_calls(fn, args.iters, args.repeats)
                results.append(dict(name=name, host_us=host_us, wall_us=wall_us, rel_l1=error))
            except Exception as e:  # a backend this GPU or build lacks: say so, go on
                results.append(dict(name=name, error=f"{type(e).__name__}: {e}"))
            row = results[-1]
            if "error" in row:
                print(f"{name:48s} failed: {row['error'][:120]}")
            else:
                err = f"{row['rel_l1']:.1e}" if row["rel_l1"] is not None else "-"
                print(f"{name:48s} host {row['host_us']:7.1f} us   wall {row['wall_us']:7.1f} us"
                      f"   rel-L1 {err}")
    meta = dict(date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                device=torch.cuda.get_device_name(), torch=torch.__version__,
                mxattn=mxattn.version(), python=platform.python_version(),
                shape=dict(batch=batch, heads=heads, seq=seq, head_dim=head_dim),
                dtype=args.dtype, family=args.family, causal=args.causal, iters=args.iters,
                repeats=args.repeats, command=" ".join([os.path.basename(sys.executable)] + sys.argv))
    with open(args.out, "w") as f:
        json.dump(dict(meta=meta, results=results), f, indent=2)
    print(f"\n{meta['device']}, torch {meta['torch']}, B{batch} H{heads} N{seq} D{head_dim} "
          f"{args.dtype}{' causal' if args.causal else ''}; median of {args.repeats} loops of "
          f"{args.iters} calls; written to {args.out}")
    print("\n| call | host us/call | wall us/call |\n|---|---:|---:|")
    for row in results:
        if "error" not in row:
            print(f"| {row['name']} | {row['host_us']:.1f} | {row['wall_us']:.1f} |")


if __name__ == "__main__":
    main()
