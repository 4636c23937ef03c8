#!/usr/bin/env bash
# The next session's tune-and-bench call (~8 min; timeout_s 520, everything inside stops by 480 s;
# build-gpu: scripts/s13_prepare.sh on main). Session 12's tune was cut after 11 of 16 problems
# by the candidate enumeration (fixed in 9fc1096: ~2 s a problem's list again).
#   1. `mxattn tune` of f16 and int8-fp8 at the issue's shapes, 8 candidates each;
#   2. bench/attention.py on that database, 5 rounds, clocks logged, N=1024 included.
cd "$(dirname "$0")/.."
source scripts/call_prelude.sh
stamp start
timeout 330 $B/mxattn tune --family f16,int8-fp8 --head-dims 128,64 --seqs 4096,16384 --causal both --batch 4 --heads 32 \
  --max-candidates 8 > "$L/tune.log" 2>&1
stamp "tune rc=$?"
$B/mxattn query > "$L/query.log" 2>&1; cat "$L/query.log" >> "$S"
BENCH_ARGS="--families f16,int8-fp8 --dims 128,64 --seqs 1024,4096,16384 --causal both --baselines sdpa-flash,sdpa-cudnn --rounds 5 --clocks" \
  BENCH_TIMEOUT=$((480 - SECONDS)) MXATTN_BUILD=$B OUT=$L bash scripts/device.sh --bench > "$L/device_bench.log" 2>&1
stamp "$(grep '^## bench' "$L/device_bench.log")"
grep -E "^\| (f16|int8-fp8|sdpa-cudnn) " "$L/bench/results.md" 2>/dev/null | cut -d'|' -f2-8 >> "$S"
finish_call
exit 0
