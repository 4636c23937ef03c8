#!/usr/bin/env python3
"""Clock, power and energy per call of one attention implementation held in a sustained loop.

    MXATTN_LIB=build/libmxattn.so python3 bench/micro/sustained_power.py [--seconds 3]

Why: issue #7's f16 D=128 N=4096 ratio sits at 0.97-0.99 of cuDNN while our kernel takes
2-6% fewer cycles a call (the bench's clock column: ours 1655-1708 MHz, cuDNN 1780-1793).  The
bench's watts are nvidia-smi's power.draw, a one-second average that smears rows timed ~170 ms
apart, so they cannot say which kernel spends more energy.  Here each implementation runs
alone, back to back, for --seconds (inputs rotating among sets larger than L2, as the bench),
while nvidia-smi samples the instant power, the SM clock and the throttle reasons every 20 ms;
the first second is dropped (the power controller settling).  Rows and input sets are
bench/attention.py's.  Printed per implementation: ms a
call (events over the kept span), mean MHz, mean instant W, joules a call (W x ms), and the
union of the throttle reasons seen.  A question for the design, not a benchmark.
"""
import argparse
import os
import subprocess
import sys
import threading
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
# bench/attention.py's rows: the same names, configurations and input sets (it also puts python/ on the path)
from attention import DEFAULT_L2_BYTES, SDPA_BACKENDS, make_input_sets, mxattn_impl, sdpa_impl  # noqa: E402

QUERY = "timestamp,clocks.sm,power.draw.instant,clocks_event_reasons.active"
# clocks_event_reasons bits (nvml's nvmlClocksEventReason*)
REASONS = {0x1: "idle", 0x4: "sw_power_cap", 0x8: "hw_slowdown", 0x20: "sw_thermal",
           0x40: "hw_thermal", 0x80: "hw_power_brake", 0x100: "display_clocks"}


class Sampler:
    def __init__(self):
        self.rows = []
        self.proc = subprocess.Popen(["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits",
                                      "-lms=20"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            f = [x.strip() for x in line.split(",")]
            try:
                self.rows.append((time.time(), float(f[1]), float(f[2]), int(f[3], 16)))
            except (ValueError, IndexError):
                pass

    def window(self, t0, t1):
        return [r for r in self.rows if t0 <= r[0] <= t1]

    def stop(self):
        self.proc.terminate()


def impl(name, causal):
    """fn(q, k, v) for a bench row name: an SDPA backend ("sdpa-cudnn"), a
    family ("f16"), or a family with a pinned configuration ("f16[persistent=0 ...]")."""
    context, run = sdpa_impl(name) if name in SDPA_BACKENDS else mxattn_impl(name)

    def call(q, k, v):
        with context():
            return run(q, k, v, causal)
    return call


def sustained(fn, sets, seconds, sampler):
    for q, k, v in sets:   # first calls (plans, compiles) outside the timing
        fn(q, k, v)
    torch.cuda.synchronize()
    start = time.time()
    calls, ev0, t_keep = 0, None, None
    while time.time() - start < seconds:
        for q, k, v in sets:
            fn(q, k, v)
            calls += 1
        if ev0 is None and time.time() - start >= 1.0:   # keep from here on
            torch.cuda.synchronize()
            ev0, t_keep, kept_from = torch.cuda.Event(enable_timing=True), time.time(), calls
            ev0.record()
        if calls % 64 == 0:
            torch.cuda.synchronize()   # keep the launch queue short
    ev1 = torch.cuda.Event(enable_timing=True)
    ev1.record()
    torch.cuda.synchronize()
    t_end = time.time()
    ms = ev0.elapsed_time(ev1) / (calls - kept_from)
    samples = sampler.window(t_keep, t_end)
    count = max(1, len(samples))   # none: nvidia-smi failed; the time still stands
    mhz = sum(s[1] for s in samples) / count
    watts = sum(s[2] for s in samples) / count
    reasons = 0
    for s in samples:
        reasons |= s[3]
    names = ",".join(n for bit, n in REASONS.items() if reasons & bit) or "none"
    return ms, mhz, watts, len(samples), names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dims", default="128")
    ap.add_argument("--seqs", default="4096,16384")
    ap.add_argument("--causal", default="no", help="no, yes or no,yes")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--impls", default="sdpa-cudnn;f16;int8-fp8",
                    help="';'-separated: sdpa-cudnn, a family, or family[config]")
    args = ap.parse_args()
    l2_bytes = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or DEFAULT_L2_BYTES
    sampler = Sampler()
    print("| impl | D | N | causal | ms a call | MHz | W (instant) | J a call | samples | throttle reasons |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for d in map(int, args.dims.split(",")):
        for n in map(int, args.seqs.split(",")):
            cfg = {"batch": 4, "heads": 32, "heads_kv": 32, "seq_len": n, "head_dim": d, "dtype": torch.bfloat16}
            sets = make_input_sets(cfg, l2_bytes)
            for causal in [c == "yes" for c in args.causal.split(",")]:
                for name in args.impls.split(";"):
                    ms, mhz, watts, count_s, reasons = sustained(impl(name, causal), sets, args.seconds, sampler)
                    print(f"| {name} | {d} | {n} | {'yes' if causal else 'no'} | {ms:.4f} | {mhz:.0f} | {watts:.0f} | "
                          f"{watts * ms / 1e3:.3f} | {count_s} | {reasons} |", flush=True)
            del sets
            torch.cuda.empty_cache()
    sampler.stop()


if __name__ == "__main__":
    main()
