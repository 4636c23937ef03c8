#!/usr/bin/env bash
# Session 16, call 3: can one call's memory-bound stats and quant passes run under another
# call's attention kernel (bench/micro/two_streams.py), and each kernel's share of an int8-fp8
# call at D=128 N=4096 (bench/profile_kernels.py).  ~2 min; timeout_s 200; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
timeout 90 python3 bench/profile_kernels.py --families int8-fp8 --dims 128 --seqs 4096 > "$L/profile.log" 2>&1
stamp "profile rc=$?"
cat "$L/profile.log" >> "$S"
timeout 90 python3 bench/micro/two_streams.py --rounds 3 > "$L/two_streams.log" 2>&1
stamp "two_streams rc=$?"
cat "$L/two_streams.log" >> "$S"
finish_call
exit 0
