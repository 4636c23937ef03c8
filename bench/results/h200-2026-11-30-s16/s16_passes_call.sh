#!/usr/bin/env bash
# Session 16, call 4: the pre-passes' own times (torch.profiler with MXATTN_PDL=0, so that no
# kernel's span includes waiting for the one before) at int8-fp8 D=128 N=4096 and 16384, D=64
# N=16384, and what the GPU streams (bench/micro/bandwidth.py).  ~1 min; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
MXATTN_PDL=0 timeout 120 python3 bench/profile_kernels.py --families int8-fp8 --dims 128 --seqs 4096,16384 > "$L/profile_nopdl.log" 2>&1
stamp "profile d128 rc=$?"
MXATTN_PDL=0 timeout 60 python3 bench/profile_kernels.py --families int8-fp8 --dims 64 --seqs 16384 >> "$L/profile_nopdl.log" 2>&1
stamp "profile d64 rc=$?"
grep -v Warn "$L/profile_nopdl.log" | grep -v warn_once >> "$S"
for n in 4096 16384; do timeout 60 python3 bench/micro/bandwidth.py --seq $n >> "$L/bandwidth.log" 2>&1; done
stamp "bandwidth rc=$?"
cat "$L/bandwidth.log" >> "$S"
finish_call
exit 0
